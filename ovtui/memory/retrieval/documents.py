"""A memory file as retrieval sees it: where it is, whose it is, whether it may be served, what it
says in brief (its abstract), and the text that is indexed.

Abstracts and overviews made without a model are deterministic: an experience's abstract is its
Situation (the lines saying when it applies), any other memory's its first lines; an overview is
the first lines of the body. They are what a hit shows and what ``content/abstract`` and
``content/overview`` answer when ``[llm]`` is offline.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ovtui.core.domain import PolicyStatus
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.search import stemmed_tokens
from ovtui.memory.types import EXPERIENCES, MemoryTypeSchema

ABSTRACT_CHARS = 300
OVERVIEW_LINES = 24
OVERVIEW_CHARS = 4_000
EMBED_CHARS = 8_000  # of a memory's text sent to the embedder (models read a few thousand tokens)
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
NOT_SERVED = frozenset({PolicyStatus.DEPRECATED.value, PolicyStatus.ARCHIVED.value})


@dataclass(frozen=True, slots=True)
class MemoryDoc:
    uri: str
    memory_type: str
    peer_id: str | None  # None: the user's own
    name: str
    status: str  # the file's status field ("" when it has none)
    abstract: str
    tags: tuple[str, ...]
    digest: str  # sha256 of the file's text: what cached vectors and abstracts are keyed by
    size: int
    mtime: float

    @property
    def served(self) -> bool:
        """Deprecated and archived memories stay on file but are never served."""
        return self.status not in NOT_SERVED


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plain(line: str) -> str:
    return _BULLET.sub("", line).strip()


def section(body: str, title: str) -> list[str]:
    """The lines of the ``## <title>`` section of a body (case-insensitive), without bullets."""
    lines: list[str] = []
    inside = False
    for line in body.splitlines():
        heading = _HEADING.match(line)
        if heading:
            inside = heading.group(1).strip().lower() == title.lower()
            continue
        if inside and line.strip():
            lines.append(_plain(line))
    return lines


def first_lines(body: str) -> list[str]:
    return [_plain(line) for line in body.splitlines() if line.strip() and not _HEADING.match(line)]


def abstract_of(memory_type: str, body: str) -> str:
    lines = (section(body, "Situation") if memory_type == EXPERIENCES else []) or first_lines(body)
    return cut(" ".join(lines), ABSTRACT_CHARS)


def overview_of(body: str) -> str:
    kept = [line for line in body.splitlines() if line.strip()][:OVERVIEW_LINES]
    return cut("\n".join(kept), OVERVIEW_CHARS)


def indexed_text(name: str, body: str) -> str:
    """What is indexed of a memory: its name (words of it) and its body."""
    return f"{name.replace('_', ' ')}\n{body}"


def document(
    memory: MemoryFile,
    text: str,
    schema: MemoryTypeSchema,
    *,
    rel: str,
    peer_id: str | None,
    size: int,
    mtime: float,
) -> MemoryDoc:
    status = memory.fields.get("status")
    tags = memory.fields.get("tags")
    return MemoryDoc(
        uri=memory.uri or "",
        memory_type=schema.memory_type,
        peer_id=peer_id,
        name=schema.name_of(memory.fields, rel),
        status=status if isinstance(status, str) else "",
        abstract=abstract_of(schema.memory_type, memory.content),
        tags=tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        size=size,
        mtime=mtime,
    )


def tokens_of(name: str, body: str) -> list[str]:
    return stemmed_tokens(indexed_text(name, body))
