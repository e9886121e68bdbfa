"""One directive against one trajectory: followed, violated, not applicable, or unchecked.

The trajectory is read once (``Trajectory.of``): its tool calls in order, the facts its records
showed (``wording.facts``: the first observation of each key, plus the environment's own facts of
the conversation) and where the user answered a request to confirm. A directive whose situation
names a fact the trajectory never showed is ``unchecked`` — what it asks may or may not have held.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ovtui.core.domain import Message
from ovtui.plugins.adherence import ANY_ACTION, ASK, Directive, Verdict
from ovtui.plugins.wording.facts import USER_ANSWER, fact_timeline, is_lookup


@dataclass(frozen=True, slots=True)
class Trajectory:
    """``calls``: the tools called, in order; ``facts``: what was observed (``key`` → value);
    ``answered_before``: the number of calls made before the user answered (None: never asked)."""

    calls: tuple[str, ...]
    facts: Mapping[str, str]
    answered_before: int | None = None

    @classmethod
    def of(cls, messages: list[Message], situation: Mapping[str, str] | None = None) -> Trajectory:
        before, seen = fact_timeline(messages)
        calls = tuple(part.tool_name for message in messages for part in message.tool_parts)
        answered: int | None = None
        if USER_ANSWER in seen:
            answered = next((i for i, facts in enumerate(before) if USER_ANSWER in facts), len(calls))
        return cls(calls, {**(situation or {}), **seen}, answered)

    @property
    def answer(self) -> str | None:
        return self.facts.get(USER_ANSWER)

    def first(self, tool: str, start: int = 0) -> int | None:
        """The index of the first call of ``tool`` from ``start`` (``*``: of any non-lookup)."""
        for index in range(start, len(self.calls)):
            if _matches(tool, self.calls[index]):
                return index
        return None


def _matches(tool: str, called: str) -> bool:
    return called == tool or (tool == ANY_ACTION and not is_lookup(called))


def situation_holds(conditions: tuple[str, ...], facts: Mapping[str, str]) -> bool | None:
    """Whether every ``key=value`` holds (``!value``: any other value); None: a key not observed."""
    unknown = False
    for condition in conditions:
        key, _, value = condition.partition("=")
        actual = facts.get(key)
        if actual is None:
            unknown = True
            continue
        if (actual == value[1:]) if value.startswith("!") else (actual != value):
            return False
    return None if unknown else True


def check(directive: Directive, trajectory: Trajectory) -> Verdict:
    kind, tools = directive.kind, directive.tools
    if kind == "unchecked" or not tools:
        return "unchecked"
    conditions = directive.conditions
    if kind == "steps" and trajectory.answer is None:  # not asked: its own ask step is the question
        conditions = tuple(c for c in conditions if not c.startswith(USER_ANSWER + "="))
    holds = situation_holds(conditions, trajectory.facts)
    if holds is False:
        return "not_applicable"
    if holds is None:
        return "unchecked"
    if kind == "always":
        return "followed" if trajectory.first(tools[0]) is not None else "violated"
    if kind == "never":
        return "violated" if trajectory.first(tools[0]) is not None else "followed"
    if kind == "before":
        return _before(tools[0], tools[-1], trajectory)
    if kind == "after":
        trigger = trajectory.first(tools[-1])
        if trigger is None:
            return "not_applicable"
        return "followed" if trajectory.first(tools[0], trigger + 1) is not None else "violated"
    if kind == "confirm":
        return _confirmed(tools[0], trajectory)
    return _steps(tools, trajectory)


def _before(earlier: str, later: str, trajectory: Trajectory) -> Verdict:
    first_later = next(
        (i for i, called in enumerate(trajectory.calls) if _matches(later, called) and called != earlier),
        None,
    )
    if first_later is None:
        return "not_applicable"
    done = trajectory.first(earlier)
    return "followed" if done is not None and done < first_later else "violated"


def _confirmed(action: str, trajectory: Trajectory) -> Verdict:
    done = trajectory.first(action)
    if done is None:
        return "not_applicable"
    asked = trajectory.answered_before
    return "followed" if asked is not None and asked <= done and trajectory.answer == "yes" else "violated"


def _steps(steps: tuple[str, ...], trajectory: Trajectory) -> Verdict:
    """Applicable once the rollout took one of its steps in its situation (it went down this path);
    followed when every step came in order — after a "no" to its ask step, when no action followed."""
    if not any(trajectory.first(s) is not None for s in steps if s != ASK):
        return "not_applicable"
    position = 0
    for index, step in enumerate(steps):
        if step == ASK:
            asked = trajectory.answered_before
            if asked is None or asked < position:
                return "violated"
            position = asked
            if trajectory.answer != "yes":
                rest = [s for s in steps[index + 1 :] if s != ASK and not is_lookup(s)]
                later = (trajectory.first(s, position) for s in rest)
                return "violated" if any(i is not None for i in later) else "followed"
            continue
        found = trajectory.first(step, position)
        if found is None:
            return "violated"
        position = found + 1
    return "followed"
