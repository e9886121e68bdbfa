"""OfflineGradientProposer: experience edits from one analysed rollout, no model.

One proposal per user intent, learned from what happened — never from the rubric's prose:
- a rollout that passed adds the steps it took to ``## Approach``, under the facts it observed
  (one call alone: the call that answered the request, as a conversation's);
- each failed criterion adds a lesson to ``## Reflect`` from its *kind and parameters* (an order
  that was broken, a confirmation that was missing, a call that was required or forbidden) under
  the facts observed before the step it is about (``facts``); a failed rollout whose criteria
  have no kind (an outside grader's, such as OpenViking's CaseSpec) adds what followed each call
  that failed;
- the request becomes a scrubbed example in ``## Situation``, worded by us.
A conversation case (a session commit) is learned from as ``conversation`` says: the calls that
answered it, or what followed a failed call.
The file's lessons and the new ones are consolidated (``consolidate``): generalised, free of
contradictions and repeats, sorted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ovtui.plugins import (
    ANSWERS_AFTER_TOOLS,
    EXPERIENCES,
    TOOL_CALLS_COMPLETE,
    Experience,
    ExperienceProposal,
    Message,
    RejectionSource,
    RolloutAnalysis,
    RubricCriterion,
    Trajectory,
)
from ovtui.plugins.wording.facts import Facts, fact_timeline
from ovtui.plugins.wording.lessons import ASK_STEP, Lesson, parse_lesson
from ovtui.plugins.wording.personal import without_personal
from ovtui.plugins.wording.sections import (
    EXAMPLE_PREFIX,
    SECTIONS,
    ExperienceSections,
    line_key,
    parse_sections,
)
from ovtui.plugins.wording.text import jaccard, name_tokens, scrub_specifics
from ovtui.train.backends.offline.conversation import (
    answered_lesson,
    error_lessons,
    is_conversation,
    reply_lessons,
    request_example,
)
from ovtui.train.backends.offline.learned import combine
from ovtui.train.backends.offline.steps import ASK_TO_CONFIRM, first_request, rollout_steps
from ovtui.train.backends.offline.trajectory import OFFLINE_LABEL, task_name, task_words, with_article

NAME_SIMILARITY = 0.5


class Observed:
    """The calls of a rollout and the facts known before each of them."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.calls = [p.tool_name for m in messages for p in m.tool_parts]
        self.before, self.facts = fact_timeline(messages)

    def before_call(self, tool: str) -> Facts:
        return self.before[self.calls.index(tool)] if tool in self.calls else dict(self.facts)


def lessons_from_failure(criterion: RubricCriterion, observed: Observed) -> list[Lesson]:
    """What a failed criterion teaches, from its kind and parameters."""
    meta = criterion.metadata
    kind = str(meta.get("kind", ""))
    if kind == "order":
        before = str(meta.get("before", ""))
        later = [str(t) for t in meta.get("after") or [] if str(t) in observed.calls]
        return [Lesson("order", (before, t)).with_facts(observed.before_call(t)) for t in later if before]
    if kind == "confirmed_before" and meta.get("tool"):
        tool = str(meta["tool"])
        return [Lesson("confirm", (tool,)).with_facts(observed.before_call(tool))]
    if kind == "forbidden_call" and meta.get("tool"):
        tool = str(meta["tool"])
        return [Lesson("never", (tool,)).with_facts(observed.before_call(tool))]
    if kind == "required_call" and meta.get("tool"):
        tool, trigger = str(meta["tool"]), str(meta.get("after") or "")
        if tool in observed.calls and not trigger:
            return []  # called with other arguments: nothing a rule of ours could say
        if trigger:
            return [Lesson("after", (tool, trigger)).with_facts(observed.before_call(trigger))]
        return [Lesson("always", (tool,)).with_facts(observed.facts)]
    if kind == TOOL_CALLS_COMPLETE:
        return error_lessons(observed.messages)
    if kind == ANSWERS_AFTER_TOOLS:
        return reply_lessons(observed.messages)
    return []  # state checks and unknown kinds: the outcome, not a behaviour to learn


def lessons_from_success(messages: list[Message], observed: Observed) -> list[Lesson]:
    steps = tuple(
        ASK_STEP if s.kind == "ask" else s.name
        for s in rollout_steps(messages)
        if s.ok and (s.kind == "tool" or s.name == ASK_TO_CONFIRM)
    )
    return [Lesson("steps", steps).with_facts(observed.facts)] if len(steps) >= 2 else []


def learned_lessons(analysis: RolloutAnalysis, name: str) -> list[Lesson]:
    """Every lesson one rollout teaches: from its success, and from each criterion it failed."""
    rollout, evaluation = analysis.rollout, analysis.evaluation
    observed = Observed(rollout.messages)
    lessons: list[Lesson] = []
    if is_conversation(rollout.case):
        if evaluation.passed and all(r.passed for r in evaluation.criterion_results):
            lessons = answered_lesson(task_words(name), rollout.messages, observed.facts)
    elif evaluation.passed:
        lessons = lessons_from_success(rollout.messages, observed)
        if not lessons:  # a single call: it answered the request
            lessons = answered_lesson(task_words(name), rollout.messages, observed.facts)
    criteria = {c.name: c for c in rollout.case.rubric.criteria}
    for result in evaluation.criterion_results:
        criterion = criteria.get(result.criterion_name)
        if not result.passed and criterion is not None:
            lessons.extend(lessons_from_failure(criterion, observed))
    if not evaluation.passed and not lessons:  # criteria that say nothing of how: what failed
        lessons = error_lessons(rollout.messages)
    return lessons


def situation_lines(name: str, request: str) -> list[str]:
    lines = [f"The request is about: {task_words(name)}."]
    if request:
        example = without_personal(request)  # the task, not who asked (their name, their ways)
        lines.append(f'{EXAMPLE_PREFIX} "{example or scrub_specifics(request)}"')
    return lines


def find_target(name: str, candidates: list[Experience]) -> Experience | None:
    """The candidate for the same intent: the same name, else the closest name above a threshold."""
    exact = next((c for c in candidates if c.name == name), None)
    if exact is not None:
        return exact
    wanted = name_tokens(name)
    scored = [(jaccard(wanted, name_tokens(c.name)), c.name, c) for c in candidates]
    scored = [s for s in scored if s[0] >= NAME_SIMILARITY]
    return max(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


@dataclass
class TurnedDown:
    """What reviewers turned down for one experience from evidence that included one case: each
    rejected lesson's identity (its kind and tools, whatever its conditions or wording) and every
    rejected line (a situation example, a person's line), so neither is proposed again from the
    same evidence, however the rule would be worded this time."""

    lessons: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)
    lines: set[str] = field(default_factory=set)

    def drop_lines(self, after: ExperienceSections, before: ExperienceSections) -> None:
        for section in SECTIONS:
            kept = before.keys(section)
            after.lines(section)[:] = [
                line
                for line in after.lines(section)
                if line_key(line) in kept or line_key(line) not in self.lines
            ]


def turned_down(feedback: RejectionSource | None, name: str, case: str) -> TurnedDown:
    found = TurnedDown()
    for rejection in feedback.rejections(EXPERIENCES, name) if feedback is not None else []:
        if rejection.is_old_evidence([case]):
            found.lines |= {line_key(line) for line in rejection.lines}
            found.lessons |= {lesson.identity for line in rejection.lines if (lesson := parse_lesson(line))}
    return found


class OfflineGradientProposer:
    """GradientProposer without a model (see the module docstring for what it writes). With a
    ``feedback`` source it leaves out the lessons reviewers rejected for the same experience from
    the same cases (``turned_down``); a case they have not seen is new evidence."""

    label = OFFLINE_LABEL

    def __init__(self, feedback: RejectionSource | None = None) -> None:
        self.feedback = feedback

    async def propose(
        self, trajectory: Trajectory, analysis: RolloutAnalysis, candidates: list[Experience]
    ) -> list[ExperienceProposal]:
        proposal = self.proposal(analysis, candidates, trajectory)
        return [proposal] if proposal is not None else []

    def proposal(
        self, analysis: RolloutAnalysis, candidates: list[Experience], trajectory: Trajectory | None = None
    ) -> ExperienceProposal | None:
        rollout, evaluation = analysis.rollout, analysis.evaluation
        name = task_name(rollout.case)
        target = find_target(name, candidates)
        before = parse_sections(target.content) if target is not None else ExperienceSections()
        rejected = turned_down(self.feedback, target.name if target else name, rollout.case.name)
        lessons = [
            lesson for lesson in learned_lessons(analysis, name) if lesson.identity not in rejected.lessons
        ]
        request = first_request(rollout.messages) or str(rollout.case.input.get("user_query", ""))
        if is_conversation(rollout.case):
            request = request_example(rollout.case, request, rollout.messages)
        base = target.content if target is not None else ""
        after = combine([base], lessons, distinguish=False)
        for line in situation_lines(name, request):
            after.add("Situation", line)
        if target is not None:  # a new file keeps its Situation: it names the intent, it is no rule
            rejected.drop_lines(after, before)
        if not after.approach and not after.reflect:
            return None  # nothing learned yet: a file with only a Situation helps nobody
        if target is not None and after.same_as(before):
            return None
        added = sum(len(set(after.keys(s)) - before.keys(s)) for s in SECTIONS)
        source = f" (trajectory {trajectory.name})" if trajectory is not None else ""
        failed = sum(not r.passed for r in evaluation.criterion_results)
        verdict = (
            "succeeded" if evaluation.passed else f"failed {failed} criteri{'on' if failed == 1 else 'a'}"
        )
        return ExperienceProposal(
            experience_name=target.name if target is not None else name,
            content=after.render(),
            rationale=f"{added} new line(s): {with_article(task_words(name))} rollout {verdict}{source}.",
        )
