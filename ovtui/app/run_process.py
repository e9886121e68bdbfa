"""The app's side of a run in a worker process (``ovtui.wiring.run_worker``): start, stream, cancel, stop.

Events arrive as JSON lines on the worker's stdout and go to the same listener the kernel would
call in-process. A run that raises ends ``run()`` with ``RunFailed`` carrying the kernel's reason; a
worker that dies without one (a crash, a kill, an import error) with a ``RunWorkerError`` carrying
its exit code and the tail of its stderr: the app reports it and never waits on a process that is
gone.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import deque
from contextlib import suppress

from ovtui.core.errors import OvtuiError
from ovtui.core.events import Event, Listener
from ovtui.train.reports import RunReport
from ovtui.wiring.run_worker import CANCEL_LINE, request_line, steer_line
from ovtui.wiring.workspace import TrainOptions, Workspace

# A report or an event may be long (every error of a run): lines up to this size are read whole.
LINE_LIMIT_BYTES = 64 * 1024 * 1024
STDERR_TAIL_LINES = 20
# After SIGTERM the worker saves its report; it is killed if it takes longer than this.
TERMINATE_GRACE_S = 3.0


class RunFailed(OvtuiError):
    """The run raised: its message is the kernel's reason (the worker said it, then ended)."""


class RunWorkerError(OvtuiError):
    """The worker process ended without a report or a reason (a crash, a kill)."""


class RunProcess:
    def __init__(self, command: str, workspace: Workspace, options: TrainOptions, listener: Listener) -> None:
        self.request = request_line(command, workspace, options)
        self.listener = listener
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    async def run(self) -> RunReport:
        """Run to the end and return the report; cancelling this coroutine stops the worker."""
        process = self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ovtui.wiring.run_worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT_BYTES,
        )
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        stderr = asyncio.ensure_future(self._collect(process.stderr))
        try:
            process.stdin.write(self.request.encode("utf-8") + b"\n")
            await process.stdin.drain()
            report, error = await self._read(process.stdout)
            code = await process.wait()
            await stderr
        except BaseException:
            await self.stop()
            with suppress(Exception):  # the stopped run's last events (its report) still reach the app
                await self._read(process.stdout)
            stderr.cancel()
            raise
        if report is not None:
            return report
        if error:
            raise RunFailed(error)
        detail = "\n".join(self._stderr) or "no message"
        raise RunWorkerError(f"the run's worker process ended (exit code {code}) without a report: {detail}")

    async def _read(self, stdout: asyncio.StreamReader) -> tuple[RunReport | None, str | None]:
        report: RunReport | None = None
        error: str | None = None
        async for raw in stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                self._stderr.append(raw.decode("utf-8", "replace").rstrip())
                continue
            if "event" in message:
                event = message["event"]
                self.listener(Event(event["kind"], event.get("data") or {}, event.get("at") or 0.0))
            elif "report" in message:
                report = RunReport.model_validate(message["report"])
            elif "error" in message:
                error = str(message["error"])
        return report, error

    async def _collect(self, stream: asyncio.StreamReader) -> None:
        async for raw in stream:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip())

    def steer(self, approve: str) -> None:
        """Set the review policy of the plans still to come in this run."""
        self._send(steer_line(approve))

    def cancel(self) -> None:
        """Ask the run to stop after its current batch (it saves its report and ends)."""
        self._send(CANCEL_LINE)

    def _send(self, line: str) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            return
        with suppress(OSError, RuntimeError):  # the worker may have just ended
            process.stdin.write(f"{line}\n".encode())

    async def stop(self) -> None:
        """Stop the worker now: SIGTERM (it saves its report), SIGKILL if it lingers.

        Safe at any moment: the worker writes memory only through journaled applies, which the
        next open of the workspace finishes.
        """
        process = self._process
        if process is None or process.returncode is not None:
            return
        with suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), TERMINATE_GRACE_S)
        except TimeoutError:
            with suppress(ProcessLookupError):
                process.kill()
            await process.wait()
