"""A run (train, eval or stream) in its own process: ``python -m ovtui.wiring.run_worker``.

Why a process: the kernel is CPU-bound Python; on a thread of the app it shares the GIL with the
UI and key presses wait behind it. The worker owns the run; the app only reads its events.

Protocol, one JSON object per line:
- stdin, first line: ``{"command", "root", "config", "options"}``; later lines: ``"cancel"`` (stop
  after the current batch) or ``{"approve": POLICY}`` (the review policy of the plans still to come;
  one that does not parse is ignored, the run's own goes on). End of stdin (the app is gone) or
  SIGTERM stop the run at once: a run only writes through journaled applies, so stopping anywhere
  leaves the workspace consistent.
- the protocol channel (the process's original stdout; stray prints go to stderr instead):
  ``{"event": {...}}`` per kernel event, then ``{"report": {...}}`` or ``{"error": "..."}`` (why the
  run failed, as a person reads it: the kernel's own message).
Pending plans the run parks are settled by whoever reviews them, in any process: the run waits on
the plan file, not on an in-process event.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from contextlib import suppress
from dataclasses import asdict, fields
from typing import IO, Any

from ovtui.core.config import OvtuiConfig
from ovtui.core.context import RunSteering
from ovtui.core.events import Event, Listener
from ovtui.train.reports import RunReport, failure_reason
from ovtui.wiring.workspace import TrainOptions, Workspace

COMMANDS = ("train", "eval", "stream")
CANCEL_LINE = "cancel"


def steer_line(approve: str) -> str:
    """The line that sets a running worker's review policy for the rest of its run."""
    return json.dumps({"approve": approve})


def _steered_policy(line: str) -> str | None:
    """The review policy a steering line asks for, when it is one that parses."""
    from ovtui.core.review_grammar import parse_review_policy

    try:
        message = json.loads(line)
        approve = message.get("approve") if isinstance(message, dict) else None
        if isinstance(approve, str):
            parse_review_policy(approve)
            return approve
    except ValueError:
        pass
    return None


def request_line(command: str, workspace: Workspace, options: TrainOptions) -> str:
    """The first line the app writes to a worker's stdin."""
    if command not in COMMANDS:
        raise ValueError(f"unknown run command {command!r}")
    return json.dumps(
        {
            "command": command,
            "root": str(workspace.root),
            "config": workspace.config.model_dump(mode="json"),
            "options": asdict(options),
        }
    )


class _Channel:
    """Writes protocol lines; the kernel may emit from worker threads, so writes are serialised."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def send(self, **message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, default=str)
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()

    def event(self, event: Event) -> None:
        self.send(event={"kind": event.kind, "data": event.data, "at": event.at})


async def _run(request: dict[str, Any], channel: _Channel) -> RunReport:
    workspace = Workspace(request["root"], OvtuiConfig.model_validate(request["config"]))
    names = {f.name for f in fields(TrainOptions)}
    options = TrainOptions(**{k: v for k, v in request["options"].items() if k in names})
    cancel = asyncio.Event()
    steering = RunSteering()
    loop = asyncio.get_running_loop()
    job = asyncio.current_task()
    assert job is not None

    def steer(approve: str) -> None:
        steering.approve = approve

    def read_commands() -> None:  # a thread: stdin has no portable non-blocking read
        with suppress(RuntimeError):  # the loop may be closed by the time the app closes stdin
            for line in sys.stdin:
                if line.strip() == CANCEL_LINE:
                    loop.call_soon_threadsafe(cancel.set)
                elif (approve := _steered_policy(line)) is not None:
                    loop.call_soon_threadsafe(steer, approve)
            loop.call_soon_threadsafe(job.cancel)  # the app is gone: stop now

    threading.Thread(target=read_commands, name="ovtui-worker-stdin", daemon=True).start()
    loop.add_signal_handler(signal.SIGTERM, job.cancel)
    listeners: list[Listener] = [channel.event]
    command = request["command"]
    try:
        if command == "train":
            return await workspace.runs.train(
                options, listeners, cancel, wait_for_review=True, steering=steering
            )
        if command == "eval":
            return await workspace.runs.evaluate(
                options.dataset, listeners=listeners, cancel=cancel, trials=options.trials
            )
        if command == "stream":
            return await workspace.runs.stream(
                listeners=listeners, stop=cancel, wait_for_review=True, steering=steering
            )
        raise ValueError(f"unknown run command {command!r}")
    finally:
        await workspace.aclose()


def main() -> int:
    # The protocol gets the real stdout; anything else printed goes to stderr, never into it.
    channel = _Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)
    try:
        request = json.loads(sys.stdin.readline())
        report = asyncio.run(_run(request, channel))
    except (KeyboardInterrupt, asyncio.CancelledError):
        channel.send(error="the run was stopped")
        return 1
    except Exception as exc:
        channel.send(error=failure_reason(exc))
        return 1
    channel.send(report=report.model_dump(mode="json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
