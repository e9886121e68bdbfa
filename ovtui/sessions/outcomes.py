"""What a commit tells the use ledger: the experiences the session read through its own tool calls
(``sessions.experience_reads``), and how each of its cases went — a result per trajectory its run
wrote, with that trajectory's outcome, else one from its grade; a commit without a case is one
``unknown``. The record is keyed by the archived conversation, so a commit run again on the same
messages (an inbox file after a crash) is counted once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ovtui.core.bounds import LEDGER_MEMORIES_PER_CONSUMER
from ovtui.core.domain import Rollout, RolloutAnalysis, RolloutTrainingResult
from ovtui.core.errors import OvtuiError
from ovtui.memory.ledger_state import Outcome, Result, graded, normal_outcome, session_consumer
from ovtui.memory.store import MemoryStore
from ovtui.protocols.sessions import SessionMessage
from ovtui.sessions.experience_reads import experience_reads

MAX_RESULTS = 256  # results of one commit kept (a commit has a few cases, each a trajectory or two)


def conversation_key(messages: Sequence[SessionMessage]) -> str:
    """The archived conversation's identity: its messages without their ids (given anew when a
    conversation file is read again)."""
    dumped = [m.model_dump(mode="json", exclude={"id"}) for m in messages]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


def _analysis_of(
    rollout: Rollout, analysis: RolloutAnalysis | None, result: RolloutTrainingResult | None
) -> RolloutAnalysis | None:
    """The analysis written for ``rollout``: its own, or the one its training made (a batch shared
    with other commits lists theirs too)."""
    if analysis is not None or result is None:
        return analysis
    return next((a for a in result.analyses if a.rollout is rollout), None)


def _results(
    rollouts: Sequence[Rollout],
    analyses: Sequence[RolloutAnalysis | None],
    trained: Sequence[RolloutTrainingResult],
) -> tuple[Result, ...]:
    found: list[Result] = []
    for index, rollout in enumerate(rollouts):
        result = trained[index] if index < len(trained) else None
        analysis = _analysis_of(rollout, analyses[index] if index < len(analyses) else None, result)
        if analysis is not None and analysis.trajectories:
            found += [Result(normal_outcome(t.outcome), t.uri) for t in analysis.trajectories]
        else:
            found.append(Result(graded(rollout.evaluation)))
    return tuple(found[:MAX_RESULTS]) or (Result("unknown"),)


def _version(store: MemoryStore, uri: str) -> int | None:
    try:
        memory = store.read_uri(uri)
    except (OvtuiError, OSError):
        return None
    return memory.version if memory is not None else None


def commit_outcome(
    store: MemoryStore,
    session_id: str,
    messages: Sequence[SessionMessage],
    rollouts: Sequence[Rollout],
    analyses: Sequence[RolloutAnalysis | None],
    trained: Sequence[RolloutTrainingResult],
) -> Outcome:
    """The commit's record (reading the versions of the experiences read: file work)."""
    read = experience_reads([m.to_message() for m in messages], store.paths.user)
    reads = tuple((uri, _version(store, uri)) for uri in read[:LEDGER_MEMORIES_PER_CONSUMER])
    return Outcome(
        session_consumer(session_id),
        _results(rollouts, analyses, trained),
        reads,
        key=conversation_key(messages),
    )
