"""A policy named as a person names it for ``ovtui compare``: the experiences right after a history
record (today's files with the later records undone, in memory), a folder of files, ``current``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from workspace_support import build_sample_workspace

from ovtui.core.errors import OvtuiError
from ovtui.memory.policy_at import CURRENT
from ovtui.wiring.workspace import TrainOptions, Workspace


def contents(folder: Path) -> dict[str, str]:
    """Each experience file's body by name, as the loader reads it."""
    from ovtui.core.fileformat import parse_memory

    return {p.stem: parse_memory(p.read_text(encoding="utf-8")).content for p in sorted(folder.glob("*.md"))}


async def test_the_policy_after_a_record_is_the_files_as_that_record_left_them(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    first = await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None, limit=8))
    assert first.history_ids, first.summary()
    then = contents(root / "memories/experiences")
    second = await workspace.runs.train(TrainOptions(epochs=2, approve="all", eval_split=None))
    assert second.history_ids and contents(root / "memories/experiences") != then
    before_files = {p.name: p.read_bytes() for p in (root / "memories/experiences").glob("*.md")}

    current = workspace.reading.experiences()
    rebuilt = workspace.reading.policy(first.history_ids[-1][-6:], current)  # a unique part of the id
    assert rebuilt.label == f"history/{first.history_ids[-1]}"
    assert {p.name: p.content for p in rebuilt.policy_set.policies} == then
    assert {p.name: p.read_bytes() for p in (root / "memories/experiences").glob("*.md")} == before_files
    assert workspace.reading.policy(CURRENT, current).policy_set is current

    saved = tmp_path / "saved"
    shutil.copytree(root / "memories/experiences", saved)
    from_folder = workspace.reading.policy(str(saved))
    assert {p.name: p.content for p in from_folder.policy_set.policies} == contents(saved)
    assert all(p.uri.startswith(current.root_uri + "/") for p in from_folder.policy_set.policies)


def test_a_name_that_is_nothing_says_what_it_could_have_been(tmp_path: Path) -> None:
    workspace = Workspace(build_sample_workspace(tmp_path / "ws"))
    with pytest.raises(
        OvtuiError, match=r"'nope' is not `current`, a folder of experience files or a history"
    ):
        workspace.reading.policy("nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "..hidden.md").write_text("x", encoding="utf-8")  # skipped: a dot file
    (bad / "con.md").write_text("## Situation\n- x\n", encoding="utf-8")
    with pytest.raises(OvtuiError, match="experience file name"):
        workspace.reading.policy(str(bad))
