"""Streaming from the inbox: good rollouts are trained on and moved to done/, bad ones quarantined."""

from __future__ import annotations

import asyncio
from pathlib import Path

from workspace_support import INBOX_OTHER_FILES, build_sample_workspace, check_other_files, drop_other_files

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Rollout, RolloutTrainingResult
from ovtui.core.events import Event, EventBus
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.inbox import InboxProcessor
from ovtui.wiring.workspace import Workspace


async def test_stream_trains_on_new_files_and_quarantines_bad_ones(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "ovtui.toml").write_text(
        '[review]\npolicy = "all"\n[trainer]\nmax_gradients_per_update = 2\nmax_wait_seconds = 0.2\n'
    )
    workspace = Workspace(root)
    cases = generate_cases("train", 3, seed=5)
    rollouts = await SampleAgentExecutor().execute(
        cases, workspace.reading.experiences(), ExecutionContext("inbox")
    )
    inbox = root / "inbox" / "rollouts"
    # One file is there before streaming starts; the rest arrive while it runs.
    (inbox / "r0.json").write_text(rollouts[0].model_dump_json())

    seen: list[Event] = []
    handled = asyncio.Event()

    def listen(event: Event) -> None:
        seen.append(event)
        settled = [e for e in seen if e.kind == "inbox_processed"]
        rejected = [e for e in seen if e.kind == "log" and "rejected" in e.data["message"]]
        if len(settled) == 3 and len(rejected) == 2:
            handled.set()

    stop = asyncio.Event()
    stream = asyncio.create_task(workspace.runs.stream([listen], stop))
    for i, rollout in enumerate(rollouts[1:], start=1):
        tmp = inbox / f".r{i}.tmp"
        tmp.write_text(rollout.model_dump_json())
        tmp.rename(inbox / f"r{i}.json")  # a writer that renames: the watcher never sees half a file
    (inbox / "broken.json").write_text('{"case": {"name": "x"}')
    (inbox / "wrong.json").write_text('{"messages": []}')
    await asyncio.wait_for(handled.wait(), timeout=30)
    stop.set()
    report = await asyncio.wait_for(stream, timeout=30)

    assert sorted(p.name for p in (root / "inbox" / "done").iterdir()) == ["r0.json", "r1.json", "r2.json"]
    rejected = sorted(p.name for p in (root / "inbox" / "rejected").iterdir())
    assert rejected == ["broken.json", "broken.json.reason.txt", "wrong.json", "wrong.json.reason.txt"]
    assert "case" in (root / "inbox" / "rejected" / "wrong.json.reason.txt").read_text()
    assert (
        root / "inbox" / "rejected" / "broken.json"
    ).read_text() == '{"case": {"name": "x"}'  # kept as given
    assert list(inbox.glob("*.json")) == []
    assert any(e.kind == "plan_applied" and e.data["written"] for e in seen)
    assert report.errors == ["2 file(s) rejected"]


async def test_stream_quarantines_files_of_another_kind_and_leaves_partial_ones(tmp_path: Path) -> None:
    """Files that are not ``.json`` are not silently ignored: each is quarantined with a reason
    naming it, those present at the start and those dropped while the watcher runs; a file still
    written under a temporary name is left alone, and taken once it is renamed into place."""
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "ovtui.toml").write_text('[review]\npolicy = "all"\n[trainer]\nmax_wait_seconds = 0.2\n')
    workspace = Workspace(root)
    [case] = generate_cases("train", 1, seed=7)
    [rollout] = await SampleAgentExecutor().execute(
        [case], workspace.reading.experiences(), ExecutionContext("inbox")
    )
    inbox = root / "inbox" / "rollouts"
    (inbox / "before.txt").write_text("there at the start")

    seen: list[Event] = []
    watching, handled = asyncio.Event(), asyncio.Event()

    def listen(event: Event) -> None:
        seen.append(event)
        rejected = [e for e in seen if e.kind == "log" and "rejected" in e.data["message"]]
        if rejected:
            watching.set()
        if len(rejected) == 1 + len(INBOX_OTHER_FILES) and any(e.kind == "inbox_processed" for e in seen):
            handled.set()

    stop = asyncio.Event()
    stream = asyncio.create_task(workspace.runs.stream([listen], stop))
    await asyncio.wait_for(watching.wait(), timeout=30)  # first scan done; the watch finds the rest
    drop_other_files(inbox)
    (inbox / "r.json.part").write_text(rollout.model_dump_json())
    (inbox / "r.json.part").rename(inbox / "r.json")
    await asyncio.wait_for(handled.wait(), timeout=30)
    stop.set()
    report = await asyncio.wait_for(stream, timeout=30)

    rejected = root / "inbox" / "rejected"
    check_other_files(inbox, rejected, takes="inbox/rollouts/ takes one Rollout per .json file")
    assert (rejected / "before.txt").read_text() == "there at the start"
    assert (
        "a conversation (.jsonl) goes to inbox/sessions/" in (rejected / "before.txt.reason.txt").read_text()
    )
    assert [p.name for p in (root / "inbox" / "done").iterdir()] == ["r.json"]
    assert report.errors == [f"{1 + len(INBOX_OTHER_FILES)} file(s) rejected"]


async def never(rollout: Rollout) -> RolloutTrainingResult:
    raise AssertionError("nothing is trained here")


def test_a_quarantined_file_never_writes_over_a_file_named_like_its_reason(tmp_path: Path) -> None:
    # A user's file called "notes.txt.reason.txt" was quarantined earlier; then "notes.txt" arrives.
    root = tmp_path / "ws"
    build_sample_workspace(root)
    paths = WorkspacePaths(root)
    inbox = InboxProcessor(paths, never, EventBus())
    paths.quarantine.mkdir(parents=True, exist_ok=True)
    earlier = paths.quarantine / "notes.txt.reason.txt"
    earlier.write_text("the user's own file")
    dropped = root / "inbox" / "rollouts" / "notes.txt"
    dropped.write_text("hello")

    moved = inbox.reject(dropped, "not a .json file")

    assert earlier.read_text() == "the user's own file"
    assert moved.parent == paths.quarantine and moved.read_text() == "hello"
    assert moved.with_name(moved.name + ".reason.txt").read_text() == "not a .json file\n"


def test_a_rejected_rollouts_reason_names_every_problem_and_the_misspelt_field(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    paths = WorkspacePaths(root)
    logged: list[Event] = []
    inbox = InboxProcessor(paths, never, EventBus([logged.append]))
    dropped = root / "inbox" / "rollouts" / "three.json"
    case = '{"name": "x", "task_signature": "x", "input": {}, "rubric": {"name": "r", "criteria": []}}'
    dropped.write_text(
        f'{{"case": {case}, "mesages": [], "evaluation": {{"passed": "maybe", "score": 0.5}}, '
        '"policy_snapshot_id": 3}'
    )

    assert inbox.load(dropped) is None

    reason = (paths.quarantine / "three.json.reason.txt").read_text()
    assert reason.startswith("not a valid Rollout: 3 problem(s): ")
    assert "[mesages] Extra inputs are not permitted — did you mean 'messages'?" in reason
    assert "[evaluation.passed]" in reason and "[policy_snapshot_id]" in reason
    assert any(reason.strip() in str(e.data.get("message")) for e in logged)  # the log has it whole
