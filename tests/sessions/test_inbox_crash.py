"""A server SIGKILLed right after accepting a commit, restarted on the same workspace: the task is
failed (interrupted) or completed, never torn. ``ovtui commit`` and the watched
``inbox/sessions/`` (bad files quarantined with a reason)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2 as httpx
from cli_support import run_ovtui
from server_support import start_cli_server, stop
from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.cli.main import main as cli_main
from ovtui.core.context import RunContext
from ovtui.core.events import EventBus
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.wiring.workspace import Workspace


def _approve_all(root: Path) -> Path:
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    return root


def test_sigkill_mid_commit_then_restart(tmp_path: Path) -> None:
    root = _approve_all(build_sample_workspace(tmp_path / "ws"))
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            client.post(
                "/api/v1/sessions/k1/messages/batch", json={"messages": CONVERSATION}
            ).raise_for_status()
            accepted = client.post("/api/v1/sessions/k1/commit").json()["result"]
        proc.kill()  # SIGKILL while phase 2 runs (or just after it finished)
        proc.wait(timeout=10)
    finally:
        stop(proc)
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            task = client.get(f"/api/v1/tasks/{accepted['task_id']}").json()["result"]
    finally:
        stop(proc)
    archive = root / "sessions/k1/history/archive_001"
    assert len((archive / "messages.jsonl").read_text().splitlines()) == len(CONVERSATION)  # archive kept
    assert task["status"] in ("failed", "completed"), task
    if task["status"] == "completed":
        assert (
            MemoryDiff.model_validate_json((archive / "memory_diff.json").read_text()).kind
            == "session_commit"
        )
    else:
        assert "interrupted" in task["error"]
    assert cli_main(["check", str(root)]) == 0  # no torn memory file, journal rolled forward


def test_ovtui_commit_file(tmp_path: Path, capsys: object) -> None:
    root = _approve_all(build_sample_workspace(tmp_path / "ws"))
    conversation = tmp_path / "support-42.jsonl"
    conversation.write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    assert cli_main(["commit", str(root), str(conversation)]) == 0
    assert (root / "sessions/support-42/history/archive_001/memory_diff.json").is_file()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n')
    assert cli_main(["commit", str(root), str(bad)]) == 2
    assert not (root / "sessions/bad").exists()


def test_ovtui_commit_of_a_folder_says_it_is_not_a_file(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (tmp_path / "chats.jsonl").mkdir()
    done = run_ovtui("commit", str(root), "chats.jsonl", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and done.stderr == "ovtui: error: chats.jsonl: not a file\n"  # "no such file"


def test_inbox_sessions_commits_and_quarantines(tmp_path: Path) -> None:
    root = _approve_all(build_sample_workspace(tmp_path / "ws"))
    incoming = root / "inbox/sessions"
    incoming.mkdir(parents=True, exist_ok=True)
    (incoming / "good.jsonl").write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    (incoming / "broken.jsonl").write_text('{"role": "user", "content": "hi"}\nnot json\n')
    (incoming / "con.jsonl").write_text('{"role": "user", "content": "hi"}\n')

    async def run() -> None:
        workspace = Workspace(root)
        committer = workspace.parts.session_committer(RunContext())
        inbox = workspace.agent.session_inbox(committer, EventBus())
        inbox.scan()
        await inbox.drain()
        await committer.close()
        assert inbox.processed == 1 and inbox.rejected_count == 2

    asyncio.run(run())
    assert (root / "sessions/good/history/archive_001/memory_diff.json").is_file()
    assert (root / "inbox/done/good.jsonl").is_file()
    reason = (root / "inbox/rejected/broken.jsonl.reason.txt").read_text()
    assert "broken.jsonl:2" in reason
    assert "session_id" in (root / "inbox/rejected/con.jsonl.reason.txt").read_text()
    assert not (root / "sessions/con").exists()
