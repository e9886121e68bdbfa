"""A log that stays on its newest line through a resize, unless the reader scrolled up.

Textual's ``Log`` follows new lines only while its scroll position is at the end. A smaller
terminal makes the end lie further down without moving the position, so after a resize the log
stopped following: new lines arrived out of sight.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Log


class PinnedLog(Log):
    def __init__(self, *, id: str | None = None, max_lines: int | None = None) -> None:
        super().__init__(id=id, max_lines=max_lines, auto_scroll=True)
        self.pinned = True  # at the newest line: the reader has not scrolled up

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.pinned = new_value >= self.max_scroll_y

    def on_resize(self, event: events.Resize) -> None:
        if self.pinned:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
