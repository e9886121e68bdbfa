"""The contradiction gate: a rule an item adds that says the opposite of another rule for the same
situation — ALWAYS x against NEVER x, IF c THEN a against IF c THEN NEVER a (or a step of
IF c THEN a → b against IF c THEN do not b) — in another experience or elsewhere in the same one.

Found offline from the rules as written (no model call). Each finding goes into the item's
``metadata["contradictions"]`` with both lines, which Review shows side by side; an item with a
finding nobody has chosen on is never approved automatically, and only a person's choice of which
line stands settles it (``choose``): never the gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.core.hidden_text import is_hidden
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.base import GateReport, PlanToCheck
from ovtui.train.review.gates.sanitizer import added_line_numbers
from ovtui.train.review.gates.validation import overlay

if TYPE_CHECKING:
    from ovtui.train.review.plans import PendingPlan

CONTRADICTIONS = "contradictions"  # the metadata key
Stands = Literal["this", "other", "both"]

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_GUARDED = re.compile(r"^if\s+(?P<condition>.+?)(?:,?\s+then\s+|,\s+)(?P<action>.+)$", re.I)
_PLAIN = re.compile(
    r"^(?P<action>(?:always|never|do not|don't|must not)\s+.+?)"
    r"(?:\s+(?:when|whenever|if)\s+(?P<condition>.+))?$",
    re.I,
)
_FORBIDS = re.compile(r"^(?:never|do not|don't|must not|not)\s+", re.I)
_ALWAYS = re.compile(r"^(?:always|must)\s+", re.I)
_CALL = re.compile(r"^call\s+", re.I)
_STEP = re.compile(r"\s*(?:→|->)\s*")


def _normal(text: str) -> str:
    # Hidden characters do not count: "re\u200bfund" must not hide a contradiction with "refund".
    visible = "".join(c for c in text if not is_hidden(c))
    return re.sub(r"\s+", " ", visible.lower()).strip(" .;:!,")


@dataclass(frozen=True)
class Rule:
    """One rule line: what it does (its steps, or the one thing it forbids) in which situation."""

    condition: str  # normalised; "" when the rule holds whenever its experience applies
    steps: tuple[str, ...]  # normalised actions ("call x" and "x" are one)
    forbids: bool

    def contradicts(self, other: Rule) -> bool:
        if self.condition != other.condition or self.forbids == other.forbids:
            return False
        banned, done = (self, other) if self.forbids else (other, self)
        return banned.steps[0] in done.steps


def parse_rule(line: str) -> Rule | None:
    """The rule a line states, or None when it states none (a description, an example)."""
    text = _BULLET.sub("", line.strip())
    guarded = _GUARDED.match(text)
    plain = None if guarded else _PLAIN.match(text)
    match = guarded or plain
    if match is None:
        return None
    action = match.group("action").strip()
    forbids = bool(_FORBIDS.match(action))
    action = _ALWAYS.sub("", _FORBIDS.sub("", action))
    steps = tuple(_normal(_CALL.sub("", step)) for step in _STEP.split(action) if step.strip())
    if not steps or (forbids and len(steps) > 1):
        return None  # "never a → b" forbids an order, not a step: not compared
    return Rule(_normal(match.group("condition") or ""), steps, forbids)


def _rules(content: str) -> Iterator[tuple[str, Rule]]:
    for line in content.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        rule = parse_rule(line)
        if rule is not None:
            yield line.strip(), rule


def situation_keys(content: str) -> set[str]:
    """The lines that describe when an experience applies (its Situation section, or what comes
    before any heading), normalised; example requests are instances, not the situation."""
    keys, current = set(), "situation"
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped.startswith("#"):
            current = stripped.lstrip("#").strip().lower()
        elif current == "situation" and stripped:
            key = _normal(_BULLET.sub("", stripped))
            if key and not key.startswith("example request"):
                keys.add(key)
    return keys


def item_contradictions(item: PolicyPlanItem, after_plan: ExperienceSet) -> list[dict[str, Any]]:
    """The item's added rules that contradict another rule of ``after_plan`` (the experiences as
    the plan would leave them), each with both lines."""
    if item.kind == "delete" or item.memory_type != EXPERIENCES:
        return []
    added = [
        (number, line.strip(), rule)
        for number, line in added_line_numbers(item.before_content, item.after_content)
        if (rule := parse_rule(line)) is not None
    ]
    if not added:
        return []
    situation = situation_keys(item.after_content or "")
    # Another experience's rule is for the same situation only when the two describe it alike: the
    # same rule in experiences for different requests (NEVER x for complaints, ALWAYS x for refunds)
    # is how experiences tell situations apart, not a contradiction.
    others: list[tuple[str, str | None, str]] = [
        (p.name, p.uri, p.content)
        for p in after_plan.policies
        if p.name != item.target_name and situation & situation_keys(p.content)
    ]
    others.append((item.target_name, item.target_uri, item.after_content or ""))
    found = []
    for name, uri, content in others:
        for other_line, other_rule in _rules(content):
            for number, line, rule in added:
                if name == item.target_name and other_line == line:
                    continue  # a line does not contradict itself
                if rule.contradicts(other_rule):
                    found.append(
                        {
                            "line": number,
                            "rule": line,
                            "other": name,
                            "other_uri": uri,
                            "other_line": other_line,
                            "stands": None,
                        }
                    )
    return found


def finding_key(finding: dict[str, Any]) -> tuple[str, str, str]:
    """What makes two findings one: the item's line, the other experience, its line."""
    return finding["rule"], finding["other"], finding["other_line"]


def mark_contradictions(plan: PolicyUpdatePlan, policy_set: ExperienceSet) -> int:
    """Mark every item's contradictions (a choice already made on the same pair is kept, and so is
    a finding of the model's check while the item still has its line); returns how many items have one."""
    after_plan = overlay(policy_set, plan.items)
    flagged = 0
    for item in plan.items:
        earlier = item.metadata.get(CONTRADICTIONS, [])
        chosen = {finding_key(c): c["stands"] for c in earlier}
        found = item_contradictions(item, after_plan)
        for finding in found:
            finding["stands"] = chosen.get(finding_key(finding))
        lines = {line.strip() for line in (item.after_content or "").split("\n")}
        offline = {finding_key(f) for f in found}
        found += [c for c in earlier if c.get("by") and c["rule"] in lines and finding_key(c) not in offline]
        if found:
            item.metadata[CONTRADICTIONS] = found
            flagged += 1
        else:
            item.metadata.pop(CONTRADICTIONS, None)
    return flagged


class ContradictionGate:
    """The offline check (``mark_contradictions``); the model's, when configured, follows it on
    the same topic (``ovtui.train.review.gates.model_contradictions``)."""

    topic = CONTRADICTIONS

    async def check(self, planned: PlanToCheck) -> GateReport:
        mark_contradictions(planned.plan, planned.policy_set)
        return contradictions_report(planned.plan)


def contradictions_report(plan: PolicyUpdatePlan) -> GateReport:
    """How many items contradict another experience's rule, counted from what the items carry (so
    the model's findings count with the offline ones)."""
    contradicting = sum(bool(item.metadata.get(CONTRADICTIONS)) for item in plan.items)
    if not contradicting:
        return GateReport()
    return GateReport(
        warning=f"{contradicting} item(s) contradict another experience's rule: "
        "held for the reviewer to choose which stands"
    )


def unchosen(item: PolicyPlanItem) -> list[dict[str, Any]]:
    """The item's contradictions nobody has chosen on yet."""
    return [c for c in item.metadata.get(CONTRADICTIONS, []) if c.get("stands") is None]


def contradiction_note(finding: dict[str, Any]) -> str:
    """``line 4 “NEVER x” contradicts “ALWAYS x” in refunds``."""
    mine, theirs = finding["rule"], finding["other_line"]
    return f"line {finding['line']} “{mine}” contradicts “{theirs}” in {finding['other']}"


def choose(item: PolicyPlanItem, index: int, stands: Stands) -> None:
    """A person's choice on the item's contradiction ``index``: ``this`` (the item's line stands:
    the other line is for the reviewer to remove from its experience), ``other`` (the item's line
    is taken out of what it writes) or ``both`` (they are for different situations after all)."""
    findings = item.metadata.get(CONTRADICTIONS, [])
    if not 0 <= index < len(findings):
        raise OvtuiError(f"item {item.target_name} has no contradiction {index} (it has {len(findings)})")
    finding = findings[index]
    finding["stands"] = stands
    if stands == "other":
        lines = (item.after_content or "").split("\n")
        item.after_content = "\n".join(line for line in lines if line.strip() != finding["rule"])


def held_contradicting_edit(pending: PendingPlan, index: int, policy_set: ExperienceSet) -> None:
    """Check a reviewer's edit of item ``index`` as it is saved, as the gate checks a proposal:
    the plan's contradictions are marked again (choices already made on a pair are kept), and an
    approval given before the edit goes back to undecided when the edited text now contradicts a
    rule nobody has chosen on, so the reviewer sees both lines before anything applies."""
    mark_contradictions(pending.plan, policy_set)
    left = unchosen(pending.plan.items[index])
    decision = pending.decisions[index]
    if left and decision.decision == "approved":
        again = "your edit, choose which stands and approve it again"
        pending.decisions[index] = decision.held(f"held: {contradiction_note(left[0])}: {again}")


def unsettled_contradictions(pending: PendingPlan) -> None:
    """Refuse to apply a plan whose approved item has a contradiction nobody chose on."""
    for decision in pending.decisions:
        if decision.decision == "approved" and (left := unchosen(pending.plan.items[decision.item])):
            raise OvtuiError(
                f"plan {pending.plan_id} item {decision.item}: {contradiction_note(left[0])}; "
                "choose which line stands before applying"
            )
