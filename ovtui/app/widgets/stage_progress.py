"""One stage of a run: a label, a progress bar without ETA (deterministic), and a count."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class StageProgress(Horizontal):
    DEFAULT_CSS = """
    StageProgress { height: 1; }
    StageProgress > .stage-label { width: 14; }
    StageProgress > ProgressBar { width: 30; }
    StageProgress > .stage-count { width: 1fr; padding-left: 1; }
    """

    def __init__(self, stage: str, label: str) -> None:
        super().__init__(id=f"stage-{stage}")
        self.stage = stage
        self.label = label

    def compose(self) -> ComposeResult:
        yield Label(self.label, classes="stage-label")
        yield ProgressBar(total=1, show_eta=False, show_percentage=True, id=f"bar-{self.stage}")
        yield Label("–", classes="stage-count", id=f"count-{self.stage}")

    def set(self, done: int, total: int | None, text: str) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=total if total else 1, progress=done if total else 0)
        self.query_one(".stage-count", Label).update(text, layout=False)  # fixed size: no re-layout

    def reset(self) -> None:
        self.set(0, None, "–")
