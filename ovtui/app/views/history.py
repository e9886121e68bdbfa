"""Rows, headers and the filter syntax of the History screen (Rich only)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.text import Text

from ovtui.memory.history import HistoryEntry
from ovtui.memory.memory_diff import MemoryDiff

KIND_STYLE = {
    "apply": "green",
    "dry_run": "cyan",
    "revert": "yellow",
    "session_commit": "magenta",
    "edit": "blue",
}


@dataclass(frozen=True)
class HistoryFilter:
    kind: str | None = None
    uri: str | None = None
    text: str | None = None

    @classmethod
    def parse(cls, query: str) -> HistoryFilter:
        """``kind:apply uri:name words…``: the prefixed tokens filter fields, the rest searches the text."""
        kind = uri = None
        words = []
        for token in query.split():
            if token.startswith("kind:"):
                kind = token[5:] or None
            elif token.startswith("uri:"):
                uri = token[4:] or None
            else:
                words.append(token)
        return cls(kind, uri, " ".join(words) or None)


def when(entry_id: str) -> str:
    """``20261129T120000123456_abcdef`` → ``2026-11-29 12:00:00`` (UTC, from the id itself)."""
    stamp = entry_id.split("_", 1)[0]
    if len(stamp) < 15:
        return entry_id
    return f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}"


@dataclass(frozen=True, order=True)
class RecordTime:
    """The "record" cell: shows the second a record was written, sorts by its whole id.

    Ids start with the time to the microsecond, so records written in one second still sort in the
    order they were written (the shown second alone would leave them in any order).
    """

    record_id: str

    def __str__(self) -> str:
        return when(self.record_id)


def entry_row(entry: HistoryEntry) -> tuple[RecordTime, Text, str, str, Text, str]:
    return (
        RecordTime(entry.id),
        Text(entry.kind, style=KIND_STYLE.get(entry.kind, "")),
        str(entry.adds),
        str(entry.updates),
        Text(str(entry.deletes), style="red" if entry.deletes else ""),
        entry.plan_id or "",
    )


def record_header(record_id: str, record: MemoryDiff) -> Text:
    text = Text()
    text.append(f"{record.kind}", style=f"bold {KIND_STYLE.get(record.kind, '')}")
    text.append(f"  history/{record_id}\n", style="dim")
    s = record.summary
    text.append(f"{s.total_adds} added · {s.total_updates} updated · ")
    text.append(f"{s.total_deletes} deleted", style="red" if s.total_deletes else "")
    if record.review.plan_id:
        text.append(f" · plan {record.review.plan_id}")
    if record.reverts:
        text.append(f" · reverts {record.reverts}", style="yellow")
    decisions = record.review.decisions
    if decisions:
        counts = Counter(d.decision for d in decisions)
        text.append("\nreview: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        notes = [
            f"#{d.item} {d.decision}: {d.note}"
            for d in decisions
            if d.note and not d.note.startswith("auto:")
        ]
        if notes:
            text.append("\n" + "\n".join(notes[:5]), style="italic")
    if record.metadata.get("forced"):
        text.append("\nforced over later changes", style="bold yellow")
    return text
