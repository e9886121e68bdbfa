"""``ovtui check`` and ``[review] signers``: a signers file ovtui cannot read is a problem named at
its line; a two-person rule without signers is a note that the names are labels."""

from __future__ import annotations

from pathlib import Path

from signing_support import keypair, public_line
from workspace_support import build_sample_workspace

from ovtui.checks.workspace import check_workspace
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import WorkspacePaths


def with_review(root: Path, section: str) -> MemoryStore:
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text().replace('[review]\npolicy = "ask"', f'[review]\npolicy = "ask"\n{section}'),
        encoding="utf-8",
    )
    return MemoryStore(WorkspacePaths(root, "default"))


def test_a_signers_file_is_checked_and_a_rule_without_one_is_noted(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    store = with_review(root, 'second_approver_for = ["delete"]')
    report = check_workspace(store)
    assert report.ok
    assert any("without [review] signers: reviewer names are labels" in str(n) for n in report.notes)

    (root / "allowed_signers").write_text("ana ssh-ed25519\n", encoding="utf-8")
    store = with_review(root, 'signers = "allowed_signers"')
    problems = [str(p) for p in check_workspace(store).problems]
    assert any("[review] signers: allowed_signers:1: expected PRINCIPALS" in p for p in problems), problems

    key = keypair(tmp_path / "keys", "ana")
    (root / "allowed_signers").write_text(f"ana {public_line(key)}\n", encoding="utf-8")
    report = check_workspace(store)
    assert report.ok and not any("labels" in str(n) for n in report.notes)
