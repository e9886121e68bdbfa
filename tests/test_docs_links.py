"""The README a newcomer reads stays short, and every relative link of it and of docs/ leads somewhere:
to a file that exists and, when it names one, to a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli.test_setup import setup_commands
from repo_paths import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
MAX_README_LINES = 250
MAX_README_LINE = 120

FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def prose(text: str) -> str:
    """The text a reader sees as Markdown, without code blocks and code spans (no links live there)."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives the page's headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated id numbered."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCED.sub("", page.read_text(encoding="utf-8"))):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def broken_links(page: Path) -> list[str]:
    text = prose(page.read_text(encoding="utf-8"))
    problems = []
    for target in INLINE_LINK.findall(text) + REFERENCE.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{target}: no heading #{anchor} in {linked.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_reports_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The `[llm]` table — keys\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[fine](other.md#the-llm-table--keys) [gone](missing.md) [wrong](other.md#nowhere)\n"
        "`[in code](missing.md)`\n\n```\n[in a block](missing.md)\n```\n\n[ref]: other.md#other-page\n"
        "[bad ref]: missing.md#x\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading #nowhere in other.md",
        "missing.md#x: no such file",
    ]


def test_the_readme_links_every_docs_page() -> None:
    text = prose(README.read_text(encoding="utf-8"))
    linked = {target.partition("#")[0] for target in INLINE_LINK.findall(text) + REFERENCE.findall(text)}
    assert [p.name for p in PAGES[1:] if f"docs/{p.name}" not in linked] == []


def test_the_readme_is_read_in_five_minutes() -> None:
    """At most 250 lines of at most 120 characters; only the set-up commands, which
    tests/cli/test_setup.py runs byte for byte, may be longer."""
    lines = README.read_text(encoding="utf-8").splitlines()
    pinned = {line for command in setup_commands() for line in command.splitlines()}
    assert len(lines) <= MAX_README_LINES
    assert [line for line in lines if len(line) > MAX_README_LINE and line not in pinned] == []
