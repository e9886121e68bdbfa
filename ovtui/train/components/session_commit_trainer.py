"""SessionCommitPolicyTrainer: training done by a session server, not in this process.

Each rollout becomes a training session (``protocols.training_session``: OpenViking's batch-training
CaseSpec v1) on an OpenViking-compatible session API — ``ovtui serve``, or OpenViking itself:
created with the training memory policy, its messages sent in batches of 100, committed, and its
task polled until completed, failed or cancelled. The server analyses, estimates, plans and
applies; one server can train on behalf of many runners.

Polling: each poll asks the server to hold it until the task finishes (``?wait=``; ovtui's server
does). A server that answers an unfinished task at once ignores ``wait`` (OpenViking does), and is
then polled with a pause from 1 s doubling to 5 s: a commit's model calls take tens of seconds, so
a minute-long commit costs about 15 polls, and a finished task is seen within 5 s. Every commit's
record says how many polls it took (``commits``; ``polls`` sums them).

Remote training, local review (``remote_review``): once the batch's tasks are done, each finished
task's ``memory_diff.json`` is read from the server's content API and the experiences it changed
are parked as one pending plan of the local workspace — applied by a person like any plan.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx2 as httpx

from ovtui.core.domain import Case, ExperienceSet, Message, Rollout, RolloutAnalysis, RolloutTrainingResult
from ovtui.core.errors import OvtuiError
from ovtui.core.events import EventBus
from ovtui.memory.store import MemoryStore
from ovtui.protocols.training_session import TRAINING_POLICY, rollout_as_messages
from ovtui.train.components.remote_review import (
    RemoteDiff,
    RemoteReview,
    body_of,
    changed_experiences,
    park_remote_changes,
    read_diff,
)
from ovtui.train.review.pending import PendingPlans

BATCH_LIMIT = 100  # messages per batch request: the API refuses more
FINISHED = ("completed", "failed", "cancelled")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]+")


class SessionApiError(OvtuiError):
    """The session server refused a request or a commit failed (``status``: the HTTP status)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PollSchedule:
    """How a commit's task is polled: ``wait`` seconds asked of the server per poll; against a
    server that ignores it, pauses from ``first_pause`` doubling up to ``max_pause``."""

    wait: float = 10.0
    first_pause: float = 1.0
    max_pause: float = 5.0


@dataclass
class CommitRecord:
    """One rollout's commit, as the result's ``commits`` lists it."""

    case: str
    session_id: str = ""
    task_id: str = ""
    status: str = ""
    polls: int = 0
    wait_ignored: bool = False  # the server answered an unfinished task before the wait was up
    seconds: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LocalReview:
    """Where the changes a server made come back for review: the local workspace's store and its
    pending plans, and the run's events (``plan_pending`` and warnings)."""

    store: MemoryStore
    pending: PendingPlans
    events: EventBus | None = None


def message_payload(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [part.model_dump(mode="json") for part in message.parts]}


def task_problem(task: dict[str, Any]) -> str | None:
    """Why a finished task trained nothing, or None when it trained."""
    status = task.get("status")
    if status != "completed":
        return f"commit task {status}: {task.get('error') or 'no reason given'}"
    result = task.get("result") or {}
    skipped = result.get("agent_memory_skip_reason")  # OpenViking: the server's switch or the policy
    if skipped:
        return f"the server did not train on it (agent_memory_skip_reason: {skipped})"
    return None


class SessionCommitPolicyTrainer:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_in_flight: int = 8,
        client: httpx.AsyncClient | None = None,
        poll: PollSchedule | None = None,
        review: LocalReview | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.poll = poll or PollSchedule()
        self.review = review
        self._client = client or httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=60.0)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._run_id = f"{int(time.time())}_{secrets.token_hex(4)}"
        self._sessions = 0

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._client.request(method, path, **kwargs)
        try:
            body = response.json()
        except ValueError:
            raise SessionApiError(f"{method} {path}: HTTP {response.status_code}, not JSON") from None
        if response.status_code >= 400 or not isinstance(body, dict) or body.get("status") != "ok":
            error = body.get("error") if isinstance(body, dict) else None
            message = error.get("message") if isinstance(error, dict) else error
            raise SessionApiError(
                f"{method} {path}: HTTP {response.status_code}: {message or body}", response.status_code
            )
        return body.get("result")

    def _session_id(self, rollout: Rollout) -> str:
        self._sessions += 1
        name = _UNSAFE_ID.sub("_", rollout.case.name)[:60].strip("_") or "case"
        return f"train_{self._run_id}_{self._sessions}_{name}"

    async def commit_rollout(self, rollout: Rollout, record: CommitRecord | None = None) -> dict[str, Any]:
        """Send one rollout as a training session and wait for its commit task; the finished task."""
        record = record or CommitRecord(case=rollout.case.name)
        async with self._slots:
            started = time.monotonic()
            record.session_id = self._session_id(rollout)
            create = {"session_id": record.session_id, "memory_policy": TRAINING_POLICY}
            await self._call("POST", "/api/v1/sessions", json=create)
            messages = [message_payload(m) for m in rollout_as_messages(rollout)]
            for start in range(0, len(messages), BATCH_LIMIT):
                batch = {"messages": messages[start : start + BATCH_LIMIT]}
                await self._call("POST", f"/api/v1/sessions/{record.session_id}/messages/batch", json=batch)
            accepted = await self._call(
                "POST", f"/api/v1/sessions/{record.session_id}/commit", json={"keep_recent_count": 0}
            )
            if not isinstance(accepted, dict) or not accepted.get("task_id"):
                reason = accepted.get("reason") if isinstance(accepted, dict) else accepted
                raise SessionApiError(f"commit of {record.session_id} started no task ({reason})")
            record.task_id = str(accepted["task_id"])
            try:
                task = await self._wait(record)
            finally:
                record.seconds = round(time.monotonic() - started, 3)
            record.status = str(task.get("status"))
            return task

    async def _wait(self, record: CommitRecord) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        pause = self.poll.first_pause
        while True:
            wait = max(0.0, min(self.poll.wait, deadline - time.monotonic()))
            asked = time.monotonic()
            task = await self._call("GET", f"/api/v1/tasks/{record.task_id}", params={"wait": wait})
            record.polls += 1
            if not isinstance(task, dict):
                raise SessionApiError(f"task {record.task_id}: the server answered {task!r}")
            if task.get("status") in FINISHED:
                return task
            if time.monotonic() > deadline:
                raise SessionApiError(f"task {record.task_id} did not finish within {self.timeout:.0f} s")
            if time.monotonic() - asked < wait / 2:  # answered at once: this server does not hold polls
                record.wait_ignored = True
                await asyncio.sleep(pause)
                pause = min(pause * 2, self.poll.max_pause)

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult:
        records = [CommitRecord(case=r.case.name) for r in rollouts]
        runs = (self.commit_rollout(r, rec) for r, rec in zip(rollouts, records, strict=True))
        results = await asyncio.gather(*runs, return_exceptions=True)
        merged = RolloutTrainingResult(metadata={"tasks": []})
        finished: list[dict[str, Any]] = []
        for rollout, record, task in zip(rollouts, records, results, strict=True):
            if isinstance(task, BaseException):
                record.error = str(task)
                merged.errors.append(f"{rollout.case.name}: {task}")
                continue
            merged.metadata["tasks"].append(task)
            result = task.get("result") or {}
            record.error = task_problem(task)
            if record.error:
                merged.errors.append(f"{rollout.case.name}: {record.error}")
            else:
                finished.append(task)
            merged.errors += [f"{rollout.case.name}: server: {e}" for e in result.get("errors") or []]
            for plan_id in result.get("pending_plans") or []:  # plans of the server's own workspace
                merged.metadata.setdefault("server_pending_plans", []).append(plan_id)
        merged.metadata["commits"] = [r.as_dict() for r in records]
        merged.metadata["polls"] = sum(r.polls for r in records)
        if self.review is not None and finished:
            review = await self._review(finished, [r.case for r in rollouts], self.review)
            merged.metadata["remote_review"] = review.summary()
            if review.plan_id:
                merged.metadata["pending_plan"] = review.plan_id
        return merged

    async def _read(self, uri: str) -> str:
        """A file of the server, through its content API."""
        text = await self._call("GET", "/api/v1/content/read", params={"uri": uri})
        if not isinstance(text, str):
            raise SessionApiError(f"{uri}: the content API answered {type(text).__name__}, not text")
        return text

    async def _review(
        self, tasks: list[dict[str, Any]], cases: list[Case], local: LocalReview
    ) -> RemoteReview:
        """Read each task's memory_diff and the experiences it changed from the server, and park
        those changes as a pending plan of the local workspace."""
        review = RemoteReview()
        diffs: list[RemoteDiff] = []
        for task in tasks:
            uri = str((task.get("result") or {}).get("memory_diff_uri") or "")
            try:
                if not uri:
                    raise SessionApiError(f"task {task.get('task_id')}: its result names no memory_diff_uri")
                diffs.append(read_diff(await self._read(uri), uri))
            except OvtuiError as exc:
                review.left_out.append(f"memory_diff not read: {exc}")
        files = changed_experiences(diffs, review)
        for remote in files:
            try:
                remote.text = body_of(await self._read(remote.uri))
            except SessionApiError as exc:
                remote.gone = exc.status == 404
                remote.read_error = str(exc)
        await asyncio.to_thread(
            park_remote_changes, local.store, local.pending, files, self.base_url, cases, review
        )
        if local.events is not None:
            if review.plan_id:
                local.events.emit(
                    "plan_pending", plan_id=review.plan_id, items=review.items, remote=self.base_url
                )
            for line in review.left_out:
                local.events.log(f"remote review: {line}", level="warning")
        return review

    async def close(self) -> None:
        await self._client.aclose()
