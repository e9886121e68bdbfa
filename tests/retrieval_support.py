"""For the retrieval routes' tests: a trained sample workspace with a peer's memories, served by a
real ``ovtui serve`` subprocess, and checks of OpenViking's envelope forms."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
from server_support import start_cli_server, stop
from workspace_support import build_sample_workspace

from ovtui.cli.main import main as cli_main
from ovtui.core.fileformat import render_memory
from ovtui.memory.ledger_state import Use, Via, parse, session_consumer
from ovtui.storage.paths import LEDGER_LOG_FILE

BOB_PREFERENCE = "Bob always wants an aisle seat near the front of the plane."
SECRET = "the-sentinel-outside-the-workspace"


def trained_sample(root: Path) -> Path:
    """The sample workspace after one offline training run (it learns an experience per graded
    request kind), plus a preference of peer bob."""
    build_sample_workspace(root)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    assert cli_main(["train", str(root)]) == 0
    folder = root / "peers" / "bob" / "memories" / "preferences"
    folder.mkdir(parents=True)
    (folder / "seating.md").write_text(
        render_memory(BOB_PREFERENCE, {"topic": "seating", "memory_type": "preferences"})
    )
    return root


def with_a_link_out(root: Path) -> Path:
    """``root`` with an experience that is a symlink to ``SECRET``'s file outside the workspace
    (``root``'s sibling folder ``outside``)."""
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    (root / "memories" / "experiences" / "escape.md").symlink_to(outside / "secret.md")
    return root


@contextmanager
def served(root: Path, *, env: dict[str, str] | None = None) -> Iterator[httpx.Client]:
    proc, url = start_cli_server(["serve", str(root), "--port", "0"], env=env)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            yield client
    finally:
        stop(proc)


def compact_ok(response: httpx.Response) -> Any:
    body = response.json()
    assert response.status_code == 200, body
    assert set(body) == {"status", "result"} and body["status"] == "ok", body
    return body["result"]


def full_ok(response: httpx.Response) -> Any:
    body = response.json()
    assert response.status_code == 200, body
    assert body == {
        "status": "ok",
        "result": body["result"],
        "error": None,
        "telemetry": None,
        "profile": None,
    }
    return body["result"]


def listing_ok(response: httpx.Response) -> tuple[list[Any], bool]:
    body = response.json()
    assert response.status_code == 200, body
    assert list(body) == ["status", "result", "error", "telemetry", "profile", "has_more"], body
    return body["result"], body["has_more"]


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == status, body
    assert body["status"] == "error" and body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


def ledger_uses(root: Path, session_id: str, via: Via) -> list[Use]:
    """The uses the ledger's log holds for the session, served ``via`` a route or tool."""
    log = root / LEDGER_LOG_FILE
    lines = log.read_text().splitlines() if log.is_file() else []
    records = [r for line in lines if line for r in parse(json.loads(line))[0]]
    consumer = session_consumer(session_id)
    return [r for r in records if isinstance(r, Use) and r.consumer == consumer and r.via == via]
