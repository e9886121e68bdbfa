"""Which live messages a session context's token budget keeps: OpenViking 0.5.2's turn-aware rule.

Messages are grouped into turns: a user query (the turn's anchor) and the assistant steps after it,
each step an assistant message with the tool-result messages that follow it, so a tool call and its
result are kept, or cut, together. A message's ``message_kind`` says which it is: ``user_query``
opens a turn and ``tool_transport`` carries results back, whatever the role or the parts; a message
without either kind is a query when it is a user's, unless it is made of tool parts only (then it
carries results). A message of another role (system, developer, tool) before the next query is a
step of its own, and messages before the first query form a turn without an anchor.

What a budget too small for everything keeps, in this order: the newest turn's anchor and its final
step, both of which may be shortened (the anchor is cut to leave the final step up to half the
budget, all of it when the step needs less, never so much that the anchor could not fit), then that
turn's checkpoint steps (a step with a message of kind ``checkpoint``: a summary of what came
before it), oldest first, each shortened if need be, until one does not fit, then the turn's other
earlier steps, newest first and whole, until one does not fit, then older turns, newest first and
whole, until one does not fit. Kept messages stay in their order.

Shortening a group empties its texts, context abstracts and tool outputs, drops tool inputs (the
oldest first) only while the rest still does not fit, then refills the emptied fields newest first,
each cut to what is left with its head and tail around a ``\\n…\\n`` marker. The stored messages are
never changed: shortened ones are copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ovtui.core.domain import TextPart, ToolPart
from ovtui.protocols.sessions import (
    ContextPart,
    SessionMessage,
    carries_tool_results,
    estimate_tokens,
    message_tokens,
)

CUT_MARKER = "\n…\n"
HEAD_SHARE = 0.75  # of a cut text's tokens, kept from its start; the rest from its end


def shorten_text(text: str, max_tokens: int) -> str:
    """``text`` itself when it fits ``max_tokens``, else its head and tail around the marker."""
    if not text or estimate_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    marker = CUT_MARKER if estimate_tokens(CUT_MARKER) < max_tokens else ""
    content = max_tokens - estimate_tokens(marker)
    head_tokens = int(content * HEAD_SHARE)
    head_end = _longest_prefix(text, head_tokens)
    rest = text[head_end:]
    tail_length = _longest_prefix(rest[::-1], content - head_tokens)
    tail = rest[len(rest) - tail_length :] if tail_length else ""
    return text[:head_end].rstrip() + marker + tail.lstrip()


def _longest_prefix(text: str, max_tokens: int) -> int:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return low


def _tokens(group: list[SessionMessage]) -> int:
    return sum(message_tokens(m) for m in group)


def shorten_group(group: list[SessionMessage], max_tokens: int) -> list[SessionMessage] | None:
    """``group`` fitted to ``max_tokens`` as one (copies where shortened), or None when even its
    names and ids do not fit."""
    if max_tokens <= 0 or not group:
        return None
    if _tokens(group) <= max_tokens:
        return list(group)
    copies = [m.model_copy(deep=True) for m in group]
    emptied: list[tuple[TextPart | ContextPart | ToolPart, str]] = []
    for message in reversed(copies):
        for part in reversed(message.parts):
            if isinstance(part, TextPart):
                emptied.append((part, part.text))
                part.text = ""
            elif isinstance(part, ContextPart):
                emptied.append((part, part.abstract))
                part.abstract = ""
            elif isinstance(part, ToolPart):
                emptied.append((part, part.tool_output))
                part.tool_output = ""
    # A tool input is structured (it cannot be cut as text): dropped only to make room at all.
    inputs = [p for m in copies for p in m.parts if isinstance(p, ToolPart) and p.tool_input]
    for part in inputs:
        if _tokens(copies) <= max_tokens:
            break
        part.tool_input = {}
    if _tokens(copies) > max_tokens:
        return None
    for part, original in emptied:
        if not original:
            continue
        left = max_tokens - _tokens(copies)
        if left <= 0:
            break
        _set_body(part, shorten_text(original, left))
    return copies


def _set_body(part: TextPart | ContextPart | ToolPart, text: str) -> None:
    if isinstance(part, TextPart):
        part.text = text
    elif isinstance(part, ContextPart):
        part.abstract = text
    else:
        part.tool_output = text


@dataclass
class Turn:
    """Indexes into the live messages: the user query and the steps that answer it."""

    anchor: int | None = None
    steps: list[list[int]] = field(default_factory=list)

    @property
    def indexes(self) -> list[int]:
        return ([] if self.anchor is None else [self.anchor]) + [i for step in self.steps for i in step]


def carries_results_back(message: SessionMessage) -> bool:
    """Tool results on their way back to the agent: by kind, or by shape when it has no such kind."""
    if message.message_kind in ("user_query", "tool_transport"):
        return message.message_kind == "tool_transport"
    return carries_tool_results(message)


def opens_turn(message: SessionMessage) -> bool:
    """A user query: by kind, or a user's message that carries no results back."""
    if message.message_kind in ("user_query", "tool_transport"):
        return message.message_kind == "user_query"
    return message.role == "user" and not carries_tool_results(message)


def turns_of(messages: list[SessionMessage]) -> list[Turn]:
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        if opens_turn(message):
            turns.append(Turn(anchor=index))
            continue
        if not turns:
            turns.append(Turn())
        steps = turns[-1].steps
        if carries_results_back(message) and steps:
            steps[-1].append(index)
        else:
            steps.append([index])
    return turns


@dataclass(frozen=True)
class KeptMessage:
    """A live message the context shows: ``shown`` is ``stored`` itself or its shortened copy."""

    stored: SessionMessage
    shown: SessionMessage


class _Selection:
    """Groups taken so far under one budget, by the index of each message in the live list."""

    def __init__(self, messages: list[SessionMessage], budget: int) -> None:
        self.messages = messages
        self.budget = budget
        self.used = 0
        self.kept: dict[int, SessionMessage] = {}

    def take(self, indexes: list[int], *, may_shorten: bool, cap: int | None = None) -> bool:
        group = [self.messages[i] for i in indexes]
        room = self.budget - self.used if cap is None else min(self.budget - self.used, max(0, cap))
        chosen = group
        if _tokens(group) > room:
            shortened = shorten_group(group, room) if may_shorten else None
            if shortened is None:
                return False
            chosen = shortened
        self.kept.update(zip(indexes, chosen, strict=True))
        self.used += _tokens(chosen)
        return True


def _least_budget(group: list[SessionMessage], budget: int) -> int | None:
    """The smallest budget (up to ``budget``) the group fits, shortened; None when none."""
    whole = _tokens(group)
    if whole == 0:
        return 0
    low, high, least = 1, min(whole, budget), None
    while low <= high:
        middle = (low + high) // 2
        if shorten_group(group, middle) is not None:
            least, high = middle, middle - 1
        else:
            low = middle + 1
    return least


def fit_to_budget(messages: list[SessionMessage], token_budget: int) -> list[KeptMessage]:
    """The live messages a context of ``token_budget`` tokens shows, in order (see the module)."""
    budget = max(0, token_budget)
    if not messages or budget == 0:
        return []
    if _tokens(messages) <= budget:
        return [KeptMessage(m, m) for m in messages]
    turns = turns_of(messages)
    newest = turns[-1]
    anchor = [] if newest.anchor is None else [newest.anchor]
    final = newest.steps[-1] if newest.steps else []
    selection = _Selection(messages, budget)
    # The final step is given room before the anchor is cut, so a long question cannot take the
    # whole budget and leave out the latest answer.
    reserve = 0
    if anchor and final:
        anchor_least = _least_budget([messages[i] for i in anchor], budget)
        final_group = [messages[i] for i in final]
        final_least = _least_budget(final_group, budget)
        if anchor_least is not None and final_least is not None and anchor_least + final_least <= budget:
            reserve = min(_tokens(final_group), max(final_least, budget // 2), budget - anchor_least)
    if anchor:
        selection.take(anchor, may_shorten=True, cap=budget - reserve)
    if final:
        selection.take(final, may_shorten=True)
    earlier = newest.steps[:-1]
    # A checkpoint stands for the steps it summarises: it comes before them, cut if need be.
    checkpoints = [step for step in earlier if any(messages[i].message_kind == "checkpoint" for i in step)]
    for step in checkpoints:
        if not selection.take(step, may_shorten=True):
            break
    for step in reversed(earlier):
        if step not in checkpoints and not selection.take(step, may_shorten=False):
            break
    for turn in reversed(turns[:-1]):
        if not selection.take(turn.indexes, may_shorten=False):
            break
    return [KeptMessage(messages[i], selection.kept[i]) for i in sorted(selection.kept)]
