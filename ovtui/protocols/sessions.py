"""The wire and file shapes of sessions: messages with text and tool parts and a
``peer_id``, the per-session MemoryPolicy, and the request bodies of OpenViking's session API.

Request bodies ignore keys they do not know (OpenViking clients send more than ovtui uses:
``role_id``, context parts, ``token_budget``…); a known key with a wrong value is an error
naming the field. What is stored (``SessionMessage``, ``SessionMeta``) forbids unknown keys like
every other file ovtui reads back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ovtui.core.bounds import MAX_BATCH_MESSAGES, MAX_TEXT_CHARS
from ovtui.core.domain import Message, Part, TextPart, ToolPart
from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_name


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


class SessionMessage(BaseModel):
    """One line of ``sessions/<id>/messages.jsonl``: a domain Message plus who said it and when."""

    model_config = ConfigDict(extra="forbid")

    id: str
    role: Literal["system", "user", "assistant", "tool"]
    parts: list[Part] = Field(default_factory=list)
    peer_id: str | None = None
    created_at: str = Field(default_factory=now_iso)

    def to_message(self) -> Message:
        return Message(role=self.role, parts=list(self.parts))

    @property
    def text(self) -> str:
        return self.to_message().text


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


class SessionMeta(BaseModel):
    """``sessions/<id>/meta.json``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    created_at: str = Field(default_factory=now_iso)
    updated_at: str = Field(default_factory=now_iso)
    memory_policy: dict[str, Any] = Field(default_factory=lambda: MemoryPolicy().dump())
    commit_count: int = 0

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


class ContextPartIn(BaseModel):
    """OpenViking's context part (a memory or resource the agent read): accepted, not stored."""

    type: Literal["context"]


PartIn = Annotated[TextPartIn | ToolPartIn | ContextPartIn, Field(discriminator="type")]


class AddMessageRequest(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    parts: list[PartIn] | None = Field(None, max_length=64)
    peer_id: str | None = None
    created_at: str | None = None

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
        parts: list[TextPart | ToolPart] = []
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
        elif self.content:
            parts.append(TextPart(text=self.content))
        return SessionMessage(
            id=message_id,
            role=self.role,
            parts=list(parts),
            peer_id=self.peer_id,
            created_at=self.created_at or now_iso(),
        )


class AddMessagesBatchRequest(BaseModel):
    messages: list[AddMessageRequest] = Field(min_length=1, max_length=MAX_BATCH_MESSAGES)


class CreateSessionRequest(BaseModel):
    session_id: str | None = None
    memory_policy: MemoryPolicy | None = None
