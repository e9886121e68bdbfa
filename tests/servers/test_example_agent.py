"""``examples/agent_loop.py`` end to end, as a user runs it: a subprocess on the ``openai`` SDK
against the fake OpenAI server and a real ``ovtui serve`` subprocess on 127.0.0.1. The first run
retrieves nothing it can use, does the task and commits; ovtui learns an experience from it. On a
default workspace (``[review] policy = "ask"``) it waits for review, as the example's docstring
says: a session before the approval retrieves the old experiences, and after ``ovtui review
approve`` and ``apply`` (the commands the docstring gives) the next one retrieves it; on a workspace
that applies without review it is in the commit's memory_diff at once. The session that retrieves
it reads it through its tool, and both uses are in the ledger, linked to its outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
from retrieval_support import ledger_uses
from server_support import start_cli_server, stop
from session_support import approving_sample_workspace
from workspace_support import build_sample_workspace

from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.wiring.workspace import Workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"
FIRST = "Please change the email of customer C-17 to kim@example.com"
SECOND = "Please change the email of customer C-99 to lee@example.org"


def run_agent(ovtui_url: str, model: FakeOpenAIServer, session_id: str, request: str) -> dict[str, Any]:
    env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--ovtui", ovtui_url, "--session", session_id, request],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["session_id"] == session_id and result["commit"]["status"] == "completed", result
    return result


def run_reading_agent(
    ovtui_url: str, model: FakeOpenAIServer, session_id: str, experience: str
) -> dict[str, Any]:
    """The second request, by a model that reads ``experience`` before it does the task."""
    model.push(
        Reply.tools(("read_memory", {"uri": experience})),
        Reply.tools(("update_email", {"customer_id": "C-99", "email": "lee@example.org"})),
        Reply.text("Done: the email of C-99 is now lee@example.org."),
    )
    return run_agent(ovtui_url, model, session_id, SECOND)


def read(client: httpx.Client, uri: str) -> Any:
    body = client.get("/api/v1/content/read", params={"uri": uri}).json()
    assert body["status"] == "ok", body
    return body["result"]


def test_the_example_agent_learns_from_its_first_session_and_uses_it_in_the_second(tmp_path: Path) -> None:
    root = approving_sample_workspace(tmp_path / "ws")  # plans are applied without review
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with FakeOpenAIServer() as model, httpx.Client(base_url=url, timeout=60) as client:
            model.push(
                Reply.tools(("update_email", {"customer_id": "C-17", "email": "kim@example.com"})),
                Reply.text("Done: the email of C-17 is now kim@example.com."),
            )
            first = run_agent(url, model, "first", FIRST)
            assert first["answer"].startswith("Done")
            diff = json.loads(read(client, first["commit"]["memory_diff_uri"]))
            learned = [
                op["uri"]
                for op in diff["operations"]["adds"] + diff["operations"]["updates"]
                if op["memory_type"] == "experiences"
            ]
            assert len(learned) == 1, diff["operations"]
            [experience] = learned
            assert experience not in first["retrieved"]
            assert "update_email" in read(client, experience)

            second = run_reading_agent(url, model, "second", experience)
            assert second["retrieved"][0] == experience
            shown = model.chat_requests[-3]  # the second session's first model call
            assert experience in shown.messages[0]["content"] and shown.messages[0]["role"] == "system"
            tool_answer = model.chat_requests[-2].messages[-1]
            assert tool_answer["role"] == "tool" and "update_email" in tool_answer["content"]

            session = client.get("/api/v1/sessions/second").json()["result"]
            assert session["archives"] == ["archive_001"]
    finally:
        stop(proc)

    assert [u.uri for u in ledger_uses(root, "second", "search")][:1] == [experience]
    assert [u.uri for u in ledger_uses(root, "second", "read")] == [experience]
    assert experience not in [u.uri for u in ledger_uses(root, "first", "search")]
    usage = Workspace(root).reading.memory_use(experience)
    assert usage is not None and usage.sessions == 1 and sum(usage.outcomes) == 1


def ovtui_cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_on_a_default_workspace_what_it_learned_waits_for_review_then_serves(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    assert 'policy = "ask"' in (root / "ovtui.toml").read_text()  # the default, nothing changed
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with FakeOpenAIServer() as model, httpx.Client(base_url=url, timeout=60) as client:
            model.push(
                Reply.tools(("update_email", {"customer_id": "C-17", "email": "kim@example.com"})),
                Reply.text("Done: the email of C-17 is now kim@example.com."),
            )
            first = run_agent(url, model, "first", FIRST)
            [plan_id] = first["waiting_for_review"]
            assert first["commit"]["pending_plans"] == [plan_id]
            diff = json.loads(read(client, first["commit"]["memory_diff_uri"]))
            written = diff["operations"]["adds"] + diff["operations"]["updates"]
            assert not [op for op in written if op["memory_type"] == "experiences"]  # not yet
            [item] = [
                i
                for i in Workspace(root).review.pending_plan(plan_id).plan.items
                if i.memory_type == "experiences"
            ]
            experience = f"viking://user/default/memories/experiences/{item.target_name}.md"

            model.push(
                Reply.tools(("update_email", {"customer_id": "C-99", "email": "lee@example.org"})),
                Reply.text("Done: the email of C-99 is now lee@example.org."),
            )
            before = run_agent(url, model, "before-review", SECOND)
            assert experience not in before["retrieved"]  # waiting: the old experiences only

            ovtui_cli("review", "approve", plan_id, "-w", str(root))
            ovtui_cli("review", "apply", plan_id, "-w", str(root))
            assert "update_email" in read(client, experience)

            after = run_reading_agent(url, model, "after-review", experience)
            assert after["retrieved"][0] == experience
    finally:
        stop(proc)
    assert [u.uri for u in ledger_uses(root, "after-review", "read")] == [experience]
