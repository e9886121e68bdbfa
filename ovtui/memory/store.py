"""Reading and listing memory files of a workspace, with clear errors for bad files.

A bad file (broken MEMORY_FIELDS, not UTF-8, binary, too large, an unsafe name) is reported with
its path and never modified: listing skips it and records the problem, so the rest of the
workspace keeps working.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovtui.core.bounds import unreadable_memory
from ovtui.core.errors import MemoryFormatError, OvtuiError, UnsafePathError
from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.core.names import validate_name
from ovtui.memory.types import MemoryTypeRegistry, MemoryTypeSchema, default_registry
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.locks import WorkspaceLock
from ovtui.storage.paths import (
    HIDDEN_MEMORY_NAMES,
    MAX_MEMORY_FILE_BYTES,
    WorkspacePaths,
    peer_space,
    split_peer,
)


@dataclass
class LoadReport:
    files: list[MemoryFile] = field(default_factory=list)
    problems: list[MemoryFormatError] = field(default_factory=list)


def _visible(folder: Path) -> list[Path]:
    """The entries of a folder that may be memories (no hidden files, no overview files)."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries]
    except OSError:
        return []
    return [folder / n for n in names if n not in HIDDEN_MEMORY_NAMES and not n.startswith(".")]


class MemoryStore:
    """One workspace's memory files. Writes of plans go through the updater and the journal."""

    def __init__(
        self,
        paths: WorkspacePaths,
        registry: MemoryTypeRegistry | None = None,
        *,
        lock_timeout: float | None = None,
    ) -> None:
        self.paths = paths
        self.registry = registry or default_registry()
        self.lock = WorkspaceLock(
            paths.state, root=paths.root, **({"timeout": lock_timeout} if lock_timeout is not None else {})
        )

    @classmethod
    def open(cls, root: Path | str, user: str = "default", **kwargs: object) -> MemoryStore:
        return cls(WorkspacePaths(Path(root), user), **kwargs)  # type: ignore[arg-type]

    # --- locations ---
    def type_rel(self, memory_type: str, peer_id: str | None = None) -> str:
        """The folder of a type, in the user's own space or in peer ``peer_id``'s (validated)."""
        schema = self.registry.get(memory_type)
        if peer_id is not None and not schema.peer_enabled:
            raise OvtuiError(f"{memory_type} memories are never a peer's (the type is not peer_enabled)")
        return peer_space(peer_id) + schema.directory

    def type_dir(self, memory_type: str, peer_id: str | None = None) -> Path:
        return self.paths.root / self.type_rel(memory_type, peer_id)

    def type_uri(self, memory_type: str, peer_id: str | None = None) -> str:
        return self.paths.uri_prefix + self.type_rel(memory_type, peer_id)

    def peers(self, problems: list[MemoryFormatError] | None = None) -> list[str]:
        """The peers that have a space in the workspace, sorted; a folder under ``peers/`` whose
        name breaks the name rule is left out (and named in ``problems`` when given)."""
        found = []
        for path in _visible(self.paths.peers):
            try:
                if path.is_dir():
                    found.append(validate_name(path.name, what="peer folder"))
            except UnsafePathError as exc:
                if problems is not None:
                    problems.append(MemoryFormatError(self.paths.relative(path), str(exc)))
        return sorted(found)

    def owner(self, peer_id: str | None = None) -> str:
        """Whose memories a space holds, as a ``fill: owner`` field names it: the peer's id in a
        peer's space, the workspace user in the user's own."""
        return peer_id if peer_id is not None else self.paths.user

    def rels_for_name(
        self,
        memory_type: str,
        name: str,
        fields: Mapping[str, Any] | None = None,
        peer_id: str | None = None,
    ) -> list[str]:
        """Where a memory called ``name`` may be (workspace-relative): in the type's current layout
        first, then in each former one. ``fields`` fill the other placeholders; a ``fill: owner``
        field they leave out is the space's owner. Naming only: no file-system access."""
        schema = self.registry.get(memory_type)
        if schema.timestamped:
            raise OvtuiError(f"{memory_type} file names carry their creation time")
        folder = self.type_rel(memory_type, peer_id)
        given = schema.filled(fields or {}, self.owner(peer_id))
        return [f"{folder}/{schema.filename(name, fields=given, template=t)}" for t in schema.templates()]

    def rel_for_name(
        self,
        memory_type: str,
        name: str,
        fields: Mapping[str, Any] | None = None,
        peer_id: str | None = None,
    ) -> str:
        """Where the memory called ``name`` is, or will be: its file in a former layout when only
        that exists (it is edited in place until ``ovtui check --fix`` moves it, so one memory never
        becomes two files), else its place in the current layout."""
        current, *former = self.rels_for_name(memory_type, name, fields, peer_id)
        if former and not (self.paths.root / current).exists():
            return next((rel for rel in former if (self.paths.root / rel).is_file()), current)
        return current

    def path_for_name(self, memory_type: str, name: str) -> Path:
        return self.paths.inside(self.paths.root / self.rel_for_name(memory_type, name))

    def uri_for_name(
        self,
        memory_type: str,
        name: str,
        fields: Mapping[str, Any] | None = None,
        peer_id: str | None = None,
    ) -> str:
        """The URI a memory called ``name`` has (or will have), in the user's own space or in peer
        ``peer_id``'s (``rel_for_name``); whatever writes to it resolves and checks the path."""
        return self.paths.uri_prefix + self.rel_for_name(memory_type, name, fields, peer_id)

    def peer_of_uri(self, uri: str) -> str | None:
        """Whose space a URI lies in: a peer's id, or None for the user's own (checked lexically;
        UnsafePathError for a URI outside the workspace or a peer folder breaking the name rule)."""
        return split_peer(self.paths.relative_of(uri))[0]

    def schema_for_uri(self, uri: str) -> MemoryTypeSchema:
        rel = self.paths.path_for(uri).relative_to(self.paths.root).as_posix()
        schema = self.registry.for_path(rel)
        if schema is None:
            raise UnsafePathError(f"{uri} is not in a known memory type directory")
        return schema

    # --- reading ---
    def read_text(self, path: Path) -> str:
        """The text of a memory file, refusing binaries, non-UTF-8 and oversized files by name."""
        path = self.paths.inside(path)
        rel = self.paths.relative(path)
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise MemoryFormatError(rel, "is not a regular file")
        return self.read_regular(str(path), rel)

    def read_regular(self, path: str, rel: str) -> str:
        """``read_text`` for a path already checked to be a regular file inside the workspace."""
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_MEMORY_FILE_BYTES:
                raise MemoryFormatError(
                    rel, f"file is {size} bytes, larger than the {MAX_MEMORY_FILE_BYTES} byte limit"
                )
            data = handle.read()
        if b"\x00" in data:
            raise MemoryFormatError(rel, "contains NUL bytes (binary file?)")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise MemoryFormatError(rel, f"is not valid UTF-8 (byte {exc.start})", line) from None

    def read(self, path: Path) -> MemoryFile:
        path = self.paths.inside(path)
        text = self.read_text(path)
        return parse_memory(text, source=self.paths.relative(path), uri=self.paths.uri_for(path))

    def read_uri(self, uri: str) -> MemoryFile | None:
        path = self.paths.path_for(uri)
        return self.read(path) if path.exists() else None

    def list_paths(self, memory_type: str, peer_id: str | None = None) -> list[Path]:
        """Every file of a type (in the user's space, or peer ``peer_id``'s), sorted, at the depth
        its filename template gives (entities live in ``<category>/``, preferences in ``<user>/``,
        events in ``<year>/<month>/<day>/``) and at the depth of each former layout (preferences
        once lived in the type folder itself); a one-file type (profile) lists that file only."""
        schema = self.registry.get(memory_type)
        folder = self.type_dir(memory_type, peer_id)
        if not schema.placeholders():
            only = folder / schema.filename_template
            return [only] if only.is_file() else []
        found: set[Path] = set()
        for depth in sorted({t.count("/") for t in schema.templates()}):
            folders = [folder]
            for _ in range(depth):
                folders = [sub for f in folders for sub in _visible(f) if sub.is_dir()]
            found.update(p for f in folders for p in _visible(f) if p.name.endswith(".md") and p.is_file())
        return sorted(found)

    def load_type(self, memory_type: str, peer_id: str | None = None) -> LoadReport:
        """Every file of a type (in the user's space, or peer ``peer_id``'s); a folder leading out
        of the workspace is refused before it is listed."""
        report = LoadReport()
        folder = self.type_dir(memory_type, peer_id)
        if not folder.is_dir():
            return report
        schema = self.registry.get(memory_type)
        if any("/" in t for t in schema.templates()) or not schema.placeholders():
            return self._load_paths(self.list_paths(memory_type, peer_id), report)
        self.paths.inside(folder)
        with os.scandir(folder) as scan:
            entries = sorted(
                (e for e in scan if e.name.endswith(".md") and e.is_file()), key=lambda e: e.name
            )
        return self.read_entries(folder, entries, report)

    def read_entries(
        self, folder: Path, entries: Iterable[os.DirEntry[str]], report: LoadReport | None = None
    ) -> LoadReport:
        """The memory files among ``entries`` (scanned from ``folder``), in their order, each
        problem named. A regular file in a folder reached without links is inside the workspace
        by construction, so only links pay for a full path resolution (it was most of the time of
        loading 10,000 files)."""
        report = report if report is not None else LoadReport()
        plain_folder = self.paths.inside(folder) == folder
        rel_dir = folder.relative_to(self.paths.root).as_posix()
        uri_dir = self.paths.uri_prefix + rel_dir
        for entry in entries:
            name = entry.name
            if name in HIDDEN_MEMORY_NAMES or name.startswith(".") or not name.endswith(".md"):
                continue
            try:
                validate_name(name[:-3], what="file name")
                if plain_folder and not entry.is_symlink():
                    rel = f"{rel_dir}/{name}"
                    text = self.read_regular(entry.path, rel)
                    report.files.append(parse_memory(text, source=rel, uri=f"{uri_dir}/{name}"))
                else:
                    report.files.append(self.read(folder / name))
            except MemoryFormatError as exc:
                report.problems.append(exc)
            except (UnsafePathError, OSError) as exc:
                report.problems.append(MemoryFormatError(f"{rel_dir}/{name}", str(exc)))
        return report

    def _load_paths(self, paths: list[Path], report: LoadReport) -> LoadReport:
        for path in paths:
            try:
                report.files.append(self.read(path))
            except MemoryFormatError as exc:
                report.problems.append(exc)
            except (UnsafePathError, OSError) as exc:
                report.problems.append(MemoryFormatError(self.paths.relative(path), str(exc)))
        return report

    # --- plain writes (outside plans: trajectories are add-only and written by the analyzer) ---
    def new_file_text(self, path: Path, memory: MemoryFile) -> tuple[Path, str]:
        """The checked path and text of a file to create: it must not exist yet, and must not be
        larger than ovtui reads back."""
        path = self.paths.inside(path)
        if path.exists():
            raise OvtuiError(f"{self.paths.relative(path)} already exists (add-only)")
        text = memory.render()
        unreadable = unreadable_memory(self.paths.relative(path), text)
        if unreadable:  # the callers cut their fields; this is the last guard
            raise OvtuiError(unreadable)
        return path, text

    def write_new(self, path: Path, memory: MemoryFile) -> str:
        """Create a file that must not exist yet; returns its URI."""
        path, text = self.new_file_text(path, memory)
        atomic_write_text(path, text, root=self.paths.root)
        return self.paths.uri_for(path)
