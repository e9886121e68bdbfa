"""The private Textual internals the app leans on, each behind one function.

``tests/app/test_textual_private.py`` fails the day Textual changes them: then replace them here.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def set_scroll_range(view: ScrollView, size: Size) -> None:
    """Give ``view`` a new virtual size without re-laying out its screen.

    Assigning ``virtual_size`` re-lays out the whole screen (the reactive has ``layout=True``), while
    only this widget's scroll range changed: its own size is fixed by the layout. ``_scroll_update``
    is what the reactive's watcher calls to update the scroll bars and the scroll limits.
    """
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)


def styles_are_current(screen: Screen[Any], app: App[Any]) -> None:
    """Tell Textual that a screen built just now needs no CSS refresh when its mode is first shown.

    A screen starts with an update count that differs from the app's, so the first switch to its
    mode re-parses the whole stylesheet twice (about 50–80 ms on a busy 2-core machine, most of the
    time to the first rows of a list). That refresh exists for screens that were styled before the
    theme or the CSS changed; a screen built now is styled when it mounts, with the CSS as it is.
    """
    screen._css_update_count = app._css_update_count


def footer_key(key: str, key_display: str, description: str, action: str, *, right: bool) -> Widget:
    """A key as the Footer shows it (``FooterKey`` is not exported); ``right``: docked at the
    footer's right end, where the command palette's key goes."""
    return FooterKey(key, key_display, description, action, classes="-command-palette" if right else "")


def footer_bindings_ready(footer: Footer) -> bool:
    """Whether a Footer has had its screen's bindings signal (it composes nothing before)."""
    return bool(footer._bindings_ready)


def footer_key_of(widget: Widget) -> str | None:
    """The key a widget of the Footer shows, or None when it is not a key."""
    return widget.key if isinstance(widget, FooterKey) else None


def footer_key_shown(widget: Widget) -> tuple[str, str] | None:
    """The key and the description a widget of the Footer draws, or None when it is not a key."""
    return (widget.key_display, widget.description) if isinstance(widget, FooterKey) else None


def style_key_as_footer(widget: Widget, compact: bool) -> None:
    """Give a Footer's key, before it mounts, the footer's ``compact`` and its class. A key starts
    compact, is styled so when it mounts, then its binding to the footer's value styles it again:
    two full style passes per key (a dozen keys, 20-35 ms, as a screen opens and its first keys
    wait). Set beforehand, the mount finds the value there and the binding changes nothing."""
    bound = getattr(widget, "_reactive_connect", None) or {}  # what data_bind linked to its parent
    if isinstance(widget, FooterKey) and "compact" in bound:  # the palette's key keeps its own
        widget.set_reactive(FooterKey.compact, compact)
        widget.set_class(compact, "-compact", update=False)
