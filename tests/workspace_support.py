"""A small generic workspace for tests (used by the ``tmp_workspace`` fixture in conftest.py).

Tests import helpers from here, never from ``conftest`` (several conftest modules share that name)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from watchfiles import watch

from ovtui.core.fileformat import render_memory
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.train.review.pending import PendingPlans
from ovtui.wiring.composition import Composition
from ovtui.wiring.workspace import Workspace

USER = "default"
PREFIX = f"viking://user/{USER}/"

EXPERIENCES: dict[str, tuple[str, dict[str, Any]]] = {
    "reservation_cancellation": (
        "## Situation\n- Customer asks to cancel a booking\n## Approach\n- Look the reservation up first\n"
        "## Reflect\n- NEVER cancel before explicit confirmation",
        {"status": "production", "version": 2},
    ),
    "refund_status": (
        "## Situation\n- Customer asks where a refund is\n## Approach\n- Find the order, then the refund\n"
        "## Reflect\n- ALWAYS give the expected date",
        {"status": "draft", "version": 1},
    ),
    "address_change": (
        "## Situation\n- Customer moved\n## Approach\n- Verify identity, then update the address\n"
        "## Reflect\n- none yet",
        {"version": 3},
    ),
}

TRAJECTORIES = {
    "cancel_reservation_20261129120000": (
        "## Task\n- cancel\n## Steps\n1. lookup\n## Outcome\n- success",
        "success",
    ),
    "refund_lookup_20261129120500": (
        "## Task\n- refund\n## Steps\n1. find_order\n## Outcome\n- failure",
        "failure",
    ),
}


def experience_uri(name: str) -> str:
    return f"{PREFIX}memories/experiences/{name}.md"


def trajectory_uri(name: str) -> str:
    return f"{PREFIX}memories/trajectories/{name}.md"


def build_workspace(root: Path) -> Path:
    """A workspace with three experiences and two trajectories, as plain files."""
    exp_dir = root / "memories" / "experiences"
    traj_dir = root / "memories" / "trajectories"
    exp_dir.mkdir(parents=True)
    traj_dir.mkdir(parents=True)
    for name, (content, extra) in EXPERIENCES.items():
        fields = {"experience_name": name, "memory_type": "experiences", **extra}
        (exp_dir / f"{name}.md").write_text(render_memory(content, fields), encoding="utf-8")
    for name, (content, outcome) in TRAJECTORIES.items():
        fields = {
            "trajectory_name": name.rsplit("_", 1)[0],
            "memory_type": "trajectories",
            "outcome": outcome,
        }
        (traj_dir / f"{name}.md").write_text(render_memory(content, fields), encoding="utf-8")
    return root


def memory_of(workspace: Workspace) -> MemoryStore:
    """The workspace's memory opened on its own, as another process opens it: for a test to leave
    what a run or an agent would have left, or to look at the files (the product uses the facade)."""
    return MemoryStore.open(workspace.root, workspace.config.workspace.user)


def plans_of(workspace: Workspace) -> PendingPlans:
    """The workspace's pending plans, for a test to park what a run would have parked."""
    return PendingPlans(memory_of(workspace))


def history_of(workspace: Workspace) -> HistoryStore:
    """The workspace's history records on disk, for a test to write or count them directly."""
    return HistoryStore(memory_of(workspace).paths)


def kernel_of(workspace: Workspace) -> Composition:
    """The kernel's components composed for the workspace as its use cases compose them, for a test
    of one component (an engine with a component swapped, a case source, a trainer's factory)."""
    return Composition(workspace.config, memory_of(workspace))


def llm_sample_workspace(root: Path, base_url: str, key_env: str) -> None:
    """The sample workspace trained by the LLM backend at ``base_url`` (batches of 4, all approved)."""
    build_sample_workspace(root)
    (root / "ovtui.toml").write_text(
        f'[llm]\nbackend = "openai"\nbase_url = "{base_url}"\nmodel = "fake-model"\n'
        f'api_key_env = "{key_env}"\nmax_retries = 1\ntimeout = 10\n'
        '[trainer]\nbatch_size = 4\n[review]\npolicy = "all"\n'
    )


def build_sample_workspace(root: Path) -> Path:
    """A fresh sample workspace written from the package's sample data, exactly as
    ``ovtui init DIR --sample`` writes it. Tests never copy the repository's folder: its state is
    whatever a user last did to it."""
    from ovtui.cli.init import init_workspace

    init_workspace(root, sample=True)
    return root


@functools.cache
def pristine_sample() -> Path:
    """One sample workspace per test process, written from the package's data, for tests that only
    read it (tests that write build their own with ``build_sample_workspace``)."""
    parent = Path(tempfile.mkdtemp(prefix="ovtui-sample-"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    return build_sample_workspace(parent / "sample")


def watch_until_inbox_empty(ws: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ovtui train WS --watch`` in a real process, interrupted (Ctrl-C) once the inbox is empty;
    with a crash hook in ``env`` it may end by itself first (SIGKILL)."""
    inbox = ws / "inbox" / "rollouts"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "train", str(ws), "--watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the watcher says when it is watching
            if "watching" in line:
                break
        if any(inbox.glob("*.json")) and proc.poll() is None:
            for _changes in watch(inbox, rust_timeout=500, yield_on_timeout=True):
                if not any(inbox.glob("*.json")) or proc.poll() is not None:
                    break
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# Files a person or a writer leaves in an inbox folder that are not its input: quarantined, or left
# alone while a writer still writes them under a temporary name (name → content).
INBOX_OTHER_FILES = {"notes.txt": "to do: ask about refunds\n", "README": "what goes here\n"}
INBOX_PARTIAL_FILES = {
    ".chat.jsonl.swp": "vim swap",
    "chat.jsonl~": "emacs backup",
    "#chat.jsonl#": "emacs autosave",
    "upload.jsonl.tmp": '{"role": "user"',
    "upload.json.part": '{"case": ',
    ".hidden": "dot-file",
}


def drop_other_files(folder: Path) -> None:
    """Every file of ``INBOX_OTHER_FILES`` and ``INBOX_PARTIAL_FILES`` into ``folder``, and one of
    each kind in a folder below it (left alone: only the folder's own files are input)."""
    below = folder / "kept"
    below.mkdir(parents=True, exist_ok=True)
    for name, text in {**INBOX_OTHER_FILES, **INBOX_PARTIAL_FILES}.items():
        (folder / name).write_text(text)
        (below / name).write_text(text)


def check_other_files(folder: Path, rejected: Path, takes: str) -> None:
    """After ``drop_other_files``: the other files are in ``rejected`` as given, each with a reason
    naming it and what the folder takes; the partial ones and the folder below are untouched."""
    for name, text in INBOX_OTHER_FILES.items():
        assert not (folder / name).exists(), name
        assert (rejected / name).read_text() == text
        reason = (rejected / f"{name}.reason.txt").read_text()
        assert reason.startswith(f"{name}: not a ") and takes in reason, reason
    for name, text in INBOX_PARTIAL_FILES.items():
        assert (folder / name).read_text() == text, name
        assert not (rejected / name).exists()
    assert sorted(p.name for p in (folder / "kept").iterdir()) == sorted(
        {**INBOX_OTHER_FILES, **INBOX_PARTIAL_FILES}
    )
