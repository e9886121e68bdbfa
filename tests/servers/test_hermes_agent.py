"""A real third-party OpenViking client against a real ``ovtui serve``: Hermes Agent's memory provider
(``plugins/memory/openviking`` of the released ``hermes-agent`` wheel, unmodified), driven in a
subprocess the way Hermes calls it (tests/fixtures/hermes_driver.py): setup's probe, the system-prompt
block, every tool, a remembered fact and the built-in memory's mirror, turns synced one at a time and
the session's commit; then a second user whose facts must not land in the first one's space; and
API-key mode, where setup's probe takes the key for a user's (not ROOT) and writes go to its user.

The wheel is installed with ``--no-deps`` (its own dependencies would downgrade ours) into a folder
of its own, with the two modules its provider imports (PyYAML, classic httpx), and put on the driver's
``PYTHONPATH`` only; a machine that cannot reach a package index skips, saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from repo_paths import REPO
from retrieval_support import compact_ok, served
from server_support import start_cli_server, stop
from workspace_support import build_sample_workspace

HERMES_WHEEL = "hermes-agent==0.19.0"
PROVIDER_NEEDS = ("pyyaml", "httpx")  # what plugins/memory/openviking imports besides the wheel
SITE_CACHE = REPO / ".pytest_cache" / "hermes-agent-0.19.0"
DRIVER = REPO / "tests" / "fixtures" / "hermes_driver.py"
HERMES = {"X-OpenViking-Actor-Peer": "hermes"}


def pip_install(target: Path, *args: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--target",
            str(target),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip() and "is ignored" not in line]
        pytest.skip(f"pip could not install {' '.join(args)}: {lines[-1] if lines else done.returncode}")


@pytest.fixture(scope="module")
def hermes_site() -> Path:
    """A folder holding the hermes-agent wheel and its provider's imports (kept between runs)."""
    marker = SITE_CACHE / "hermes_agent-0.19.0.dist-info"
    if not marker.is_dir():
        partial = SITE_CACHE.with_name(SITE_CACHE.name + ".partial")
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        pip_install(partial, "--no-deps", HERMES_WHEEL)
        pip_install(partial, *PROVIDER_NEEDS)
        subprocess.run(["rm", "-rf", str(SITE_CACHE)], check=True)
        partial.rename(SITE_CACHE)
    return SITE_CACHE


@pytest.fixture(scope="module")
def alice_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_sample_workspace(tmp_path_factory.mktemp("hermes") / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('user = "default"', 'user = "alice"'))
    return root


@pytest.fixture(scope="module")
def client(alice_workspace: Path) -> Iterator[httpx.Client]:
    with served(alice_workspace) as client:
        yield client


def drive(
    site: Path, client: httpx.Client, home: Path, scenario: str, user: str, **more: str
) -> dict[str, Any]:
    home.mkdir(exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENVIKING_", "PYTHON"))},
        "PYTHONPATH": str(site),
        "HERMES_HOME": str(home),
        "HOME": str(home),
        "OPENVIKING_ENDPOINT": str(client.base_url).rstrip("/"),
        "OPENVIKING_ACCOUNT": "default",
        "OPENVIKING_USER": user,
    }
    env.update(more)
    done = subprocess.run(
        [sys.executable, str(DRIVER), scenario], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_hermes_agent_memory_provider_works_unchanged(
    hermes_site: Path, client: httpx.Client, alice_workspace: Path, tmp_path: Path
) -> None:
    report = drive(hermes_site, client, tmp_path / "alice", "session", "alice")
    assert report["setup"] == [True, "", None]  # `hermes memory setup` accepts the server
    assert report["prompt_block"].startswith("# OpenViking Knowledge Base\nActive.")  # not the fallback
    assert [e["uri"] for e in report["browse_root"]["entries"]] == ["viking://user"]
    assert report["remember"]["status"] == "stored", report["remember"]
    remembered = report["remembered_uri"]
    assert remembered.startswith("viking://user/alice/peers/hermes/memories/preferences/mem_"), report[
        "search"
    ]
    assert "window seats" in json.dumps(report["read"])
    assert "window seats" in report["prefetch"] and "[preferences]" in report["prefetch"]
    assert report["forget"]["status"] == "deleted" and report["forget"]["uri"] == remembered
    assert "NOT_FOUND" in json.dumps(report["read_after_forget"])
    assert not list((alice_workspace / "peers/hermes/memories/preferences").glob("mem_*window*"))
    # Resources are not ovtui's: the client shows the refusal in one line.
    refusal = report["add_resource"]["error"]
    assert refusal.startswith("NOT_IMPLEMENTED: resources are not served by ovtui") and "\n" not in refusal

    # The built-in memory's mirror (a thread of its own) landed and is found.
    mirror = compact_ok(
        client.post("/api/v1/search/find", json={"query": "frequent flyer tier gold"}, headers=HERMES)
    )
    assert any("/preferences/mem_" in hit["uri"] for hit in mirror["memories"]), mirror

    # The session's end committed the turns Hermes synced one at a time.
    answer = client.get("/api/v1/sessions/hermes-s1")
    assert answer.status_code == 200, answer.text
    session = answer.json()["result"]
    assert session["commit_count"] == 1, session


def test_another_user_never_writes_into_alices_space(
    hermes_site: Path, client: httpx.Client, alice_workspace: Path, tmp_path: Path
) -> None:
    report = drive(hermes_site, client, tmp_path / "bob", "remember", "bob")
    assert "PERMISSION_DENIED" in report["remember"]["error"] and "'bob'" in report["remember"]["error"]
    written = [p.read_text() for p in alice_workspace.rglob("*.md") if "/sessions/" not in str(p)]
    assert not any("Bob" in text for text in written)


def test_api_key_mode_setup_accepts_the_server_and_writes_the_keys_user(
    hermes_site: Path, tmp_path: Path
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    args = ["serve", str(root), "--port", "0", "--api-key-env", "OVTUI_TEST_KEY"]
    proc, url = start_cli_server(args, env={"OVTUI_TEST_KEY": "sekret-key"})
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/health").json()["auth_mode"] == "api_key"
            report = drive(
                hermes_site, client, tmp_path / "keyed", "keyed", "", OPENVIKING_API_KEY="sekret-key"
            )
    finally:
        stop(proc)
    assert report["setup"] == [True, "", "user"]  # a user's key: the admin probe is refused, not ROOT
    assert report["remember"]["status"] == "stored", report["remember"]
    assert list((root / "peers/hermes/memories/preferences").glob("mem_*.md"))


def test_a_declared_user_remembers_into_a_space_of_its_own(hermes_site: Path, tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('user = "default"', 'user = "alice"\nusers = ["bob"]'))
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            report = drive(hermes_site, client, tmp_path / "bob", "remember", "bob")
    finally:
        stop(proc)
    assert report["remember"]["status"] == "stored", report["remember"]
    bobs = [p.read_text() for p in (root / "users/bob/peers/hermes/memories/preferences").rglob("mem_*.md")]
    assert any("My name is Bob." in text for text in bobs), bobs
    alices = [p for p in root.rglob("*.md") if "users" not in p.relative_to(root).parts]
    assert not any("Bob" in p.read_text() for p in alices)
