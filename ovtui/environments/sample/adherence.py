"""The sample agent's reading of experiences as directives (``ovtui.plugins.adherence``): the rules
and sequences its vocabulary finds in each line (``guidance``), its situations as the facts the
trajectory's records show, and what its request asked for as facts of the conversation."""

from __future__ import annotations

from ovtui.environments.sample.guidance import (
    ANY_ACTION,
    ASK,
    USER_CONDITIONS,
    ApproachSequence,
    Rule,
    guidance_by_line,
)
from ovtui.environments.sample.understanding import read_request
from ovtui.plugins import Directive, Message
from ovtui.plugins.adherence import ANY_ACTION as ANY_TOOL
from ovtui.plugins.adherence import ASK as ASK_STEP

# The agent's situations as the facts the records show them by (``wording.facts``).
_FACTS = {
    "non_refundable": "reservation.refundable=false",
    "refundable": "reservation.refundable=true",
    "basic_economy": "reservation.cabin=basic_economy",
    "changeable": "reservation.cabin=!basic_economy",
    "user_confirms": "user.answer=yes",
    "user_declines": "user.answer=no",
    "compensation": "request.compensation=true",
}
_KINDS = {"require": "always", "forbid": "never", "precede": "before", "gate": "confirm", "follow": "after"}


def _facts(conditions: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_FACTS.get(c, c) for c in conditions)


def _tool(name: str) -> str:
    return ANY_TOOL if name == ANY_ACTION else ASK_STEP if name == ASK else name


def _rule(rule: Rule, line: str) -> Directive:
    kind = _KINDS[rule.kind]
    if kind == "before":
        tools: tuple[str, ...] = (rule.tool, rule.other)
    elif kind == "after":
        tools = (rule.tool, rule.other)
    else:
        tools = (rule.tool,)
    return Directive(kind, tuple(map(_tool, tools)), _facts(rule.conditions), line)  # type: ignore[arg-type]


def _sequence(sequence: ApproachSequence, line: str) -> Directive:
    situation = tuple(c for c in sequence.conditions if c not in USER_CONDITIONS)
    return Directive("steps", tuple(map(_tool, sequence.steps)), _facts(situation), line)


def directives(content: str) -> list[Directive]:
    found: list[Directive] = []
    for line, guidance in guidance_by_line(content):
        if guidance.sequences:  # the rules a sequence implies are its own steps: checked as one
            read = [_sequence(s, line) for s in guidance.sequences]
        else:
            read = [_rule(r, line) for r in guidance.rules]
        found += read or [Directive("unchecked", (), line=line)]
    return list(dict.fromkeys(found))


def situation(messages: list[Message]) -> dict[str, str]:
    """Whether the customer asked for compensation (the agent reads it from the request)."""
    first = next((m.text for m in messages if m.role == "user"), "")
    return {"request.compensation": "true" if read_request(first).mentions_compensation else "false"}
