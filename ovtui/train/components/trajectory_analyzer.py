"""TrajectoryRolloutAnalyzer: rollout → persisted trajectories.

Evaluation precedence: the rollout's own evaluation, else the injected evaluator, else a fallback
that only says whether a trajectory was extracted (and carries no reward bonus). The evaluation's
feedback is appended to what the backend reads. Trajectory files are add-only and named as
OpenViking 0.5.2 names them: ``<name>_<YYYYMMDDHHMMSS>_<16 hex>.md``, the time that of the rollout's
first message (``first_message_at`` of its metadata, as written; the time of writing when it has
none) and the hex digits the first 16 of the SHA-256 of the session archive it came from
(``source_archive_uri``; no suffix for a rollout from no archive). A name still taken gets another
``_<16 hex>`` (of the file's own text). They record the task query and a retrieval anchor (OpenViking
requires both: a draft without an anchor gets the case's task signature, else the task query), the
case (``case_name``, ``case_uris``), the archive and the outcome — never ``related_case_ids``, which
OpenViking only asks its model for and does not store.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ovtui.core.bounded_rollout import bound_rollout
from ovtui.core.bounds import MAX_FIELD_CHARS, MAX_MEMORY_TEXT_BYTES, cut_text, cut_utf8
from ovtui.core.domain import Rollout, RolloutAnalysis, RubricEvaluation, Trajectory, TrajectoryOutcome
from ovtui.core.fileformat import MemoryFile
from ovtui.core.interfaces import RolloutEvaluator
from ovtui.core.names import slugify
from ovtui.core.rollouts import FIRST_MESSAGE_AT, SOURCE_ARCHIVE_URI, feedback_text, iso_time, task_query
from ovtui.memory.intake import INTAKE_FILE, INTAKE_KEY, commit_intake
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import TRAJECTORIES
from ovtui.plugins.backends import TrajectoryDraft, TrajectoryExtractor
from ovtui.plugins.wording.personal import without_personal


def outcome_of(evaluation: RubricEvaluation) -> TrajectoryOutcome:
    if evaluation.passed:
        return TrajectoryOutcome.SUCCESS
    return TrajectoryOutcome.PARTIAL if evaluation.score > 0 else TrajectoryOutcome.FAILURE


class TrajectoryRolloutAnalyzer:
    # Choosing a free add-only name and creating the file must not interleave between threads.
    _naming = threading.Lock()

    def __init__(
        self,
        store: MemoryStore,
        extractor: TrajectoryExtractor,
        evaluator: RolloutEvaluator | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self.store = store
        self.extractor = extractor
        self.evaluator = evaluator
        self.clock = clock  # the file name's timestamp

    async def analyze(self, rollout: Rollout) -> RolloutAnalysis:
        rollout = bound_rollout(rollout)  # what reaches a trajectory (and a prompt) is bounded by field
        evaluation, source = await self._evaluation(rollout)
        drafts = await self.extractor.extract(rollout, evaluation, feedback_text(evaluation))
        if source == "fallback":
            # Without a grader the only signal is whether anything could be extracted: no reward bonus.
            evaluation = RubricEvaluation(
                passed=False,
                score=0.0,
                feedback=[
                    "no evaluation available; trajectory extracted"
                    if drafts
                    else "no evaluation available; nothing extracted"
                ],
                metadata={"source": "fallback"},
            )
        trajectories = await asyncio.to_thread(self._write_all, rollout, evaluation, drafts)
        return RolloutAnalysis(
            rollout=rollout,
            evaluation=evaluation,
            trajectories=trajectories,
            metadata={"evaluation_source": source, "backend": self.extractor.label},
        )

    async def _evaluation(self, rollout: Rollout) -> tuple[RubricEvaluation, str]:
        if rollout.evaluation is not None:
            return rollout.evaluation, "rollout"
        if self.evaluator is not None:
            return await self.evaluator.evaluate(rollout), "evaluator"
        return RubricEvaluation(passed=False, score=0.0, metadata={"source": "fallback"}), "fallback"

    def _write_all(
        self, rollout: Rollout, evaluation: RubricEvaluation, drafts: list[TrajectoryDraft]
    ) -> list[Trajectory]:
        key = rollout.metadata.get(INTAKE_KEY)
        with self._naming:
            files: list[tuple[Path, MemoryFile]] = []
            trajectories = []
            for draft in drafts:
                path, memory, trajectory = self._prepare(rollout, evaluation, draft, {p for p, _ in files})
                files.append((path, memory))
                trajectories.append(trajectory)
            if key is None:
                for path, memory in files:
                    self.store.write_new(path, memory)
            else:  # from an inbox file: its trajectories and the record that it was taken, at once
                source = str(rollout.metadata.get(INTAKE_FILE, ""))
                commit_intake(self.store, files, key=str(key), source=source)
        return trajectories

    def _prepare(
        self, rollout: Rollout, evaluation: RubricEvaluation, draft: TrajectoryDraft, planned: set[Path]
    ) -> tuple[Path, MemoryFile, Trajectory]:
        """The file a draft becomes, under a free add-only name (not on disk, not ``planned``)."""
        name = slugify(draft.name, fallback="trajectory")
        folder = self.store.type_dir(TRAJECTORIES)
        schema = self.store.registry.get(TRAJECTORIES)
        started = iso_time(rollout.metadata.get(FIRST_MESSAGE_AT)) or self.clock()
        archive = _str_or_none(rollout.metadata.get(SOURCE_ARCHIVE_URI))
        outcome = draft.outcome if draft.outcome != TrajectoryOutcome.UNKNOWN else outcome_of(evaluation)
        # what later agents read back (and retrieval matches): the task, not the person asking
        passed = [str(v) for m in rollout.messages for t in m.tool_parts for v in t.tool_input.values()]
        query = without_personal(task_query(rollout), passed) or rollout.case.task_signature
        anchor = draft.retrieval_anchor.strip() or rollout.case.task_signature.strip() or query
        fields = {
            "trajectory_name": name,
            "memory_type": TRAJECTORIES,
            "outcome": TrajectoryOutcome(outcome).value,
            "task_query": query,
            "retrieval_anchor": cut_text(" ".join(anchor.split()), MAX_FIELD_CHARS) or name,
            "case_name": rollout.case.name,
            "case_uris": _str_list(rollout.metadata.get("case_uris")),
            "source_archive_uri": archive,
            "reward": evaluation.score,
            "version": 1,
        }
        content = cut_utf8(draft.content, MAX_MEMORY_TEXT_BYTES)
        memory = MemoryFile(content=content, fields=fields)
        stem = schema.filename(name, when=started).removesuffix(".md") + archive_suffix(archive)
        path = folder / f"{stem}.md"
        attempt = 0
        while path.exists() or path in planned:  # add-only: rollouts in the same second get distinct files
            # 16 hex digits as OpenViking adds them; from the file's own text, so identical runs name
            # their files identically.
            digest = hashlib.sha256(f"{attempt}\n{memory.render()}".encode()).hexdigest()[:16]
            path = folder / f"{stem}_{digest}.md"
            attempt += 1
        trajectory = Trajectory(
            name=name,
            uri=self.store.paths.uri_for(path),
            content=content,
            outcome=TrajectoryOutcome(outcome),
            retrieval_anchor=str(fields["retrieval_anchor"]),
            metadata={
                "case_name": rollout.case.name,
                "reward": evaluation.score,
                "passed": evaluation.passed,
            },
        )
        return path, memory, trajectory


def archive_suffix(source_archive_uri: str | None) -> str:
    """``_`` and the first 16 hex digits of the SHA-256 of the archive's URI ("" without one)."""
    if not source_archive_uri:
        return ""
    return "_" + hashlib.sha256(source_archive_uri.encode("utf-8")).hexdigest()[:16]


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
