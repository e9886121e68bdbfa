"""Markdown for memory text, drawn as one widget, with HTML not interpreted.

Memory files are Markdown written by people and LLMs, where ``reservation <id> to <date>`` means
placeholders, never tags; the default parser would drop them as inline HTML.

One ``Static`` holding Rich's Markdown renderable, not Textual's ``Markdown`` widget: that one mounts
a widget per block, 50-100 ms per document, and a list pane draws a new document at each cursor move
(while a 10,000-row list fills, that held up the keys).
"""

from __future__ import annotations

from typing import ClassVar

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import HorizontalRule, Markdown, MarkdownElement
from rich.rule import Rule
from rich.text import Text
from textual.widgets import Static


def text_parser() -> MarkdownIt:
    return MarkdownIt("gfm-like", {"html": False})


class LineRule(HorizontalRule):
    """A solid rule, as the rest of the app draws them (Rich's is dashes)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Rule(style=console.get_style("markdown.hr", default="none"))
        yield Text()


class MemoryMarkdown(Markdown):
    """Rich's Markdown, parsed by ``text_parser`` (Rich's own parser keeps HTML)."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "hr": LineRule}

    def __init__(self, markup: str) -> None:
        super().__init__("", hyperlinks=False)  # nothing to parse twice
        self.markup = markup
        self.parsed = text_parser().parse(markup)


class TextMarkdown(Static):
    def __init__(self, markdown: str = "", *, id: str | None = None) -> None:
        super().__init__(MemoryMarkdown(markdown), id=id)

    def show(self, markdown: str) -> None:
        self.update(MemoryMarkdown(markdown))
