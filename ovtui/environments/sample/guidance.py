"""How the scripted agent reads experiences: a fixed vocabulary of behaviours it can carry out.

An experience line becomes zero or more rules the agent knows how to follow:

- ``require``  ALWAYS do X [when C]               - ``forbid``  NEVER do X [when C]
- ``precede``  ALWAYS do X before Y (a lookup X is then done before Y; other steps are only ordered)
- ``gate``     ask for explicit confirmation before X
- ``follow``   ALWAYS do X after Y

and an Approach line with arrows ("IF C THEN a → b → c") becomes a sequence it can execute. Tools are
recognised by their names, by verb phrases people use for them ("look up the booking") and otherwise
by the tools' own names and descriptions (``tool_words``: "return the money to the original payment
method" is ``refund_payment``); situations by a short list of condition phrases, also turned round
("unless they agree") and given as a short answer to an earlier question ("see whether the fare can
be refunded. If it can, ..."). An earlier action stated as done ("once the booking is cancelled,
send them a confirmation") is what the rest follows. A line whose situation the agent does not
recognise is ignored rather than applied everywhere, and so is anything outside the vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from ovtui.environments.sample.tool_words import ToolMatcher
from ovtui.environments.sample.tools import TOOL_SPECS, is_read_only
from ovtui.environments.sample.vocabulary import correct
from ovtui.plugins.wording.lessons import parse_condition, parse_fact
from ovtui.plugins.wording.sections import is_placeholder, parse_sections, strip_bullet

ASK = "ask_user_to_confirm"
ANY_ACTION = "*"

RuleKind = Literal["require", "forbid", "precede", "gate", "follow"]

# How people name each action: the tool's own name, or a verb phrase (typos are corrected first).
_OBJECT_BOOKING = r"(?:the |their |this |his |her |a )?(?:reservation|booking|ticket|fare|itinerary)s?"
_OBJECT_CUSTOMER = (
    r"(?:the |their |this |his |her )?(?:customer(?:'s)?(?: record| account| profile)?|account|profile)"
)
_READ_VERB = r"(?:open|read|check|find|fetch|get|review|look at|see|pull up|look up|bring up)\w*"
_TOOL_PATTERNS: dict[str, tuple[str, ...]] = {
    "get_customer": (
        r"\bverify\w*",
        r"\bidentity\b",
        rf"\b{_READ_VERB} {_OBJECT_CUSTOMER}\b",
        rf"\b(?:look|pull|bring)\w* {_OBJECT_CUSTOMER} up\b",
    ),
    "get_reservation": (
        rf"\b{_READ_VERB} {_OBJECT_BOOKING}\b",
        rf"\b(?:look|pull|bring)\w* {_OBJECT_BOOKING} up\b",
        r"\bfare rules\b",
    ),
    "cancel_reservation": (r"\bcancel\w*", r"\bcall(?:ing)? off\b"),
    "refund_payment": (r"\brefund(?!able)\w*", r"\bmoney back\b", r"\breimburse\w*"),
    "issue_travel_credit": (r"\b(?:travel )?credit\b", r"\bvouchers?\b"),
    "change_flight": (
        r"\b(?:change|move|reschedule|rebook|switch)\w* (?:the |their |this )?"
        r"(?:flight|date|booking|reservation|trip|those|these|them|it)s?\b",
        r"\bbe (?:changed|moved|rebooked)\b",
        r"\breschedul\w*|\brebook\w*",
    ),
    "update_contact_email": (
        r"\b(?:update|change|set|correct|replace|switch)\w* (?:the |their |his |her )?"
        r"(?:contact )?(?:e-?mail|address)\w*",
    ),
    "transfer_to_human": (
        r"\btransfer\w*",
        r"\bescalat\w*",
        r"\bhand\w*(?: it| this| them| the case)? (?:over|off)\b",
        r"\b(?:human|supervisor|colleague|specialist)s?\b",
    ),
    "send_confirmation": (
        r"\bsend\w*(?: them| the customer| the user| him| her)? (?:a |the )?"
        r"confirmation\w*(?: message| e-?mail)?",
        r"\bconfirmation (?:message|e-?mail|note)\b",
    ),
}
_TOOL_REGEXES = [(tool, re.compile(p)) for tool, ps in _TOOL_PATTERNS.items() for p in ps] + [
    (name, re.compile(rf"\b{name}\b")) for name in TOOL_SPECS
]
# Everything else is read from the tools' own names and descriptions.
_SCHEMA = ToolMatcher({name: spec.description for name, spec in TOOL_SPECS.items()})

# Situations the agent can tell apart (negated forms first so they win), as canonical names, plus
# any fact in the learner's wording ("the reservation's cabin is premium economy") checked on the record.
_CONDITIONS: tuple[tuple[str, str], ...] = (
    (
        r"(?:the )?(?:reservation|booking|fare|ticket|it)? ?(?:is|are)? ?(?:non-refundable|nonrefundable|"
        r"not refundable)|(?:isn't|aren't) refundable|(?:can't|cannot|can not|won't) be refunded",
        "non_refundable",
    ),
    (
        r"(?:the )?(?:reservation|booking|fare|ticket) is refundable|\brefundable\b|can be refunded",
        "refundable",
    ),
    (
        r"(?:the )?fare allows changes|(?:the )?(?:fare|reservation|ticket) is not basic economy|"
        r"changeable fare|not (?:on )?(?:a )?basic economy",
        "changeable",
    ),
    (r"(?:the )?fare is basic economy|(?:the reservation's cabin is )?basic[ _]economy", "basic_economy"),
    (
        r"(?:the )?(?:user|customer|they|he|she) (?:declines?|refuses?|says? no|does not confirm|"
        r"doesn't confirm|do not confirm|don't confirm|changes? (?:their|his|her) mind)",
        "user_declines",
    ),
    (r"(?:the )?(?:user|customer|they|he|she) (?:confirms?|says? yes|agrees?)", "user_confirms"),
    (
        r"(?:the )?(?:user|customer|they|he|she)? ?(?:demands?|asks? for|requests?|wants?) "
        r"(?:compensation|to be compensated)",
        "compensation",
    ),
    (r"the (?:customer|reservation)'s [a-z]+(?: [a-z]+)? is [a-z]+(?: economy)?", "fact"),
    (r"the (?:customer|reservation) is (?:not )?[a-z]+", "fact"),
)
_CONDITION_PATTERN = re.compile("|".join(f"(?P<c{i}>{p})" for i, (p, _) in enumerate(_CONDITIONS)))
_FACT_SUBJECTS = frozenset({"reservation", "customer", "user"})
USER_CONDITIONS = frozenset({"user_declines", "user_confirms"})
# "check whether the ticket can be refunded" asks a question; it states no situation.
_QUESTION = re.compile(r"\b(?:check|see|find out|look at|verify)\w* (?:whether|if)\b(?P<claim>[^,;]*)")

_NEVER = re.compile(r"^(never|do not|don't|dont|must not|avoid|no)\b|\bnever\b")
# "fares can't be changed" forbids an action; "it can't be undone" names none and forbids nothing.
_CANNOT_BE = re.compile(r"\b(?:can't|cannot|can not) be (\w+)")
# Situations stated the other way round: "unless the fare is basic economy" = "if it is not".
_UNLESS = re.compile(r"\bunless (?P<cond>[^,;]+)")
_OPPOSITE = {
    "refundable": "non_refundable",
    "non_refundable": "refundable",
    "changeable": "basic_economy",
    "basic_economy": "changeable",
    "user_confirms": "user_declines",
    "user_declines": "user_confirms",
}
# "If it can, ..." answers the question an earlier sentence asked ("see whether the fare can be refunded").
_ELLIPSIS = re.compile(
    r"^(?P<word>if|when|once) (?:(?:it|they|that|this|he|she) (?:can|is|are|does|do)(?P<neg>n't|'t| ?not)?"
    r"|(?P<short>so|not))(?=[ ,]|$)"
)
_NEGATABLE = re.compile(r"\b(?P<aux>can|is|are)(?P<neg>n't|'t| ?not)? ")
_GUARD = re.compile(r"^(if|when|once|for)\b(?P<guard>.*?)(\bthen\b|:|,)(?P<body>.*)$")
_CONFIRM = re.compile(r"\bconfirm(s|ed|ing|ation)?\b|\bsays? yes\b|\bagrees?\b|\btheir ok\b|\bgo[- ]ahead\b")
_UNRECOGNISED_SITUATION = re.compile(r"\b(when|if|unless|whenever)\b")
_CONNECTOR = re.compile(r"\b(before|after|instead of|without|until|once|then)\b")
_LEAVE_ALONE = re.compile(
    r"\b(?:leave (?:the |their |it )?(?:booking|reservation|ticket|flight|it)? ?alone"
    r"|keep (?:the |their )?(?:booking|reservation|ticket|flight|it) (?:as it is|unchanged|untouched))\b"
)
_UNCHANGED = re.compile(r"\b(?:stays?|remains?|is left|kept) (?:unchanged|the same|untouched|as it is)\b")


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
    text = strip_bullet(line).replace("->", "→").replace("`", "").replace("*", "").replace("’", "'")
    text = correct(text).lower()
    return re.sub(r"\s+", " ", text).strip(" .;!")


def _condition_name(kind: str, text: str) -> str:
    if kind != "fact":
        return kind
    fact = parse_fact(re.sub(r"^the (customer|reservation)", r"the \1", text.strip()))
    return f"{fact[0]}={fact[1]}" if fact else ""


def _learned_conditions(text: str) -> tuple[str, ...] | None:
    """Conditions in the offline learner's own wording ("A and B"), or None if that is not it."""
    facts = parse_condition(text.strip())
    if not facts or any(k.partition(".")[0] not in _FACT_SUBJECTS for k in facts):
        return None
    named = {"user.answer=yes": "user_confirms", "user.answer=no": "user_declines"}
    return tuple(named.get(f"{k}={v}", f"{k}={v}") for k, v in sorted(facts.items()))


def _opposite(condition: str) -> str | None:
    if "=" in condition:  # a fact in the learner's wording: subject.field=value or =!value
        key, value = condition.split("=", 1)
        return f"{key}={value[1:]}" if value.startswith("!") else f"{key}=!{value}"
    return _OPPOSITE.get(condition)


def _take_conditions(text: str) -> tuple[str, tuple[str, ...]]:
    unless = _UNLESS.search(text)
    if unless:
        _, named = _take_conditions(unless.group("cond"))
        opposite = [_opposite(c) for c in named]
        if named and all(opposite):
            rest, more = _take_conditions(f"{text[: unless.start()]} %cond% {text[unless.end() :]}")
            return rest, tuple(dict.fromkeys([*(c for c in opposite if c), *more]))
    learned = _learned_conditions(text)
    if learned is not None:
        return " %cond% ", learned
    when = re.match(r"^(?P<head>.*?) when (?P<cond>.+)$", text)
    learned = _learned_conditions(when.group("cond")) if when else None
    if when and learned is not None:
        return when.group("head"), learned
    found: list[str] = []

    def mark(match: re.Match[str]) -> str:
        index = int(next(name for name, value in match.groupdict().items() if value)[1:])
        name = _condition_name(_CONDITIONS[index][1], match.group(0))
        if name:
            found.append(name)
        return " %cond% "

    text = _CONDITION_PATTERN.sub(mark, _QUESTION.sub(" ", text))
    return text, tuple(dict.fromkeys(found))


@lru_cache(maxsize=16_384)
def _tool_spans(text: str) -> tuple[tuple[int, int, str], ...]:
    """Where a text names actions, in order: the phrases people use for them (the longest match
    wins where two overlap), then, in the text between, the tools' own names and descriptions."""
    matches = sorted(
        (
            (m.start(), -(m.end() - m.start()), m.end(), tool)
            for tool, rx in _TOOL_REGEXES
            for m in rx.finditer(text)
        ),
    )
    found: list[tuple[int, int, str]] = []
    covered = 0
    for start, _, end, tool in [*matches, (len(text), 0, len(text), "")]:
        if start < covered:
            continue
        found += [(covered + m.start, covered + m.end, m.tool) for m in _SCHEMA.find(text[covered:start])]
        if tool:
            found.append((start, end, tool))
        covered = end
    return tuple(found)


def _tools(text: str) -> list[str]:
    """The actions a text names, in order."""
    return list(dict.fromkeys(tool for _, _, tool in _tool_spans(text)))


def _without_tools(text: str) -> str:
    for start, end, _ in reversed(_tool_spans(text)):
        text = f"{text[:start]} {text[end:]}"
    return text


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
    return _clause_rules(_normalise(line), (), source)[0]


def _clause_rules(text: str, inherited: tuple[str, ...], source: str) -> tuple[list[Rule], tuple[str, ...]]:
    """The rules of one sentence, and the situation it names (which carries over to the next)."""
    rules, conditions = _sentence_rules(text, inherited, source)
    result: list[Rule] = []
    for rule in rules:
        if rule.kind == "gate":  # "once they say yes" is what the gate asks, not when it applies
            rule = Rule(
                rule.kind, rule.tool, rule.other, tuple(c for c in rule.conditions if c != "user_confirms")
            )
        result.append(rule)
        if rule.kind == "require" and is_read_only(rule.tool):  # a lookup someone asks for comes first
            result.append(Rule("precede", rule.tool, ANY_ACTION, rule.conditions, source))
        elif rule.kind == "require" and "user_confirms" in rule.conditions:  # "do it once they agree"
            rest = tuple(c for c in rule.conditions if c != "user_confirms")
            result.append(Rule("gate", rule.tool, conditions=rest, source=source))
    return result, conditions


_NAMED_FIRST = re.compile(r"^(?:%cond%\s*[,:]?\s*)+")
_AFTER_FIRST = re.compile(r"^(?:only )?(?:after|once) (?P<earlier>[^,]+),(?P<later>.+)$")


def _forbids(text: str) -> bool:
    # "unless they confirm, do not cancel": the situation named first does not hide the "do not".
    body = _NAMED_FIRST.sub("", text.strip())
    return bool(_NEVER.search(body)) or any(_tools(f"be {m.group(1)}") for m in _CANNOT_BE.finditer(text))


def _sentence_rules(text: str, inherited: tuple[str, ...], source: str) -> tuple[list[Rule], tuple[str, ...]]:
    # Situations first: "when it can't be refunded" names one and says nothing about what to do.
    text, conditions = _take_conditions(text)
    polarity = "never" if _forbids(text) or _UNCHANGED.search(text) else "always"
    guard = _GUARD.match(text.strip())
    if guard:  # "IF <situation> THEN NEVER ..." carries the polarity of its consequent
        polarity = "never" if _forbids(guard.group("body")) else "always"
    if _LEAVE_ALONE.search(text):  # "leave the booking alone": change nothing about it
        polarity = "never"
        text = _LEAVE_ALONE.sub(" cancel the booking and change the flight ", text)
    conditions = tuple(dict.fromkeys([*inherited, *conditions]))
    if not conditions and _UNRECOGNISED_SITUATION.search(_without_tools(text)):
        return [], conditions
    if text.lstrip().startswith("before ") and "," in text:  # "before X, do Y" = "do Y before X"
        later, _, earlier = text.lstrip()[len("before ") :].partition(",")
        text = f"{earlier} before {later}"
    leading = _AFTER_FIRST.match(text.lstrip())
    if leading and _tools(leading.group("earlier")):  # "once the booking is cancelled, send ..."
        text = f"{leading.group('later')} after {leading.group('earlier')}"
    connector = _CONNECTOR.search(text)
    main, word, rest = (
        (text[: connector.start()], connector.group(1), text[connector.end() :])
        if connector
        else (text, "", "")
    )
    main_tools, rest_tools = _tools(main), _tools(rest)
    main_asks = bool(_CONFIRM.search(_without_tools(main)))
    rest_asks = bool(_CONFIRM.search(_without_tools(rest)))

    def rules(kind: RuleKind, tools: list[str], other: str = "") -> list[Rule]:
        return [Rule(kind, t, other, conditions, source) for t in tools]

    if polarity == "never":
        if word in ("without", "until", "before", "once") and rest_asks:
            return rules("gate", main_tools or [ANY_ACTION]), conditions
        if word == "before" and rest_tools:
            return [r for later in main_tools for r in rules("precede", rest_tools, later)], conditions
        return rules("forbid", main_tools + rest_tools), conditions
    if word in ("once", "until") and rest_asks:  # "only go ahead once they say yes"
        return rules("gate", main_tools or [ANY_ACTION]), conditions
    if main_asks and not main_tools:
        return rules("gate", rest_tools or [ANY_ACTION]), conditions
    if word == "before" and rest_tools:
        return [r for later in rest_tools for r in rules("precede", main_tools, later)], conditions
    if word == "before" and _ANYTHING.search(rest):  # "verify them before changing anything"
        return rules("precede", main_tools, ANY_ACTION), conditions
    if word == "after" and rest_tools:
        ordered: list[Rule] = []
        for trigger in rest_tools:
            if is_read_only(trigger):  # "refund only after reading the reservation": the lookup comes first
                ordered += [r for later in main_tools for r in rules("precede", [trigger], later)]
            else:  # "send a confirmation after moving the flight"
                ordered += rules("follow", main_tools, trigger)
        return ordered, conditions
    if word == "then" and main_tools and rest_tools:  # "cancel it, then send a confirmation"
        return (
            rules("require", main_tools)
            + [r for trigger in main_tools[-1:] for r in rules("follow", rest_tools, trigger)]
        ), conditions
    if word == "instead of" and rest_tools:
        return rules("require", main_tools) + rules("forbid", rest_tools), conditions
    if re.search(r"\bfirst\b", main):
        return rules("precede", main_tools, ANY_ACTION), conditions
    return rules("require", main_tools + rest_tools if word == "then" else main_tools), conditions


_ANYTHING = re.compile(r"\b(anything|any change|acting|doing|you act|making changes)\b")
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\s+—\s+|\s+-\s+")


def _asked(text: str, question: str) -> str:
    """What the last "check whether <claim>" of ``text`` asks, else the question asked before it."""
    claims = [m.group("claim").strip() for m in _QUESTION.finditer(text)]
    return claims[-1] if claims else question


def _negated(claim: str) -> str:
    """The claim turned round: "the fare can be refunded" ↔ "the fare cannot be refunded" ("" if
    it has no verb to turn)."""
    verb = _NEGATABLE.search(claim)
    if verb is None:
        return ""
    aux = verb.group("aux")
    turned = f"{aux} " if verb.group("neg") else ("cannot " if aux == "can" else f"{aux} not ")
    return f"{claim[: verb.start()]}{turned}{claim[verb.end() :]}"


def _answered(text: str, question: str) -> str:
    """``text`` with a short answer to ``question`` spelt out: "if it can, ..." → "if <claim>, ..."."""
    short = _ELLIPSIS.match(text)
    if short is None or not question:
        return text
    negative = bool(short.group("neg")) or short.group("short") == "not"
    claim = _negated(question) if negative else question
    return f"{short.group('word')} {claim}{text[short.end() :]}" if claim else text


@lru_cache(maxsize=16_384)
def _read_line(
    line: str, source: str, question: str = ""
) -> tuple[tuple[Rule, ...], tuple[ApproachSequence, ...], str]:
    """A line may hold several sentences; a situation named by the first carries over to the rest,
    and a question one asks ("see whether it can be refunded") is what a later "if it can" answers.
    Returns the rules, the sequences and the question open after the line.
    Cached: the same lines come back in every plan and every rollout of a run (reading one costs ms)."""
    sequence = parse_sequence(line, source)
    if sequence is not None:
        return tuple(_sequence_rules(sequence)), (sequence,), question
    found: list[Rule] = []
    inherited: tuple[str, ...] = ()
    for sentence in _SENTENCE.split(strip_bullet(line)):
        text = _answered(_normalise(sentence), question)
        if not text:
            continue
        question = _asked(text, question)
        rules, conditions = _clause_rules(text, inherited, source)
        found.extend(r for r in rules if r not in found)
        inherited = conditions or inherited
    return tuple(found), (), question


def guidance_from_content(content: str, source: str = "") -> Guidance:
    """The rules and sequences of one experience body (Approach and Reflect sections)."""
    sections = parse_sections(content)
    guidance = Guidance()
    question = ""
    for line in [*sections.approach, *sections.reflect]:
        rules, sequences, question = _read_line(line, source, question)
        guidance.extend(Guidance(list(rules), list(sequences)))
    return guidance


def guidance_by_line(content: str) -> list[tuple[str, Guidance]]:
    """Each Approach and Reflect line with what the agent reads in it (``guidance_from_content``,
    line by line: what an adherence check holds a rollout to, line for line)."""
    sections = parse_sections(content)
    found: list[tuple[str, Guidance]] = []
    question = ""
    for line in [*sections.approach, *sections.reflect]:
        rules, sequences, question = _read_line(line, "", question)
        found.append((strip_bullet(line), Guidance(list(rules), list(sequences))))
    return found


def unread_lines(content: str) -> list[tuple[int, str]]:
    """The Approach and Reflect lines the agent cannot act on: (line number in ``content``, text)."""
    unread: list[tuple[int, str]] = []
    section = ""
    question = ""
    for number, raw in enumerate(content.splitlines(), start=1):
        header = re.match(r"^#{1,6}\s+(.+?)\s*$", raw.strip())
        if header:
            section = header.group(1).strip().lower()
            continue
        if section not in ("approach", "reflect") or not raw.strip() or is_placeholder(raw):
            continue
        rules, sequences, question = _read_line(raw, "", question)
        if not rules and not sequences:
            unread.append((number, raw.strip()))
    return unread


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
