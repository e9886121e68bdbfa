"""The sanitizer gate: what in the lines an item adds a reviewer could miss or should not approve
unseen — hidden characters (``ovtui.core.hidden_text``), text that addresses the agent the way a
prompt injection does, tool-call markup, secrets (API key shapes, private keys, tokens) and
personal data (e-mail addresses, phone and card numbers, IBANs, national ids).

Each finding is one line (``line 3: hidden character U+202E RIGHT-TO-LEFT OVERRIDE (bidi
control)``) in the item's ``metadata["hazards"]``, which Review shows. No review policy approves an
item with a finding (``ReviewPolicy.decisions`` asks here itself, so an item that skipped the gate
is held all the same), and a reviewer's edit is checked again when it is saved, before any apply.
A secret is never quoted in full: a finding shows its first and last characters only. Nor is one
kept in a pending plan file: ``mask_plan_secrets`` replaces each secret a line adds (and the body of a
private key) with ``⟦secret masked: sk-a…yz⟧`` before the plan is written. A masked line is a finding
of its own, and an item whose approved text still holds one cannot be approved: the reviewer edits
the line to say what the experience should hold (a secret belongs in the agent's environment, not its
memory), or rejects the item. The text as proposed stays where it came from (the trajectories).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ovtui.core.case_patterns import EMAIL, ISO_DATE
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.hidden_text import char_name, hidden_characters, is_bidi
from ovtui.train.review.gates.base import GateReport, PlanToCheck

if TYPE_CHECKING:
    from ovtui.train.review.plans import PendingPlan

HAZARDS = "hazards"  # the metadata key

_WORDS = r"(?:\w+[ \t]+){0,4}?"  # a few words between the verb and what it acts on
_PEOPLE = r"(?:user|customer|human|reviewer|operator|developer)s?"
_INJECTION = [
    (
        "tells the agent to set its instructions aside",
        re.compile(
            rf"\b(?:ignore|disregard|forget|override|bypass|skip)\b[ \t]+{_WORDS}"
            r"(?:instructions?|rules?|prompts?|guidelines?|polic(?:y|ies)|directives?|guardrails?|"
            r"system message|constraints?)\b",
            re.I,
        ),
    ),
    (
        "gives the agent a new role",
        re.compile(
            r"\b(?:you are now|from now on,? you (?:are|will)|pretend (?:to be|you are)|"
            r"developer mode|jailbreak|DAN mode|act as an? (?:unrestricted|unfiltered|different))\b",
            re.I,
        ),
    ),
    (
        "asks the agent to reveal its prompt",
        re.compile(
            rf"\b(?:reveal|print|show|repeat|output|leak|disclose)\b[ \t]+{_WORDS}"
            r"(?:system prompt|hidden prompt|instructions|initial prompt|api keys?|credentials)\b",
            re.I,
        ),
    ),
    (
        "tells the agent to hide something from the person",
        re.compile(
            rf"\b(?:do not|don't|never)[ \t]+(?:tell|inform|let)[ \t]+(?:the |your )?{_PEOPLE}[ \t]+"
            r"(?:know[ \t]+)?(?:about|of)[ \t]+(?:this|these|it)\b|"
            rf"\bwithout[ \t]+(?:telling|informing)[ \t]+(?:the |your )?{_PEOPLE}\b|"
            rf"\b(?:hide|conceal)[ \t]+(?:this|these|it)[ \t]+from[ \t]+(?:the |your )?{_PEOPLE}\b|"
            r"\bkeep (?:this|it) (?:a )?secret\b",
            re.I,
        ),
    ),
    (
        "speaks as another role of the conversation",
        re.compile(
            r"^\W*(?:system|assistant|developer)\s*:|<\|im_start\|>|<\|im_end\|>|\[/?INST\]|<</?SYS>>|"
            r"^\W*#+\s*(?:system|new instructions?)\b",
            re.I,
        ),
    ),
]
_TOOL_MARKUP = re.compile(
    r"</?\s*(?:tool_calls?|tool_use|tool_result|tool_response|function_calls?|function_results?|"
    r"invoke|parameter|antml:[\w-]+)\b[^>]*>|<\|[\w-]*(?:tool|call|python)[\w-]*\|>|\[TOOL_CALLS\]|"
    r"\"(?:tool_calls|function_call)\"\s*:|"
    r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:",
    re.I,
)
_SECRETS = [
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a Stripe secret key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer[ \t]+[A-Za-z0-9._~+/-]{20,}=*")),
    (
        "a password or key assigned a value",
        re.compile(
            r"\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|password|passwd)\b"
            r"[\"']?\s*[:=]\s*[\"']?[^\s\"']{8,}",
            re.I,
        ),
    ),
]
_PHONE = re.compile(r"(?<![\w+])\+?\d{1,3}?[ .-]?\(?\d{2,4}\)?(?:[ .-]\d{2,4}){2,3}(?![\w-])")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_MASKED = re.compile(r"⟦secret masked: [^⟧\n]*⟧")
_KEY_END = re.compile(r"-----END (?:[A-Z]+ )*PRIVATE KEY-----")


@dataclass(frozen=True)
class Hazard:
    line: int  # 1-based, in the item's after-content
    kind: str  # hidden, injection, tool-markup, secret, personal
    what: str

    def note(self) -> str:
        return f"line {self.line}: {self.what}"


def _masked(value: str) -> str:
    return f"{value[:4]}…{value[-2:]}" if len(value) > 8 else "…"


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _personal(line: str) -> Iterator[str]:
    for email in EMAIL.findall(line):
        yield f"an e-mail address ({email})"
    for match in _CARD.finditer(line):
        digits = re.sub(r"\D", "", match.group())
        if _luhn(digits):
            yield f"a payment card number ({_masked(digits)})"
    for match in _IBAN.finditer(line):
        yield f"a bank account number ({_masked(match.group().replace(' ', ''))})"
    for match in _SSN.finditer(line):
        yield f"a national id number ({_masked(match.group())})"
    for match in _PHONE.finditer(line):
        digits = re.sub(r"\D", "", match.group())
        text = match.group().strip()
        if 7 <= len(digits) <= 15 and not any(p.fullmatch(text) for p in (_CARD, _SSN, ISO_DATE)):
            yield f"a phone number ({text})"


def line_hazards(number: int, line: str) -> Iterator[Hazard]:
    """What one line carries that a reviewer must see before it is approved."""
    for char in hidden_characters(line):
        kind = "bidi control" if is_bidi(char) else "invisible"
        yield Hazard(number, "hidden", f"hidden character {char_name(char)} ({kind})")
    for why, pattern in _INJECTION:
        match = pattern.search(line)
        if match:
            yield Hazard(number, "injection", f"{why} (“{match.group().strip()}”)")
    markup = _TOOL_MARKUP.search(line)
    if markup:
        yield Hazard(number, "tool-markup", f"tool-call markup (“{markup.group().strip()}”)")
    for what, match in _secrets(line):
        yield Hazard(number, "secret", f"looks like {what} ({_masked(match.group())})")
    for match in _MASKED.finditer(line):
        yield Hazard(
            number,
            "masked",
            f"a secret the pending plan does not keep ({match.group()}): edit the line to say what "
            "to write, or reject the item",
        )
    for what in dict.fromkeys(_personal(line)):
        yield Hazard(number, "personal", f"personal data: {what}")


def _secrets(line: str) -> list[tuple[str, re.Match[str]]]:
    """The secrets of a line, each once (an Anthropic key is not an OpenAI key as well), in order."""
    found: dict[int, tuple[str, re.Match[str]]] = {}
    for what, pattern in _SECRETS:
        for match in pattern.finditer(line):
            found.setdefault(match.start(), (what, match))
    return [found[start] for start in sorted(found)]


def _mask_line(line: str) -> str:
    masked, end = [], 0
    for _, match in _secrets(line):
        if match.start() >= end:  # overlapping shapes: the first one masks the span
            masked += [line[end : match.start()], f"⟦secret masked: {_masked(match.group())}⟧"]
            end = match.end()
    return "".join([*masked, line[end:]])


def masked_text(before: str | None, after: str) -> str:
    """``after`` with every secret in the lines it adds (those ``before`` has not) masked, and the
    lines of a private key's body with them."""
    old = set((before or "").split("\n"))
    lines, in_key = [], False
    for line in after.split("\n"):
        if line in old:
            lines.append(line)
            continue
        if in_key:
            in_key = not _KEY_END.search(line)
            lines.append("⟦secret masked: private key line⟧")
            continue
        in_key = any(what == "a private key" for what, _ in _secrets(line)) and not _KEY_END.search(line)
        lines.append(_mask_line(line))
    return "\n".join(lines)


def mask_plan_secrets(plan: PolicyUpdatePlan) -> None:
    """Mask the secrets the plan's items add, in their text and in what was proposed before an edit,
    so the pending plan file never holds one (run before every write of it)."""
    for item in plan.items:
        if item.kind != "upsert":
            continue
        if item.after_content:
            item.after_content = masked_text(item.before_content, item.after_content)
        proposed = item.metadata.get("proposed_content")
        if isinstance(proposed, str):
            item.metadata["proposed_content"] = masked_text(item.before_content, proposed)


def masked_lines(text: str | None) -> list[int]:
    """The (1-based) lines of ``text`` holding a masked secret."""
    return [n for n, line in enumerate((text or "").split("\n"), start=1) if _MASKED.search(line)]


def held_note(hazards: list[Hazard]) -> str:
    """Why an item is held for a person: its first finding, and how many more there are."""
    more = f" (and {len(hazards) - 1} more)" if len(hazards) > 1 else ""
    return f"held: {hazards[0].note()}{more}"


def added_line_numbers(before: str | None, after: str | None) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of the lines of ``after`` that ``before`` does not have."""
    old = set((before or "").split("\n"))
    for number, line in enumerate((after or "").split("\n"), start=1):
        if line not in old:
            yield number, line


def item_hazards(item: PolicyPlanItem) -> list[Hazard]:
    """The hazards of the lines an item adds (a delete adds none). Lines are split on newlines
    only, so a Unicode line separator stays inside the line it hides in, and is reported there."""
    if item.kind == "delete":
        return []
    return [
        h
        for number, line in added_line_numbers(item.before_content, item.after_content)
        for h in line_hazards(number, line)
    ]


def mark_hazards(item: PolicyPlanItem) -> list[str]:
    """Write the item's findings into its metadata (none: the key is removed); returns them."""
    notes = [hazard.note() for hazard in item_hazards(item)]
    if notes:
        item.metadata[HAZARDS] = notes
    else:
        item.metadata.pop(HAZARDS, None)
    return notes


def held_edit(pending: PendingPlan, index: int) -> None:
    """Check a reviewer's edit of item ``index`` as it is saved: its findings are marked, and an
    approval given before the edit goes back to undecided, so what is applied has been seen."""
    hazards = item_hazards(pending.plan.items[index])
    mark_hazards(pending.plan.items[index])
    decision = pending.decisions[index]
    if hazards and decision.decision == "approved":
        pending.decisions[index] = decision.held(f"{held_note(hazards)}: your edit, approve it again")


def mark_plan_hazards(plan: PolicyUpdatePlan) -> int:
    """Mark every item of a plan; returns how many carry a finding."""
    return sum(bool(mark_hazards(item)) for item in plan.items)


class SanitizerGate:
    topic = HAZARDS

    async def check(self, planned: PlanToCheck) -> GateReport:
        hazardous = mark_plan_hazards(planned.plan)
        if not hazardous:
            return GateReport()
        return GateReport(
            warning=f"{hazardous} item(s) carry hidden characters, injected instructions, tool-call markup, "
            "secrets or personal data: held for review"
        )
