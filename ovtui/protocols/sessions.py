"""The wire and file shapes of sessions: messages with text, tool, context and image parts and a
``peer_id``, the per-session MemoryPolicy and auto-commit policy, and the request bodies of
OpenViking's session API.

Request bodies ignore keys they do not know (OpenViking clients send more than ovtui uses:
``role_id``, ``telemetry``…); a known key with a wrong value is an error naming the field. What is
stored (``SessionMessage``, ``SessionMeta``) forbids unknown keys like every other file ovtui reads
back.

A message may say which turn it belongs to (``turn_id``), what kind of step it is
(``message_kind``) and which messages it stands for (``source_message_ids``, a checkpoint's
sources): stored as given, returned with the message, and left out of both while unset, as
OpenViking 0.5.2 does. A user message of two or more tool results and nothing else (a transport
aggregate: the results of several calls carried back at once) is stored as one message per result,
each of kind ``tool_transport`` unless the request named a kind, as 0.5.2 stores it.

Context and image parts are stored with their message (an archive keeps the whole conversation)
but extraction reads text and tool parts only: ``SessionMessage.to_message`` leaves them out, and a
commit's task result counts what was left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from ovtui.core.bounds import MAX_BATCH_MESSAGES, MAX_TEXT_CHARS
from ovtui.core.domain import Message, TextPart, ToolPart
from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_name
from ovtui.protocols.wire_json import find_unclean

MAX_URI_CHARS = 4096
# Roles OpenAI-style agents send. OpenViking stores any string; ovtui names a role it would not
# know how to read (a typo) instead.
Role = Literal["system", "developer", "user", "assistant", "tool"]
# What a message is within its turn (OpenViking 0.5.2's kinds): the query that opens it, an
# assistant step, tool results carried back, a summary standing for earlier messages.
MessageKind = Literal["user_query", "assistant_step", "tool_transport", "checkpoint"]
TURN_FIELDS = ("turn_id", "message_kind", "source_message_ids")
# OpenViking sets no bound on these; ovtui bounds every field a request brings in. A checkpoint may
# stand for every message a session holds.
MAX_TURN_ID_CHARS = 256
MAX_SOURCE_MESSAGE_IDS = 10_000


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_peer_id(value: str | None) -> str | None:
    """A peer id names a folder of the peer's memories: the one name rule applies."""
    if value is None or value == "":
        return None
    try:
        return validate_name(value, what="peer_id")
    except UnsafePathError as exc:
        raise ValueError(str(exc)) from None


# --- stored -------------------------------------------------------------------------------------


class ContextPart(BaseModel):
    """A memory, resource or skill the agent had in front of it (OpenViking's context part)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["context"] = "context"
    uri: str = ""
    context_type: Literal["memory", "resource", "skill"] = "memory"
    abstract: str = ""


class ImageUrl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    detail: str | None = None


class ImagePart(BaseModel):
    """An image the message carried, by URL (a ``data:`` URL included), as OpenAI's API sends it."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["image_url"] = "image_url"
    image_url: ImageUrl


StoredPart = Annotated[TextPart | ToolPart | ContextPart | ImagePart, Field(discriminator="type")]
NOT_EXTRACTED = ("context", "image_url")  # part types stored but not read by extraction


class SessionMessage(BaseModel):
    """One line of ``sessions/<id>/messages.jsonl``: a domain Message plus who said it and when."""

    model_config = ConfigDict(extra="forbid")

    id: str
    role: Role
    parts: list[StoredPart] = Field(default_factory=list)
    peer_id: str | None = None
    created_at: str = Field(default_factory=now_iso)
    turn_id: str | None = None
    message_kind: MessageKind | None = None
    source_message_ids: list[str] | None = None

    @model_serializer(mode="wrap")
    def _turn_fields_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Lines written before these fields existed, and messages that never had them, serialise
        # alike: the live file stays as it was, and so does a conversation's identity.
        dumped: dict[str, Any] = handler(self)
        for name in TURN_FIELDS:
            if name in dumped and dumped[name] is None:
                del dumped[name]
        return dumped

    def to_message(self) -> Message:
        """What extraction and training read: text and tool parts; a developer message is the
        system instructions of newer OpenAI-style agents."""
        role = "system" if self.role == "developer" else self.role
        return Message(role=role, parts=[p for p in self.parts if isinstance(p, TextPart | ToolPart)])

    @property
    def text(self) -> str:
        return self.to_message().text


# --- tokens (OpenViking's one estimate, so a client's thresholds and budgets mean the same here) --

# OpenViking estimates every session count with one rule (its estimate_text_tokens, which a
# message's estimated_tokens, pending_tokens, auto-commit's threshold and the context's token
# budget all use): quarter-token units per character, rounded up to whole tokens. Characters
# counted as 6 units (1.5 tokens): CJK ideographs (extension A, compatibility ones and the astral
# ideograph planes too), Hangul syllables and jamo, kana and its phonetic extensions, CJK symbols
# and punctuation, full-width forms. Everything else in the BMP is 1 unit (accented Latin, Greek,
# bopomofo alike), everything else beyond it 8 (2 tokens: emoji).
WIDE_RANGES = (
    (0x1100, 0x11FF),
    (0x3000, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2EBEF),
)


def _quarter_tokens(char: str) -> int:
    code = ord(char)
    if code < 0x1100:
        return 1
    if any(low <= code <= high for low, high in WIDE_RANGES):
        return 6
    return 8 if code > 0xFFFF else 1


def estimate_tokens(text: str) -> int:
    """About four ASCII characters a token; wide scripts count more (rounded up)."""
    if text.isascii():
        return (len(text) + 3) // 4
    return (sum(_quarter_tokens(c) for c in text) + 3) // 4


def carries_tool_results(message: SessionMessage) -> bool:
    """A user-role message of tool parts only carries results back; it asks nothing."""
    return (
        message.role == "user" and bool(message.parts) and all(isinstance(p, ToolPart) for p in message.parts)
    )


def is_transport_aggregate(message: SessionMessage) -> bool:
    """The results of several tool calls carried back in one user message (OpenViking 0.5.2 stores
    one message per result)."""
    return len(message.parts) > 1 and carries_tool_results(message)


def message_tokens(message: SessionMessage) -> int:
    """What the message adds to a prompt: its texts, context abstracts and tool calls (images 0),
    joined and estimated once, as OpenViking's message estimate does (per piece would round up
    every piece and count more)."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ContextPart):
            pieces.append(part.abstract)
        elif isinstance(part, ToolPart):
            pieces += [part.tool_id, part.tool_name]
            if part.tool_input:
                pieces.append(json.dumps(part.tool_input, ensure_ascii=False))
            pieces.append(part.tool_output)
    return estimate_tokens("".join(pieces))


# --- policies -----------------------------------------------------------------------------------


class SelfPolicy(BaseModel):
    enabled: bool = True


class PeerPolicy(BaseModel):
    enabled: bool = True
    # None: any valid peer id; a list: only these peers get memories of their own.
    allowed_peer_ids: list[str] | None = None

    @field_validator("allowed_peer_ids")
    @classmethod
    def _valid_ids(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        return [p for p in (check_peer_id(v) for v in value) if p]


class MemoryPolicy(BaseModel):
    """What a commit of this session may extract (OpenViking's MemoryPolicy): the user's own
    memories (``self``), memories of peers (``peer``), and a whitelist of memory types."""

    model_config = ConfigDict(populate_by_name=True)

    self_: SelfPolicy = Field(default_factory=SelfPolicy, alias="self")
    peer: PeerPolicy = Field(default_factory=PeerPolicy)
    memory_types: list[str] | None = None

    def allows_type(self, memory_type: str) -> bool:
        return self.memory_types is None or memory_type in self.memory_types

    def allows_peer(self, peer_id: str) -> bool:
        allowed = self.peer.allowed_peer_ids
        return self.peer.enabled and (allowed is None or peer_id in allowed)

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


MIN_IDLE_TIMEOUT_SECONDS = 300
# Each field's default and the range a value is clamped to (OpenViking's bounds).
AUTO_COMMIT_FIELDS: dict[str, tuple[int, int, int]] = {
    "pending_token_threshold": (150_000, 0, 1_000_000),
    "message_count_threshold": (100, 0, 1_000),
    "idle_timeout_seconds": (86_400, 0, 604_800),
    "keep_recent_count": (0, 0, 1_000),
    "min_commit_interval_seconds": (0, 0, 604_800),
}


class AutoCommitPolicy(BaseModel):
    """When a message write commits the session by itself: when its pending tokens or its live
    message count pass a threshold (strictly; 0 turns that test off), no sooner than
    ``min_commit_interval_seconds`` after the last automatic commit, keeping the newest
    ``keep_recent_count`` messages live. ``idle_timeout_seconds`` is stored for OpenViking
    clients; ovtui runs no idle scanner."""

    model_config = ConfigDict(extra="forbid")

    pending_token_threshold: int = AUTO_COMMIT_FIELDS["pending_token_threshold"][0]
    message_count_threshold: int = AUTO_COMMIT_FIELDS["message_count_threshold"][0]
    idle_timeout_seconds: int = AUTO_COMMIT_FIELDS["idle_timeout_seconds"][0]
    keep_recent_count: int = AUTO_COMMIT_FIELDS["keep_recent_count"][0]
    min_commit_interval_seconds: int = AUTO_COMMIT_FIELDS["min_commit_interval_seconds"][0]

    def due(self, *, message_count: int, pending_tokens: int) -> bool:
        tokens = self.pending_token_threshold and pending_tokens > self.pending_token_threshold
        messages = self.message_count_threshold and message_count > self.message_count_threshold
        return bool(tokens or messages)


class AutoCommitPolicyIn(BaseModel):
    """A policy as a request sets it: fields left out take their defaults, values are clamped to
    their range; an unknown key or an explicit null is refused."""

    model_config = ConfigDict(extra="forbid")

    pending_token_threshold: int | None = None
    message_count_threshold: int | None = None
    idle_timeout_seconds: int | None = None
    keep_recent_count: int | None = None
    min_commit_interval_seconds: int | None = None

    @field_validator("idle_timeout_seconds")
    @classmethod
    def _idle(cls, value: int | None) -> int | None:
        if value is not None and value != 0 and value < MIN_IDLE_TIMEOUT_SECONDS:
            raise ValueError(f"must be 0 or at least {MIN_IDLE_TIMEOUT_SECONDS}")
        return value

    @model_validator(mode="after")
    def _no_nulls(self) -> AutoCommitPolicyIn:
        nulls = sorted(f for f in self.model_fields_set if getattr(self, f) is None)
        if nulls:
            raise ValueError(
                f"{', '.join(nulls)}: must be integers (send auto_commit_policy: null to turn automatic "
                "commits off)"
            )
        return self

    def effective(self) -> AutoCommitPolicy:
        values = {}
        for name, (default, low, high) in AUTO_COMMIT_FIELDS.items():
            given = getattr(self, name)
            values[name] = default if given is None else min(max(given, low), high)
        return AutoCommitPolicy(**values)


def zero_usage() -> dict[str, int]:
    return dict.fromkeys(
        ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens"), 0
    )


class SessionMeta(BaseModel):
    """``sessions/<id>/meta.json``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    created_at: str = Field(default_factory=now_iso)
    updated_at: str = Field(default_factory=now_iso)
    memory_policy: dict[str, Any] = Field(default_factory=lambda: MemoryPolicy().dump())
    auto_commit_policy: AutoCommitPolicy | None = None
    commit_count: int = 0  # the number of the last archive (archive_NNN)
    keep_recent_count: int = 0  # the keep window of the last commit asked for
    total_message_count: int = 0  # every message ever added
    last_message_at: str = ""
    last_commit_at: str = ""
    last_auto_commit_at: str = ""
    # What the commits' background phases extracted and the model calls they made, summed.
    memories_extracted: dict[str, int] = Field(default_factory=lambda: {"total": 0})
    llm_token_usage: dict[str, int] = Field(default_factory=zero_usage)

    def policy(self) -> MemoryPolicy:
        return MemoryPolicy.model_validate(self.memory_policy)


# --- requests (OpenViking's shapes; unknown keys ignored) ---------------------------------------


class TextPartIn(BaseModel):
    type: Literal["text"]
    text: str = Field(max_length=MAX_TEXT_CHARS)


class ToolPartIn(BaseModel):
    type: Literal["tool"]
    tool_id: str = ""
    tool_name: str = Field("", max_length=128)
    tool_input: dict[str, Any] | None = None
    tool_output: str = Field("", max_length=MAX_TEXT_CHARS)
    tool_status: Literal["completed", "error", "pending", "running"] = "completed"

    @field_validator("tool_input")
    @classmethod
    def _storable(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # A request body is checked before it gets here; a conversation file (its JSON parser
        # takes NaN and 1e400) is checked here: they would be stored as null.
        found = find_unclean(value) if value else None
        if found:
            raise ValueError(f"{'.'.join(map(str, found.where))}: {found.problem}")
        return value


class ContextPartIn(BaseModel):
    type: Literal["context"]
    uri: str = Field("", max_length=MAX_URI_CHARS)
    context_type: Literal["memory", "resource", "skill"] = "memory"
    abstract: str = Field("", max_length=MAX_TEXT_CHARS)


class ImagePartIn(BaseModel):
    type: Literal["image_url"]
    image_url: str | ImageUrl

    @field_validator("image_url")
    @classmethod
    def _url(cls, value: str | ImageUrl) -> str | ImageUrl:
        url = value if isinstance(value, str) else value.url
        if not url.strip():
            raise ValueError("an image_url part needs a non-empty URL")
        if len(url) > MAX_TEXT_CHARS:
            raise ValueError(f"the URL is longer than {MAX_TEXT_CHARS} characters")
        return value

    def stored(self) -> ImagePart:
        url = self.image_url if isinstance(self.image_url, ImageUrl) else ImageUrl(url=self.image_url)
        return ImagePart(image_url=url)


PartIn = Annotated[TextPartIn | ToolPartIn | ContextPartIn | ImagePartIn, Field(discriminator="type")]


SourceId = Annotated[str, Field(max_length=MAX_TURN_ID_CHARS)]


class AddMessageRequest(BaseModel):
    role: Role
    content: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    parts: list[PartIn] | None = Field(None, max_length=64)
    peer_id: str | None = None
    created_at: str | None = None
    turn_id: str | None = Field(None, max_length=MAX_TURN_ID_CHARS)
    message_kind: MessageKind | None = None
    source_message_ids: list[SourceId] | None = Field(None, max_length=MAX_SOURCE_MESSAGE_IDS)

    @field_validator("peer_id")
    @classmethod
    def _peer(cls, value: str | None) -> str | None:
        return check_peer_id(value)

    @field_validator("created_at")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        # Extraction dates events by it: a time it cannot read is refused now, not misread later.
        if value:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{value[:40]!r} is not an ISO 8601 time (2026-11-30T10:00:00Z)") from None
        return value or None

    @model_validator(mode="after")
    def _content_or_parts(self) -> AddMessageRequest:
        if self.content is None and self.parts is None:
            raise ValueError("either 'content' or 'parts' must be given")
        return self

    def to_stored(self, message_id: str) -> SessionMessage:
        parts: list[TextPart | ToolPart | ContextPart | ImagePart] = []
        if self.parts is not None:  # parts win over content, as in OpenViking
            for part in self.parts:
                if isinstance(part, TextPartIn):
                    parts.append(TextPart(text=part.text))
                elif isinstance(part, ToolPartIn):
                    parts.append(
                        ToolPart(
                            tool_id=part.tool_id or message_id,
                            tool_name=part.tool_name or "tool",
                            tool_input=part.tool_input or {},
                            tool_output=part.tool_output,
                            tool_status=part.tool_status,
                        )
                    )
                elif isinstance(part, ContextPartIn):
                    parts.append(
                        ContextPart(uri=part.uri, context_type=part.context_type, abstract=part.abstract)
                    )
                else:
                    parts.append(part.stored())
        elif self.content:
            parts.append(TextPart(text=self.content))
        return SessionMessage(
            id=message_id,
            role=self.role,
            parts=list(parts),
            peer_id=self.peer_id,
            created_at=self.created_at or now_iso(),
            turn_id=self.turn_id,
            message_kind=self.message_kind,
            source_message_ids=self.source_message_ids,
        )

    def stored_messages(self, new_id: Callable[[], str]) -> list[SessionMessage]:
        """The messages this request is stored as: one, or one per tool result of a transport
        aggregate (each with its own id, the request's time, peer and turn fields, and kind
        ``tool_transport`` unless the request named one)."""
        whole = self.to_stored(new_id())
        if not is_transport_aggregate(whole):
            return [whole]
        split = []
        for index, part in enumerate(whole.parts):
            message_id = whole.id if index == 0 else new_id()
            if isinstance(part, ToolPart) and part.tool_id == whole.id:  # the id given for none
                part = part.model_copy(update={"tool_id": message_id})
            split.append(
                whole.model_copy(
                    update={
                        "id": message_id,
                        "parts": [part],
                        "message_kind": whole.message_kind or "tool_transport",
                    },
                    deep=True,
                )
            )
        return split


class AddMessagesBatchRequest(BaseModel):
    messages: list[AddMessageRequest] = Field(min_length=1, max_length=MAX_BATCH_MESSAGES)


class CreateSessionRequest(BaseModel):
    session_id: str | None = None
    memory_policy: MemoryPolicy | None = None
    auto_commit_policy: AutoCommitPolicyIn | None = None


class UpdateSessionConfigRequest(BaseModel):
    """``PATCH /sessions/{id}/config``: a field left out is left as it is; ``auto_commit_policy:
    null`` turns automatic commits off."""

    model_config = ConfigDict(extra="forbid")

    auto_commit_policy: AutoCommitPolicyIn | None = None
    memory_extraction_config: dict[str, Any] | None = None  # OpenViking's event tags: not used
    telemetry: Any = None


class CommitRequest(BaseModel):
    """``POST /sessions/{id}/commit``: archive all but the newest ``keep_recent_count`` messages."""

    keep_recent_count: int = Field(0, ge=0, le=10_000)
    reset_context: bool = False
    retention_mode: Literal["turn_budget"] | None = None

    @model_validator(mode="after")
    def _supported(self) -> CommitRequest:
        if self.retention_mode is not None:
            raise ValueError(
                "retention_mode: ovtui keeps a window of the newest messages (keep_recent_count), "
                "not a turn budget"
            )
        if self.reset_context and self.keep_recent_count:
            raise ValueError("reset_context needs keep_recent_count 0")
        return self
