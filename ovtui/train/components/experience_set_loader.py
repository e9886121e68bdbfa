"""ExperienceSetLoader: the experiences directory as an ExperienceSet snapshot."""

from __future__ import annotations

import asyncio
import heapq
import os
import threading
from pathlib import Path

from ovtui.core.domain import Experience, ExperienceSet
from ovtui.core.errors import OvtuiError
from ovtui.core.experience_files import experience_from_file, name_mismatch
from ovtui.core.names import validate_name
from ovtui.memory.search import LexicalIndex, cached_tokens
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES
from ovtui.storage.paths import EXPERIENCE_CACHE_FILE
from ovtui.train.components.experience_cache import Signature, read_cache, write_cache

# What one file parsed to, at the signature it had: its experience and its experience_name problem.
Parsed = tuple[Signature, Experience, str | None]
Signatures = dict[str, Parsed]  # by file name


def experience_index(policy_set: ExperienceSet) -> tuple[list[Experience], LexicalIndex]:
    """The policies of a snapshot and a BM25 index over their names and contents, built once.

    A new snapshot's index is derived from the last one built when most files are the same (the
    snapshot after an apply differs by a few files): only the changed ones are re-indexed.
    """

    def build() -> tuple[list[Experience], LexicalIndex]:
        policies = list(policy_set.policies)
        documents = [cached_tokens(f"{p.name} {p.content}") for p in policies]
        keys = [p.uri for p in policies]
        with _last_index_lock:
            previous = _last_index[0] if _last_index else None
        if previous is not None and previous.shared_keys(keys) * 2 > len(keys):
            index = previous.updated(documents, keys)
        else:
            index = LexicalIndex(documents, keys)
        with _last_index_lock:
            _last_index[:] = [index]
        return policies, index

    return policy_set.derived("lexical_index", build)


# The last index built, to derive the next snapshot's from (an index is never mutated once built).
_last_index: list[LexicalIndex] = []
_last_index_lock = threading.Lock()


def file_times(policy_set: ExperienceSet) -> dict[str, float]:
    """When each file of a snapshot last changed (seconds since the epoch) as the loader's scan
    found it, by URI; empty for a set the loader did not read."""
    scan: dict[str, Signature] = policy_set.derived("scan", dict)
    prefix = policy_set.root_uri + "/"
    return {prefix + name: sig[1] / 1e9 for name, sig in scan.items()}


def _without_case_twins(names: list[str]) -> tuple[list[str], list[str]]:
    """The file names to load, and those skipped: a name that differs only in case from the
    lower-case file ovtui writes (``Refund_Request.md`` beside ``refund_request.md``) names the
    same memory, so only the lower-case one is its file."""
    present = set(names)
    colliding = [n for n in names if n != n.lower() and n.lower() in present]
    return [n for n in names if n not in colliding], colliding


class ExperienceSetLoader:
    """The PolicySetLoader of a workspace: full loads, and incremental reloads from a previous set."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def load_sync(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        """Load the experiences; with ``previous``, re-read only the files that changed since it;
        without, re-read only the files changed since the cache was written (by any process)."""
        current = self._scan()
        if previous is not None and self._untouched(previous, current):
            return previous  # a snapshot is never mutated, so an unchanged one is shared (and its index)
        cached: Signatures = {}
        if previous is not None:
            reusable = self._unchanged(previous, current)
        else:
            cached = self._cached()
            reusable = {name: parsed for name, parsed in cached.items() if current.get(name) == parsed[0]}
        changed = {name for name in current if name not in reusable}
        if len(changed) > len(current) // 2:
            policy_set = self._full(current)
        else:
            policy_set = self._partial(reusable, current, changed)
        parsed: Signatures = policy_set.derived("signatures", dict)
        if previous is None and (len(cached) != len(reusable) or len(parsed) != len(reusable)):
            # Once per process at most: a reload from a snapshot of this process keeps to memory.
            self._write_cache(parsed)
        return policy_set

    @property
    def _cache_path(self) -> Path:
        return self.store.paths.root / EXPERIENCE_CACHE_FILE

    def _cached(self) -> Signatures:
        entries = read_cache(self._cache_path, self.store.type_uri(EXPERIENCES))
        return {name: (e.signature, e.experience, e.mismatch) for name, e in entries.items()}

    def _write_cache(self, parsed: Signatures) -> None:
        entries = ((name, *parsed[name]) for name in sorted(parsed))
        write_cache(self._cache_path, self.store.paths.root, self.store.type_uri(EXPERIENCES), entries)

    def _scan(self) -> dict[str, Signature]:
        """Each file's signature; ``UnsafePathError`` when the folder leads outside the workspace
        (checked before anything is listed, whatever the cache holds)."""
        folder = self.store.type_dir(EXPERIENCES)
        current: dict[str, Signature] = {}
        if folder.is_dir() and self.store.paths.inside(folder):
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".md") and not entry.name.startswith(".") and entry.is_file():
                        info = entry.stat()
                        sig = (info.st_ino, info.st_mtime_ns, info.st_size, info.st_ctime_ns)
                        current[entry.name] = sig
        return current

    @staticmethod
    def _untouched(previous: ExperienceSet, current: dict[str, Signature]) -> bool:
        """The folder is as the loader found it when it made ``previous``: every file with the same
        signature, and no other (a set patched by the updater has no scan of its own)."""
        scan: dict[str, Signature] = previous.derived("scan", dict)
        return bool(scan) and scan == current

    @staticmethod
    def _unchanged(previous: ExperienceSet, current: dict[str, Signature]) -> Signatures:
        """Files whose bytes cannot have changed since ``previous`` was taken.

        Atomic writes replace a file (new inode), so an equal signature means equal bytes. A set
        built in memory (by the updater) has no signatures; then a file untouched since the set
        was created is reused. Either way the reload only saves work: apply still compare-and-swaps.
        """
        signatures: Signatures = previous.derived("signatures", dict)
        if signatures:
            return {n: p for n, sig in current.items() if (p := signatures.get(n)) and p[0] == sig}
        by_file = {p.uri.rsplit("/", 1)[-1]: p for p in previous.policies}
        created = previous.created_ns
        # The updater writes only files named as their experience: none of them has a mismatch.
        return {n: (sig, by_file[n], None) for n, sig in current.items() if n in by_file and sig[1] < created}

    def _full(self, scan: dict[str, Signature]) -> ExperienceSet:
        """Every file read; ``scan`` was taken before, so a file changed while reading is read
        again by the next load."""
        report = self.store.load_type(EXPERIENCES)
        parsed = {}
        for memory in report.files:
            name = (memory.uri or "").rsplit("/", 1)[-1]
            if name in scan:  # else written after the scan: the next load reads it
                parsed[name] = (scan[name], experience_from_file(memory), name_mismatch(memory))
        return self._assemble(parsed, [str(p) for p in report.problems], scan)

    def _partial(
        self, reusable: Signatures, current: dict[str, Signature], changed: set[str]
    ) -> ExperienceSet:
        folder = self.store.type_dir(EXPERIENCES)
        parsed = {name: reusable[name] for name in current if name not in changed}
        problems: list[str] = []
        for name in sorted(changed):
            try:
                validate_name(name[:-3], what="file name")
                memory = self.store.read(folder / name)
                parsed[name] = (current[name], experience_from_file(memory), name_mismatch(memory))
            except (OvtuiError, OSError) as exc:
                problems.append(str(exc))
        return self._assemble(parsed, problems, current)

    def _assemble(self, parsed: Signatures, problems: list[str], scan: dict[str, Signature]) -> ExperienceSet:
        """The snapshot of the files in ``parsed``, by file name; the problems of the files that
        could not be read, then each experience_name that names another file."""
        names, colliding = _without_case_twins(sorted(parsed))
        problems = problems + [m for m in (parsed[n][2] for n in names) if m]
        folder = self.store.paths.relative(self.store.type_dir(EXPERIENCES))
        problems += [
            f"{folder}/{name}: collides with {name.lower()} ignoring case (both name one memory): "
            f"skipped; `ovtui check` says how to merge them"
            for name in colliding
        ]
        policy_set = ExperienceSet.model_construct(
            root_uri=self.store.type_uri(EXPERIENCES),
            policies=[parsed[n][1] for n in names],
            metadata={"problems": problems} if problems else {},
        )
        # The scan was taken before reading: a file rewritten in between just looks changed next time.
        policy_set.derived("signatures", lambda: parsed)
        policy_set.derived("scan", lambda: scan)
        return policy_set

    def unparsed(self, at_least: int) -> dict[str, float] | None:
        """The files of a folder no ovtui process has parsed yet (no cache of them), by URI with
        when each last changed, when there are at least ``at_least`` of them: the names of a big
        folder opened for the first time can show while every file is read. None otherwise."""
        if self._cache_path.exists():
            return None
        scan = self._scan()
        if len(scan) < at_least:
            return None
        prefix = self.store.type_uri(EXPERIENCES) + "/"
        return {prefix + name: scan[name][1] / 1e9 for name in sorted(scan)}

    def first(self, count: int) -> list[Experience]:
        """The first ``count`` experiences by file name: a preview to show while the rest loads.

        A file that cannot be read is skipped here; the full load reports it.
        """
        folder = self.store.type_dir(EXPERIENCES)
        try:
            with os.scandir(folder) as scan:
                # The first few of 10,000 names, not all of them sorted: this runs as a screen opens.
                first = heapq.nsmallest(
                    count,
                    (
                        e
                        for e in scan
                        if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file()
                    ),
                    key=lambda e: e.name,
                )
            report = self.store.read_entries(folder, first)
        except (OvtuiError, OSError):
            return []
        return [experience_from_file(memory) for memory in report.files]

    async def load(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        return await asyncio.to_thread(self.load_sync, previous)
