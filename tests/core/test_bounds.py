"""Sizes: what flows into a memory file is cut by field at each stage, so ovtui never writes a file it
cannot read back; inputs are refused above their limits. Each limit is tried at the limit and
one above it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from plan_support import apply, experience, upsert

from ovtui.checks.workspace import check_workspace
from ovtui.cli.main import main
from ovtui.core import bounded_rollout, bounds
from ovtui.core.domain import Case, Message, Rollout, Rubric, RubricEvaluation, TextPart, ToolPart
from ovtui.core.events import EventBus
from ovtui.memory.revert import revert
from ovtui.memory.store import MemoryStore
from ovtui.plugins import read_cases
from ovtui.train.backends.offline import OfflineTrajectoryExtractor
from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer
from ovtui.train.inbox import InboxProcessor

CASE = Case(
    name="c1",
    task_signature="refund request",
    input={"user_query": "where is my refund"},
    rubric=Rubric(name="refund"),
)
PASSED = RubricEvaluation(passed=True, score=1.0)


def _tool(name: str = "lookup_order", output: str = "ok") -> Message:
    return Message(role="assistant", parts=[ToolPart(tool_id="t", tool_name=name, tool_output=output)])


# --- the cuts themselves -------------------------------------------------------------------------


def test_cut_text_at_and_over_its_limit() -> None:
    assert bounds.cut_text("x" * 10, 10) == "x" * 10
    cut = bounds.cut_text("x" * 11, 10)
    assert cut.startswith("x" * 10) and cut.endswith(bounds.marker(1, "characters"))


def test_cut_utf8_at_and_over_its_limit_never_splits_a_character() -> None:
    text = "取" * 100  # 300 bytes
    assert bounds.cut_utf8(text, 300) == text
    cut = bounds.cut_utf8(text, 299)
    assert len(cut.encode("utf-8")) <= 299 and "cut by ovtui" in cut and cut.startswith("取")


def test_rollout_messages_at_and_over_the_limit() -> None:
    limit = bounds.MAX_ROLLOUT_MESSAGES
    at = Rollout(case=CASE, messages=[_tool(output=str(i)) for i in range(limit)])
    assert bounded_rollout.bound_rollout(at).messages == at.messages
    over = Rollout(case=CASE, messages=[_tool(output=str(i)) for i in range(limit + 1)])
    messages = bounded_rollout.bound_rollout(over).messages
    assert len(messages) == limit
    assert bounds.marker(2, "messages") in messages[limit // 2].text  # two cut, one marker in their place
    assert messages[0].parts[0] == over.messages[0].parts[0] and messages[-1] == over.messages[-1]


def test_tool_names_parts_and_texts_at_and_over_their_limits() -> None:
    name_limit, text_limit = bounds.MAX_TOOL_NAME_CHARS, bounds.MAX_PART_TEXT_CHARS
    fits = Message(
        role="assistant",
        parts=[
            ToolPart(tool_id="t", tool_name="n" * name_limit, tool_output="o" * text_limit),
            *[TextPart(text="t" * text_limit)] * (bounds.MAX_MESSAGE_PARTS - 1),
        ],
    )
    assert bounded_rollout.bound_messages([fits])[0] is fits
    over = Message(
        role="assistant",
        parts=[
            ToolPart(
                tool_id="t",
                tool_name="n" * (name_limit + 1),
                tool_input={"q": "i" * (text_limit + 1)},
                tool_output="o" * (text_limit + 1),
            ),
            *[TextPart(text="t" * (text_limit + 1))] * bounds.MAX_MESSAGE_PARTS,
        ],
    )
    cut = bounded_rollout.bound_messages([over])[0]
    tool = cut.parts[0]
    assert isinstance(tool, ToolPart)
    assert tool.tool_name == "n" * name_limit + bounds.marker(1, "characters")
    assert tool.tool_output.endswith(bounds.marker(1, "characters"))
    assert tool.tool_input["q"].endswith(bounds.marker(1, "characters"))
    assert len(cut.parts) == bounds.MAX_MESSAGE_PARTS + 1  # the parts kept and a marker
    assert cut.parts[-1] == TextPart(text=bounds.marker(1, "parts"))


# --- nothing written that cannot be read back ----------------------------------------------------


def test_a_huge_hostile_rollout_becomes_a_trajectory_ovtui_reads_back(store: MemoryStore) -> None:
    """The issue's 4.6 MB rollout: 2,200 tool messages with 2,000-character tool names."""
    messages = [Message(role="user", parts=[TextPart(text="q" * 5_000_000)])]
    messages += [_tool(name=f"{i:04d}" + "t" * 1996) for i in range(2200)]
    rollout = Rollout(case=CASE, messages=messages, evaluation=PASSED)
    analyzer = TrajectoryRolloutAnalyzer(store, OfflineTrajectoryExtractor())
    analysis = asyncio.run(analyzer.analyze(rollout))
    [trajectory] = analysis.trajectories
    path = store.paths.path_for(trajectory.uri)
    assert path.stat().st_size <= bounds.MAX_MEMORY_FILE_BYTES
    assert store.read(path).content == trajectory.content  # readable, and what the analyzer reported
    assert check_workspace(store).ok


class _HugeDraftExtractor(OfflineTrajectoryExtractor):
    """Stands in for a model that answers with far too much text."""

    async def extract(self, rollout, evaluation, feedback):  # type: ignore[no-untyped-def]
        [draft] = await super().extract(rollout, evaluation, feedback)
        draft.content = "取消" * 3_000_000  # 18 MB of UTF-8
        draft.retrieval_anchor = "a" * 50_000
        return [draft]


class _SizedDraftExtractor(OfflineTrajectoryExtractor):
    def __init__(self, size: int) -> None:
        self.size = size

    async def extract(self, rollout, evaluation, feedback):  # type: ignore[no-untyped-def]
        [draft] = await super().extract(rollout, evaluation, feedback)
        draft.content = "c" * self.size
        return [draft]


@pytest.mark.parametrize("size", [bounds.MAX_MEMORY_TEXT_BYTES, bounds.MAX_MEMORY_TEXT_BYTES + 1])
def test_a_trajectory_text_at_and_over_the_text_limit(store: MemoryStore, size: int) -> None:
    analyzer = TrajectoryRolloutAnalyzer(store, _SizedDraftExtractor(size))
    [trajectory] = asyncio.run(analyzer.analyze(Rollout(case=CASE, evaluation=PASSED))).trajectories
    content = store.read(store.paths.path_for(trajectory.uri)).content
    if size == bounds.MAX_MEMORY_TEXT_BYTES:
        assert content == "c" * size
    else:
        assert len(content.encode("utf-8")) <= bounds.MAX_MEMORY_TEXT_BYTES and "cut by ovtui" in content


def test_a_huge_extracted_text_is_cut_to_the_memory_text_limit(store: MemoryStore) -> None:
    analyzer = TrajectoryRolloutAnalyzer(store, _HugeDraftExtractor())
    [trajectory] = asyncio.run(analyzer.analyze(Rollout(case=CASE, evaluation=PASSED))).trajectories
    memory = store.read(store.paths.path_for(trajectory.uri))
    assert len(memory.content.encode("utf-8")) <= bounds.MAX_MEMORY_TEXT_BYTES
    assert "cut by ovtui" in memory.content
    assert len(memory.fields["retrieval_anchor"]) <= bounds.MAX_FIELD_CHARS + 60


def _rendered_size(store: MemoryStore, name: str) -> int:
    return store.path_for_name("experiences", name).stat().st_size


def test_an_experience_at_the_file_limit_is_written_and_one_byte_more_is_refused(store: MemoryStore) -> None:
    name = "refund_status"
    small = apply(store, upsert(store, name, "## Situation\n- x"))
    assert not small.errors
    size = _rendered_size(store, name)
    pad = bounds.MAX_MEMORY_FILE_BYTES - size
    at_limit = apply(store, upsert(store, name, "## Situation\n- x" + "y" * pad))
    assert not at_limit.errors, at_limit.errors
    assert _rendered_size(store, name) == bounds.MAX_MEMORY_FILE_BYTES
    current = experience(store, name)  # read back at the limit
    assert current is not None

    over = apply(store, upsert(store, name, current.content + "z"))
    assert over.errors and "larger than the 4194304 byte limit" in over.errors[0]
    assert _rendered_size(store, name) == bounds.MAX_MEMORY_FILE_BYTES  # untouched
    # What ovtui wrote, it can undo.
    assert at_limit.history_id is not None
    revert(store, at_limit.history_id)
    reverted = experience(store, name)
    assert reverted is not None and reverted.content == "## Situation\n- x"


# --- inputs refused above their limits -----------------------------------------------------------


def _case_line(size: int) -> bytes:
    head = b'{"name":"c","task_signature":"t","rubric":{"name":"r"},"metadata":{"pad":"'
    tail = b'"}}'
    return head + b"p" * (size - len(head) - len(tail)) + tail


def test_dataset_lines_at_and_over_the_limit(tmp_path: Path) -> None:
    limit = bounds.MAX_DATASET_LINE_BYTES
    path = tmp_path / "train.jsonl"
    path.write_bytes(_case_line(limit) + b"\n" + _case_line(limit + 1) + b"\n" + _case_line(100))
    cases, problems = read_cases(path, display="train.jsonl")
    assert len(cases) == 2  # the one at the limit and the short last line
    assert problems == [f"train.jsonl:2: line is longer than the {limit} byte limit"]


def test_check_reports_deep_nesting_and_long_lines_by_line(
    tmp_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_workspace / "datasets" / "deep"
    folder.mkdir(parents=True)
    nested = (
        '{"name":"c","task_signature":"t","rubric":{"name":"r"},"input":{"x":'
        + "[" * 1000
        + "]" * 1000
        + "}}"
    )
    good = json.dumps({"name": "ok", "task_signature": "t", "rubric": {"name": "r"}})
    (folder / "train.jsonl").write_bytes(
        f"{good}\n{nested}\n".encode() + _case_line(bounds.MAX_DATASET_LINE_BYTES + 1) + b"\n"
    )
    assert main(["check", str(tmp_workspace)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(
        line.startswith("datasets/deep/train.jsonl:2: not valid JSON: recursion limit") for line in out
    )
    assert "datasets/deep/train.jsonl:3: line is longer than" in "\n".join(out)


def test_inbox_files_at_and_over_the_limit(store: MemoryStore) -> None:
    limit = bounds.MAX_ROLLOUT_BYTES
    inbox = InboxProcessor(store.paths, submit=None, events=EventBus())  # type: ignore[arg-type]
    body = Rollout(case=CASE).model_dump_json().encode()
    folder = store.paths.inbox / "rollouts"
    folder.mkdir(parents=True)
    at, over = folder / "at.json", folder / "over.json"
    at.write_bytes(body + b" " * (limit - len(body)))
    over.write_bytes(body + b" " * (limit + 1 - len(body)))
    assert inbox.load(at) == Rollout(case=CASE)
    assert inbox.load(over) is None
    reason = (store.paths.quarantine / "over.json.reason.txt").read_text(encoding="utf-8")
    assert f"larger than the {limit} byte limit" in reason
