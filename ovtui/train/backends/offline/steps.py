"""The steps of a rollout as the offline learner sees them: tool calls and questions to the user.

Only tool names and the *kinds* of their arguments are kept (``cancel_reservation(reservation_id)``),
never the values, so a step description fits every case of the same task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ovtui.plugins import Message, ToolPart
from ovtui.plugins.wording.text import scrub_specifics

ASK_TO_CONFIRM = "ask the user to confirm"
ASK_USER = "ask the user"
_CONFIRM_WORD = re.compile(r"\bconfirm", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    kind: Literal["tool", "ask"]
    name: str  # the tool name, or the question step's label
    arg_kinds: tuple[str, ...] = ()
    ok: bool = True
    detail: str = ""

    def describe(self) -> str:
        if self.kind == "ask":
            return f"{self.name} (the user answered: {self.detail})" if self.detail else self.name
        call = f"{self.name}({', '.join(self.arg_kinds)})"
        return call if self.ok else f"{call} failed: {self.detail}"


def tool_failed(part: ToolPart) -> bool:
    return part.tool_status == "error" or part.tool_output.lstrip().lower().startswith("error")


def rollout_steps(messages: list[Message]) -> list[Step]:
    """Tool calls in order, plus one ask step for every user turn after the opening request."""
    steps: list[Step] = []
    seen_request = False
    last_assistant_text = ""
    for message in messages:
        if message.role == "user":
            text = message.text.strip()
            if not text:
                continue
            if seen_request:
                label = ASK_TO_CONFIRM if _CONFIRM_WORD.search(last_assistant_text) else ASK_USER
                steps.append(Step("ask", label, detail=scrub_specifics(text)[:80]))
            seen_request = True
            continue
        if message.role == "assistant" and message.text.strip():
            last_assistant_text = message.text
        for part in message.tool_parts:
            failed = tool_failed(part)
            detail = scrub_specifics(part.tool_output.strip())[:120] if failed else ""
            steps.append(Step("tool", part.tool_name, tuple(sorted(part.tool_input)), not failed, detail))
    return steps


def first_request(messages: list[Message]) -> str:
    return next((m.text.strip() for m in messages if m.role == "user" and m.text.strip()), "")
