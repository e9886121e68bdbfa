"""A session committed through a real ``ovtui serve`` is counted in the adherence of the
experience it was served (a search with its id) and of the one it read through its own tool call:
the directives its tool calls broke are named, with the session as the trajectory that broke them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
from server_support import start_cli_server, stop, wait_for_task
from workspace_support import build_sample_workspace

from ovtui.storage.paths import WorkspacePaths
from ovtui.train.adherence.store import AdherenceStore

EXP = "viking://user/default/memories/experiences"
RULES = f"{EXP}/cancellation_rules.md"
PETS = f"{EXP}/pet_travel_request.md"
BODY = """## Situation
- The customer wants to cancel a booking and get a refund of the reservation.
## Approach
- ALWAYS call get_reservation before cancel_reservation
## Reflect
- NEVER call refund_payment

<!-- MEMORY_FIELDS
{
  "experience_name": "cancellation_rules",
  "status": "production",
  "version": 1,
  "memory_type": "experiences"
}
-->"""


def call(tool: str, n: int, output: str = '{"ok": true}') -> dict[str, Any]:
    part = {"type": "tool", "tool_id": f"c{n}", "tool_name": tool, "tool_input": {}, "tool_output": output}
    return {"role": "assistant", "parts": [part]}


def test_a_committed_session_is_counted(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "memories/experiences/cancellation_rules.md").write_text(BODY)
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            request = {
                "role": "user",
                "content": "Please cancel my booking ABC123 and refund the reservation.",
            }
            client.post("/api/v1/sessions/s1/messages", json=request).raise_for_status()
            found = client.post(
                "/api/v1/search/search",
                json={"query": "cancel a booking and refund it", "session_id": "s1", "limit": 5},
            ).json()["result"]
            assert RULES in [hit["uri"] for hit in found["memories"]]
            read = {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool",
                        "tool_id": "r1",
                        "tool_name": "openviking_read",
                        "tool_input": {"uri": PETS},
                        "tool_output": "…",
                    }
                ],
            }
            broke = [read, call("cancel_reservation", 2), call("refund_payment", 3)]
            client.post("/api/v1/sessions/s1/messages/batch", json={"messages": broke}).raise_for_status()
            task_id = client.post("/api/v1/sessions/s1/commit").json()["result"]["task_id"]
            assert wait_for_task(client, task_id)["status"] == "completed"
    finally:
        stop(proc)

    record = AdherenceStore(WorkspacePaths(root)).read().experiences
    rules = record[RULES]
    assert (rules.uses, rules.violated) == (1, 1)
    broken = {d.line: d for d in rules.directives}
    for line in ("ALWAYS call get_reservation before cancel_reservation", "NEVER call refund_payment"):
        assert broken[line].violated == 1
        assert [v.trajectory for v in broken[line].violations] == ["session:s1"]
    assert record[PETS].uses == 1 and record[PETS].violated == 0  # read, and nothing it says was broken
