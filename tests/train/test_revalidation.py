"""What an apply records it was learned against, and how revalidation reads it back and compares."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from workspace_support import build_sample_workspace

from ovtui.core.domain import Experience
from ovtui.environments.sample.tools import TOOL_SPECS, load_policy
from ovtui.memory.history import HistoryStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.revalidation import (
    LEARNED_AGAINST,
    DriftCheck,
    Revalidation,
    Setup,
    check_drift,
    drifted,
    recorded_setups,
    schema_hash,
    text_hash,
)
from ovtui.wiring.workspace import TrainOptions, Workspace


def _setup(**changes: str | None) -> Setup:
    base: dict[str, str | None] = {
        "environment": "sample",
        "policy_text": "p1",
        "tool_schema": "t1",
        "model": "m1",
        "agent": "sample (ovtui 0.1.0)",
    }
    return Setup.model_validate(base | changes)


def test_hashes_ignore_line_endings_and_key_order_but_not_content() -> None:
    assert text_hash("a\r\nb\n") == text_hash("a\nb\n") != text_hash("a\nc\n")
    assert schema_hash([{"name": "x", "params": ["a"]}]) == schema_hash([{"params": ["a"], "name": "x"}])
    assert schema_hash([{"name": "x"}]) != schema_hash([{"name": "y"}])
    assert text_hash(None) is None and schema_hash(None) is None


def test_each_changed_part_drifts_in_order_and_an_unsaid_part_never_does() -> None:
    then = _setup()
    assert drifted(then, then) == []
    now = _setup(model="m2", policy_text="p2", agent="sample (ovtui 0.2.0)")
    assert [d.part for d in drifted(then, now)] == ["policy_text", "model", "agent"]
    assert [d.line() for d in drifted(then, now)][1] == "model changed: m1 → m2"
    assert drifted(_setup(tool_schema=None), _setup(tool_schema="t2")) == []


def test_affected_experiences_without_cases_in_the_split_say_nothing_is_rerun() -> None:
    check = DriftCheck(dataset="support", split="test", trials=2, setup=_setup(model="m2"))
    learned = Experience(name="refunds", uri="viking://x/refunds.md", version=1, status="draft", content="")
    check = check_drift(
        check, [learned], {learned.uri: ("r1", _setup())}, {learned.uri: ["refund_train_1"]}, set()
    )
    assert [a.missing for a in check.affected] == [["refund_train_1"]] and check.agent_calls == 0
    lines = Revalidation(check=check).lines()
    assert lines[0] == "model changed: m1 → m2"
    assert lines[-1] == "nothing to rerun: no linked case of theirs is in support/test"
    assert "1 linked case(s) are not in support/test: refund_train_1" in lines


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(build_sample_workspace(tmp_path / "ws"))


async def test_an_apply_records_its_setup_and_a_revert_leaves_the_one_before(workspace: Workspace) -> None:
    report = await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    history = HistoryStore(WorkspacePaths(workspace.root, "default"))
    first, last = report.history_ids[0], report.history_ids[-1]
    recorded = history.get(first).metadata[LEARNED_AGAINST]
    assert recorded == {
        "environment": "sample",
        "policy_text": text_hash(load_policy()),
        "tool_schema": schema_hash([asdict(spec) for spec in TOOL_SPECS.values()]),
        "model": None,  # the offline learner uses no model
        "agent": recorded["agent"],
        "backend": "offline",
    }
    assert recorded["agent"].startswith("sample (ovtui ")

    touched = history.entries()[last].uris
    await workspace.review.revert(last)
    setups = recorded_setups(history, touched)
    # The revert says no setup and the reverted record is no longer in effect: each file's setup
    # is that of the newest record before it that wrote the file.
    assert setups and {record_id for record_id, _ in setups.values()} <= set(report.history_ids[:-1])
    newest_before = {
        uri: max(e.id for e in history.entries().values() if uri in e.uris and e.id < last) for uri in setups
    }
    assert {uri: record_id for uri, (record_id, _) in setups.items()} == newest_before
    assert all(setup.policy_text == text_hash(load_policy()) for _, setup in setups.values())
