"""The evidence trajectories of a plan item: pick one, read it as Markdown, go back with esc or q."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, OptionList

from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.marked_options import MarkedOptionList
from ovtui.app.widgets.text_markdown import TextMarkdown
from ovtui.core.errors import OvtuiError
from ovtui.wiring.workspace import Workspace


class EvidenceScreen(GoesBack, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *back_bindings("evidence"),
        Binding("j", "next", "Next", id="evidence.next", show=False),
        Binding("k", "previous", "Previous", id="evidence.previous", show=False),
    ]

    def __init__(
        self, workspace: Workspace, target: str, uris: list[str], counter: list[str] | None = None
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.target = target
        self.supporting = len(uris)
        # Counter-evidence: passing trajectories of the same intent that the change might break.
        self.uris = [*uris, *(counter or [])]

    def compose(self) -> ComposeResult:
        title = f"Evidence for {self.target}: {self.supporting} trajectory file(s)"
        if len(self.uris) > self.supporting:
            title += f", and {len(self.uris) - self.supporting} passing one(s) the change might break"
        labels = [
            self.workspace.reading.display_path(u)
            + ("" if i < self.supporting else "  (passing: might break)")
            for i, u in enumerate(self.uris)
        ]
        yield Label(title, id="evidence-title")
        with Horizontal():
            yield MarkedOptionList(*labels, id="evidence-list")
            with VerticalScroll(id="evidence-body"):
                yield TextMarkdown(id="evidence-view")
        yield KeyFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 0
        options.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show(self.uris[event.option_index])

    def _show(self, uri: str) -> None:
        view = self.query_one(TextMarkdown)
        try:
            memory = self.workspace.reading.memory(uri)
        except (OvtuiError, OSError) as exc:
            view.show(f"**Cannot read this trajectory:** {exc}")
            return
        if memory is None:
            view.show("*This trajectory file no longer exists.*")
            return
        facts = " · ".join(
            f"{k}: {v}" for k, v in memory.fields.items() if k in ("outcome", "case_name", "reward")
        )
        view.show(f"{facts}\n\n{memory.content}" if facts else memory.content)

    def action_next(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_previous(self) -> None:
        self.query_one(OptionList).action_cursor_up()
