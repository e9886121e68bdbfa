"""SessionCommitPolicyTrainer: training done by a session server, not in this process.

Each rollout becomes a session — a CaseSpec message first, the rollout's messages (tool results
as tool parts), the OutcomeEvaluation last — sent to an OpenViking-compatible session API
(``ovtui serve``, or OpenViking itself), committed, and its task polled until completed or failed.
The server analyses, estimates, plans and applies; one ovtui can train on behalf of many runners.
Nothing is written locally: the result names the server's tasks and archives.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from typing import Any

import httpx2 as httpx

from ovtui.core.domain import ExperienceSet, Rollout, RolloutAnalysis, RolloutTrainingResult, TextPart
from ovtui.core.errors import OvtuiError
from ovtui.protocols.training_session import rollout_as_messages

POLL_WAIT = 10.0  # ovtui's server holds a poll this long; OpenViking ignores ``wait`` and answers at once
POLL_PAUSE = 0.5  # between polls of a server that answered at once


class SessionApiError(OvtuiError):
    """The session server refused a request or a commit failed."""


def message_payload(message: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        else:
            parts.append(part.model_dump(mode="json"))
    return {"role": message.role if message.role in ("user", "assistant") else "assistant", "parts": parts}


class SessionCommitPolicyTrainer:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_in_flight: int = 8,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._client = client or httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=60.0)
        self._slots = asyncio.Semaphore(max_in_flight)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._client.request(method, path, **kwargs)
        try:
            body = response.json()
        except ValueError:
            raise SessionApiError(f"{method} {path}: HTTP {response.status_code}, not JSON") from None
        if response.status_code >= 400 or body.get("status") != "ok":
            error = body.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else error
            raise SessionApiError(f"{method} {path}: HTTP {response.status_code}: {message or body}")
        return body.get("result")

    async def commit_rollout(self, rollout: Rollout) -> dict[str, Any]:
        """Send one rollout as a session and wait for its commit task; the finished task's body."""
        async with self._slots:
            session_id = f"train-{secrets.token_hex(8)}"
            await self._call("POST", "/api/v1/sessions", json={"session_id": session_id})
            messages = [message_payload(m) for m in rollout_as_messages(rollout)]
            for start in range(0, len(messages), 100):  # the API's batch limit
                batch = {"messages": messages[start : start + 100]}
                await self._call("POST", f"/api/v1/sessions/{session_id}/messages/batch", json=batch)
            accepted = await self._call("POST", f"/api/v1/sessions/{session_id}/commit")
            return await self._wait(str(accepted["task_id"]))

    async def _wait(self, task_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            started = time.monotonic()
            task = await self._call("GET", f"/api/v1/tasks/{task_id}", params={"wait": POLL_WAIT})
            if task.get("status") in ("completed", "failed"):
                return dict(task)
            if time.monotonic() > deadline:
                raise SessionApiError(f"task {task_id} did not finish within {self.timeout:.0f} s")
            if time.monotonic() - started < POLL_PAUSE:
                await asyncio.sleep(POLL_PAUSE)

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult:
        results = await asyncio.gather(*(self.commit_rollout(r) for r in rollouts), return_exceptions=True)
        merged = RolloutTrainingResult(metadata={"tasks": []})
        for rollout, task in zip(rollouts, results, strict=True):
            if isinstance(task, BaseException):
                merged.errors.append(f"{rollout.case.name}: {task}")
                continue
            merged.metadata["tasks"].append(task)
            if task.get("status") == "failed":
                merged.errors.append(f"{rollout.case.name}: commit task failed: {task.get('error')}")
            result = task.get("result") or {}
            for pending in result.get("pending_plans") or []:
                merged.metadata.setdefault("pending_plans", []).append(pending)
        return merged

    async def close(self) -> None:
        await self._client.aclose()


def api_key_from(env_name: str | None) -> str | None:
    if not env_name:
        return None
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise OvtuiError(f"[sessions] api_key_env: the environment variable {env_name} is not set")
    return value
