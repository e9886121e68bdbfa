"""Consolidation: from every lesson a file and a batch hold, the lines that say it once, consistently.

1. **Generalise.** Instances of the same lesson are merged; the condition kept is what every
   instance that observed anything had in common (the facts on which they differ cannot matter).
   An instance learned without observing anything does not widen a condition that was observed.
2. **Keep what distinguishes.** A fact is shown only when some lesson of the file holds another
   value for it: a fact every lesson shares (the reservation is active) tells no branch from another
   (branches: sequences that act differently, or other calls that answered the same kind of request).
3. **No contradictions.** NEVER call X conflicts with a lesson that calls X unless a fact tells
   their situations apart. A NEVER learned without observing anything yields to any lesson that
   shows how X is done; otherwise the less specific of the two goes.
4. **No repeats.** A Reflect lesson that a sequence of Approach already carries out, in every
   situation the lesson covers, is dropped.
Lessons come out sorted, so identical inputs give byte-identical files.
"""

from __future__ import annotations

from ovtui.plugins.wording.facts import USER_ANSWER, Facts, is_lookup
from ovtui.plugins.wording.lessons import ASK_STEP, Lesson, parse_lesson

_KIND_ORDER = {
    "steps": 0,
    "order": 1,
    "confirm": 2,
    "after": 3,
    "always": 4,
    "never": 5,
    "answered": 6,
    "on_error": 7,
    "reply": 8,
}


def _common(facts: list[Facts]) -> Facts:
    first, *rest = facts
    return {k: v for k, v in first.items() if all(f.get(k) == v for f in rest)}


def _agree(a: str, b: str) -> bool:
    """Whether one value can satisfy both ("!x" means anything but x)."""
    if a.startswith("!") and b.startswith("!"):
        return True
    if a.startswith("!"):
        return b != a[1:]
    if b.startswith("!"):
        return a != b[1:]
    return a == b


def compatible(a: Facts, b: Facts) -> bool:
    """Whether one situation can satisfy both conditions (no fact tells them apart)."""
    return all(_agree(v, b[k]) for k, v in a.items() if k in b)


def negation(value: str) -> str:
    """The value for "anything but ``value``": the other answer for a yes/no or a flag."""
    opposite = {"true": "false", "false": "true", "yes": "no", "no": "yes"}
    return opposite.get(value, value[1:] if value.startswith("!") else f"!{value}")


def acting_steps(lesson: Lesson) -> tuple[str, ...]:
    """What a sequence does, lookups left out: two sequences that act alike are one branch."""
    return tuple(t for t in lesson.tools if not is_lookup(t))


def _group_key(lesson: Lesson) -> tuple[str, tuple[str, ...]]:
    return ("steps", acting_steps(lesson)) if lesson.kind == "steps" else lesson.identity


def _generalise(lessons: list[Lesson]) -> list[Lesson]:
    groups: dict[tuple[str, tuple[str, ...]], list[Lesson]] = {}
    for lesson in lessons:
        groups.setdefault(_group_key(lesson), []).append(lesson)
    merged = []
    for instances in groups.values():
        observed = [x.fact_map for x in instances if x.facts]
        facts = _common(observed) if observed else {}
        # Of sequences that act alike, the one with the most lookups (then the first by name) stands.
        chosen = min(instances, key=lambda x: (-len(x.tools), x.tools))
        if chosen.kind == "never" and facts.get(USER_ANSWER) == "yes":
            del facts[USER_ANSWER]  # a yes never makes an action wrong; asking was harmless
        merged.append(chosen.with_facts(facts))
    return merged


def conflicts(never: Lesson, other: Lesson) -> bool:
    tool = never.tools[0]
    return (
        never.kind == "never"
        and other is not never
        and other.does(tool)
        and compatible(never.fact_map, other.fact_map)
    )


def _without_contradictions(lessons: list[Lesson]) -> list[Lesson]:
    lessons = list(lessons)
    dropped: set[Lesson] = set()
    for never in [x for x in lessons if x.kind == "never"]:
        tool = never.tools[0]
        if not never.facts and any(o.presumes(tool) for o in lessons if o is not never):
            dropped.add(never)
            continue
        for index, other in enumerate(lessons):
            if other in dropped or never in dropped or not conflicts(never, other):
                continue
            # The lesson that worked holds except where doing the action was seen to be wrong: with
            # one fact to tell them apart, it is narrowed to "anything but" that fact.
            unknown = [(k, v) for k, v in never.facts if k not in other.fact_map]
            if len(unknown) == 1:
                key, value = unknown[0]
                lessons[index] = other.with_facts({**other.fact_map, key: negation(value)})
            else:
                dropped.add(never if len(never.facts) <= len(other.facts) else other)
    return [x for x in lessons if x not in dropped]


def _situation(lesson: Lesson) -> set[tuple[str, str]]:
    # The user's answer is no situation to look up: a sequence's own ask step settles it.
    return {(k, v) for k, v in lesson.facts if k != USER_ANSWER}


def _carried_out(rule: Lesson, sequences: list[Lesson]) -> bool:
    """Whether the Approach sequences already do what ``rule`` asks wherever ``rule`` applies."""
    if rule.kind not in ("order", "confirm", "after", "always"):
        return False
    target = rule.tools[-1]
    if rule.kind == "always":  # every sequence that may apply must call it
        relevant = [s for s in sequences if compatible(dict(_situation(s)), dict(_situation(rule)))]
    else:
        relevant = [s for s in sequences if target in s.tools]
    if not relevant or not any(_situation(s) <= _situation(rule) for s in relevant):
        return False

    def holds(steps: tuple[str, ...]) -> bool:
        if target not in steps:
            return False
        at = steps.index(target)
        if rule.kind == "order":
            return rule.tools[0] in steps[:at]
        if rule.kind == "confirm":
            return ASK_STEP in steps[:at]
        if rule.kind == "after":
            return rule.tools[0] in steps[at + 1 :]
        return True

    return all(holds(s.tools) for s in relevant)


def _rivals(a: Lesson, b: Lesson) -> bool:
    """Lessons whose situations must be told apart: branches that act differently, or a NEVER
    and a lesson that does what it forbids."""
    if a.kind == b.kind == "steps":
        return acting_steps(a) != acting_steps(b)
    if a.kind == b.kind == "answered":  # the same kind of request answered by other calls
        return (a.tools, a.detail[1:]) != (b.tools, b.detail[1:])
    return any(x.kind == "never" and y.does(x.tools[0]) for x, y in ((a, b), (b, a)))


def _distinguishing(lessons: list[Lesson]) -> list[Lesson]:
    shown: dict[Lesson, set[str]] = {x: set() for x in lessons}
    for i, a in enumerate(lessons):
        for b in lessons[i + 1 :]:
            if _rivals(a, b):
                keys = {k for k, v in a.facts if b.fact_map.get(k, v) != v}
                shown[a] |= keys
                shown[b] |= keys
    # A NEVER keeps every fact it was learned under when nothing else tells its situation apart.
    result = []
    for lesson in lessons:
        keep = {k: v for k, v in lesson.facts if k in shown[lesson]}
        if lesson.kind == "never" and not keep:
            keep = lesson.fact_map
        result.append(lesson.with_facts(keep))
    return result


def consolidate(lessons: list[Lesson], *, distinguish: bool = True) -> list[Lesson]:
    """Steps 1–4 of the module docstring; ``distinguish=False`` keeps every observed fact (step 2 is
    for a whole file, not for one rollout's proposal that is merged with others later)."""
    merged = _without_contradictions(_generalise(lessons))
    if distinguish:
        merged = _generalise(_distinguishing(merged))
    sequences = [x for x in merged if x.kind == "steps"]
    merged = [x for x in merged if not _carried_out(x, sequences)]
    return sorted(merged, key=lambda x: (_KIND_ORDER[x.kind], x.render()))


def contradictions(lines: list[str]) -> list[tuple[str, str]]:
    """Pairs of lines (in the learner's wording) that cannot both be followed in some situation."""
    lessons = [(line, parse_lesson(line)) for line in lines]
    parsed = [(line, x) for line, x in lessons if x is not None]
    found = []
    for line, lesson in parsed:
        if lesson.kind != "never":
            continue
        for other_line, other in parsed:
            if (
                other is not lesson
                and other.does(lesson.tools[0])
                and compatible(lesson.fact_map, other.fact_map)
            ):
                found.append((line, other_line))
    return found
