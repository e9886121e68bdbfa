"""The offline learner's lessons: one structured form, one consistent wording, parsed back the same.

A lesson is what the learner concluded from a rollout — a sequence of steps that worked, or a rule
(ALWAYS call X before Y, ALWAYS ask the user to confirm before Y, ALWAYS call X after Y, ALWAYS call
X, NEVER call X) — together with the facts it was learned under. From a conversation case (a
session commit; ``conversation``) two more: the calls that answered a kind of request, with the
names of their arguments (``answered``), and what the agent did next when a tool failed with a kind
of error (``on_error``). Rendering and parsing are exact
inverses for the learner's own lines, so a file it wrote can be read back, generalised and checked;
a line it did not write (a person's) is not a lesson and is kept as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ovtui.plugins.wording.facts import USER_ANSWER, Facts

LessonKind = Literal["steps", "order", "confirm", "after", "always", "never", "answered", "on_error", "reply"]
ASK_STEP = "ask the user to confirm"
ARROW = " → "
STEPS_PREFIX = "Steps that worked:"

FactItems = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Lesson:
    """``tools``: steps — the sequence; order — (first, later); confirm — (action,);
    after — (follow-up, trigger); always/never — (tool,); answered — the calls in order;
    on_error — (the tool that failed,); reply — (the last call before the missing reply,).

    ``detail``: answered — (the request's words, then each call's argument names as "a, b");
    on_error — (the kind of error, what the agent did next)."""

    kind: LessonKind
    tools: tuple[str, ...]
    facts: FactItems = ()
    detail: tuple[str, ...] = ()

    @property
    def fact_map(self) -> Facts:
        return dict(self.facts)

    def with_facts(self, facts: Facts) -> Lesson:
        return Lesson(self.kind, self.tools, tuple(sorted(facts.items())), self.detail)

    @property
    def identity(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, self.tools + self.detail

    @property
    def section(self) -> str:
        return "Approach" if self.kind in ("steps", "answered") else "Reflect"

    def does(self, tool: str) -> bool:
        """Whether following this lesson calls ``tool``."""
        if self.kind in ("steps", "answered"):
            return tool in self.tools
        return self.kind in ("always", "after") and self.tools[0] == tool

    def presumes(self, tool: str) -> bool:
        """Whether this lesson says how ``tool`` is done (so ``tool`` is right at least sometimes)."""
        return self.does(tool) or (self.kind in ("order", "confirm", "after") and tool in self.tools)

    def render(self) -> str:
        when = condition_text(self.fact_map)
        if self.kind == "answered":
            calls = ARROW.join(_call(t, a) for t, a in zip(self.tools, self.detail[1:], strict=True))
            suffix = f" when {when}" if when else ""
            return f'For a request like "{self.detail[0]}": {calls} answered it{suffix}'
        if self.kind == "on_error":
            error, then = self.detail
            kind = f' with "{error}"' if error else ""
            return f"When {self.tools[0]} failed{kind}, the agent then {then}"
        if self.kind == "steps":
            steps = ARROW.join(self.tools)
            return f"IF {when} THEN {steps}" if when else f"{STEPS_PREFIX} {steps}"
        suffix = f" when {when}" if when else ""
        head = {
            "order": f"ALWAYS call {self.tools[0]} before {self.tools[-1]}",
            "confirm": f"ALWAYS ask the user to confirm before {self.tools[0]}",
            "after": f"ALWAYS call {self.tools[0]} after {self.tools[-1]}",
            "always": f"ALWAYS call {self.tools[0]}",
            "never": f"NEVER call {self.tools[0]}",
            "reply": f"ALWAYS reply to the user after {self.tools[0]}",
        }[self.kind]
        return head + suffix


def _call(tool: str, args: str) -> str:
    return tool if tool == ASK_STEP else f"{tool}({args})"


def _words(name: str) -> str:
    return name.replace("_", " ")


def _name(words: str) -> str:
    return words.strip().replace(" ", "_")


def fact_text(key: str, value: str) -> str:
    if key == USER_ANSWER:
        return "the user confirms" if value == "yes" else "the user declines"
    subject, _, field = key.partition(".")
    if value in ("true", "false"):
        return f"the {_words(subject)} is {'' if value == 'true' else 'not '}{_words(field)}"
    if value.startswith("!"):
        return f"the {_words(subject)}'s {_words(field)} is not {_words(value[1:])}"
    return f"the {_words(subject)}'s {_words(field)} is {_words(value)}"


def condition_text(facts: Facts) -> str:
    return " and ".join(fact_text(k, v) for k, v in sorted(facts.items()))


_USER = re.compile(r"^the user (?P<answer>confirms|declines)$")
_FIELD = re.compile(r"^the (?P<subject>[a-z][a-z ]*?)'s (?P<field>[a-z][a-z ]*?) is (?P<value>[a-z][a-z ]*)$")
_FLAG = re.compile(r"^the (?P<subject>[a-z][a-z ]*?) is (?P<neg>not )?(?P<field>[a-z][a-z ]*)$")


def parse_fact(text: str) -> tuple[str, str] | None:
    if match := _USER.match(text):
        return USER_ANSWER, "yes" if match.group("answer") == "confirms" else "no"
    if match := _FIELD.match(text):
        value = match.group("value")
        value = f"!{_name(value[4:])}" if value.startswith("not ") else _name(value)
        return f"{_name(match.group('subject'))}.{_name(match.group('field'))}", value
    if match := _FLAG.match(text):
        key = f"{_name(match.group('subject'))}.{_name(match.group('field'))}"
        return key, "false" if match.group("neg") else "true"
    return None


def parse_condition(text: str) -> Facts | None:
    facts: Facts = {}
    for part in text.split(" and "):
        fact = parse_fact(part.strip())
        if fact is None:
            return None
        facts[fact[0]] = fact[1]
    return facts


_TOOL = r"[a-z][a-z0-9_]*"
# A conversation's tools and arguments are named as its agent names them (``getOrder``, ``order-id``).
_NAMED = r"[A-Za-z_][\w.\-]*"
_WHEN = r"(?: when (?P<when>.+))?$"
_RULES: tuple[tuple[LessonKind, re.Pattern[str]], ...] = (
    ("order", re.compile(rf"^ALWAYS call (?P<a>{_TOOL}) before (?P<b>{_TOOL})" + _WHEN)),
    (
        "confirm",
        re.compile(rf"^ALWAYS ask the user to confirm before (?P<a>{_TOOL})" + _WHEN),
    ),
    ("after", re.compile(rf"^ALWAYS call (?P<a>{_TOOL}) after (?P<b>{_TOOL})" + _WHEN)),
    ("always", re.compile(rf"^ALWAYS call (?P<a>{_TOOL})" + _WHEN)),
    ("never", re.compile(rf"^NEVER call (?P<a>{_TOOL})" + _WHEN)),
    ("reply", re.compile(rf"^ALWAYS reply to the user after (?P<a>{_NAMED})" + _WHEN)),
)
_GUARDED_STEPS = re.compile(r"^IF (?P<when>.+?) THEN (?P<steps>.+)$")
_ANSWERED = re.compile(r'^For a request like "(?P<request>[^"]+)": (?P<calls>.+?) answered it' + _WHEN)
_CALL = re.compile(rf"^(?P<tool>{_NAMED})\((?P<args>(?:{_NAMED}(?:, {_NAMED})*)?)\)$")
_ON_ERROR = re.compile(
    rf'^When (?P<tool>{_NAMED}) failed(?: with "(?P<error>[^"]+)")?, the agent then (?P<then>.+)$'
)


def _steps(text: str) -> tuple[str, ...] | None:
    steps = tuple(s.strip() for s in text.split(ARROW.strip()))
    if len(steps) < 2 or not all(s == ASK_STEP or re.fullmatch(_TOOL, s) for s in steps):
        return None
    return steps


def _answered(match: re.Match[str]) -> Lesson | None:
    tools, args = [], []
    for call in match.group("calls").split(ARROW.strip()):
        call = call.strip()
        found = _CALL.match(call)
        if call != ASK_STEP and found is None:
            return None
        tools.append(found.group("tool") if found else call)
        args.append(found.group("args") if found else "")
    facts = parse_condition(match.group("when")) if match.group("when") else {}
    if facts is None:
        return None
    return Lesson("answered", tuple(tools), detail=(match.group("request"), *args)).with_facts(facts)


@lru_cache(maxsize=4096)  # a file's lines are parsed again each time a rollout of its intent arrives
def parse_lesson(line: str) -> Lesson | None:
    """The lesson a line of the learner's own wording states; None for any other line."""
    text = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line.strip()).rstrip(".")
    if match := _ANSWERED.match(text):
        return _answered(match)
    if match := _ON_ERROR.match(text):
        error = match.group("error") or ""
        return Lesson("on_error", (match.group("tool"),), detail=(error, match.group("then")))
    if text.startswith(STEPS_PREFIX):
        steps = _steps(text[len(STEPS_PREFIX) :])
        return Lesson("steps", steps) if steps else None
    if match := _GUARDED_STEPS.match(text):
        steps, facts = _steps(match.group("steps")), parse_condition(match.group("when"))
        return Lesson("steps", steps).with_facts(facts) if steps and facts is not None else None
    for kind, pattern in _RULES:
        if match := pattern.match(text):
            facts = parse_condition(match.group("when")) if match.group("when") else {}
            if facts is None:
                return None
            tools = tuple(t for t in (match.group("a"), match.groupdict().get("b")) if t)
            return Lesson(kind, tools).with_facts(facts)
    return None
