"""What the workspace holds, read for a person: the experiences and every other memory, history
records, the use ledger, runs' reports, the sessions' overview, the datasets, and the changes
to watch.

Everything here reads; nothing writes memory. File work happens in the caller's thread (the app
calls these from its workers, the CLI directly).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.wiring.services.run_frame import REPORT_FILE, RunFrame

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from ovtui.core.domain import Experience, ExperienceSet
    from ovtui.core.events import Event
    from ovtui.core.fileformat import MemoryFile
    from ovtui.memory.chain import ChainReport
    from ovtui.memory.history import HistoryEntry
    from ovtui.memory.ledger_state import Fed, Usage
    from ovtui.memory.memory_diff import MemoryDiff
    from ovtui.memory.policy_at import NamedPolicy
    from ovtui.sessions.overview import SessionView
    from ovtui.storage.watching import WorkspaceChanges
    from ovtui.train.adherence.summary import Adherence
    from ovtui.train.reports import RunReport
    from ovtui.wiring.composition import Composition


@dataclass
class MemoryListing:
    """The files of one memory type, the user's and then each peer's, with the name each is shown
    by, and what could not be read (a file, or a peer's folder leading outside)."""

    files: list[tuple[str, MemoryFile]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _first_line(exc: Exception) -> str:
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


class Reading:
    def __init__(self, parts: Composition, frame: RunFrame) -> None:
        self.parts = parts
        self.frame = frame
        self.paths = parts.paths

    # --- where things are, as a person reads them -------------------------------------------------
    def display_path(self, uri: str | None) -> str:
        """A URI as a workspace-relative path (never a tmp or home path on screen)."""
        return self.paths.display_uri(uri)

    def display_file(self, path: Path) -> str:
        """A file of the workspace by its workspace-relative path."""
        return self.paths.relative(path)

    def path_for(self, uri: str) -> Path:
        """Where a memory's file is on disk (to print for the person to open)."""
        return self.paths.path_for(uri)

    # --- history ----------------------------------------------------------------------------------
    def history(
        self,
        *,
        kind: str | None = None,
        uri: str | None = None,
        text: str | None = None,
        limit: int | None = None,
    ) -> list[HistoryEntry]:
        """The history records, newest first, filtered by kind, a touched URI and a text."""
        return self.parts.history.list(kind=kind, uri=uri, text=text, limit=limit)

    def newest_history(self, count: int) -> list[HistoryEntry]:
        """The newest ``count`` records, from the index's last lines (quick on any history)."""
        return self.parts.history.newest(count)

    def resolve_record(self, ref: str) -> str:
        """The id of the one record ``ref`` names (an id or a unique part of one)."""
        return self.parts.history.resolve(ref)

    def history_record(self, record_id: str) -> MemoryDiff:
        return self.parts.history.get(record_id)

    def verify_history(self) -> ChainReport:
        """The history's hash chain checked, and every record's targets (``memory/chain.py``)."""
        from ovtui.memory.chain import ChainVerifier

        return ChainVerifier(self.parts.store).verify()

    # --- experiences and the other memories ---------------------------------------------------------
    def experiences(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        """The experiences as they are; given the last snapshot, only files changed since are read."""
        return self.parts.loader.load_sync(previous)

    def policy(self, ref: str, current: ExperienceSet | None = None) -> NamedPolicy:
        """A policy to compare: ``current``, a history record (the experiences right after it) or a
        folder of experience files; built in memory, nothing written."""
        from ovtui.memory.policy_at import named_policy

        return named_policy(self.parts.store, ref, current if current is not None else self.experiences())

    def unparsed_experiences(self, at_least: int) -> dict[str, float] | None:
        """The experience files by URI, with when each changed, when at least ``at_least`` of them
        were never read by ovtui (a folder copied in): the names can show before the files are read."""
        return self.parts.loader.unparsed(at_least)

    def first_experiences(self, count: int) -> list[Experience]:
        """The first ``count`` experiences, read quickly for a first screenful."""
        return self.parts.loader.first(count)

    def memory_types(self) -> list[str]:
        """The declared memory types, experiences first, then by name."""
        return self.parts.store.registry.browse_order()

    def memories(self, memory_type: str) -> MemoryListing:
        """Every file of a type: the user's, then each peer's (for a type that peers may hold)."""
        store = self.parts.store
        schema = store.registry.get(memory_type)
        listing = MemoryListing()
        for peer in [None, *store.peers()] if schema.peer_enabled else [None]:
            try:
                report = store.load_type(memory_type, peer)
            except OvtuiError as exc:
                if peer is None:
                    raise
                listing.problems.append(str(exc))  # a peer's folder leading outside: the others still show
                continue
            whose = f" · peer {peer}" if peer else ""
            for memory in report.files:
                name = schema.name_of(memory.fields, self.paths.relative_of(memory.uri or ""))
                listing.files.append((name + whose, memory))
            listing.problems += [str(p) for p in report.problems]
        return listing

    def memory(self, uri: str) -> MemoryFile | None:
        """One memory file by URI (None: no such file)."""
        return self.parts.store.read_uri(uri)

    def modified_times(self, memory_type: str) -> dict[str, float]:
        """When each file right in a type's folder last changed, by URI: one directory scan instead
        of a checked path and a stat per file (10,000 of those took a third of a second)."""
        store = self.parts.store
        prefix = store.type_uri(memory_type) + "/"
        found: dict[str, float] = {}
        with suppress(OSError), os.scandir(store.type_dir(memory_type)) as entries:
            for entry in entries:
                with suppress(OSError):
                    found[prefix + entry.name] = entry.stat().st_mtime
        return found

    def experience_times(self, policy_set: ExperienceSet) -> dict[str, float]:
        """``modified_times`` of the experiences as a snapshot's own scan found them (no new scan)."""
        from ovtui.train.components.experience_set_loader import file_times

        return file_times(policy_set)

    def modified_time(self, uri: str) -> float | None:
        """When one memory file last changed (None: it cannot be read)."""
        try:
            return self.paths.path_for(uri).stat().st_mtime
        except (OvtuiError, OSError):
            return None

    # --- the use ledger: what each memory was used by, and how it went -----------------------------
    def memory_uses(self) -> dict[str, Usage]:
        """Each memory's uses, consumers and outcomes, by URI; ``OvtuiError`` naming the file when
        the ledger cannot be read."""
        return self.parts.ledger().usage()

    def memory_use(self, uri: str) -> Usage | None:
        """One memory's record (None: never used); ``OvtuiError`` as ``memory_uses``."""
        return self.parts.ledger().usage_of(uri)

    def memory_fed(self, uri: str) -> list[Fed]:
        """The newest results a memory fed (the trajectories among them), newest first."""
        return self.parts.ledger().fed(uri)

    # --- adherence: whether the experiences used were followed ---------------------------------------
    def adherence(self) -> list[Adherence]:
        """Each recorded experience's adherence, by name; ``OvtuiError`` naming a damaged record."""
        from ovtui.train.adherence.summary import summaries

        return summaries(self.parts.adherence.store.read().experiences)

    def adherence_of(self, uri: str) -> Adherence | None:
        """One experience's adherence (None: nothing recorded); ``OvtuiError`` as ``adherence``."""
        from ovtui.train.adherence.summary import summarise

        record = self.parts.adherence.store.read().experiences.get(uri)
        return summarise(uri, record) if record is not None else None

    # --- runs' reports ----------------------------------------------------------------------------
    def report_path(self, run_id: str) -> Path:
        """Where a run's report is saved."""
        return self.frame.report_path(run_id)

    def run_report(self, ref: str | None = None) -> RunReport:
        """A saved run's report: ``ref`` a run id or a unique part of one, None the latest run."""
        from ovtui.core.bounds import MAX_MEMORY_FILE_BYTES
        from ovtui.storage.reading import read_bounded
        from ovtui.train.reports import RunReport

        runs = self.paths.runs
        ids: list[str] = []
        with suppress(OSError), os.scandir(runs) as entries:
            ids = sorted(e.name for e in entries if (runs / e.name / REPORT_FILE).is_file())
        if ref is not None:  # only matched against the folder names: never a path itself
            ids = [i for i in ids if ref in i]
            if len(ids) != 1:
                found = "no run" if not ids else f"{len(ids)} runs ({', '.join(ids[:3])})"
                raise OvtuiError(f"run {ref!r}: {found} with a report matches it under runs/")
        if not ids:
            raise OvtuiError("no run with a report under runs/ yet: run `ovtui train`, `eval` or `compare`")
        path = self.report_path(ids[-1])
        shown = self.display_file(path)
        data = read_bounded(path, 16 * MAX_MEMORY_FILE_BYTES, what="a run report", shown=shown)
        try:
            return RunReport.model_validate_json(data)
        except ValueError as exc:
            raise OvtuiError(f"{shown}: not a run report ({_first_line(exc)})") from None

    def last_run_events(self, commands: tuple[str, ...], *, look_back: int = 50) -> list[Event]:
        """The saved events of the newest finished run (one with a report) whose command is one
        of ``commands`` (the CLI's or the app's alike), to show it again; [] when there is none
        among the newest ``look_back`` runs."""
        from ovtui.storage.event_log import EVENTS_FILE, read_events

        runs = self.paths.runs
        ids: list[str] = []
        with suppress(OSError), os.scandir(runs) as entries:
            ids = sorted(e.name for e in entries if (runs / e.name / REPORT_FILE).is_file())
        for run_id in reversed(ids[-look_back:]):
            path = runs / run_id / EVENTS_FILE
            try:
                events = read_events(path)
            except OSError:
                continue
            if events and events[0].kind == "run_started" and events[0].data.get("command") in commands:
                return events
        return []

    def html_report(self, report: RunReport) -> str:
        """A run's report as one self-contained HTML page (inline SVG, no script, no network)."""
        from ovtui.train.adherence.html import adherence_section
        from ovtui.train.html_report import render_html

        try:
            section = adherence_section(self.adherence())
        except OvtuiError as exc:
            section = f"<p>Adherence not shown: {escape(str(exc))}</p>"
        return render_html(report, section)

    # --- datasets, sessions, changes --------------------------------------------------------------
    def dataset_names(self) -> list[str]:
        """The datasets a run may name, sorted: each folder of ``datasets/`` with a split file
        (``*.jsonl``) and each ``[datasets.NAME]`` of ovtui.toml."""
        names = set(self.parts.config.datasets)
        with suppress(OSError):
            for folder in self.paths.datasets.iterdir():
                if folder.is_dir() and any(folder.glob("*.jsonl")):
                    names.add(folder.name)
        return sorted(names)

    def session_views(self) -> list[SessionView]:
        """Every session with its commits, the most recently active first."""
        from ovtui.sessions.overview import session_views

        waiting = frozenset(p.plan_id for p in self.parts.pending.list())
        return session_views(self.paths, waiting)

    def watch(
        self, *, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None, **timing: int
    ) -> AsyncIterator[WorkspaceChanges]:
        """Classified bursts of changes to the workspace's files until ``stop`` is set."""
        from ovtui.storage.watching import watch_workspace

        return watch_workspace(self.paths, stop=stop, ready=ready, **timing)
