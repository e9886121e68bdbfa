"""The context budget: how many prompt tokens one call may use, and a prompt fitted into it.

A server that gets a prompt longer than its context window cuts it silently (Ollama's 4,096-token
default dropped the end of a 5,400-token extraction prompt, and nothing was extracted), so ovtui
fits its prompts itself. The window is what the endpoint reports, else ``[llm] context_window``,
else ``DEFAULT_CONTEXT_WINDOW``; a share of it is kept for the answer.

What gives way, in order: a merge's list of existing names; then the files shown, from the last
(the least similar; a file is shown whole or not at all: SEARCH blocks copy it); then a rollout's
conversation, a trajectory or a session (long lines such as tool outputs clipped, then lines cut from
the middle). Every cut says so in the prompt. A prompt whose required
parts alone do not fit is a ``ContextBudgetError`` for that call, not an empty answer.

Tokens are estimated without the model's tokenizer, on the high side: four characters a token for
ASCII, one token for any other character (cl100k gives about 4.5 on ovtui's prompts, schemas included,
and about one for Chinese).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ovtui.llm.errors import ExtractError

DEFAULT_CONTEXT_WINDOW = 4096  # the smallest window common servers default to (Ollama's)
ANSWER_SHARE = 0.25  # kept for the answer…
MAX_ANSWER_RESERVE = 4096  # …up to this many tokens
HEAD_LINES = 3  # the lines of a part kept before a cut (its heading)
MIN_LINE_CHARS = 160  # a clipped long line keeps this much
ASCII_CHARS_PER_TOKEN = 4.0
FILES_PRIORITY = 2
CONVERSATION = 1  # a rollout's conversation, a trajectory, a session: cut after the files
LISTING = 3  # a list of names: cut first


def estimate_tokens(text: str) -> int:
    ascii_chars = sum(1 for c in text if c < "\x80")
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + (len(text) - ascii_chars)


def prompt_budget(context_window: int) -> int:
    """The tokens a prompt may use in a window of ``context_window``: the rest is the answer's."""
    return context_window - min(int(context_window * ANSWER_SHARE), MAX_ANSWER_RESERVE)


class ContextBudgetError(ExtractError):
    """A prompt's required parts do not fit the context window."""


@dataclass(frozen=True)
class InputPart:
    """A piece of a prompt's input. ``priority`` 0: required, never cut; higher: cut sooner (the
    files shown go at ``FILES_PRIORITY``: after a list of names, before a conversation)."""

    text: str
    priority: int = 1


def cut_marker(what: str) -> str:
    return f"[… {what} cut to fit the context window]"


def _clip_line(line: str) -> str:
    if len(line) <= MIN_LINE_CHARS:
        return line
    return f"{line[:MIN_LINE_CHARS]}… {cut_marker(f'{len(line) - MIN_LINE_CHARS} chars')}"


def shrink(text: str, tokens: int) -> str:
    """``text`` in about ``tokens``: long lines clipped, then lines cut from the middle (the heading and
    the end kept: where a conversation ends is what it is judged on)."""
    if estimate_tokens(text) <= tokens:
        return text
    lines = [_clip_line(line) for line in text.splitlines()]
    if estimate_tokens("\n".join(lines)) <= tokens:
        return "\n".join(lines)
    head, rest = lines[:HEAD_LINES], lines[HEAD_LINES:]
    used = estimate_tokens("\n".join(head)) + estimate_tokens(cut_marker(f"{len(rest)} lines")) + 2
    tail: list[str] = []
    for line in reversed(rest):
        cost = estimate_tokens(line) + 1
        if used + cost > tokens:
            break
        tail.insert(0, line)
        used += cost
    cut = len(rest) - len(tail)
    return "\n".join([*head, cut_marker(f"{cut} lines"), *tail]) if cut else "\n".join(head + tail)


@dataclass
class FittedPrompt:
    inputs: str
    files: list[str]  # the rendered files kept, in order
    left_out: list[str]  # the URIs of the files left out


def fit(
    stage: str,
    parts: Sequence[InputPart],
    files: Sequence[tuple[str, str]],
    room: int,
    context_window: int,
) -> FittedPrompt:
    """The inputs and files (``(uri, rendered)``) within ``room`` tokens, cut by priority."""
    texts = [p.text for p in parts]
    kept = list(files)

    def total() -> int:
        return sum(estimate_tokens(t) for t in texts) + sum(estimate_tokens(f) for _, f in kept)

    left_out: list[str] = []
    for priority in sorted({p.priority for p in parts if p.priority > 0} | {FILES_PRIORITY}, reverse=True):
        if priority == FILES_PRIORITY:
            while kept and total() > room:
                left_out.insert(0, kept.pop()[0])
            continue
        for index, part in enumerate(parts):
            over = total() - room
            if over <= 0:
                break
            if part.priority == priority:
                texts[index] = shrink(texts[index], max(estimate_tokens(texts[index]) - over, 0))
    if total() > room:
        raise ContextBudgetError(
            stage,
            [
                f"the prompt's required parts need about {total()} tokens, more than the {room} left for "
                f"them in a context window of {context_window} ([llm] context_window)"
            ],
        )
    return FittedPrompt("\n\n".join(t for t in texts if t), [f for _, f in kept], left_out)
