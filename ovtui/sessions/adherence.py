"""A committed session's adherence: the experiences it used — served to it through the API since
its last commit (the ledger's open uses) or read by its own tool calls — checked against what it
did (its case's rollout when it has one, else its conversation) and recorded once per conversation
(the commit's key)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ovtui.core.domain import Experience, Rollout
from ovtui.core.errors import OvtuiError
from ovtui.core.experience_files import experience_from_file
from ovtui.core.fileformat import EXPERIENCES
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Outcome
from ovtui.memory.store import MemoryStore
from ovtui.protocols.sessions import SessionMessage
from ovtui.storage.faults import os_error_line
from ovtui.train.adherence.recorder import AdherenceRecorder, observations

log = logging.getLogger(__name__)


def _experiences(store: MemoryStore, uris: Sequence[str]) -> list[Experience]:
    found: list[Experience] = []
    for uri in dict.fromkeys(uris):
        if f"/memories/{EXPERIENCES}/" not in uri:
            continue
        try:
            memory = store.read_uri(uri)
        except (OvtuiError, OSError):
            continue  # gone or unreadable since: nothing to hold the session to
        if memory is not None:
            found.append(experience_from_file(memory.model_copy(update={"uri": uri})))
    return found


def record_session(
    recorder: AdherenceRecorder,
    store: MemoryStore,
    ledger: UseLedger,
    outcome: Outcome,
    messages: Sequence[SessionMessage],
    rollouts: Sequence[Rollout],
) -> None:
    """Check and record (file work: called in a thread); what cannot be read is logged, never raised."""
    try:
        served = ledger.open_uses(outcome.consumer)
    except OvtuiError as exc:
        log.warning("adherence not recorded: %s", exc)
        return
    except OSError as exc:
        log.warning("adherence not recorded: %s", os_error_line(exc, store.paths.relative))
        return
    used = _experiences(store, [*served, *(uri for uri, _ in outcome.reads)])
    if not used:
        return
    rollout = rollouts[0] if rollouts else None
    plain = rollout.messages if rollout is not None else [m.to_message() for m in messages]
    passed = rollout.evaluation.passed if rollout is not None and rollout.evaluation is not None else None
    session = outcome.consumer
    seen = observations(
        recorder.reader,
        used,
        plain,
        case=rollout.case.name if rollout is not None else session,
        passed=passed,
        trajectory=session,
    )
    recorder.try_record([(f"commit:{outcome.key}" if outcome.key else None, seen)])
