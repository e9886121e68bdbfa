"""How the scripted agent reads experiences: a fixed vocabulary of behaviours it can carry out.

An experience line becomes zero or more rules the agent knows how to follow:

- ``require``  ALWAYS do X [when C]               - ``forbid``  NEVER do X [when C]
- ``precede``  ALWAYS do X before Y (a lookup X is then done before Y; other steps are only ordered)
- ``gate``     ask for explicit confirmation before X
- ``follow``   ALWAYS do X after Y

and an Approach line with arrows ("IF C THEN a → b → c") becomes a sequence it can execute. Tools are
recognised by their names or by verb phrases ("look up the booking"), situations by a short list of
condition phrases. A line whose situation the agent does not recognise is ignored rather than
applied everywhere, and so is anything outside the vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ovtui.components.offline.sections import parse_sections, strip_bullet
from ovtui.sample_env.tools import TOOL_SPECS, is_read_only

ASK = "ask_user_to_confirm"
ANY_ACTION = "*"

RuleKind = Literal["require", "forbid", "precede", "gate", "follow"]

_TOOL_PHRASES: dict[str, tuple[str, ...]] = {
    "get_customer": (
        "verify the customer's identity",
        "verify the customer",
        "verify their identity",
        "verify identity",
        "look up the customer",
        "look the customer up",
        "read the customer record",
    ),
    "get_reservation": (
        "look up the booking",
        "look the booking up",
        "look up the reservation",
        "look the reservation up",
        "check the booking",
        "check the reservation",
        "read the reservation",
    ),
    "cancel_reservation": ("cancel the booking", "cancel the reservation"),
    "refund_payment": ("issue a refund", "give a refund", "refund the payment", "refund the booking"),
    "issue_travel_credit": (
        "offer travel credit",
        "issue travel credit",
        "give travel credit",
        "grant travel credit",
    ),
    "change_flight": ("change the flight", "move the booking", "change the date"),
    "update_contact_email": ("update the email", "change the email"),
    "transfer_to_human": ("transfer to a human", "hand over to a human", "escalate to a human", "escalate"),
    "send_confirmation": ("send a confirmation message", "send a confirmation", "send the confirmation"),
}
_PHRASE_TO_TOOL = {name: name for name in TOOL_SPECS} | {
    phrase: tool for tool, phrases in _TOOL_PHRASES.items() for phrase in phrases
}
_TOOL_PATTERN = re.compile(
    r"\b(" + "|".join(re.escape(p) for p in sorted(_PHRASE_TO_TOOL, key=len, reverse=True)) + r")\b"
)
_TOOL_MARK = re.compile(r"@([a-z_]+)@")

# Situations the agent can tell apart; negated forms come first so they win.
_CONDITIONS: tuple[tuple[str, str], ...] = (
    (
        r"(the )?(reservation|booking|fare|ticket) is (non-refundable|nonrefundable|not refundable)",
        "non_refundable",
    ),
    (r"non-refundable|nonrefundable|not refundable", "non_refundable"),
    (r"(the )?(reservation|booking|fare|ticket) is refundable|\brefundable\b", "refundable"),
    (r"(the )?fare allows changes|(the )?fare is not basic economy|changeable fare", "changeable"),
    (r"(the )?fare is basic economy|basic[ _]economy", "basic_economy"),
    (r"(the )?(user|customer) (declines|refuses|says no|does not confirm|doesn't confirm)", "user_declines"),
    (
        r"(the )?(user|customer) (demands|asks for|requests|wants) (compensation|to be compensated)",
        "compensation",
    ),
)
_CONDITION_PATTERN = re.compile("|".join(f"(?P<c{i}>{p})" for i, (p, _) in enumerate(_CONDITIONS)))
USER_CONDITIONS = frozenset({"user_declines"})

_NEVER = re.compile(r"^(never|do not|don't|must not|avoid)\b")
_GUARD = re.compile(r"^(if|when)\b(?P<guard>.*?)(\bthen\b|:|,)(?P<body>.*)$")
_CONFIRM = re.compile(r"\bconfirm(s|ed|ing|ation)?\b")
_UNRECOGNISED_SITUATION = re.compile(r"\b(when|if|unless|whenever)\b")
_CONNECTOR = re.compile(r"\b(before|after|instead of|without|until)\b")


@dataclass(frozen=True)
class Rule:
    kind: RuleKind
    tool: str
    other: str = ""  # precede: the later step; follow: the trigger
    conditions: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class ApproachSequence:
    steps: tuple[str, ...]
    conditions: tuple[str, ...] = ()
    source: str = ""


@dataclass
class Guidance:
    rules: list[Rule] = field(default_factory=list)
    sequences: list[ApproachSequence] = field(default_factory=list)

    def extend(self, other: Guidance) -> None:
        self.rules.extend(r for r in other.rules if r not in self.rules)
        self.sequences.extend(s for s in other.sequences if s not in self.sequences)

    def of_kind(self, kind: RuleKind) -> list[Rule]:
        return [r for r in self.rules if r.kind == kind]

    def _applies(self, rule_target: str, tool: str) -> bool:
        return rule_target == tool or (rule_target == ANY_ACTION and not is_read_only(tool))

    def predecessors(self, tool: str) -> list[str]:
        return [r.tool for r in self.of_kind("precede") if self._applies(r.other, tool) and r.tool != tool]

    def forbidding(self, tool: str) -> list[Rule]:
        return [r for r in self.of_kind("forbid") if self._applies(r.tool, tool)]

    def gated(self, tool: str) -> bool:
        return any(self._applies(r.tool, tool) for r in self.of_kind("gate"))

    def follow_ups(self, tool: str) -> list[Rule]:
        return [r for r in self.of_kind("follow") if r.other == tool]


def _normalise(line: str) -> str:
    text = strip_bullet(line).lower().replace("->", "→").replace("`", "").replace("*", "")
    return re.sub(r"\s+", " ", text).strip(" .;")


def _take_conditions(text: str) -> tuple[str, tuple[str, ...]]:
    found: list[str] = []

    def mark(match: re.Match[str]) -> str:
        index = int(next(name for name, value in match.groupdict().items() if value)[1:])
        found.append(_CONDITIONS[index][1])
        return " %cond% "

    text = _CONDITION_PATTERN.sub(mark, text)
    return text, tuple(dict.fromkeys(found))


def _tools(text: str) -> list[str]:
    marked = _TOOL_PATTERN.sub(lambda m: f" @{_PHRASE_TO_TOOL[m.group(1)]}@ ", text)
    return list(dict.fromkeys(_TOOL_MARK.findall(marked)))


def _without_tools(text: str) -> str:
    return _TOOL_PATTERN.sub(" ", text)


def parse_sequence(line: str, source: str = "") -> ApproachSequence | None:
    """``[IF <situation> THEN] a → b → c``; None if it is no sequence or names an unknown situation."""
    text = _normalise(line)
    if text.count("→") < 1:
        return None
    guard, body = "", text
    match = _GUARD.match(text)
    if match and "→" not in match.group("guard"):
        guard, body = match.group("guard"), match.group("body")
    _, conditions = _take_conditions(guard)
    if guard.strip() and not conditions:
        return None
    steps: list[str] = []
    for chunk in body.split("→"):
        tools = _tools(chunk)
        if tools:
            steps.append(tools[0])
        elif _CONFIRM.search(_without_tools(chunk)):
            steps.append(ASK)
    return ApproachSequence(tuple(steps), conditions, source) if len(steps) >= 2 else None


def parse_rule(line: str, source: str = "") -> list[Rule]:
    text = _normalise(line)
    polarity = "never" if _NEVER.match(text) else "always"
    guard = _GUARD.match(text)
    if guard:  # "IF <situation> THEN NEVER ..." carries the polarity of its consequent
        polarity = "never" if _NEVER.match(guard.group("body").strip()) else polarity
    text, conditions = _take_conditions(text)
    if not conditions and _UNRECOGNISED_SITUATION.search(_without_tools(text)):
        return []
    connector = _CONNECTOR.search(text)
    main, word, rest = (
        (text[: connector.start()], connector.group(1), text[connector.end() :])
        if connector
        else (text, "", "")
    )
    main_tools, rest_tools = _tools(main), _tools(rest)
    main_asks, rest_asks = (
        bool(_CONFIRM.search(_without_tools(main))),
        bool(_CONFIRM.search(_without_tools(rest))),
    )

    def rules(kind: RuleKind, tools: list[str], other: str = "") -> list[Rule]:
        return [Rule(kind, t, other, conditions, source) for t in tools]

    if polarity == "never":
        if word in ("without", "until", "before") and rest_asks:
            return rules("gate", main_tools or [ANY_ACTION])
        if word == "before" and rest_tools:
            return [r for later in main_tools for r in rules("precede", rest_tools, later)]
        return rules("forbid", main_tools)
    if main_asks and not main_tools:
        return rules("gate", rest_tools or [ANY_ACTION])
    if word == "before" and rest_tools:
        return [r for later in rest_tools for r in rules("precede", main_tools, later)]
    if word == "after" and rest_tools:
        return [r for trigger in rest_tools for r in rules("follow", main_tools, trigger)]
    if word == "instead of" and rest_tools:
        return rules("require", main_tools) + rules("forbid", rest_tools)
    if re.search(r"\bfirst\b", main):
        return rules("precede", main_tools, ANY_ACTION)
    return rules("require", main_tools)


def guidance_from_content(content: str, source: str = "") -> Guidance:
    """The rules and sequences of one experience body (Approach and Reflect sections)."""
    sections = parse_sections(content)
    guidance = Guidance()
    for line in [*sections.approach, *sections.reflect]:
        sequence = parse_sequence(line, source)
        if sequence is not None:
            guidance.sequences.append(sequence)
            guidance.rules.extend(_sequence_rules(sequence))
        else:
            guidance.rules.extend(parse_rule(line, source))
    return guidance


def _sequence_rules(sequence: ApproachSequence) -> list[Rule]:
    """What a sequence implies wherever it is followed: its lookups come before the later steps
    and an "ask the user to confirm" step gates the action after it."""
    rules: list[Rule] = []
    steps = sequence.steps
    for index, step in enumerate(steps):
        if step == ASK:
            target = next((s for s in steps[index + 1 :] if s != ASK), None)
            if target is not None:
                rules.append(Rule("gate", target, source=sequence.source))
        elif is_read_only(step):
            rules.extend(
                Rule("precede", step, later, source=sequence.source)
                for later in steps[index + 1 :]
                if later != ASK and not is_read_only(later)
            )
    return rules
