"""The model's contradiction check: when a model is configured, one call per plan item that has
partner rules (lines of experiences for the same situation, or the other lines of its own file)
asks the model which of the lines the item adds say the opposite of one of them — what the offline
gate's patterns (ALWAYS/NEVER, IF … THEN) cannot see ("offer a voucher" against "do not compensate").

The model answers by line numbers, which are checked against the lines it was shown, so a finding
always names two real lines and Review shows them side by side. Its verdict only adds to the
offline findings (a pair both found is shown once) and never removes one; a failed call is a
warning in the run's log, and the offline findings stand alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.base import GateReport, PlanToCheck
from ovtui.train.review.gates.contradictions import (
    CONTRADICTIONS,
    contradictions_report,
    finding_key,
    situation_keys,
)
from ovtui.train.review.gates.sanitizer import added_line_numbers
from ovtui.train.review.gates.validation import overlay

if TYPE_CHECKING:  # the client (and openai) are imported only where a model is configured
    from ovtui.core.events import EventBus
    from ovtui.llm.client import LLMClient

STAGE = "contradictions"
BY_MODEL = "model"  # a finding's "by": what found it (the offline gate's findings have none)

INSTRUCTION = """\
You check a proposed edit of an AI agent's experience memory for contradictions. You are shown the \
lines the edit adds to one experience, numbered as in that file, and the lines of experiences for \
the same situation (the edited file's own other lines among them), numbered as in theirs.

A contradiction is a proposed line that tells the agent to do the opposite of another line in the \
same circumstances: one requires what the other forbids, or they give incompatible actions for the \
same condition. Lines for different conditions, lines that add detail, and lines that agree are no \
contradiction. List each contradiction once, with the proposed line's number, the other \
experience's name and its line's number, and one sentence saying why; list none when there is none.
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "contradictions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": "integer", "description": "the number of the proposed line"},
                    "other": {"type": "string", "description": "the experience the opposing line is in"},
                    "other_line": {"type": "integer", "description": "the number of the opposing line"},
                    "why": {"type": "string", "description": "one sentence: why they contradict"},
                },
                "required": ["line", "other", "other_line", "why"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["contradictions"],
    "additionalProperties": False,
}


def rule_lines(content: str, only: set[int] | None = None) -> dict[int, str]:
    """The lines of an experience that can state a rule, by their number (from 1): not headings,
    not blank, not its Situation section (which says when it applies); ``only``: these numbers."""
    lines: dict[int, str] = {}
    section = "situation"
    for number, line in enumerate(content.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            section = stripped.lstrip("#").strip().lower()
        elif stripped and section != "situation" and (only is None or number in only):
            lines[number] = stripped
    return lines


@dataclass(frozen=True)
class Partner:
    name: str
    uri: str | None
    lines: dict[int, str]


@dataclass(frozen=True)
class Question:
    """What one check call asks about one item."""

    item: PolicyPlanItem
    proposed: dict[int, str]
    partners: dict[str, Partner]

    def prompt(self) -> str:
        proposed = "\n".join(f"{n}: {line}" for n, line in self.proposed.items())
        parts = [f"## Proposed lines (experience `{self.item.target_name}`)\n{proposed}"]
        parts.append("## Lines of experiences for the same situation")
        for partner in self.partners.values():
            listed = "\n".join(f"{n}: {line}" for n, line in partner.lines.items())
            parts.append(f"### {partner.name}\n{listed}")
        return "\n\n".join(parts)

    def findings(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        """The answer's contradictions that name lines it was shown, as the gate's findings."""
        found = []
        for entry in answer.get("contradictions", []):
            partner = self.partners.get(str(entry.get("other")))
            line, other_line = entry.get("line"), entry.get("other_line")
            if partner is None or line not in self.proposed or other_line not in partner.lines:
                continue  # not a pair of lines it was shown: nothing a reviewer could be shown
            if partner.name == self.item.target_name and other_line == line:
                continue
            found.append(
                {
                    "line": line,
                    "rule": self.proposed[line],
                    "other": partner.name,
                    "other_uri": partner.uri,
                    "other_line": partner.lines[other_line],
                    "stands": None,
                    "by": BY_MODEL,
                    "why": str(entry.get("why") or ""),
                }
            )
        return found


def question(item: PolicyPlanItem, after_plan: ExperienceSet) -> Question | None:
    """What to ask about ``item`` (None: it adds no rule line, or no line shares its situation)."""
    if item.kind == "delete" or item.memory_type != EXPERIENCES or not item.after_content:
        return None
    added = {n for n, _ in added_line_numbers(item.before_content, item.after_content)}
    proposed = rule_lines(item.after_content, added)
    if not proposed:
        return None
    situation = situation_keys(item.after_content)
    partners = {
        p.name: Partner(p.name, p.uri, rule_lines(p.content))
        for p in after_plan.policies
        if p.name != item.target_name and situation & situation_keys(p.content)
    }
    own = {n: line for n, line in rule_lines(item.after_content).items() if n not in proposed}
    partners[item.target_name] = Partner(item.target_name, item.target_uri, own)
    partners = {name: p for name, p in partners.items() if p.lines}
    return Question(item, proposed, partners) if partners else None


class ModelContradictionCheck:
    """The check (see the module docstring), through the project's LLM client: a gate that follows
    the offline one on its topic, so the run's log counts the items either found."""

    topic = CONTRADICTIONS

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    async def check(self, planned: PlanToCheck) -> GateReport:
        await self.mark(planned.plan, planned.policy_set, planned.events)
        return contradictions_report(planned.plan)

    async def mark(self, plan: PolicyUpdatePlan, policy_set: ExperienceSet, events: EventBus) -> int:
        """Add the model's findings to the items' contradictions; returns how many items it called for."""
        after_plan = overlay(policy_set, plan.items)
        questions = [q for item in plan.items if (q := question(item, after_plan)) is not None]
        await asyncio.gather(*(self._ask(q, events) for q in questions))
        return len(questions)

    async def _ask(self, asked: Question, events: EventBus) -> None:
        messages = [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": asked.prompt()},
        ]
        try:
            result = await self.client.complete_json(STAGE, messages, SCHEMA, "contradictions")
        except Exception as exc:  # any failure of the call: the offline findings stand alone
            events.log(
                f"the model's contradiction check of {asked.item.target_name} failed "
                f"({type(exc).__name__}: {exc}); only the offline check's findings are shown",
                level="warning",
            )
            return
        findings = asked.item.metadata.setdefault(CONTRADICTIONS, [])
        known = {finding_key(f) for f in findings}
        for finding in asked.findings(result.data or {}):
            if finding_key(finding) not in known:
                known.add(finding_key(finding))
                findings.append(finding)
        if not findings:
            asked.item.metadata.pop(CONTRADICTIONS, None)
