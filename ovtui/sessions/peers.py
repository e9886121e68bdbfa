"""Whose a memory of a session is: the user's own, or a peer's — someone else in
the conversation, named by a message's ``peer_id`` — and what the session's MemoryPolicy lets a
commit keep.

One extracted memory is routed so:

- a type that is not ``peer_enabled`` (cases: how a task was done is the agent's own business)
  ignores the peer and is the user's own;
- no peer: the user's own, kept when the policy's ``self`` is on;
- a valid peer id the policy allows (``peer.enabled``, ``peer.allowed_peer_ids``): that peer's
  space, ``peers/<peer_id>/`` in the workspace;
- an invalid or unauthorised peer id: skipped, and counted with the reason in the commit's report.

Every memory the policy refuses (a type it leaves out, the user's own with ``self`` off, a peer's as
above) is also a skipped operation with OpenViking's reason code, for the commit's memory_diff,
together with what the extractor itself skipped.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_name
from ovtui.memory.memory_diff import (
    INVALID_PEER_ID,
    MEMORY_TYPE_FILTERED,
    PEER_MEMORY_DISABLED,
    SELF_MEMORY_DISABLED,
    SkippedOperation,
)
from ovtui.memory.memory_diff import (
    PEER_NOT_ALLOWED as NOT_ALLOWED_CODE,
)
from ovtui.memory.types import MemoryTypeRegistry
from ovtui.plugins.session_extraction import ExtractedMemory, Extraction
from ovtui.protocols.sessions import MemoryPolicy

PEERS_OFF = "peer memories are off in the session's MemoryPolicy (peer.enabled)"
PEER_NOT_ALLOWED = "not in the session's MemoryPolicy peer.allowed_peer_ids"
PEER_INVALID = "not a valid peer id"
# Each reason in words → OpenViking's reason code.
_CODES = {PEERS_OFF: PEER_MEMORY_DISABLED, PEER_NOT_ALLOWED: NOT_ALLOWED_CODE, PEER_INVALID: INVALID_PEER_ID}
SHOWN_PEER_CHARS = 40  # an invalid id is reported, cut and escaped: it may be anything


@dataclass
class PeerReport:
    """The peers of one commit: memories routed to each peer's space, and those skipped."""

    routed: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)  # (peer shown, reason)
    # Every memory not kept, as the commit's memory_diff lists it.
    skipped_operations: list[SkippedOperation] = field(default_factory=list)

    def skip(self, memory: ExtractedMemory, peer_id: str, reason: str) -> None:
        shown = peer_id if reason != PEER_INVALID else ascii(peer_id[:SHOWN_PEER_CHARS])
        self.skipped[(shown, reason)] += 1
        self.skipped_operations.append(SkippedOperation.openviking(memory.memory_type, _CODES[reason]))

    def skipped_list(self) -> list[dict[str, Any]]:
        return [
            {"peer_id": peer, "memories": n, "reason": reason}
            for (peer, reason), n in sorted(self.skipped.items())
        ]


def route(memory: ExtractedMemory, policy: MemoryPolicy, report: PeerReport) -> bool:
    """Whether ``memory`` is kept (its ``peer_id`` then says whose space it goes to); a peer's memory
    that is not kept is counted in ``report``."""
    if memory.peer_id is None:
        if not policy.self_.enabled:
            report.skipped_operations.append(
                SkippedOperation.openviking(memory.memory_type, SELF_MEMORY_DISABLED)
            )
        return policy.self_.enabled
    try:
        validate_name(memory.peer_id, what="peer_id")
    except UnsafePathError:
        report.skip(memory, memory.peer_id, PEER_INVALID)
        return False
    if not policy.peer.enabled:
        report.skip(memory, memory.peer_id, PEERS_OFF)
        return False
    if not policy.allows_peer(memory.peer_id):
        report.skip(memory, memory.peer_id, PEER_NOT_ALLOWED)
        return False
    report.routed[memory.peer_id] += 1
    return True


def apply_policy(
    extraction: Extraction, policy: MemoryPolicy, registry: MemoryTypeRegistry
) -> tuple[Extraction, PeerReport]:
    """What the session's MemoryPolicy keeps of an extraction (only whitelisted types; the user's
    own memories when ``self`` is on; each peer's as routed above), and the peers' report."""
    kept = Extraction(model_calls=extraction.model_calls)
    report = PeerReport(skipped_operations=list(extraction.skipped))
    for memory in extraction.memories:
        if not policy.allows_type(memory.memory_type):
            report.skipped_operations.append(
                SkippedOperation.openviking(memory.memory_type, MEMORY_TYPE_FILTERED)
            )
            continue
        if memory.peer_id is not None and not registry.get(memory.memory_type).peer_enabled:
            memory = dataclasses.replace(memory, peer_id=None)  # never a peer's: the user's own
        if route(memory, policy, report):
            kept.memories.append(memory)
    if policy.allows_type("cases") and policy.self_.enabled:
        kept.cases = list(extraction.cases)  # cases are not peer_enabled: always the user's own
    return kept, report
