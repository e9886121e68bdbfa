"""ExperienceSetLoader: the experiences directory as an ExperienceSet snapshot."""

from __future__ import annotations

import asyncio
import os
import threading
from contextlib import suppress

from ovtui.core.domain import Experience, ExperienceSet
from ovtui.core.errors import OvtuiError
from ovtui.core.experience_files import experience_from_file, name_mismatch
from ovtui.core.names import validate_name
from ovtui.memory.search import LexicalIndex, cached_tokens
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES

Signature = tuple[int, int, int]  # inode, mtime_ns, size: a file with the same three was not rewritten
Signatures = dict[str, tuple[Signature, Experience]]  # by file name


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


class ExperienceSetLoader:
    """The PolicySetLoader of a workspace: full loads, and incremental reloads from a previous set."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def load_sync(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        """Load the experiences; with ``previous``, re-read only the files that changed since it."""
        current = self._scan()
        if previous is not None and self._untouched(previous, current):
            return previous  # a snapshot is never mutated, so an unchanged one is shared (and its index)
        reusable = self._unchanged(previous, current) if previous is not None else {}
        changed = {name for name in current if name not in reusable}
        if previous is None or len(changed) > len(current) // 2:
            return self._full(current)
        return self._partial(reusable, current, changed)

    def _scan(self) -> dict[str, Signature]:
        folder = self.store.type_dir(EXPERIENCES)
        current: dict[str, Signature] = {}
        if folder.is_dir():
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".md") and not entry.name.startswith(".") and entry.is_file():
                        info = entry.stat()
                        current[entry.name] = (info.st_ino, info.st_mtime_ns, info.st_size)
        return current

    @staticmethod
    def _untouched(previous: ExperienceSet, current: dict[str, Signature]) -> bool:
        """The folder is as the loader found it when it made ``previous``: every file with the same
        signature, and no other (a set patched by the updater has no scan of its own)."""
        scan: dict[str, Signature] = previous.derived("scan", dict)
        return bool(scan) and scan == current

    @staticmethod
    def _unchanged(previous: ExperienceSet, current: dict[str, Signature]) -> dict[str, Experience]:
        """Files whose bytes cannot have changed since ``previous`` was taken.

        Atomic writes replace a file (new inode), so an equal signature means equal bytes. A set
        built in memory (by the updater) has no signatures; then a file untouched since the set
        was created is reused. Either way the reload only saves work: apply still compare-and-swaps.
        """
        signatures: Signatures = previous.derived("signatures", dict)
        if signatures:
            return {
                n: signatures[n][1]
                for n, sig in current.items()
                if n in signatures and signatures[n][0] == sig
            }
        by_file = {p.uri.rsplit("/", 1)[-1]: p for p in previous.policies}
        created = previous.created_ns
        return {n: by_file[n] for n, sig in current.items() if n in by_file and sig[1] < created}

    def _full(self, scan: dict[str, Signature]) -> ExperienceSet:
        """Every file read; ``scan`` was taken before, so a file changed while reading is read
        again by the next load."""
        report = self.store.load_type(EXPERIENCES)
        policies = [experience_from_file(f) for f in report.files]
        problems = [str(p) for p in report.problems]
        problems += [m for m in map(name_mismatch, report.files) if m]
        return self._assemble(policies, problems, scan)

    def _partial(
        self, reusable: dict[str, Experience], current: dict[str, Signature], changed: set[str]
    ) -> ExperienceSet:
        folder = self.store.type_dir(EXPERIENCES)
        policies: list[Experience] = []
        problems: list[str] = []
        for name in sorted(current):
            if name not in changed:
                policies.append(reusable[name])
                continue
            try:
                validate_name(name[:-3], what="file name")
                memory = self.store.read(folder / name)
                policies.append(experience_from_file(memory))
                mismatch = name_mismatch(memory)
                if mismatch:
                    problems.append(mismatch)
            except (OvtuiError, OSError) as exc:
                problems.append(str(exc))
        return self._assemble(policies, problems, current)

    def _assemble(
        self, policies: list[Experience], problems: list[str], scan: dict[str, Signature]
    ) -> ExperienceSet:
        policy_set = ExperienceSet(
            root_uri=self.store.type_uri(EXPERIENCES),
            policies=policies,
            metadata={"problems": problems} if problems else {},
        )
        # The scan was taken before reading: a file rewritten in between just looks changed next time.
        by_file = {p.uri.rsplit("/", 1)[-1]: p for p in policies}
        signatures: Signatures = {n: (sig, by_file[n]) for n, sig in scan.items() if n in by_file}
        policy_set.derived("signatures", lambda: signatures)
        policy_set.derived("scan", lambda: scan)
        return policy_set

    def first(self, count: int) -> list[Experience]:
        """The first ``count`` experiences by file name: a preview to show while the rest loads.

        A file that cannot be read is skipped here; the full load reports it.
        """
        folder = self.store.type_dir(EXPERIENCES)
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".md") and not n.startswith("."))
        except OSError:
            return []
        preview: list[Experience] = []
        for name in names[:count]:
            with suppress(OvtuiError, OSError):
                preview.append(experience_from_file(self.store.read(folder / name)))
        return preview

    async def load(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        return await asyncio.to_thread(self.load_sync, previous)
