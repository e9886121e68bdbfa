"""Nothing outside the workspace, ever: a symbolic link at any path ovtui writes, pointing at a canary
outside, and every CLI command run once in a real process — the canary is unchanged and nothing
appears next to it.

The paths come from the code (the bookkeeping list in ``WorkspacePaths`` and the memory type
registry), and the commands from the CLI's own command table, so a new writer or command is covered.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from workspace_support import build_sample_workspace, watch_until_inbox_empty

from ovtui.cli.main import COMMANDS
from ovtui.core.context import ExecutionContext
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.memory.history import HistoryStore
from ovtui.memory.types import default_registry
from ovtui.storage.paths import BOOKKEEPING_FILES, BOOKKEEPING_FOLDERS, PEERS_DIR
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.wiring.workspace import Workspace

CONFIG = '[review]\npolicy = "all"\n[trainer]\nepochs = 1\nmax_wait_seconds = 0.2\n'
BAD_ROLLOUT = "bad.json"
CONVERSATION = "conversation.jsonl"  # beside the workspace: what a user commits comes from anywhere
# Runs the given commands one after the other through the real entry point, in this process, and
# prints each exit code (a real process per workspace: the open refusals make these quick).
DRIVER = """
import json, sys
from ovtui.cli.main import main
codes = []
for group in json.loads(sys.argv[1]):
    print("=== next workspace", file=sys.stderr, flush=True)
    codes.append([main(argv) for argv in group])
print(json.dumps(codes))
"""


def commands(ws: Path, record_id: str) -> list[list[str]]:
    """Every command once (the servers last: they run until interrupted or their input ends)."""
    w = str(ws)
    return [
        ["check", w],
        ["doctor", w],
        ["history", "-w", w],
        ["history", "show", "no_such_record", "-w", w],
        ["history", "show", record_id, "-w", w],
        ["train", w, "--limit", "2", "--no-eval", "--dry-run"],
        ["train", w, "--limit", "2", "--no-eval"],
        ["eval", w, "--split", "test", "--unseal"],
        ["compare", record_id, "current", "-w", w, "--html", str(ws.parent / "compare.html")],
        ["report", "-w", w, "--html", str(ws.parent / "report.html")],
        ["utility", "-w", w, "--yes"],
        ["revalidate", "-w", w, "--yes", "--force"],
        ["revert", record_id, "-w", w, "--force"],
        ["review", "list", "-w", w],
        ["review", "replan", "--all-stale", "-w", w],
        ["adherence", "-w", w],
        ["init", w],
        ["commit", w, str(ws.parent / CONVERSATION)],
        ["train", w, "--watch"],
        ["mcp", w],
        ["serve", w, "--port", "0"],
    ]


# Commands that open no workspace: `ovtui env` works on environments (it writes only the execution
# store of `env serve --state`, a folder of its own, and reads at most a config file).
NO_WORKSPACE = {"env"}


def test_the_command_list_covers_every_cli_command(tmp_path: Path) -> None:
    assert set(COMMANDS) - NO_WORKSPACE <= {argv[0] for argv in commands(tmp_path, "x")}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeOpenAIServer]:
    """The model endpoint ``ovtui doctor`` probes (the training itself stays offline)."""
    with FakeOpenAIServer(lambda request: Reply.json({"ok": True})) as server:
        yield server


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, endpoint: FakeOpenAIServer) -> tuple[Path, str, str]:
    """A sample workspace with one applied record, and a valid rollout's JSON for the inbox."""
    root = tmp_path_factory.mktemp("template") / "ws"
    build_sample_workspace(root)
    llm = f'[llm]\nbase_url = "{endpoint.base_url}"\nmax_retries = 0\n'
    (root / "ovtui.toml").write_text(CONFIG + llm, encoding="utf-8")
    workspace = Workspace(root)
    cases = generate_cases("train", 1, seed=11)
    rollouts = asyncio.run(
        SampleAgentExecutor().execute(cases, workspace.reading.experiences(), ExecutionContext("symlinks"))
    )
    from ovtui.cli.main import main

    assert main(["train", str(root), "--limit", "2", "--no-eval"]) == 0
    record_id = workspace.reading.history(kind="apply")[0].id
    return root, record_id, rollouts[0].model_dump_json()


def _copy(template: tuple[Path, str, str], tmp_path: Path) -> tuple[Path, str]:
    source, record_id, rollout = template
    ws = tmp_path / "ws"
    shutil.copytree(source, ws, symlinks=True)
    inbox = ws / "inbox" / "rollouts"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "good.json").write_text(rollout, encoding="utf-8")
    (inbox / BAD_ROLLOUT).write_text('{"messages": 3}', encoding="utf-8")
    messages = [
        {"role": "user", "content": "My name is Ada and I prefer aisle seats."},
        {"role": "user", "content": "My name is Alice. I prefer trains.", "peer_id": "alice"},
        {"role": "assistant", "content": "Noted, Ada."},
    ]
    (ws.parent / CONVERSATION).write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return ws, record_id


def _listing(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` with its content (files) or a marker (folders)."""
    out: dict[str, str] = {}
    for current, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.relpath(os.path.join(current, name), folder)] = "<dir>"
        for name in files:
            path = os.path.join(current, name)
            with open(path, encoding="utf-8") as handle:
                out[os.path.relpath(path, folder)] = handle.read()
    return out


def _link(ws: Path, rel: str, outside: Path, *, folder: bool) -> Path:
    """Replace ``ws/rel`` by a link to a fresh canary (a folder holding a file, or a file)."""
    path = ws / rel
    canary = outside / rel.replace("/", "__")
    if folder:
        canary.mkdir()
        (canary / "canary.txt").write_text(f"canary for {rel}\n", encoding="utf-8")
    else:
        canary.write_text(f"canary for {rel}\n" * 200, encoding="utf-8")
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(canary, target_is_directory=folder)
    return path


def _serve_until_ready(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A server in a real process, interrupted (Ctrl-C) once it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("http://127.0.0.1:"), first
        # The socket listens once the URL is printed: this answer waits until the app serves.
        with urllib.request.urlopen(first.strip() + "/health", timeout=30) as health:
            assert health.status == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(argv, proc.returncode, first + out, err)


def _run(argv: list[str], *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *argv], capture_output=True, text=True, timeout=timeout
    )


BOOKKEEPING = [(rel, True) for rel in BOOKKEEPING_FOLDERS] + [(rel, False) for rel in BOOKKEEPING_FILES]


def test_a_bookkeeping_link_leaving_the_workspace_is_refused_by_every_command(
    template: tuple[Path, str, str], tmp_path: Path
) -> None:
    """One workspace per bookkeeping path, that path a link to a canary outside; every command
    runs on each (one real process runs them all: the refusals are quick, a start-up is not)."""
    cases = []
    for n, (rel, folder) in enumerate(BOOKKEEPING):
        ws, record_id = _copy(template, tmp_path / f"case{n}")
        outside = tmp_path / f"case{n}" / "outside"
        outside.mkdir()
        link = _link(ws, rel, outside, folder=folder)
        cases.append((rel, link, outside, _listing(outside), commands(ws, record_id)))
    groups = [argvs for *_, argvs in cases]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(groups)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    errors = done.stderr.split("=== next workspace\n")[1:]
    assert len(codes) == len(errors) == len(cases)
    for (rel, link, outside, before, argvs), got, stderr in zip(cases, codes, errors, strict=True):
        assert got == [2] * len(argvs), (rel, stderr)
        assert _listing(outside) == before, rel
        refusals = [line for line in stderr.splitlines() if "outside the workspace" in line]
        assert len(refusals) == len(argvs) - 1, (rel, stderr)  # init refuses first: already a workspace
        assert all(str(link) in line for line in refusals), (rel, stderr)


def test_links_below_the_bookkeeping_are_never_followed(
    template: tuple[Path, str, str], tmp_path: Path
) -> None:
    """Links the opening check does not look at (memory folders, per-file paths) are refused by
    each writer: every command runs, writes only inside, and the canaries stay as they were."""
    ws, record_id = _copy(template, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    registry = default_registry()
    # Every memory folder but the policy's own (linked out, training stops at once: the next test),
    # and the peers' spaces (the committed conversation has a peer's memories).
    folders = list(dict.fromkeys(registry.get(t).directory for t in registry.names() if t != "experiences"))
    folders.append(PEERS_DIR)
    for rel in folders:
        _link(ws, rel, outside, folder=True)
    _link(ws, f"inbox/rejected/{BAD_ROLLOUT}.reason.txt", outside, folder=False)
    before = _listing(outside)
    results = {}
    for argv in commands(ws, record_id):
        if argv[:2] == ["train", str(ws)] and "--watch" in argv:
            results[" ".join(argv)] = watch_until_inbox_empty(ws)
        elif argv[0] == "serve":
            results[" ".join(argv)] = _serve_until_ready(argv)
        else:
            results[" ".join(argv)] = _run(argv)
    assert _listing(outside) == before
    for command, done in results.items():
        assert "Traceback" not in done.stderr, (command, done.stderr)
    assert results[f"doctor {ws}"].returncode == 0, results[f"doctor {ws}"].stderr
    # The writes were tried, and refused by name.
    trained = results[f"train {ws} --limit 2 --no-eval"]
    assert "memories/trajectories/" in trained.stderr and "lies outside the workspace" in trained.stderr
    committed = results[f"commit {ws} {ws.parent / CONVERSATION}"]
    assert "peers/alice/memories/profile.md" in committed.stdout + committed.stderr, committed
    assert "symbolic link" in committed.stdout + committed.stderr
    watched = results[f"train {ws} --watch"].stderr
    assert "rejected inbox/rollouts/bad.json" in watched
    # The inbox was handled inside: the link where its reason would go is left as it is (never
    # written through), and the rejected file is kept under another name, its reason beside it.
    rejected = ws / "inbox" / "rejected"
    assert (rejected / f"{BAD_ROLLOUT}.reason.txt").is_symlink()
    [kept] = [p for p in rejected.glob("bad.*.json")]
    assert "not a valid Rollout" in (rejected / f"{kept.name}.reason.txt").read_text()


def test_a_policy_folder_leading_outside_stops_training_before_anything_is_written(
    template: tuple[Path, str, str], tmp_path: Path
) -> None:
    ws, _record_id = _copy(template, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    _link(ws, default_registry().get("experiences").directory, outside, folder=True)
    before = _listing(outside)
    done = _run(["train", str(ws), "--limit", "2", "--no-eval"])
    assert done.returncode == 2 and "lies outside the workspace" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and _listing(outside) == before


# --- each writer on its own ----------------------------------------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n" * 400, encoding="utf-8")
    return path


def test_the_lock_holder_file_is_never_written_through_a_link(tmp_path: Path, victim: Path) -> None:
    from ovtui.core.errors import UnsafePathError
    from ovtui.storage.locks import WorkspaceLock

    root = tmp_path / "ws"
    (root / ".ovtui").mkdir(parents=True)
    (root / ".ovtui" / "lock.holder").symlink_to(victim)
    lock = WorkspaceLock(root / ".ovtui", root=root, timeout=1)
    with pytest.raises(UnsafePathError, match=r"lock\.holder"):
        lock.acquire("test")
    assert victim.read_text(encoding="utf-8") == "precious\n" * 400
    (root / ".ovtui" / "lock.holder").unlink()
    with lock.hold("test"):  # the failed attempt gave the lock back
        pass


def test_a_lock_file_link_is_refused_by_name(tmp_path: Path, victim: Path) -> None:
    from ovtui.core.errors import UnsafePathError
    from ovtui.storage.locks import WorkspaceLock

    root = tmp_path / "ws"
    (root / ".ovtui").mkdir(parents=True)
    (root / ".ovtui" / "lock").symlink_to(victim)
    with pytest.raises(UnsafePathError, match=r"lock is a symbolic link"):
        WorkspaceLock(root / ".ovtui", root=root, timeout=1).acquire("test")
    assert victim.read_text(encoding="utf-8") == "precious\n" * 400


def test_every_fsio_writer_refuses_a_final_link_or_a_folder_link_leading_outside(
    tmp_path: Path, victim: Path
) -> None:
    from ovtui.core.errors import UnsafePathError
    from ovtui.storage import fsio

    root = tmp_path / "ws"
    root.mkdir()
    (root / "file_link").symlink_to(victim)
    (root / "dir_link").symlink_to(victim.parent, target_is_directory=True)
    (root / "plain.txt").write_text("mine", encoding="utf-8")
    writers: dict[str, Callable[[Path], object]] = {
        "atomic_write_text": lambda p: fsio.atomic_write_text(p, "x", root=root),
        "remove_file": lambda p: fsio.remove_file(p, root=root),
        "open_in_place": lambda p: os.close(fsio.open_in_place(p, os.O_WRONLY | os.O_APPEND, root=root)),
        "make_dirs": lambda p: fsio.make_dirs(p, root=root),
        "move_file into": lambda p: fsio.move_file(root / "plain.txt", p, root=root),
        "move_file from": lambda p: fsio.move_file(p, root / "moved.txt", root=root),
    }
    for name, write in writers.items():
        for target in (root / "file_link", root / "dir_link" / "victim.txt", root / "dir_link" / "new"):
            with pytest.raises(UnsafePathError):
                write(target)
                pytest.fail(f"{name} wrote {target}")
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert victim.read_text(encoding="utf-8") == "precious\n" * 400
    # A link that stays inside the workspace is fine.
    (root / "inner").mkdir()
    (root / "inner_link").symlink_to(root / "inner", target_is_directory=True)
    fsio.atomic_write_text(root / "inner_link" / "a.txt", "ok", root=root)
    assert (root / "inner" / "a.txt").read_text(encoding="utf-8") == "ok"


def test_the_history_index_is_not_appended_through_a_link(tmp_path: Path, victim: Path) -> None:
    from ovtui.core.errors import UnsafePathError
    from ovtui.memory.history import HistoryEntry
    from ovtui.storage.paths import WorkspacePaths

    root = tmp_path / "ws"
    (root / "history").mkdir(parents=True)
    (root / "history" / "index.jsonl").symlink_to(victim)
    history = HistoryStore(WorkspacePaths(root))
    with pytest.raises(UnsafePathError):
        history.append_index(HistoryEntry(id="20260101T000000000000_abcdef", extracted_at="", kind="apply"))
    assert victim.read_text(encoding="utf-8") == "precious\n" * 400


def test_a_history_listing_repairs_the_index_only_while_holding_the_lock(
    template: tuple[Path, str, str], tmp_path: Path
) -> None:
    from ovtui.memory.store import MemoryStore

    ws, record_id = _copy(template, tmp_path)
    store = MemoryStore.open(ws)
    index = ws / "history" / "index.jsonl"
    index.unlink()
    with store.lock.hold("someone else's apply"):
        assert record_id in HistoryStore(store.paths).entries()  # listed from the folders anyway
        assert not index.exists()  # and nothing written without the lock
    assert record_id in HistoryStore(store.paths).entries()
    assert record_id in index.read_text(encoding="utf-8")
