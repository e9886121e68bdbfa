"""The real app in a real terminal (tmux): train, approve, apply, quit, then check the workspace; a burst
of keys (with `DD`, which once froze the app) after which the app still quits; a run that fails at
80×24, its whole reason on the screen.

Skipped where tmux is missing. Polls the pane (a real terminal has no pilot to await).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from repo_paths import REPO
from workspace_support import build_sample_workspace

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# How often the pane is read while waiting for a text: one capture is a few ms, and each wait ends
# this much after its text appears.
POLL_S = 0.05


class Pane:
    def __init__(
        self, command: list[str], cwd: Path, then: str = "sleep 5", size: tuple[int, int] = (120, 40)
    ) -> None:
        self.name = f"ovtui-smoke-{uuid.uuid4().hex[:8]}"
        width, height = str(size[0]), str(size[1])
        shell = " ".join(command)
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                width,
                "-y",
                height,
                "-c",
                str(cwd),
                f"TERM=xterm-256color {shell}; {then}",
            ],
            check=True,
        )
        # A detached session keeps the default 80x24 on some tmux versions: size it explicitly.
        subprocess.run(["tmux", "set-option", "-t", self.name, "window-size", "manual"], check=False)
        subprocess.run(["tmux", "resize-window", "-t", self.name, "-x", width, "-y", height], check=False)

    def text(self) -> str:
        done = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return done.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(0.15)  # a person types; the app sees one key at a time

    def burst(self, text: str) -> None:
        """Keys in one write, so the app reads them in one input batch (as a fast typist or a paste)."""
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)

    def wait_for(self, *needles: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            for needle in needles:
                if needle in text:
                    return needle
            time.sleep(POLL_S)
        raise AssertionError(f"none of {needles} appeared; the pane shows:\n{self.text()}")

    def wait_for_words(self, words: str, timeout: float = 60) -> None:
        """``words`` on screen, wrapped or not: the pane's text joined, box edges left out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if words in " ".join(self.text().replace("│", " ").split()):
                return
            time.sleep(POLL_S)
        raise AssertionError(f"{words!r} did not appear; the pane shows:\n{self.text()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_train_review_apply_and_quit_in_a_real_terminal(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    config = (
        (root / "ovtui.toml")
        .read_text()
        .replace("epochs = 3", "epochs = 1")
        .replace("batch_size = 8", "batch_size = 15")
    )
    (root / "ovtui.toml").write_text(config)
    pane = Pane([sys.executable, "-m", "ovtui", str(root)], REPO)
    try:
        pane.wait_for("1 Run", timeout=30)
        pane.keys("t")
        reviewed = 0
        for _ in range(20):  # the sample makes a handful of plans; a stale frame may cost a round trip
            if pane.wait_for("train: finished", "2 Review (", timeout=90) == "train: finished":
                break
            pane.keys("2")
            if pane.wait_for("(o) · pending", "no plans wait", timeout=20) == "no plans wait":
                pane.keys("1")
                pane.wait_for("dataset")
                continue
            pane.keys("A")
            if pane.wait_for("Approve deletion?", "✓ approved", timeout=10) == "Approve deletion?":
                pane.keys("BTab", "Enter")  # focus starts on Cancel: move to the red button
            pane.keys("p")
            pane.wait_for("Writes ", timeout=10)  # the confirmation says what will be written
            pane.keys("Enter")
            pane.wait_for("Applied plan", "Record: history/", timeout=20)
            reviewed += 1
            pane.keys("1")
            pane.wait_for("dataset")
        else:
            raise AssertionError("the run did not finish")
        pane.keys("C-q")
        deadline = time.monotonic() + 10
        while "ovtui" in pane.text() and time.monotonic() < deadline:
            time.sleep(POLL_S)
    finally:
        pane.close()
    records = sorted((root / "history").glob("*/memory_diff.json"))
    assert reviewed >= 1 and len(records) == reviewed
    assert all(json.loads(p.read_text())["kind"] == "apply" for p in records)
    reports = list((root / "runs").glob("*/report.json"))
    assert reports and json.loads(reports[0].read_text())["cancelled"] is False
    assert not list((root / ".ovtui" / "pending").glob("*.json")) or all(
        json.loads(p.read_text())["status"] != "pending" for p in (root / ".ovtui" / "pending").glob("*.json")
    )


def test_a_burst_of_keys_with_dd_leaves_the_app_quick_to_quit(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    pane = Pane(
        [sys.executable, "-m", "ovtui", str(root)],
        REPO,
        then="echo OVTUI-EXITED-$?; sleep 30",
    )
    try:
        pane.wait_for("1 Run", timeout=30)
        pane.burst("DD2DD3D4D1jkjkDDD")  # toggles in pairs and amid screen switches: 9 of them
        # Every key was handled: an odd number of toggles. Four screens are built on the way, which
        # a loaded machine (the whole suite on two cores) takes seconds over: wait for the state.
        pane.wait_for("DRY RUN", timeout=60)
        pane.keys("C-q")
        pane.wait_for("OVTUI-EXITED-0", timeout=15)  # a frozen app never exits: this fails
    finally:
        pane.close()
    config = (root / "ovtui.toml").read_text()
    assert (
        "dry_run = true" not in config
    )  # Dry run is session state, and seven toggles leave it on in memory only


def test_a_failed_run_shows_its_whole_reason_at_80_by_24(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "datasets" / "support" / "train.jsonl").unlink()
    reason = (
        "datasets/support/train.jsonl: dataset split not found; the datasets here: support (test, validation)"
    )
    pane = Pane([sys.executable, "-m", "ovtui", str(root)], REPO, then="sleep 30", size=(80, 24))
    try:
        pane.wait_for("1 Run", timeout=60)
        pane.keys("t")
        pane.wait_for_words(f"train: FAILED — {reason}", timeout=120)  # the status, whole (wrapped)
        pane.wait_for_words(f"run failed: {reason}", timeout=30)  # and the log's line, whole
        shown = pane.text()
        pane.keys("C-q")
    finally:
        pane.close()
    assert "RunWorkerError" not in shown and "run finished" not in shown
