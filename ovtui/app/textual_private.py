"""The one private Textual internal the app leans on, behind one function.

``tests/app/test_textual_private.py`` fails the day Textual changes it: then replace it here.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_scroll_range(view: ScrollView, size: Size) -> None:
    """Give ``view`` a new virtual size without re-laying out its screen.

    Assigning ``virtual_size`` re-lays out the whole screen (the reactive has ``layout=True``), while
    only this widget's scroll range changed: its own size is fixed by the layout. ``_scroll_update``
    is what the reactive's watcher calls to update the scroll bars and the scroll limits.
    """
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)
