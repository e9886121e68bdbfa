"""Phase 2 of a session commit, run in the background after the conversation is archived:

1. extract what the conversation holds — by the session extractor of the workspace's backend
   (``[llm] backend``: the offline one reads stated facts and tool calls, the model's reads
   anything), injected by the workspace — filtered by the session's MemoryPolicy and routed to the
   user's own space or a peer's (``sessions.peers``);
   an extraction that fails (the endpoint down after the client's retries, answers still unusable
   after the repair round) fails the commit before anything is written: no memory, no history
   record, no memory_diff; the archive stays;
2. every case becomes a Rollout of the commit's messages and goes through the streaming trainer
   (``[sessions] train_with``, injected too) and the review gate like any rollout;
   a training session (``protocols.training_session``: a CaseSpec v1 first, a memory policy of
   training types only) is one rollout directly, without extraction: its case file, trajectories
   and experiences come from the case, rubric and evaluation it supplies (the evaluation grades
   the rollout); a CaseSpec the commit cannot train from fails it with the reason, before
   anything is written — it is never mined as a conversation;
3. one ``memory_diff.json`` in the archive folder, written even when nothing changed: the
   operations of every history record the commit produced, those records' ids, and the plans
   still waiting for a person.

The trainer is shared by every commit of the process and flushes when no other commit is still
being analysed, so a lone commit does not wait for a batching window and concurrent commits share
one plan (one lock, one apply).

Before its memory_diff, a commit tells the use ledger how it went (``sessions.outcomes``): the
experiences the session read through its own tool calls, and its cases' results, linked to every
memory the session used since its last commit.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ovtui.core.domain import Case, Message, Rollout, RolloutAnalysis, RolloutTrainingResult
from ovtui.core.errors import UnsafePathError
from ovtui.core.interfaces import RolloutAnalyzer, StreamingTrainer
from ovtui.core.rollouts import FIRST_MESSAGE_AT, SOURCE_ARCHIVE_URI
from ovtui.memory.history import HistoryStore
from ovtui.memory.memory_diff import (
    AddOperation,
    MemoryDiff,
    Operations,
    SkippedOperation,
    Summary,
    UpdateOperation,
    utc_stamp,
)
from ovtui.plugins.session_extraction import (
    ExtractedMemory,
    Extraction,
    SessionExtractor,
    evaluate_conversation,
)
from ovtui.protocols.sessions import MemoryPolicy, SessionMessage
from ovtui.protocols.training_session import (
    EXPERIENCES,
    TRAINING_POLICY,
    TrainingSessionError,
    casespec_header,
    is_training_policy,
    rollout_from_messages,
)
from ovtui.sessions.adherence import record_session
from ovtui.sessions.outcomes import commit_outcome
from ovtui.sessions.peers import PeerReport, apply_policy
from ovtui.sessions.store import Archive, SessionStore
from ovtui.sessions.user_memories import StreamingMemoryUpdater, case_memory, case_uri
from ovtui.storage.paths import WorkspacePaths, split_peer

if TYPE_CHECKING:
    from ovtui.core.config import SessionsConfig
    from ovtui.core.context import RunContext
    from ovtui.memory.ledger import UseLedger
    from ovtui.memory.store import MemoryStore
    from ovtui.train.adherence.recorder import AdherenceRecorder
    from ovtui.train.review.pending import PendingPlans

SNAPSHOT_PREFIX = "session-commit"


@dataclass
class CommitOutcome:
    """What one commit did, as the task result reports it."""

    archive: Archive
    diff: MemoryDiff
    memories_extracted: dict[str, int] = field(default_factory=dict)
    history_ids: list[str] = field(default_factory=list)
    pending_plans: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    peers: PeerReport = field(default_factory=PeerReport)
    # Files in each peer's space that the commit added or changed (of a batch shared with
    # concurrent commits, only its own, as the memory_diff lists them).
    peer_files_written: Counter[str] = field(default_factory=Counter)
    # What was extracted and not written (refused by the policy, left out by the merge).
    skipped: list[SkippedOperation] = field(default_factory=list)
    # The types the session's memory_policy allows (every declared type when it names none).
    effective_memory_types: list[str] = field(default_factory=list)
    # The records of memory batches shared with other commits: which of their files are this one's.
    shared_records: dict[str, Callable[[str], bool]] = field(default_factory=dict)
    # The trajectories the commit's analyses wrote themselves (write-once evidence, outside the
    # History records): adds in its memory_diff, as OpenViking lists them, whatever later write of
    # the commit (a backlink) touched them again.
    created: dict[str, str] = field(default_factory=dict)

    def agent_memory(self) -> dict[str, Any]:
        """OpenViking's account of agent training: ovtui has no switch to turn it off, so it is on,
        and skipped (``memory_types_filtered``) only where the policy leaves out cases or trajectories."""
        trains = {"cases", "trajectories"} <= set(self.effective_memory_types)
        return {
            "effective_memory_types": self.effective_memory_types,
            "agent_evolution_enabled": True,
            "agent_memory_skip_reason": None if trains else "memory_types_filtered",
        }

    def peer_summary(self) -> dict[str, Any]:
        """Each peer's memories routed to its space and files written there, and the peer memories
        skipped (invalid or unauthorised peers) with the reason."""
        names = sorted(set(self.peers.routed) | set(self.peer_files_written))
        return {
            "peers": {
                p: {"memories": self.peers.routed[p], "files_written": self.peer_files_written[p]}
                for p in names
            },
            "peer_memories_skipped": self.peers.skipped_list(),
        }

    def task_result(self) -> dict[str, Any]:
        return {
            "session_id": self.archive.session_id,
            "archive_uri": self.archive.uri,
            "memory_diff_uri": f"{self.archive.uri}/memory_diff.json",
            "memories_extracted": self.memories_extracted,
            "history_ids": self.history_ids,
            "pending_plans": self.pending_plans,
            "errors": self.errors,
            **self.peer_summary(),
            **self.agent_memory(),
            # OpenViking's report of what was left out: the skipped operations of the memory_diff.
            "memory_extraction": {
                "skipped": len(self.diff.skipped_operations),
                "skipped_operations": [
                    s.model_dump(mode="json", exclude_none=True) for s in self.diff.skipped_operations
                ],
            },
            "token_usage": self.token_usage(),
        }

    def token_usage(self) -> dict[str, Any]:
        """The extraction's calls (the training of the commit's cases is the trainer's: its batch is
        shared with other commits, reported in the run's usage), flat as ovtui has always answered
        and nested as OpenViking 0.5.2 does (``llm``, ``embedding``, ``total``). A commit embeds
        nothing: ovtui embeds for retrieval, not per session."""
        total = self.prompt_tokens + self.completion_tokens
        return {
            "model_calls": self.model_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
            "llm": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": total,
                "cached_tokens": 0,
                "reasoning_tokens": 0,
            },
            "embedding": {"total_tokens": 0},
            "total": {"total_tokens": total, "cached_tokens": 0, "reasoning_tokens": 0},
        }


@dataclass(frozen=True)
class SessionTraining:
    """What trains on the commits' cases: one streaming trainer shared by every commit of the
    process, and its engine's analyzer (a case's run is analysed ahead of it, so the case file links
    its trajectories in the same write that creates it)."""

    trainer: StreamingTrainer
    analyzer: RolloutAnalyzer


class SessionCommitter:
    """Commits archived conversations into the workspace's memory.

    Who extracts and who trains are given, built when first needed: ``extractor`` (the backend's
    session extractor) on the first commit, ``training`` (a coroutine) on the first case.
    """

    def __init__(
        self,
        store: MemoryStore,
        pending: PendingPlans,
        sessions: SessionStore,
        run: RunContext,
        *,
        extractor: Callable[[], SessionExtractor],
        training: Callable[[], Awaitable[SessionTraining]],
        settings: SessionsConfig,
        ledger: UseLedger | None = None,
        adherence: AdherenceRecorder | None = None,
    ) -> None:
        self.store = store
        self.ledger = ledger  # where the commit's outcome is linked to the memories the session used
        self.adherence = adherence  # where the experiences it used are checked against what it did
        self.paths = store.paths
        self.sessions = sessions
        self.run = run
        self.history = HistoryStore(store.paths)
        self._new_extractor = extractor
        self._extractor: SessionExtractor | None = None
        self._new_training = training
        self._training: SessionTraining | None = None
        self._training_lock = asyncio.Lock()
        self.memories = StreamingMemoryUpdater(
            store,
            pending,
            max_operations=settings.max_memory_operations,
            max_wait_seconds=settings.memory_max_wait_seconds,
            review=settings.review_user_memories,
        )

    async def training(self) -> SessionTraining:
        async with self._training_lock:
            if self._training is None:
                self._training = await self._new_training()
            return self._training

    async def submit_rollout(self, rollout: Rollout) -> RolloutTrainingResult:
        return await (await self.training()).trainer.submit_rollout(rollout)

    async def close(self) -> None:
        await self.memories.close()
        if self._training is not None:
            await self._training.trainer.close()

    async def extract(
        self, messages: list[SessionMessage], archive: Archive, policy: MemoryPolicy
    ) -> Extraction:
        if self._extractor is None:
            self._extractor = self._new_extractor()
        return await self._extractor.extract(messages, archive.session_id, archive.name, policy)

    async def commit_archive(
        self, archive: Archive, messages: list[SessionMessage], policy: MemoryPolicy
    ) -> CommitOutcome:
        snapshot = f"{SNAPSHOT_PREFIX}:{archive.session_id}:{archive.name}"
        plain = [m.to_message() for m in messages]
        allowed = policy.memory_types if policy.memory_types is not None else self.store.registry.names()
        outcome = CommitOutcome(archive=archive, diff=MemoryDiff(), effective_memory_types=sorted(allowed))
        to_write: list[ExtractedMemory] = []
        analyses: list[RolloutAnalysis | None]
        if casespec_header(plain) is not None:
            # The trajectory is named by the rollout's first message: the one after the CaseSpec.
            first_at = messages[1].created_at if len(messages) > 1 else None
            rollouts, analyses, to_write = await self._training_session(
                plain, archive, policy, snapshot, first_at
            )
            outcome.memories_extracted["cases"] = 1
        else:
            self.memories.begin()
            try:
                extracted = await self.extract(messages, archive, policy)
                extraction, outcome.peers = apply_policy(extracted, policy, self.store.registry)
                rollouts = [
                    self._case_rollout(case, plain, messages, archive, snapshot) for case in extraction.cases
                ]
                # Each case's run is analysed first, so its case file links to the trajectories in
                # the same write that creates it (the experiences they feed link when applied).
                analyses = await self._analyze(rollouts)
            except Exception:
                self.memories.end()
                await self.memories.flush_if_idle()
                raise
            except BaseException:  # cancelled: count it out, wait for nothing
                self.memories.end()
                raise
            self.memories.end()
            outcome.prompt_tokens += extracted.prompt_tokens
            outcome.completion_tokens += extracted.completion_tokens
            outcome.model_calls += extraction.model_calls
            for memory in extraction.memories:
                key = memory.memory_type
                outcome.memories_extracted[key] = outcome.memories_extracted.get(key, 0) + 1
            if extraction.cases:
                outcome.memories_extracted["cases"] = len(extraction.cases)
            to_write = extraction.memories + [
                case_memory(case, [t.uri for t in analysis.trajectories] if analysis else None)
                for case, analysis in zip(extraction.cases, analyses, strict=True)
            ]
        outcome.created = {t.uri: "trajectories" for a in analyses if a is not None for t in a.trajectories}
        written = await self.memories.submit(to_write, archive.uri)
        if written.history_id:
            outcome.shared_records[written.history_id] = written.owns
            outcome.history_ids.append(written.history_id)
        if written.pending_plan:
            outcome.pending_plans.append(written.pending_plan)
        outcome.errors += written.errors
        outcome.skipped += [*outcome.peers.skipped_operations, *written.skipped]
        results: list[RolloutTrainingResult] = []
        if rollouts:
            trainer = (await self.training()).trainer
            runs = zip(rollouts, analyses, strict=True)
            results = await asyncio.gather(*(trainer.submit_rollout(r, a) for r, a in runs))
            self._collect(outcome, results)
        if self.ledger is not None:  # how it went, linked to the memories the session used
            await asyncio.to_thread(
                self._record_outcome, self.ledger, archive, messages, rollouts, analyses, results
            )
        # Reading records and writing the diff are file work: off the loop the server's routes share.
        outcome.diff = await asyncio.to_thread(self._diff, outcome)
        await asyncio.to_thread(self.sessions.write_diff, archive, outcome.diff)
        return outcome

    async def _training_session(
        self,
        plain: list[Message],
        archive: Archive,
        policy: MemoryPolicy,
        snapshot: str,
        first_message_at: str | None,
    ) -> tuple[list[Rollout], list[RolloutAnalysis | None], list[ExtractedMemory]]:
        """The rollout a training session supplies, analysed (its trajectories written), and its case
        memory; the rollout is returned for the trainer only when experiences are allowed."""
        rollout = rollout_from_messages(plain, snapshot)
        allowed = policy.memory_types if policy.memory_types is not None else self.store.registry.names()
        if not is_training_policy(allowed):
            named = ", ".join(sorted(allowed)) or "nothing"
            raise TrainingSessionError(
                "the session starts with a CaseSpec but its memory_policy.memory_types allow "
                f"{named if policy.memory_types is not None else 'every type (none given)'}: a "
                "training session allows cases and trajectories (and experiences, to train them) "
                f"and nothing else — create it with memory_policy {json.dumps(TRAINING_POLICY)}"
            )
        uri = case_uri(self.store, rollout.case)
        rollout.metadata = {
            SOURCE_ARCHIVE_URI: archive.uri,
            FIRST_MESSAGE_AT: first_message_at,
            **({"case_uris": [uri]} if uri else {}),
        }
        if EXPERIENCES in allowed:
            analysis = (await self._analyze([rollout]))[0]
            trained = [rollout]
        else:  # trajectories only: no trainer runs after it, so an analysis that fails fails the commit
            analysis = await (await self.training()).analyzer.analyze(rollout)
            trained = []
        produced = [t.uri for t in analysis.trajectories] if analysis else None
        return trained, [analysis] if trained else [], [case_memory(rollout.case, produced)]

    def _record_outcome(
        self,
        ledger: UseLedger,
        archive: Archive,
        messages: list[SessionMessage],
        rollouts: list[Rollout],
        analyses: list[RolloutAnalysis | None],
        results: list[RolloutTrainingResult],
    ) -> None:
        record = commit_outcome(self.store, archive.session_id, messages, rollouts, analyses, results)
        if self.adherence is not None:  # before the outcome closes the uses it reads
            record_session(self.adherence, self.store, ledger, record, messages, rollouts)
        ledger.try_record([record])

    def _case_rollout(
        self,
        case: Case,
        plain: list[Message],
        messages: list[SessionMessage],
        archive: Archive,
        snapshot: str,
    ) -> Rollout:
        uri = case_uri(self.store, case)
        return Rollout(
            case=case,
            messages=plain,
            policy_snapshot_id=snapshot,
            evaluation=evaluate_conversation(case, messages),
            metadata={
                SOURCE_ARCHIVE_URI: archive.uri,
                FIRST_MESSAGE_AT: messages[0].created_at if messages else None,
                **({"case_uris": [uri]} if uri else {}),
            },
        )

    async def _analyze(self, rollouts: list[Rollout]) -> list[RolloutAnalysis | None]:
        """Each rollout's analysis (its trajectories written); None where it failed: the trainer
        then analyses that rollout again and reports the error as it does for any rollout."""
        if not rollouts:
            return []
        analyzer = (await self.training()).analyzer
        found = await asyncio.gather(*(analyzer.analyze(r) for r in rollouts), return_exceptions=True)
        return [a if isinstance(a, RolloutAnalysis) else None for a in found]

    def _collect(self, outcome: CommitOutcome, results: list[RolloutTrainingResult]) -> None:
        for result in results:
            outcome.errors += result.errors
            applied = result.apply_result
            if applied is not None and applied.history_id and applied.history_id not in outcome.history_ids:
                outcome.history_ids.append(applied.history_id)
            pending = result.metadata.get("pending_plan")
            if pending and str(pending) not in outcome.pending_plans:
                outcome.pending_plans.append(str(pending))

    def _created_as_adds(self, ops: Operations, created: dict[str, str]) -> None:
        """Files the commit created listed as adds, with the text they were left with (a backlink
        written into one later is no update of a file that existed before)."""
        updated = {op.uri: op for op in ops.updates if op.uri in created}
        ops.updates = [op for op in ops.updates if op.uri not in created]
        listed = {op.uri for op in ops.adds}
        for uri, memory_type in created.items():
            if uri in listed:
                continue
            if uri in updated:
                after = updated[uri].after
            else:
                try:
                    after = self.paths.path_for(uri).read_text(encoding="utf-8")
                except OSError:
                    continue  # gone again (reverted, removed): nothing of it to list
            ops.adds.append(AddOperation(uri=uri, memory_type=memory_type, after=after))

    def _diff(self, outcome: CommitOutcome) -> MemoryDiff:
        """The commit's record: the operations of the history records it produced on its own files
        (a batch shared with other commits also holds theirs; History reverts the batch whole)."""
        ops = Operations()
        skipped = list(outcome.skipped)
        for record_id in outcome.history_ids:
            record = self.history.get(record_id)
            owns = outcome.shared_records.get(record_id, _every_file)
            ops.adds += [op for op in record.operations.adds if owns(op.uri)]
            ops.updates += [op for op in record.operations.updates if owns(op.uri)]
            ops.deletes += [op for op in record.operations.deletes if owns(op.uri)]
            skipped += record.skipped_operations
        self._created_as_adds(ops, outcome.created)
        outcome.peer_files_written = peer_files(self.paths, [*ops.adds, *ops.updates])
        return MemoryDiff(
            archive_uri=outcome.archive.uri,
            trace_id=f"{outcome.archive.session_id}/{outcome.archive.name}",
            extracted_at=utc_stamp(),
            operations=ops,
            skipped_operations=skipped,
            summary=Summary(
                total_adds=len(ops.adds),
                total_updates=len(ops.updates),
                total_deletes=len(ops.deletes),
                total_skipped=len(skipped),
            ),
            kind="session_commit",
            metadata={
                "session_id": outcome.archive.session_id,
                "history_ids": outcome.history_ids,
                "pending_plans": outcome.pending_plans,
                "memories_extracted": outcome.memories_extracted,
                "errors": outcome.errors,
                **outcome.peer_summary(),
            },
        )


def _every_file(_uri: str) -> bool:
    """A record the commit did not share: every file of it is the commit's."""
    return True


def peer_files(paths: WorkspacePaths, operations: list[AddOperation | UpdateOperation]) -> Counter[str]:
    """How many of the files ``operations`` wrote lie in each peer's space."""
    found: Counter[str] = Counter()
    for op in operations:
        try:
            peer, _ = split_peer(paths.relative_of(op.uri))
        except UnsafePathError:
            continue  # not a file of this workspace: no peer of ours
        if peer is not None:
            found[peer] += 1
    return found
