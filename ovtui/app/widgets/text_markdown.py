"""Markdown for memory text: HTML is not interpreted, so ``<id>``-style placeholders show as written.

Memory files are Markdown written by people and LLMs, where ``reservation <id> to <date>`` means
placeholders, never tags; the default parser would drop them as inline HTML.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from textual.widgets import Markdown


def text_parser() -> MarkdownIt:
    return MarkdownIt("gfm-like", {"html": False})


class TextMarkdown(Markdown):
    def __init__(self, markdown: str | None = None, *, id: str | None = None) -> None:
        super().__init__(markdown, id=id, parser_factory=text_parser)
