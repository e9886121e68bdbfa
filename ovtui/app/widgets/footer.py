"""The footer of every screen: Textual's, recomposed only when what it shows changed.

Textual's Footer recomposes (unmounts and mounts a widget per key) at every bindings signal of its
screen: when the focus moves, at each resume, at every ``refresh_bindings``, and for a screen being
hidden. That was four or five recomposes in the half second after a screen opened, 45-100 ms each
on a busy 2-core machine, while the keys pressed in it waited.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.widgets import Footer

from ovtui.app.textual_private import footer_bindings_ready, style_key_as_footer


class KeyFooter(Footer):
    # Bindings a footer shows though they are not shown (``show=False``): a subclass's own.
    ALSO_SHOWN: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, *, compact: bool = False, show_command_palette: bool = True) -> None:
        super().__init__(compact=compact, show_command_palette=show_command_palette)
        self._composed: tuple[Any, ...] | None = None  # what the keys shown were composed from

    async def recompose(self) -> None:
        if not self.is_attached or not self.screen.is_current:
            return  # a hidden screen's footer: its resume signals again
        shown = self.shown_from()
        if shown == self._composed:
            return
        self._composed = shown
        await super().recompose()

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            style_key_as_footer(widget, self.compact)  # styled once as it mounts, not thrice
            yield widget

    def shown_from(self) -> tuple[Any, ...]:
        """Everything ``compose`` reads: each binding it shows as it would draw it (its key as
        ``[keys]`` remaps it, description, group, whether it is enabled, its tooltip). A focused
        input's own keys are not shown: moving the focus there and back changes nothing here."""
        app = self.app
        bindings = tuple(
            (key, b.key, app.get_key_display(b), b.action, b.description, b.group, enabled, tooltip)
            for key, (_, b, enabled, tooltip) in self.screen.active_bindings.items()
            if b.show or b.id in self.ALSO_SHOWN or key == app.COMMAND_PALETTE_BINDING
        )
        return (footer_bindings_ready(self), self.compact, self.show_command_palette, bindings)
