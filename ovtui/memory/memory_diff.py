"""memory_diff.json: the audit record of one applied (or dry-run) plan, commit, revert or move.

OpenViking's keys (archive_uri, trace_id, extracted_at, operations, skipped_operations, summary)
plus our ``review``, ``kind`` and ``reverts``. In memory, operations hold the full file text
(MEMORY_FIELDS included) so a revert restores files exactly; the file holds them as OpenViking
0.5.2 writes them, so one of its consumers reads the same text: ``after``, ``before`` and
``deleted_content`` are the memory's body, the rest of the file (the blank line and the
``<!-- MEMORY_FIELDS … -->`` trailer) is kept beside it in ``after_trailer``, ``before_trailer``,
``deleted_trailer``; ``trace_id`` is null and ovtui's own is ``ovtui_trace_id``; ``extracted_at``
is an ISO time ending ``+00:00``. A record of an older ovtui (full texts, a trace id, ``Z``) reads
as it did. An update whose before and after differ only in ``version`` or trace fields is a no-op
and is not listed: every write bumps ``version``, so comparing bytes never would.

``skipped_operations`` lists what was asked and not written, as OpenViking lists it (``memory_type``,
``reason_code``, ``reason``; ``uri`` where one is known; ``page_id`` is OpenViking's and never
ovtui's): the refusals with OpenViking's reason codes where one fits, and ovtui's own (below) for
no-ops and refusals OpenViking does not have. ``summary.total_skipped`` counts them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ovtui.core.decisions import ReviewDecision
from ovtui.core.errors import MemoryFormatError
from ovtui.core.fileformat import MemoryFile, parse_memory

# Fields that change on every write without changing what a memory says.
TRACE_FIELDS = frozenset({"version", "trace_id", "updated_at", "last_trace_id", "extracted_at"})


class _Part(BaseModel):
    # Records written by OpenViking (or a newer ovtui) may carry keys we do not know: keep them.
    model_config = ConfigDict(extra="allow")


# Each text of an operation, and the key its trailer is kept under in the file.
TRAILERS = {"after": "after_trailer", "before": "before_trailer", "deleted_content": "deleted_trailer"}


def split_trailer(text: str) -> tuple[str, str]:
    """A memory file's text as OpenViking's diff holds it: the body, and what follows it (the
    MEMORY_FIELDS trailer; "" for a text that is no memory file, kept whole as its body)."""
    try:
        body = parse_memory(text).content
    except MemoryFormatError:
        return text, ""
    if not body or not text.startswith(body):
        return text, ""
    return body, text[len(body) :]


def _whole_texts(data: Any) -> Any:
    """An operation read from a file: each text joined again with its trailer."""
    if isinstance(data, dict) and any(key in data for key in TRAILERS.values()):
        data = dict(data)
        for text_key, trailer_key in TRAILERS.items():
            trailer = data.pop(trailer_key, None)
            if isinstance(trailer, str) and isinstance(data.get(text_key), str):
                data[text_key] += trailer
    return data


def _openviking_texts(operation: dict[str, Any]) -> None:
    """An operation as the file holds it: each text its body, the trailer beside it."""
    for text_key, trailer_key in TRAILERS.items():
        text = operation.get(text_key)
        if isinstance(text, str):
            body, trailer = split_trailer(text)
            if trailer:
                operation[text_key], operation[trailer_key] = body, trailer


class _Operation(_Part):
    @model_validator(mode="before")
    @classmethod
    def _joined(cls, data: Any) -> Any:
        return _whole_texts(data)


class AddOperation(_Operation):
    uri: str
    memory_type: str = ""
    after: str = ""


class UpdateOperation(_Operation):
    uri: str
    memory_type: str = ""
    before: str = ""
    after: str = ""


class DeleteOperation(_Operation):
    uri: str
    memory_type: str = ""
    deleted_content: str = ""


# OpenViking's reason codes (its fixed reason for each), for the refusals both tools make.
MEMORY_TYPE_FILTERED = "memory_type_filtered"
SELF_MEMORY_DISABLED = "self_memory_disabled"
PEER_MEMORY_DISABLED = "peer_memory_disabled"
INVALID_PEER_ID = "invalid_peer_id"
PEER_NOT_ALLOWED = "peer_not_allowed"
INVALID_RANGES = "invalid_ranges"
NO_WRITABLE_TARGET = "no_writable_target"
OPENVIKING_REASONS = {
    MEMORY_TYPE_FILTERED: "Memory type is outside the allowed extraction scope",
    SELF_MEMORY_DISABLED: "Self memory writes are disabled",
    PEER_MEMORY_DISABLED: "Peer memory writes are disabled",
    INVALID_PEER_ID: "Target peer ID is invalid",
    PEER_NOT_ALLOWED: "Target peer is outside the allowed memory scope",
    INVALID_RANGES: "Message ranges are malformed or out of bounds",
    "ambiguous_target": "Memory ownership cannot be resolved uniquely",
    NO_WRITABLE_TARGET: "No writable memory target could be resolved",
}
# ovtui's own: a write that would change nothing, an edit planned on a file that changed since
# (compare-and-swap), an add-only file that exists, an edit that no longer applies to the file, a
# file that cannot move because its new place is taken, and an item refused for anything else
# (its reason says what).
UNCHANGED = "unchanged"
STALE_BASE = "stale_base"
ADD_ONLY_EXISTS = "add_only_exists"
EDIT_NOT_APPLICABLE = "edit_not_applicable"
TARGET_EXISTS = "target_exists"
ITEM_REFUSED = "item_refused"


class SkippedOperation(_Part):
    memory_type: str
    page_id: int | None = None
    uri: str | None = None
    reason_code: str
    reason: str

    @classmethod
    def openviking(cls, memory_type: str, reason_code: str, uri: str | None = None) -> SkippedOperation:
        """A refusal OpenViking also makes, with its fixed reason."""
        reason = OPENVIKING_REASONS[reason_code]
        return cls(memory_type=memory_type, uri=uri, reason_code=reason_code, reason=reason)


def skipped_line(skipped: SkippedOperation) -> str:
    """One skipped operation in words: ``preferences memories/preferences/x.md: unchanged — why``."""
    where = (
        skipped.uri.split("/", 4)[-1] if skipped.uri and skipped.uri.startswith("viking://") else skipped.uri
    )
    return f"{skipped.memory_type}{f' {where}' if where else ''}: {skipped.reason_code} — {skipped.reason}"


class Operations(_Part):
    adds: list[AddOperation] = Field(default_factory=list)
    updates: list[UpdateOperation] = Field(default_factory=list)
    deletes: list[DeleteOperation] = Field(default_factory=list)

    def uris(self) -> list[str]:
        return [*(o.uri for o in self.adds), *(o.uri for o in self.updates), *(o.uri for o in self.deletes)]


class Summary(_Part):
    total_adds: int = 0
    total_updates: int = 0
    total_deletes: int = 0
    total_skipped: int = 0


class Review(_Part):
    plan_id: str | None = None
    dry_run: bool = False
    decisions: list[ReviewDecision] = Field(default_factory=list)
    # Where each applied item stood in the reviewed plan (decisions and errors use plan positions).
    item_indices: list[int] | None = None


class ChainLink(_Part):
    """Where a record stands in the history's hash chain (``memory/chain.py``): its position, its
    own id, the previous record's id and digest, and its digest (of the whole record, this field
    included but for ``digest``). The first chained record also counts and digests the records that
    predate the chain (``earlier``, ``earlier_digest``)."""

    seq: int
    id: str
    previous: str | None = None
    previous_digest: str | None = None
    earlier: int | None = None
    earlier_digest: str | None = None
    digest: str = ""


class MemoryDiff(_Part):
    archive_uri: str = ""
    trace_id: str = ""
    extracted_at: str = ""
    operations: Operations = Field(default_factory=Operations)
    skipped_operations: list[SkippedOperation] = Field(default_factory=list)
    summary: Summary = Field(default_factory=Summary)
    review: Review = Field(default_factory=Review)
    kind: str = "apply"
    reverts: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    chain: ChainLink | None = None

    @model_validator(mode="before")
    @classmethod
    def _own_trace(cls, data: Any) -> Any:
        if isinstance(data, dict) and "ovtui_trace_id" in data:
            data = {**data, "trace_id": data["ovtui_trace_id"]}
            del data["ovtui_trace_id"]
        return data

    @field_validator("trace_id", mode="before")
    @classmethod
    def _no_trace(cls, value: Any) -> Any:
        return "" if value is None else value  # OpenViking writes null without a tracer

    @model_validator(mode="after")
    def _count_skipped(self) -> MemoryDiff:
        # The count follows the list (a record of an older ovtui has neither).
        if self.skipped_operations and not self.summary.total_skipped:
            self.summary.total_skipped = len(self.skipped_operations)
        return self

    @property
    def dry_run(self) -> bool:
        return self.kind == "dry_run" or self.review.dry_run

    def render(self) -> str:
        """The record as its file holds it (OpenViking's shape, see the module)."""
        data = self.model_dump(mode="json", exclude_none=True)
        ordered: dict[str, Any] = {}
        for key, value in data.items():
            ordered[key] = value
            if key == "trace_id":
                ordered["trace_id"] = None
                if value:
                    ordered["ovtui_trace_id"] = value
        for kind in ("adds", "updates", "deletes"):
            for operation in ordered["operations"][kind]:
                _openviking_texts(operation)
        return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class FileChange:
    """One file's before/after text (None: absent) in a change set."""

    uri: str
    memory_type: str
    before: str | None
    after: str | None

    @property
    def is_noop(self) -> bool:
        return self.before == self.after or (
            self.before is not None and self.after is not None and same_memory(self.before, self.after)
        )


def _meaningful(memory: MemoryFile) -> tuple[str, dict[str, Any]]:
    return memory.content, {k: v for k, v in memory.fields.items() if k not in TRACE_FIELDS}


def same_memory_file(a: MemoryFile, b: MemoryFile) -> bool:
    """Equal ignoring ``version`` and trace fields."""
    return _meaningful(a) == _meaningful(b)


def same_memory(before: str, after: str) -> bool:
    """``same_memory_file`` on texts (compared raw when either does not parse)."""
    if before == after:
        return True
    try:
        return same_memory_file(parse_memory(before), parse_memory(after))
    except MemoryFormatError:
        return False


def utc_stamp(now: datetime | None = None) -> str:
    """A record's time as OpenViking writes ``extracted_at``: ISO 8601, UTC, ``+00:00``."""
    return (now or datetime.now(UTC)).astimezone(UTC).isoformat()


def build_memory_diff(
    changes: list[FileChange],
    *,
    kind: str = "apply",
    trace_id: str = "",
    archive_uri: str = "",
    review: Review | None = None,
    reverts: str | None = None,
    metadata: dict[str, Any] | None = None,
    now: datetime | None = None,
    filter_noops: bool = True,
    skipped: list[SkippedOperation] | None = None,
) -> MemoryDiff:
    """The record of ``changes``; no-op updates are left out (``filter_noops=False``: the caller has
    already compared them), an empty change set gives an empty record. ``skipped``: what was asked
    and not written."""
    ops = Operations()
    for change in changes:
        if change.before is None and change.after is not None:
            ops.adds.append(AddOperation(uri=change.uri, memory_type=change.memory_type, after=change.after))
        elif change.before is not None and change.after is None:
            ops.deletes.append(
                DeleteOperation(uri=change.uri, memory_type=change.memory_type, deleted_content=change.before)
            )
        elif change.before is not None and change.after is not None and not (filter_noops and change.is_noop):
            ops.updates.append(
                UpdateOperation(
                    uri=change.uri, memory_type=change.memory_type, before=change.before, after=change.after
                )
            )
    return MemoryDiff(
        archive_uri=archive_uri,
        trace_id=trace_id,
        extracted_at=utc_stamp(now),
        operations=ops,
        skipped_operations=list(skipped or []),
        summary=Summary(
            total_adds=len(ops.adds),
            total_updates=len(ops.updates),
            total_deletes=len(ops.deletes),
            total_skipped=len(skipped or []),
        ),
        review=review or Review(dry_run=kind == "dry_run"),
        kind=kind,
        reverts=reverts,
        metadata=metadata or {},
    )
