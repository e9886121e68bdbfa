"""What an environment may say about adherence: how its agent's lines read as directives.

A **directive** is one checkable statement an experience makes about what the agent does: always or
never call a tool (in a situation), call one before or after another, ask the user to confirm
before one, or follow steps in order. Its situation is a set of facts in the learners' wording
(``reservation.refundable=false``, ``user.answer=yes``; a value starting with ``!`` is "not that"),
which the trajectory's own records show (``wording.facts``). A line that states something no
trajectory can show is kept as ``unchecked``: it is counted, never guessed.

ovtui reads the learners' own wording and plain ALWAYS / NEVER / IF … THEN / a → b lines that name
tools; an environment whose agent reads more (the sample agent's verb phrases) says so by being a
``ReadsDirectives``: its reading replaces ovtui's, and it may add facts the records do not hold
(what the request asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ovtui.core.domain import Message

DirectiveKind = Literal["always", "never", "before", "after", "confirm", "steps", "unchecked"]
Verdict = Literal["followed", "violated", "not_applicable", "unchecked"]
VERDICTS: tuple[Verdict, ...] = ("followed", "violated", "not_applicable", "unchecked")
ANY_ACTION = "*"  # "before any change": every tool that is not a lookup
ASK = "ask the user to confirm"  # a step that is the user's answer, not a tool call


@dataclass(frozen=True, slots=True)
class Directive:
    """``tools``: always/never — (tool,); before — (earlier, later); after — (follow-up, trigger);
    confirm — (action,); steps — the steps in order (``ASK`` among them); unchecked — ().
    ``conditions``: the facts its situation is, as ``key=value``. ``line``: the experience's line."""

    kind: DirectiveKind
    tools: tuple[str, ...]
    conditions: tuple[str, ...] = ()
    line: str = ""

    def text(self) -> str:
        """How the directive reads in a table: the line it came from, else its form."""
        if self.line:
            return self.line
        when = f" when {' and '.join(self.conditions)}" if self.conditions else ""
        return f"{self.kind} {' → '.join(self.tools)}{when}"


@runtime_checkable
class ReadsDirectives(Protocol):
    """An environment that reads its agent's experiences into directives itself."""

    def directives(self, content: str) -> list[Directive]:
        """The directives of one experience body, each once, in the order its lines state them."""
        ...

    def situation(self, messages: list[Message]) -> dict[str, str]:
        """Facts of a conversation its tool records do not hold (what the request asked for)."""
        ...
