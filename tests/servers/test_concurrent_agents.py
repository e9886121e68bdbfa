"""Agents at once on one workspace through a real ``ovtui serve``: each one's find → messages →
commit completes, none times out on a lock, and the use ledger holds every memory served exactly
once (counted in its log and by its own reading)."""

from __future__ import annotations

from pathlib import Path

from agent_load_support import failures, ledger_problems, run_agents
from session_support import approving_sample_workspace, ovtui_serve

AGENTS = 8


def test_concurrent_agents_complete_and_every_use_is_recorded_once(tmp_path: Path) -> None:
    root = approving_sample_workspace(tmp_path / "ws")
    with ovtui_serve(root) as url:
        runs = run_agents(url, AGENTS)
    assert failures(runs) == []
    assert all(run.served for run in runs)  # each was served memories: the count below means something
    assert ledger_problems(root, runs) == []
