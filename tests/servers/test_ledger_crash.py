"""``ovtui serve`` SIGKILLed mid-commit, at every step that matters to the use ledger (before its
record, right after it, while the record's append compacts the log: the summary half written, the
summary written and the log not yet replaced): no use is lost or doubled — the uses recorded before
the commit (a find or read with the session's id) stay, once; the commit's own record (its tool
calls' reads and its outcome) is there once or not at all — and a restarted server counts on."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from server_support import start_cli_server, stop, wait_for_task
from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.core.bounds import LEDGER_COMPACT_BYTES
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Use, encode
from ovtui.storage.fsio import CRASH_AT_ENV
from ovtui.storage.paths import WorkspacePaths
from ovtui.wiring.workspace import Workspace

EXP = "viking://user/default/memories/experiences"
SEAT, PETS, FILLER = (
    f"{EXP}/seat_selection.md",
    f"{EXP}/pet_travel_request.md",
    f"{EXP}/flight_status_inquiry.md",
)
NOW = 1_800_000_000.0


def reads(*uris: str) -> dict[str, Any]:
    parts = [
        {
            "type": "tool",
            "tool_id": f"r{n}",
            "tool_name": "openviking_read",
            "tool_input": {"uri": uri},
            "tool_output": "…",
        }
        for n, uri in enumerate(uris)
    ]
    return {"role": "assistant", "parts": parts}


def workspace_with_uses(root: Path) -> int:
    """A sample workspace whose session k1 was served ``SEAT`` (a use, as a find with its id records
    it), and a log so full that the commit's record makes it compact; returns the filler's uses."""
    build_sample_workspace(root)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    Workspace(root).agent.record_uses("k1", [SEAT], "find")
    ledger = UseLedger(WorkspacePaths(root))
    # One call writes one line: what the line itself takes, then what each use in it adds.
    line = len(encode([Use(FILLER, None)], NOW))
    each = len(encode([Use(FILLER, None)] * 2, NOW)) - line
    room = LEDGER_COMPACT_BYTES - 200 - ledger.path.stat().st_size  # less than the commit's record
    filler = 1 + (room - line) // each
    ledger.record([Use(FILLER, None)] * filler, at=NOW)
    assert ledger.path.stat().st_size > LEDGER_COMPACT_BYTES - 200 - each
    assert not ledger.summary_path.exists()  # not folded yet: the commit's record will fold it
    return filler


@pytest.mark.parametrize(
    ("crash_at", "recorded"),
    [
        ("temp:profile.md", False),  # the commit's user memories: before its ledger record
        ("ledger_appended", True),  # right after the record's one write
        ("temp:ledger.json", True),  # the append compacts: the summary half written
        ("temp:ledger.jsonl", True),  # the summary written, the log not yet replaced
    ],
)
def test_sigkill_mid_commit_loses_and_doubles_no_use(tmp_path: Path, crash_at: str, recorded: bool) -> None:
    root = tmp_path / "ws"
    filler = workspace_with_uses(root)
    proc, url = start_cli_server(["serve", str(root), "--port", "0"], env={CRASH_AT_ENV: crash_at})
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            messages = [*CONVERSATION[:3], reads(SEAT, PETS), CONVERSATION[3]]
            client.post("/api/v1/sessions/k1/messages/batch", json={"messages": messages}).raise_for_status()
            accepted = client.post("/api/v1/sessions/k1/commit").json()["result"]
        assert proc.wait(timeout=60) == -signal.SIGKILL, crash_at
    finally:
        stop(proc)

    usage = UseLedger(WorkspacePaths(root)).usage()
    assert usage[FILLER].count == filler  # every use before the commit, once
    assert (usage[SEAT].count, usage[SEAT].sessions) == (1, 1)  # served, then read in a tool call: one use
    if recorded:
        assert usage[PETS].count == 1 and sum(usage[PETS].outcomes) >= 1
        assert usage[SEAT].outcomes == usage[PETS].outcomes  # one outcome, linked to both
    else:
        assert PETS not in usage and sum(usage[SEAT].outcomes) == 0
    # the compaction the record's append began got as far as the summary only where it was killed after
    assert UseLedger(WorkspacePaths(root)).summary_path.exists() == (crash_at == "temp:ledger.jsonl")

    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            assert wait_for_task(client, accepted["task_id"])["status"] == "failed"  # interrupted
            again = [{"role": "user", "content": "And my seat?"}, reads(SEAT)]
            client.post("/api/v1/sessions/k1/messages/batch", json={"messages": again}).raise_for_status()
            task_id = client.post("/api/v1/sessions/k1/commit").json()["result"]["task_id"]
            assert wait_for_task(client, task_id)["status"] == "completed"
    finally:
        stop(proc)
    after = UseLedger(WorkspacePaths(root)).usage()
    assert after[FILLER].count == filler
    # the new commit's read is a new use when the first commit's outcome closed the old one; else
    # the session still had it open, and the read reports that same use
    assert after[SEAT].count == (2 if recorded else 1) and after[SEAT].sessions == 1
    assert sum(after[SEAT].outcomes) == sum(usage[SEAT].outcomes) + 1
