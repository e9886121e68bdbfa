"""A batch whose edits all come to nothing says so, and why: its edits are counted, so a bare
"plan is empty" read as if they had been lost."""

from __future__ import annotations

from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.core.events import Event
from ovtui.wiring.workspace import TrainOptions, Workspace


async def test_a_retrained_workspace_says_its_edits_change_nothing(tmp_path: Path) -> None:
    workspace = Workspace(build_sample_workspace(tmp_path / "ws"))
    await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    logged: list[str] = []

    def listen(event: Event) -> None:
        if event.kind == "log":
            logged.append(str(event.data["message"]))

    again = await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None), [listen])
    empty = [line for line in logged if line.startswith("plan is empty")]
    assert empty and again.errors == [], logged
    assert all("edit(s) were dropped: they change nothing in " in line for line in empty), empty
    assert all("the experiences already say it" in line for line in empty)
