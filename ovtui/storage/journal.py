"""The apply journal: a multi-file change is all-or-nothing across a crash.

``Journal.commit(ops)``:

1. writes a manifest (every target path, action, full new text, sha of the old text) to
   ``.ovtui/journal/<txid>.json`` with fsync + atomic rename + fsync of the folder — the commit point;
2. replaces each target atomically (temp file, fsync, rename), deletes the deleted ones;
3. fsyncs each folder touched once (not once per file) and removes the manifest.

``recover()`` (under the workspace lock, before any apply and when a command starts) finishes every
manifest still present: if some target still holds its old text the commit was interrupted and
its writes are redone (they are idempotent); if none does, the commit had completed and only the
manifest's removal was lost, so later edits stay. It throws away the temp file of a manifest that
never got renamed, and the temp files of interrupted writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ovtui.core.bounded_json import parse_json
from ovtui.core.errors import OvtuiError, UnsafePathError
from ovtui.storage import fsio
from ovtui.storage.faults import fault_point, naming
from ovtui.storage.paths import WorkspacePaths, linkless_path
from ovtui.storage.reading import open_for_reading

MANIFEST_FORMAT = "ovtui-journal/1"
# A stray temp file older than this cannot belong to a live writer (writes take milliseconds).
TEMP_GRACE_S = 60.0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def _file_sha(path: str) -> str | None:
    try:
        with open_for_reading(path) as handle:
            return sha256_bytes(handle.read())
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class FileOp:
    """One target of a transaction. ``path`` is relative to the workspace root, POSIX style."""

    path: str
    action: Literal["write", "delete"]
    text: str | None = None
    old_sha: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "action": self.action, "text": self.text, "old_sha": self.old_sha}


@dataclass
class RecoveryReport:
    rolled_forward: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    removed_temps: list[str] = field(default_factory=list)
    # Files that held neither the old nor the new text when an interrupted commit was completed.
    overwritten: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.rolled_forward or self.discarded or self.removed_temps)

    def describe(self) -> str:
        parts = []
        if self.rolled_forward:
            parts.append(f"completed {len(self.rolled_forward)} interrupted apply(s)")
        if self.discarded:
            parts.append(f"discarded {len(self.discarded)} unfinished journal entry(s)")
        if self.removed_temps:
            parts.append(f"removed {len(self.removed_temps)} leftover temp file(s)")
        return "; ".join(parts) or "nothing to recover"


def _ops_json(ops: list[dict[str, str | None]]) -> str:
    return json.dumps(ops, ensure_ascii=False, separators=(",", ":"))


def render_manifest(txid: str, ops: Sequence[FileOp]) -> str:
    """A manifest's text. Its checksum covers the ops exactly as serialised (serialising a
    parsed manifest again gives the same text), so a damaged manifest is never replayed."""
    ops_json = _ops_json([op.to_json() for op in ops])
    head = {
        "format": MANIFEST_FORMAT,
        "id": txid,
        "created_at": datetime.now(UTC).isoformat(),
        "checksum": sha256_text(ops_json),
    }
    return json.dumps(head, ensure_ascii=False)[:-1] + ', "ops": ' + ops_json + "}"


def new_txid() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}_{secrets.token_hex(3)}"


class Journal:
    """Paths are plain strings inside: an apply is a few dozen path operations, and pathlib's
    overhead per operation stood between us and the apply-rate target."""

    def __init__(self, paths: WorkspacePaths) -> None:
        self.paths = paths
        self.dir = paths.state / "journal"
        self._root = str(paths.root)

    # --- writing ---------------------------------------------------------------------------
    def resolve(self, rel: str) -> str:
        """The absolute target of a manifest path; refuses anything outside the workspace."""
        parts = rel.split("/")
        if not rel or "\x00" in rel or "\\" in rel or any(p in ("", ".", "..") for p in parts):
            raise OvtuiError(f"journal: invalid target path {rel!r}")
        try:
            return linkless_path(self._root, rel)
        except UnsafePathError as exc:
            raise UnsafePathError(f"journal: {exc}") from None

    def commit(self, ops: Sequence[FileOp], *, txid: str | None = None) -> str:
        """Perform ``ops`` all-or-nothing (the caller holds the workspace lock). Returns the txid."""
        txid = txid or new_txid()
        targets = [(op, self.resolve(op.path)) for op in ops]
        folder = str(self.dir)
        if not os.path.isdir(folder):
            fsio.make_dirs(folder, root=self._root)
            fsio.fsync_dir(os.path.dirname(folder))
        manifest_path = os.path.join(folder, f"{txid}.json")
        fsio.atomic_write_text(manifest_path, render_manifest(txid, ops), root=self._root, sync_dir=True)
        self._perform(targets)
        self._finish(manifest_path)
        return txid

    def _perform(self, targets: Iterable[tuple[FileOp, str]]) -> None:
        dirs: dict[str, None] = {}
        for op, path in targets:
            parent = os.path.dirname(path)
            if parent not in dirs:
                dirs.update(dict.fromkeys(self._new_dirs(parent)))
                dirs[parent] = None
            if op.action == "write":
                fsio.atomic_write_text(path, op.text or "", root=self._root, sync_dir=False)
            else:
                fsio.remove_file(path, root=self._root, sync_dir=False)
        # One fsync per folder, after all renames: it makes every rename in it durable at once.
        for folder in dirs:
            if os.path.isdir(folder):
                fsio.fsync_dir(folder)

    def _new_dirs(self, folder: str) -> list[str]:
        """Parents of folders about to be created: their new entries need an fsync too."""
        created: list[str] = []
        while folder != self._root and not os.path.exists(folder):
            folder = os.path.dirname(folder)
            created.append(folder)
        return created

    def _finish(self, manifest_path: str) -> None:
        # No fsync of the journal folder: if a crash brings the manifest back, recovery sees no
        # target at its old text (the commit had completed) and only removes it; the next
        # commit's folder fsync makes the removal durable anyway.
        fsio.remove_file(manifest_path, root=self._root, sync_dir=False)

    # --- recovery --------------------------------------------------------------------------
    def pending(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        with os.scandir(self.dir) as entries:
            return sorted(
                Path(e.path) for e in entries if e.name.endswith(".json") and not e.name.startswith(".")
            )

    def recover(self, *, sweep: bool = True, sweep_dirs: Iterable[Path] = ()) -> RecoveryReport:
        """Finish or discard interrupted commits; the caller holds the workspace lock.

        ``sweep``: also remove stale temp files (older than TEMP_GRACE_S) in ``sweep_dirs``.
        """
        report = RecoveryReport()
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            names = []
        for name in names:
            path = self.dir / name
            if fsio.is_temp_name(name):
                # A manifest that was never renamed into place: its commit never happened.
                fsio.remove_file(path, root=self._root, sync_dir=False)
                report.discarded.append(name)
            elif name.endswith(".json"):
                self._roll_forward(path, report)
        if sweep:
            for folder in sweep_dirs:
                self._sweep(folder, report, names=None)
        return report

    def _roll_forward(self, manifest_path: Path, report: RecoveryReport) -> None:
        rel_manifest = self.paths.relative(manifest_path)
        try:
            # Read whole: the journal is ovtui's own and may be as large as the apply it finishes.
            # A disk that fails to read it (EIO, EACCES) is raised: a commit is never discarded for that.
            with open_for_reading(manifest_path) as handle:
                data = handle.read()
        except IsADirectoryError as exc:
            self._discard(manifest_path, report, exc)
            return
        try:
            manifest = parse_json(data, source=rel_manifest)
            ops_json = manifest["ops"]
            if manifest.get("format") != MANIFEST_FORMAT or manifest.get("checksum") != sha256_text(
                _ops_json(ops_json)
            ):
                raise ValueError("checksum or format mismatch")
            ops = [FileOp(o["path"], o["action"], o.get("text"), o.get("old_sha")) for o in ops_json]
            targets = [(op, self.resolve(op.path)) for op in ops]
        except (ValueError, KeyError, TypeError, OvtuiError) as exc:
            self._discard(manifest_path, report, exc)
            return
        todo: list[tuple[FileOp, str]] = []
        neither: list[str] = []
        interrupted = False
        for op, path in targets:
            current = _file_sha(path)
            new = sha256_text(op.text or "") if op.action == "write" else None
            if current == new:
                continue
            todo.append((op, path))
            if current == op.old_sha:
                interrupted = True
            else:
                neither.append(op.path)
        if interrupted:
            report.overwritten.extend(neither)
        else:
            # Every target already holds its new text or a later one: the commit completed and
            # only the manifest's removal was lost. Later edits must not be undone.
            todo = []
        folders = {os.path.dirname(path) for _, path in targets}
        for folder in folders:
            names = {os.path.basename(path) for _, path in targets if os.path.dirname(path) == folder}
            self._sweep(Path(folder), report, names=names)
        self._perform(todo)
        # The targets may have been renamed but not yet fsynced before the crash.
        for folder in folders:
            if os.path.isdir(folder):
                fsio.fsync_dir(folder)
        fsio.remove_file(manifest_path, root=self._root, sync_dir=True)
        report.rolled_forward.append(rel_manifest)

    def has_work(self, sweep_dirs: Iterable[Path] = ()) -> bool:
        """Whether ``recover`` would change anything: a journal entry to finish or discard, or a
        leftover temp file in ``sweep_dirs``. Only reads (no lock needed): a manifest that appears
        after this look belongs to a commit still running, which finishes it itself."""
        try:
            names = os.listdir(self.dir)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        if any(fsio.is_temp_name(n) or n.endswith(".json") for n in names):
            return True
        return any(next(self._leftover_temps(folder, names=None), None) for folder in sweep_dirs)

    def _discard(self, manifest_path: Path, report: RecoveryReport, why: Exception) -> None:
        """A manifest that cannot be trusted is not replayed; kept aside for a person to look at."""
        target = manifest_path.with_suffix(".discarded")
        with naming(target):
            fault_point("rename", target)
            os.rename(fsio.contained(manifest_path, root=self._root), fsio.contained(target, root=self._root))
        report.discarded.append(f"{self.paths.relative(manifest_path)} ({why})")

    def _sweep(self, folder: Path, report: RecoveryReport, *, names: set[str] | None) -> None:
        for path in list(self._leftover_temps(folder, names=names)):
            fsio.remove_file(path, root=self._root, sync_dir=False)
            report.removed_temps.append(self.paths.relative(Path(path)))

    def _leftover_temps(self, folder: Path, *, names: set[str] | None) -> Iterator[str]:
        """The temp files in ``folder`` (only those of ``names`` if given) whose writer is dead: its
        process id is in the name. A temp name without one (an older ovtui) is left over when it is
        stale, or at once when it belongs to an interrupted commit."""
        if not folder.is_dir():
            return
        now = time.time()
        with os.scandir(folder) as entries:
            for entry in entries:
                if not fsio.is_temp_name(entry.name) or not entry.is_file(follow_symlinks=False):
                    continue
                if names is not None and not any(entry.name.startswith(fsio.temp_prefix(n)) for n in names):
                    continue
                writer = fsio.temp_writer(entry.name)
                if writer is not None:
                    if fsio.writer_alive(writer):
                        continue
                elif names is None and now - entry.stat(follow_symlinks=False).st_mtime < TEMP_GRACE_S:
                    continue
                yield entry.path


def recover(
    paths: WorkspacePaths, *, sweep: bool = True, sweep_dirs: Iterable[Path] | None = None
) -> RecoveryReport:
    """Recover the workspace at ``paths`` (call under its lock). By default sweeps stale temp files
    from the state folder, the history folder and every memory folder."""
    if sweep_dirs is None:
        sweep_dirs = default_sweep_dirs(paths) if sweep else ()
    return Journal(paths).recover(sweep=sweep, sweep_dirs=sweep_dirs)


def needs_recovery(paths: WorkspacePaths) -> bool:
    """Whether ``recover(paths)`` would change anything (it reads only: no lock is taken)."""
    return Journal(paths).has_work(default_sweep_dirs(paths))


def default_sweep_dirs(paths: WorkspacePaths) -> list[Path]:
    """Every folder ovtui writes files into (not the inbox's incoming folders: a user's own temp
    files live there). Record and run folders hold none: their files are journaled or made in
    ``runs/`` itself."""
    dirs = [paths.root, paths.history, paths.runs, paths.inbox / "done", paths.quarantine]
    for tree in (paths.state, paths.memories):
        if tree.is_dir():
            for current, subdirs, _files in os.walk(tree):  # links are not followed
                subdirs[:] = [d for d in subdirs if not d.startswith(".")]
                dirs.append(Path(current))
    return dirs
