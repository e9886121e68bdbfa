"""The model's judgement of the lines the offline check could not check (``[adherence] model_judge``).

For one rollout, the directives of the experiences it used whose verdict was ``unchecked`` are
numbered and put to the model with the rollout's trajectory, in one call (stage ``adherence``, so
the usage counts it); the model answers, by line number, whether the trajectory followed or violated
each or it did not apply. An answer naming a line it was not asked about is dropped, a line it does
not answer stays unchecked, and its verdicts are marked as the model's (``Observation.judged``, in the
record ``judged`` and a violation's ``by``). A failed call is a warning in the run's log: the lines
stay unchecked and the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ovtui.core.domain import Message
from ovtui.plugins.adherence import Verdict
from ovtui.train.adherence.store import Observation

if TYPE_CHECKING:  # the client (and openai) are imported only where the judge is switched on
    from ovtui.core.events import EventBus
    from ovtui.llm.client import LLMClient

STAGE = "adherence"
MAX_TRAJECTORY_CHARS = 24_000  # what of a long trajectory is shown: its start and its end
MAX_PART_CHARS = 600  # of one tool's arguments or result
JUDGED: tuple[Verdict, ...] = ("followed", "violated", "not_applicable")

INSTRUCTION = """\
You check whether an AI agent did what its experience memory told it to. You are shown numbered \
lines of the experiences it used, and the trajectory of one conversation: the messages, each tool \
call with its arguments and its result.

For each numbered line, say "followed" when the trajectory does what the line asks, "violated" when \
it does not, and "not_applicable" when the line's situation did not arise in this conversation. \
Answer every line once, by its number.
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": "integer", "description": "the number of the line"},
                    "verdict": {"type": "string", "enum": list(JUDGED)},
                },
                "required": ["line", "verdict"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(messages: list[Message]) -> str:
    """The trajectory as the model reads it; a long one keeps its start and its end."""
    lines: list[str] = []
    for message in messages:
        if message.text.strip():
            lines.append(f"{message.role}: {message.text.strip()}")
        for part in message.tool_parts:
            arguments = _clip(json.dumps(part.tool_input, ensure_ascii=False, sort_keys=True), MAX_PART_CHARS)
            lines.append(f"call {part.tool_name}({arguments}) [{part.tool_status}]")
            if part.tool_output:
                lines.append(f"result: {_clip(part.tool_output, MAX_PART_CHARS)}")
    text = "\n".join(lines)
    if len(text) <= MAX_TRAJECTORY_CHARS:
        return text
    half = MAX_TRAJECTORY_CHARS // 2
    return f"{text[:half]}\n… ({len(text) - 2 * half} characters left out) …\n{text[-half:]}"


def _questions(seen: list[Observation]) -> dict[int, tuple[int, int]]:
    """Each unchecked verdict's number in the prompt (from 1) → (observation, verdict) indexes."""
    asked: dict[int, tuple[int, int]] = {}
    for at, observation in enumerate(seen):
        for index, (_, verdict) in enumerate(observation.verdicts):
            if verdict == "unchecked":
                asked[len(asked) + 1] = (at, index)
    return asked


def _prompt(seen: list[Observation], asked: dict[int, tuple[int, int]], messages: list[Message]) -> str:
    parts: list[str] = []
    for at, observation in enumerate(seen):
        numbered = [
            f"{number}: {observation.verdicts[index][0].text()}"
            for number, (where, index) in asked.items()
            if where == at
        ]
        if numbered:
            parts.append(f"## Experience `{observation.name}`\n" + "\n".join(numbered))
    return "\n\n".join([*parts, f"## Trajectory\n{render(messages)}"])


def _answers(answer: dict[str, Any], asked: dict[int, tuple[int, int]]) -> dict[int, Verdict]:
    """The answer's verdicts of lines it was asked about (the first for a line)."""
    found: dict[int, Verdict] = {}
    for entry in answer.get("verdicts", []):
        line, verdict = entry.get("line"), entry.get("verdict")
        if isinstance(line, int) and line in asked and line not in found and verdict in JUDGED:
            found[line] = verdict
    return found


class ModelJudge:
    """Judges a rollout's unchecked lines in one call (see the module docstring). ``client``: how
    to get the workspace's client, made only when a rollout has a line to judge."""

    def __init__(self, client: Callable[[], LLMClient]) -> None:
        self.client = client

    async def judge(
        self, seen: list[Observation], messages: list[Message], events: EventBus, *, what: str
    ) -> list[Observation]:
        """``seen`` with the model's verdicts in place of unchecked ones (no unchecked: no call)."""
        asked = _questions(seen)
        if not asked:
            return seen
        prompt = [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": _prompt(seen, asked, messages)},
        ]
        try:
            result = await self.client().complete_json(STAGE, prompt, SCHEMA, "adherence", repair=False)
        except Exception as exc:  # any failure of the call: the lines stay unchecked, the run goes on
            events.log(
                f"the model's adherence check of {what} failed ({type(exc).__name__}: {exc}); "
                f"its {len(asked)} unchecked line(s) stay unchecked",
                level="warning",
            )
            return seen
        judged = _answers(result.data or {}, asked)
        changed = list(seen)
        for number, verdict in judged.items():
            at, index = asked[number]
            observation = changed[at]
            verdicts = list(observation.verdicts)
            verdicts[index] = (verdicts[index][0], verdict)
            changed[at] = replace(observation, verdicts=tuple(verdicts), judged=observation.judged | {index})
        return changed
