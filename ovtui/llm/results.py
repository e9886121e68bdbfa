"""The values the LLM client hands out: answers and tool calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ovtui.llm.jsonparse import AnswerFormatError, parse_json_answer
from ovtui.llm.usage import CallUsage

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw_arguments},
        }


@dataclass(frozen=True)
class ChatReply:
    """One answer from the endpoint (or the cache)."""

    content: str | None
    tool_calls: list[ToolCall]
    refusal: str | None
    finish_reason: str
    usage: CallUsage
    latency: float


@dataclass
class LLMResult:
    """A parsed and validated JSON answer, or the model's native tool calls (``data`` is None)."""

    data: dict[str, Any] | None
    raw: str
    usage: CallUsage
    tool_calls: list[ToolCall] = field(default_factory=list)
    calls: int = 1

    @property
    def cached(self) -> bool:
        return self.usage.cached


def tool_call_from(raw: dict[str, Any]) -> ToolCall:
    text = str(raw.get("arguments") or "")
    try:
        args = parse_json_answer(text) if text.strip() else {}
    except AnswerFormatError:
        args = {}
    return ToolCall(
        str(raw.get("id") or ""), str(raw.get("name") or ""), args if isinstance(args, dict) else {}, text
    )


def sum_usage(usages: list[CallUsage]) -> CallUsage:
    first = usages[0]
    return CallUsage(
        stage=first.stage,
        model=first.model,
        prompt_tokens=sum(u.prompt_tokens for u in usages),
        completion_tokens=sum(u.completion_tokens for u in usages),
        cost=sum(u.cost for u in usages),
        cached=all(u.cached for u in usages),
        attempts=sum(u.attempts for u in usages),
    )
