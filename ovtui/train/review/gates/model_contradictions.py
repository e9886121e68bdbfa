"""The model's contradiction check: which lines a plan item adds say the opposite of a partner rule
(a line of an experience for the same situation, or another line of its own file) — what the
offline gate's patterns (ALWAYS/NEVER, IF … THEN) cannot see ("offer a voucher" against "do not
compensate").

A merger that looks for them (the LLM backend's merge call does) reports them with the item,
quoting both lines; the check keeps a report only when both quotes are real lines of the files
involved, and costs no call. For an item no merger looked at, a configured model is asked in one
call of its own, answering by line numbers checked against the lines it was shown. Either way a
finding names two real lines, which Review shows side by side; the model's findings only add to the
offline ones (a pair both found is shown once) and never remove one; a failed call is a warning in
the run's log, and the offline findings stand alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.memory.types import EXPERIENCES
from ovtui.plugins.backends import REPORTED_CONTRADICTIONS, ReportedContradiction
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
            found.append(self._finding(line, partner, other_line, str(entry.get("why") or "")))
        return found

    def reported_findings(self, reports: list[ReportedContradiction]) -> list[dict[str, Any]]:
        """A merger's reports whose two quotes are real lines (the added one among the item's
        proposed lines, the other among its partner's), as the gate's findings."""
        found = []
        for report in reports:
            partner = self.partners.get(report.other)
            line = _numbered(self.proposed, report.line)
            other_line = _numbered(partner.lines, report.other_line) if partner else None
            if partner is None or line is None or other_line is None:
                continue  # a quote of no line here: nothing a reviewer could be shown
            if partner.name == self.item.target_name and other_line == line:
                continue
            found.append(self._finding(line, partner, other_line, report.why))
        return found

    def _finding(self, line: int, partner: Partner, other_line: int, why: str) -> dict[str, Any]:
        return {
            "line": line,
            "rule": self.proposed[line],
            "other": partner.name,
            "other_uri": partner.uri,
            "other_line": partner.lines[other_line],
            "stands": None,
            "by": BY_MODEL,
            "why": why,
        }


def _numbered(lines: dict[int, str], quote: str) -> int | None:
    """The number of the line ``quote`` quotes (bullets, spacing and case aside), or None."""
    wanted = _quoted(quote)
    return next((n for n, line in lines.items() if _quoted(line) == wanted), None) if wanted else None


def _quoted(text: str) -> str:
    return " ".join(text.strip().lstrip("-*+ ").split()).casefold()


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
    """The check (see the module docstring): a gate that follows the offline one on its topic, so
    the run's log counts the items either found. ``client``: the model asked about items no merger
    looked at (None: only merger reports are checked, and no call is made)."""

    topic = CONTRADICTIONS

    def __init__(self, client: LLMClient | None) -> None:
        self.client = client

    async def check(self, planned: PlanToCheck) -> GateReport:
        await self.mark(planned.plan, planned.policy_set, planned.events)
        return contradictions_report(planned.plan)

    async def mark(self, plan: PolicyUpdatePlan, policy_set: ExperienceSet, events: EventBus) -> int:
        """Add the model's findings to the items' contradictions; returns how many calls it made."""
        if self.client is None and not any(REPORTED_CONTRADICTIONS in i.metadata for i in plan.items):
            return 0  # no model to ask and no merger report to check (the offline path): no overlay
        after_plan = overlay(policy_set, plan.items)
        to_ask: list[Question] = []
        for item in plan.items:
            reported = item.metadata.pop(REPORTED_CONTRADICTIONS, None)  # never stored with the plan
            asked = question(item, after_plan)
            if asked is None:
                continue
            if reported is not None:  # the merger looked: its reports are the model's answer
                reports = [ReportedContradiction.model_validate(r) for r in reported]
                _add(asked.item, asked.reported_findings(reports))
            elif self.client is not None:
                to_ask.append(asked)
        await asyncio.gather(*(self._ask(q, events) for q in to_ask))
        return len(to_ask)

    async def _ask(self, asked: Question, events: EventBus) -> None:
        assert self.client is not None  # only items for a configured model are asked
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
        _add(asked.item, asked.findings(result.data or {}))


def _add(item: PolicyPlanItem, found: list[dict[str, Any]]) -> None:
    """The model's findings beside the offline ones, a pair both found once."""
    findings = item.metadata.setdefault(CONTRADICTIONS, [])
    known = {finding_key(f) for f in findings}
    for finding in found:
        if finding_key(finding) not in known:
            known.add(finding_key(finding))
            findings.append(finding)
    if not findings:
        item.metadata.pop(CONTRADICTIONS, None)
