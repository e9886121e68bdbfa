"""A conversation file is stored as the session API stores its messages: turn fields kept, and a
user message of several tool results split into one message per result."""

from __future__ import annotations

import json
from pathlib import Path

from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.cli.main import main as cli_main


def test_a_committed_file_keeps_turn_fields_and_splits_a_transport_aggregate(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    results = [
        {"type": "tool", "tool_id": f"r{n}", "tool_name": "read", "tool_output": f"out {n}"} for n in (1, 2)
    ]
    aggregate = {"role": "user", "parts": results, "turn_id": "t9", "source_message_ids": ["r1", "r2"]}
    conversation = tmp_path / "split-1.jsonl"
    conversation.write_text("".join(json.dumps(m) + "\n" for m in [*CONVERSATION, aggregate]))
    assert cli_main(["commit", str(root), str(conversation)]) == 0
    archived = root / "sessions/split-1/history/archive_001/messages.jsonl"
    lines = [json.loads(line) for line in archived.read_text().splitlines()]
    assert len(lines) == len(CONVERSATION) + 2
    split = [
        (m["parts"][0]["tool_id"], m["turn_id"], m["message_kind"], m["source_message_ids"])
        for m in lines[-2:]
    ]
    assert split == [
        ("r1", "t9", "tool_transport", ["r1", "r2"]),
        ("r2", "t9", "tool_transport", ["r1", "r2"]),
    ]
    assert all("turn_id" not in m for m in lines[:-2])
