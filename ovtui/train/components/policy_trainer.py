"""BatchPolicyTrainer and StreamingPolicyTrainer: two ways to feed one engine.

Streaming flushes a batch when it holds ``max_gradients_per_update`` gradients, when its oldest
gradient has waited ``max_wait_seconds``, or on ``close()``; each flush is a ``batch_flushed``
event saying why. Every submitter awaits the result of the batch its own gradients went into.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Literal

from ovtui.core.domain import (
    ExperienceSet,
    PatchSemanticGradient,
    Rollout,
    RolloutAnalysis,
    RolloutTrainingResult,
)
from ovtui.core.interfaces import TrainingEngine

FlushReason = Literal["count", "age", "close", "idle"]


class BatchPolicyTrainer:
    def __init__(self, engine: TrainingEngine) -> None:
        self.engine = engine

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult:
        estimated = await self.engine.analyze_and_estimate(rollouts, policy_set, analyses)
        applied = await self.engine.plan_and_apply(
            estimated.gradients, policy_set, analyses=estimated.analyses
        )
        return RolloutTrainingResult(
            analyses=estimated.analyses,
            gradients=estimated.gradients,
            plan=applied.plan,
            apply_result=applied.result,
            errors=estimated.errors + applied.errors,
            metadata={"pending_plan": applied.pending_id} if applied.pending_id else {},
        )


@dataclass(slots=True)
class StreamingPolicyTrainerConfig:
    max_gradients_per_update: int = 8
    max_wait_seconds: float = 10.0
    # Flush as soon as no submitter is still analysing (the session API: a lone commit should not
    # wait out the age window; several at once still share a batch).
    flush_when_idle: bool = False


@dataclass
class _Submission:
    analyses: list[RolloutAnalysis]
    gradients: list[PatchSemanticGradient]
    errors: list[str]
    future: asyncio.Future[RolloutTrainingResult]
    at: float = field(default_factory=time.monotonic)


class StreamingPolicyTrainer:
    def __init__(
        self,
        engine: TrainingEngine,
        policy_set: ExperienceSet,
        config: StreamingPolicyTrainerConfig | None = None,
    ) -> None:
        self.engine = engine
        self.policy_set = policy_set
        self.config = config or StreamingPolicyTrainerConfig()
        self._queue: list[_Submission] = []
        self._flush_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._closed = False
        self._timer: asyncio.Task[None] | None = None
        self._estimating = 0

    async def submit_rollout(
        self, rollout: Rollout, analysis: RolloutAnalysis | None = None
    ) -> RolloutTrainingResult:
        if self._closed:
            raise RuntimeError("the streaming trainer is closed")
        self._ensure_timer()
        self._estimating += 1
        try:
            estimated = await self.engine.analyze_and_estimate(
                [rollout], self.policy_set, [analysis] if analysis else None
            )
        finally:
            self._estimating -= 1
        if not estimated.gradients:
            if self._idle() and self._queue:
                await self._flush("idle")
            return RolloutTrainingResult(analyses=estimated.analyses, errors=estimated.errors)
        future: asyncio.Future[RolloutTrainingResult] = asyncio.get_running_loop().create_future()
        self._queue.append(_Submission(estimated.analyses, estimated.gradients, estimated.errors, future))
        if self._pending_gradients() >= self.config.max_gradients_per_update:
            await self._flush("count")
        elif self._idle():
            await self._flush("idle")
        else:
            self._changed.set()
        return await future

    def _idle(self) -> bool:
        return self.config.flush_when_idle and self._estimating == 0

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult:
        self.policy_set = policy_set
        results = await asyncio.gather(
            *(self.submit_rollout(r, analyses[i] if analyses else None) for i, r in enumerate(rollouts))
        )
        merged = RolloutTrainingResult()
        for result in results:
            merged.analyses += result.analyses
            merged.gradients += result.gradients
            merged.errors += result.errors
            if result.apply_result is not None:
                merged.apply_result = result.apply_result
                merged.plan = result.plan
        return merged

    async def close(self) -> None:
        self._closed = True
        await self._flush("close")
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)

    def _pending_gradients(self) -> int:
        return sum(len(s.gradients) for s in self._queue)

    def _ensure_timer(self) -> None:
        if self._timer is None or self._timer.done():
            self._timer = asyncio.create_task(self._age_watch())

    async def _age_watch(self) -> None:
        """Sleeps until the oldest queued gradient reaches its age limit, or the queue changes."""
        while not self._closed:
            self._changed.clear()
            if not self._queue:
                await self._changed.wait()
                continue
            due = self._queue[0].at + self.config.max_wait_seconds - time.monotonic()
            if due <= 0:
                await self._flush("age")
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=due)

    async def _flush(self, reason: FlushReason) -> None:
        async with self._flush_lock:
            batch, self._queue = self._queue, []
            if not batch:
                return
            gradients = [g for s in batch for g in s.gradients]
            analyses = [a for s in batch for a in s.analyses]
            self.engine.events.emit("batch_flushed", reason=reason, gradients=len(gradients))
            try:
                applied = await self.engine.plan_and_apply(gradients, self.policy_set, analyses=analyses)
            except Exception as exc:
                for submission in batch:
                    if not submission.future.done():
                        submission.future.set_exception(exc)
                return
            if applied.result is not None:
                self.policy_set = applied.result.updated_policy_set
            for submission in batch:
                if not submission.future.done():
                    submission.future.set_result(
                        RolloutTrainingResult(
                            analyses=submission.analyses,
                            gradients=submission.gradients,
                            plan=applied.plan,
                            apply_result=applied.result,
                            errors=submission.errors + applied.errors,
                            metadata={
                                "flush": reason,
                                "batch_size": len(gradients),
                                **({"pending_plan": applied.pending_id} if applied.pending_id else {}),
                            },
                        )
                    )
