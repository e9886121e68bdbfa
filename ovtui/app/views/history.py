"""Rows, headers and the filter syntax of the History screen (Rich only).

A record a revert undoes is marked (``↶`` after its kind, dimmed, and "reverted by …"); a revert's
row names the record it reverted. Which revert undoes which record is read from the revert records
themselves (``reverted_records``), the rule ``ovtui revert`` refuses a second revert by.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.text import Text

from ovtui.memory.history import HistoryEntry
from ovtui.memory.memory_diff import MemoryDiff, skipped_line

KIND_STYLE = {
    "apply": "green",
    "dry_run": "cyan",
    "revert": "yellow",
    "session_commit": "magenta",
    "migrate": "blue",
    "edit": "bright_blue",
    "write": "bright_cyan",
}
SHOWN_SKIPPED = 5
REVERTED_MARK = "↶"
RECORD_COLUMNS = ("kind", "+~−", "about")  # after the "record" column (its time), keyed to sort by


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


def reverted_records(reverts: list[HistoryEntry]) -> dict[str, str]:
    """Record id → the revert that currently undoes it: a revert that was itself reverted (undone)
    undoes nothing any more. ``reverts``: the revert records, in any order."""
    done = [e for e in reverts if e.reverts and not e.dry_run]
    undone = {e.reverts for e in done}
    reverted: dict[str, str] = {}
    for entry in sorted(done, key=lambda e: e.id, reverse=True):
        if entry.id not in undone and entry.reverts:
            reverted.setdefault(entry.reverts, entry.id)
    return reverted


def changes_text(entry: HistoryEntry) -> Text:
    text = Text(f"+{entry.adds}~{entry.updates}")
    text.append(f"−{entry.deletes}", style="red" if entry.deletes else "")
    return text


def entry_row(entry: HistoryEntry, reverted_by: str | None = None) -> tuple[RecordTime, Text, Text, str]:
    """The time, the kind (``↶`` when a revert undoes it), adds/updates/deletes, and what it was
    about: its plan, the record it reverted, or the revert that undid it."""
    kind = Text(entry.kind, style=KIND_STYLE.get(entry.kind, ""))
    about = f"plan {entry.plan_id}" if entry.plan_id else ""
    if entry.reverts:
        about = f"reverts {when(entry.reverts)}"
    if reverted_by is not None:
        kind = Text(f"{entry.kind} {REVERTED_MARK}", style="dim")
        about = f"reverted by {when(reverted_by)}" + (f" · {about}" if about else "")
    return RecordTime(entry.id), kind, changes_text(entry), about


def reverted_words(record_id: str, entry: HistoryEntry | None) -> str:
    """``history/ID (the apply of plan P at TIME)``: what a revert undid, as its header names it."""
    what = entry.kind if entry is not None else "record"
    if entry is not None and entry.plan_id:
        what += f" of plan {entry.plan_id}"
    return f"history/{record_id} (the {what} at {when(record_id)})"


def record_header(
    record_id: str, record: MemoryDiff, reverted_by: str | None = None, reverted: HistoryEntry | None = None
) -> Text:
    """``reverted_by``: the revert that undoes this record; ``reverted``: the record this one reverts."""
    text = Text()
    text.append(f"{record.kind}", style=f"bold {KIND_STYLE.get(record.kind, '')}")
    text.append(f"  history/{record_id}\n", style="dim")
    if reverted_by is not None:
        undone = f"{REVERTED_MARK} REVERTED by history/{reverted_by} ({when(reverted_by)})"
        text.append(f"{undone}: z undoes that revert\n", style="bold yellow")
    s = record.summary
    text.append(f"{s.total_adds} added · {s.total_updates} updated · ")
    text.append(f"{s.total_deletes} deleted", style="red" if s.total_deletes else "")
    if record.review.plan_id:
        text.append(f" · plan {record.review.plan_id}")
    if record.reverts:
        text.append(f"\nreverts {reverted_words(record.reverts, reverted)}", style="yellow")
    skipped = record.skipped_operations
    if skipped:
        text.append(f"\n{len(skipped)} skipped:", style="bold")
        for line in [skipped_line(one) for one in skipped[:SHOWN_SKIPPED]]:
            text.append(f"\n  {line}", style="dim")
        if len(skipped) > SHOWN_SKIPPED:
            text.append(f"\n  … and {len(skipped) - SHOWN_SKIPPED} more (ovtui history show)", style="dim")
    decisions = record.review.decisions
    if decisions:
        counts = Counter(d.decision for d in decisions)
        text.append("\nreview: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        people = sorted(
            {d.decided_by for d in decisions if d.decided_by and not d.decided_by.startswith("policy:")}
        )
        if people:
            text.append(" · by " + ", ".join(people))
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
