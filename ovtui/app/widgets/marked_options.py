"""An option list whose highlighted row wears a ``▶`` mark (the cursor seen without colour, as the
app's tables show theirs), with ``g``/``G`` for the first and the last row as in every list."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

CURSOR_MARK = "▶ "
NO_CURSOR = "  "  # the other rows: every row keeps its column


class MarkedOptionList(OptionList):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "first", "First", show=False),
        Binding("G", "last", "Last", show=False),
    ]

    def __init__(self, *options: Option | str, id: str | None = None) -> None:
        self._marked: int | None = None  # set before OptionList's own init, which sets the highlight
        made = [o if isinstance(o, Option) else Option(o) for o in options]
        self._prompts = [str(o.prompt) for o in made]
        super().__init__(*(Option(NO_CURSOR + str(o.prompt), id=o.id) for o in made), id=id)

    def watch_highlighted(self, highlighted: int | None) -> None:
        super().watch_highlighted(highlighted)
        if highlighted == self._marked:
            return
        if self._marked is not None and self._marked < len(self._prompts):
            self.replace_option_prompt_at_index(self._marked, NO_CURSOR + self._prompts[self._marked])
        if highlighted is not None and highlighted < len(self._prompts):
            self.replace_option_prompt_at_index(highlighted, CURSOR_MARK + self._prompts[highlighted])
        self._marked = highlighted
