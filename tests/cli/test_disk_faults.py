"""Every command under a failing disk, in a real process: a full disk, no permission, a read-only
file system and a vanished file, injected at every write (or every read) through the fault seam of
``ovtui.storage.faults``. Each answers in one line naming the file and the cause (no traceback),
fails where it had to write and works where it only reads, and leaves every file whole.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_support import run_ovtui

from ovtui.checks.workspace import check_workspace
from ovtui.storage.faults import FAULT_ENV
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.wiring.workspace import memory_to_check

CONVERSATION = [
    {"role": "user", "content": "I want a refund for my cancelled flight"},
    {"role": "assistant", "content": "I have asked for the refund; it reaches your card in a week."},
]
NOTHING_DONE = {"task_id": "1", "tool_calls": [], "assistant_texts": [], "termination": "agent_stop"}
WRITE_FAULTS = ("ENOSPC", "EACCES", "EROFS", "ENOENT")
READ_FAULTS = ("EACCES", "ENOENT")


@dataclass(frozen=True)
class Base:
    folder: Path  # holds ws/ (with plans waiting and a record), chat.jsonl and rollouts.jsonl
    waiting: str  # a plan nobody decided
    approved: str  # a plan with every item approved, not applied
    record: str  # a history record


@dataclass(frozen=True)
class Command:
    name: str
    argv: Callable[[Base, str], list[str]]  # given the base and the workspace's path
    writes: bool  # False: only reads, so it works on a disk that takes no writes
    # What a read fault hits, under the copy's folder: by default all of the workspace but its
    # ovtui.toml (a configuration that cannot be read stops every command the same way, early).
    reads: str = "ws/[!o]*"


COMMANDS = [
    Command("train", lambda b, w: ["train", w, "--epochs", "1", "--limit", "4", "--approve", "all"], True),
    Command("eval", lambda b, w: ["eval", w], True),
    Command("check", lambda b, w: ["check", w], False),
    # An offline workspace's doctor probes no endpoint (its backend calls no model): it only reads.
    Command("doctor", lambda b, w: ["doctor", w], False),
    Command("history", lambda b, w: ["history", w], False),
    Command("history show", lambda b, w: ["history", "show", b.record, "-w", w], False),
    Command("revert", lambda b, w: ["revert", b.record, "-w", w], True),
    Command("review list", lambda b, w: ["review", "list", "-w", w], False),
    Command("review show", lambda b, w: ["review", "show", b.waiting, "-w", w], False),
    Command("review approve", lambda b, w: ["review", "approve", b.waiting, "-w", w], True),
    Command("review apply", lambda b, w: ["review", "apply", b.approved, "-w", w], True),
    Command("review reject", lambda b, w: ["review", "reject", b.waiting, "-w", w], True),
    Command("review discard", lambda b, w: ["review", "discard", b.waiting, "-w", w], True),
    Command("review replan", lambda b, w: ["review", "replan", b.waiting, "-w", w], True),
    Command("init", lambda b, w: ["init", str(Path(w).parent / "new"), "--sample"], True),
    Command("commit", lambda b, w: ["commit", w, str(Path(w).parent / "chat.jsonl")], True, "chat.jsonl"),
    Command(
        "env score",
        lambda b, w: ["env", "score", "tau2-airline", str(Path(w).parent / "rollouts.jsonl")],
        False,
        "rollouts.jsonl",
    ),
    Command("env list", lambda b, w: ["env", "list"], False),
    Command("env cases", lambda b, w: ["env", "cases", "tau2-airline", "--split", "test"], False),
    Command("compare", lambda b, w: ["compare", b.record, "current", "-w", w], True),
    Command("report", lambda b, w: ["report", "-w", w, "--html", str(Path(w) / "report.html")], True),
    Command("serve", lambda b, w: ["serve", w, "--port", "0"], True),
]
# Runs each (folder, fault, argv) through the real entry point in this one process, in that folder
# with that fault injected, and prints what each printed and returned (a traceback counts as printed):
# one process per command, not per fault, keeps the matrix quick.
DRIVER = """
import contextlib, io, json, os, sys, traceback
from ovtui.cli.main import main
from ovtui.storage.faults import Fault, set_fault
out = sys.stdout
results = []
for folder, fault, argv in json.loads(sys.argv[1]):
    os.chdir(folder)
    set_fault(Fault.parse(fault) if fault else None)
    printed, said = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
        try:
            code = main(argv)
        except BaseException:
            traceback.print_exc()
            code = -1
    set_fault(None)
    results.append([code, printed.getvalue(), said.getvalue()])
out.write(json.dumps(results))
"""


def _ovtui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = run_ovtui(*args, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeOpenAIServer]:
    """The model endpoint ``ovtui doctor`` probes (the training itself stays offline)."""
    with FakeOpenAIServer(lambda request: Reply.json({"ok": True})) as server:
        yield server


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, endpoint: FakeOpenAIServer) -> Base:
    """A trained workspace with a record that can be reverted, a plan waiting for a decision and an
    approved one that can be applied; a conversation and recorded rollouts beside it."""
    folder = tmp_path_factory.mktemp("faults")
    ws = str(folder / "ws")
    _ovtui("init", ws, "--sample", cwd=folder)
    config = folder / "ws" / "ovtui.toml"
    endpoint_lines = f'[llm]\nbase_url = "{endpoint.base_url}"\nmax_retries = 0\n'
    config.write_text(config.read_text().replace("[llm]\n", endpoint_lines, 1))
    _ovtui("train", ws, "--epochs", "1", "--limit", "4", "--approve", "all", "--no-eval", cwd=folder)
    (record,) = [p.name for p in (folder / "ws/history").iterdir() if p.is_dir()]
    _ovtui("train", ws, "--epochs", "1", "--limit", "16", "--approve", "ask", "--no-eval", cwd=folder)
    listed = _ovtui("review", "list", "-w", ws, "--json", cwd=folder)
    waiting, approved = (str(p["plan_id"]) for p in json.loads(listed.stdout))
    _ovtui("review", "approve", approved, "-w", ws, cwd=folder)
    (folder / "chat.jsonl").write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    (folder / "rollouts.jsonl").write_text(json.dumps(NOTHING_DONE) + "\n")
    return Base(folder, waiting=waiting, approved=approved, record=record)


def _serve(argv: list[str], case: Path, fault: str) -> subprocess.CompletedProcess[str]:
    """``ovtui serve`` in a real process: stopped at once when it starts (its URL is its first line)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({FAULT_ENV: fault} if fault else {})}
    command = [sys.executable, "-m", "ovtui", *argv]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, cwd=case, env=env, stdout=pipe, stderr=pipe, text=True) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # nothing when it stopped before listening
        if first:
            proc.terminate()
        out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(command, 0 if first else proc.returncode, first + out, err)


def _run_all(
    command: Command, base: Base, cases: list[tuple[Path, str]]
) -> list[subprocess.CompletedProcess[str]]:
    """``command`` in a copy of the base folder per (folder, fault), each with its fault injected."""
    runs = []
    for case, fault in cases:
        shutil.copytree(base.folder, case, symlinks=True)
        runs.append((str(case), fault, command.argv(base, str(case / "ws"))))
    if command.name == "serve":
        return [_serve(argv, Path(case), fault) for case, fault, argv in runs]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(runs)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return [subprocess.CompletedProcess([], rc, out, err) for rc, out, err in json.loads(done.stdout)]


def _whole(case: Path) -> list[str]:
    """What is not whole in the workspace of ``case``: a check problem, a temp file left behind."""
    leftovers = [str(p.relative_to(case)) for p in case.rglob(".*.tmp")]
    store, _ = memory_to_check(case / "ws")  # finishes what a failed apply left in its journal
    return leftovers + [str(p) for p in check_workspace(store).problems]


def _one_line_error(done: subprocess.CompletedProcess[str], cause: str) -> str | None:
    """Why the failure of ``done`` is not one clear line (None: it is): ``ovtui: error: PATH: cause``,
    or for a file that vanished ``… (PATH does not exist)`` as a command names a record it lacks."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("ovtui: error: ")]
    if len(errors) != 1:
        return f"{len(errors)} error lines: {done.stderr!r}"
    missing = cause == os.strerror(errno.ENOENT) and re.search(r"\(.*\S+ does not exist\)$", errors[0])
    if not missing and not re.match(rf"ovtui: error: .*\S+: {re.escape(cause)}", errors[0]):
        return f"the error does not name a file and {cause!r}: {errors[0]!r}"
    return None


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_command_under_every_disk_fault_is_one_line_and_leaves_files_whole(
    command: Command, base: Base, tmp_path: Path
) -> None:
    faults = [(name, "writes") for name in WRITE_FAULTS] + [(name, "read") for name in READ_FAULTS]
    cases = [(tmp_path / "no-fault", "")]
    for name, where in faults:  # writes fail anywhere in the copy, reads where the command reads
        glob = "*" if where == "writes" else command.reads
        cases.append((tmp_path / f"{name}-{where}", f"{name}:{where}:{tmp_path}/{name}-{where}/{glob}"))
    control, *runs = _run_all(command, base, cases)
    assert control.returncode == 0, f"{command.name} fails without a fault: {control}"
    for (name, where), done in zip(faults, runs, strict=True):
        label = f"{command.name} with {name} at every {where}"
        cause = os.strerror(getattr(errno, name))
        assert "Traceback" not in done.stdout + done.stderr, f"{label}: {done.stderr}"
        if where == "writes" and not command.writes:
            assert done.returncode == 0, f"{label} must work, as it only reads: {done.stderr}"
        elif where == "writes":
            assert done.returncode != 0, f"{label} had to write but says it worked: {done.stdout}"
            assert _one_line_error(done, cause) is None, f"{label}: {_one_line_error(done, cause)}"
        elif done.returncode != 0 and command.name != "check":  # check lists what it cannot read
            assert _one_line_error(done, cause) is None, f"{label}: {_one_line_error(done, cause)}"
        elif done.returncode != 0:
            assert cause in done.stdout, f"{label}: {done.stdout}"
        if command.name != "init":
            assert _whole(tmp_path / f"{name}-{where}") == [], label
    if command.name == "init":  # all or nothing: a failed init leaves no half workspace behind
        made = [tmp_path / f"{name}-{where}" / "new" for name, where in faults]
        assert [m for m in made if m.exists() and not (m / "ovtui.toml").is_file()] == []
