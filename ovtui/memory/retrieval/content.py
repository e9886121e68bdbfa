"""What a located URI holds, in OpenViking's shapes: a file's text (``read``), its abstract and
overview, a folder's entries (``ls``, ``tree``) and one entry (``stat``).

Only what ``access`` lets through is listed: a folder's entries are each checked by the same rules
(another peer, a lock file, the bookkeeping are left out), links are never followed, and hidden
files (``.abstract.md``…) show only with ``show_all_hidden``. A folder OpenViking gave sidecars
(``.abstract.md``, ``.overview.md``) answers with their bodies; any other folder with a summary of
its entries, and a memory file with its own abstract and overview (``documents``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ovtui.core.bounds import MAX_MEMORY_FILE_BYTES, MAX_ROLLOUT_BYTES
from ovtui.core.errors import MemoryFormatError, OvtuiError
from ovtui.core.fileformat import parse_memory
from ovtui.memory.retrieval.access import (
    AccessError,
    Located,
    Visibility,
    check_allowed,
    invalid_argument,
    not_found,
)
from ovtui.memory.retrieval.documents import cut, first_lines, overview_of
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import read_bounded

ABSTRACT_SIDECAR, OVERVIEW_SIDECAR = ".abstract.md", ".overview.md"
DIRECTORY_ENTRIES_SHOWN = 50  # entries a folder's overview names
ACCOUNT = "default"  # OpenViking's account of a record id (ovtui has one)
# The abstract of a memory file by URI (the index's, or the model's), None when it is not indexed.
Abstracts = Callable[[str], str | None]
Output = Literal["agent", "original"]


def _text(located: Located) -> str:
    try:
        info = os.stat(located.path)
    except FileNotFoundError:
        raise not_found(located.uri) from None
    if stat.S_ISDIR(info.st_mode):
        raise invalid_argument(
            f"Directory URI is not readable as a file: {located.uri}. List it first, then read a file URI.",
            {"resource": located.uri, "expected": "file", "actual": "directory"},
        )
    limit = MAX_MEMORY_FILE_BYTES if located.is_memory else MAX_ROLLOUT_BYTES
    try:
        data = read_bounded(located.path, limit, what="the file", shown=located.uri)
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid_argument(f"{located.uri} is not UTF-8 text", {"resource": located.uri}) from None
    except OvtuiError as exc:
        raise invalid_argument(str(exc), {"resource": located.uri}) from None


def _body(located: Located, text: str) -> str:
    """A memory file's text without its MEMORY_FIELDS trailer (a file it cannot parse: as it is)."""
    if not (located.is_memory and located.rel.endswith(".md")):
        return text
    try:
        return parse_memory(text, source=located.rel).content
    except MemoryFormatError:
        return text


def read(located: Located, *, offset: int = 0, limit: int = -1, raw: bool = False) -> str:
    """The file's text from line ``offset`` (0-based), ``limit`` lines (-1: to the end); a memory
    file without its trailer unless ``raw``."""
    text = _text(located)
    if not raw:
        text = _body(located, text)
    if offset <= 0 and limit < 0:
        return text
    lines = text.splitlines(keepends=True)
    start = max(0, offset)
    return "".join(lines[start:] if limit < 0 else lines[start : start + limit])


def _sidecar(folder: Path, name: str) -> str | None:
    """The body of an OpenViking sidecar (its YAML front matter dropped), None when there is none."""
    path = folder / name
    if path.is_symlink() or not path.is_file():
        return None
    text = read_bounded(path, MAX_MEMORY_FILE_BYTES, what="the sidecar").decode("utf-8", "replace")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end >= 0:
            text = text[end + 4 :]
    return text.strip()


def _exists(located: Located) -> os.stat_result:
    try:
        return os.stat(located.path)
    except FileNotFoundError:
        raise not_found(located.uri, "resource") from None


@dataclass(frozen=True)
class Lister:
    """Reads folders for one caller: what it may see, and the memories' abstracts."""

    paths: WorkspacePaths
    visibility: Visibility
    abstracts: Abstracts

    def children(self, located: Located, *, hidden: bool = False) -> list[Located]:
        """The entries of a folder the caller may see, by name (no links, no bookkeeping)."""
        try:
            with os.scandir(located.path) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            if entry.is_symlink() or (entry.name.startswith(".") and not hidden):
                continue
            rel = f"{located.rel}/{entry.name}" if located.rel else entry.name
            uri = f"{located.uri}/{entry.name}"
            try:
                check_allowed(rel, uri, self.visibility)
            except AccessError:
                continue
            found.append(Located(uri, rel, Path(entry.path)))
        return found

    def abstract(self, located: Located) -> str:
        info = _exists(located)
        if not stat.S_ISDIR(info.st_mode):
            known = self.abstracts(located.uri)
            return (
                known
                if known is not None
                else cut(" ".join(first_lines(_body(located, _text(located)))), 300)
            )
        sidecar = _sidecar(located.path, ABSTRACT_SIDECAR)
        if sidecar is not None:
            return sidecar
        entries = self.children(located)
        folders = [e for e in entries if e.path.is_dir()]
        names = ", ".join(e.path.name.removesuffix(".md") for e in entries[:8])
        more = f", … ({len(entries) - 8} more)" if len(entries) > 8 else ""
        what = located.rel or f"the space of user {self.visibility.user}"
        return f"{what}: {len(entries) - len(folders)} files, {len(folders)} folders" + (
            f" — {names}{more}" if names else ""
        )

    def overview(self, located: Located) -> str:
        info = _exists(located)
        if not stat.S_ISDIR(info.st_mode):
            return overview_of(_body(located, _text(located)))
        sidecar = _sidecar(located.path, OVERVIEW_SIDECAR)
        if sidecar is not None:
            return sidecar
        entries = self.children(located)
        lines = [f"# {located.uri}", ""]
        for entry in entries[:DIRECTORY_ENTRIES_SHOWN]:
            if entry.path.is_dir():
                lines.append(f"- {entry.path.name}/")
            else:
                abstract = self.abstracts(entry.uri)
                lines.append(f"- {entry.path.name}" + (f": {abstract}" if abstract else ""))
        if len(entries) > DIRECTORY_ENTRIES_SHOWN:
            lines.append(f"- … {len(entries) - DIRECTORY_ENTRIES_SHOWN} more")
        return "\n".join(lines)

    # --- listings ---
    def entry(self, located: Located, options: ListOptions, rel_path: str | None = None) -> dict[str, Any]:
        info = os.stat(located.path)
        is_dir = stat.S_ISDIR(info.st_mode)
        moment = datetime.fromtimestamp(info.st_mtime, UTC)
        found: dict[str, Any]
        if options.output == "agent":
            found = {
                "uri": located.uri,
                "size": 0 if is_dir else info.st_size,
                "isDir": is_dir,
                "modTime": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
            }
        else:
            found = {
                "name": located.path.name if located.rel else self.visibility.user,
                "size": info.st_size,
                "mode": stat.S_IMODE(info.st_mode),
                "modTime": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "isDir": is_dir,
            }
        if rel_path is not None:
            found["rel_path"] = rel_path
        if options.output == "original":
            found["uri"] = located.uri
        if options.abstracts:
            shown = is_dir or options.file_abstracts
            found["abstract"] = abbreviated(self.abstract(located), options.abs_limit) if shown else ""
        if options.include_overview and is_dir:
            found["overview"] = cut(self.overview(located), options.overview_limit)
        return found

    def walk(self, located: Located, options: ListOptions) -> Iterator[tuple[Located, str]]:
        """Entries below ``located`` depth first (pre-order), with their paths relative to it."""

        def below(folder: Located, prefix: str, level: int) -> Iterator[tuple[Located, str]]:
            for child in self.children(folder, hidden=options.show_all_hidden):
                is_dir = child.path.is_dir()
                if is_dir or not options.directories_only:
                    yield child, prefix + child.path.name
                if is_dir and options.recursive and level < options.level_limit:
                    yield from below(child, f"{prefix}{child.path.name}/", level + 1)

        yield from below(located, "", 1)

    def listing(self, located: Located, options: ListOptions) -> tuple[list[Any], bool]:
        """The entries of ``ls``/``tree``, and whether more lie beyond ``offset + node_limit``."""
        if not located.path.is_dir():
            raise not_found(located.uri, "directory")
        chosen: list[tuple[Located, str]] = []
        more = False
        walked = self.walk(located, options)
        if options.sort_by is not None:  # sorting needs every entry (of one level: ls only sorts)
            everything = list(walked)
            key: Callable[[tuple[Located, str]], Any] = (
                (lambda pair: pair[0].path.name)
                if options.sort_by == "name"
                else (lambda pair: os.stat(pair[0].path).st_mtime)
            )
            walked = iter(sorted(everything, key=key, reverse=options.sort_order == "desc"))
        for index, pair in enumerate(walked):
            if index < options.offset:
                continue
            if len(chosen) >= options.node_limit:
                more = True
                break
            chosen.append(pair)
        if options.simple:
            return [child.uri for child, _ in chosen], more
        rel = options.recursive
        return [self.entry(child, options, rel_path if rel else None) for child, rel_path in chosen], more

    def stat(self, located: Located) -> dict[str, Any]:
        try:
            info = os.stat(located.path)
        except FileNotFoundError:
            raise not_found(located.uri) from None
        found = self.entry(located, ListOptions(output="original"))
        found["isLocked"] = False
        if not stat.S_ISDIR(info.st_mode):
            found["id"] = hashlib.md5(f"{ACCOUNT}:{located.uri}".encode(), usedforsecurity=False).hexdigest()
        return found


def abbreviated(text: str, limit: int) -> str:
    """OpenViking's cut of an abstract in a listing: ``limit - 3`` characters and ``...``."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


@dataclass(frozen=True)
class ListOptions:
    output: Output = "agent"
    recursive: bool = False
    simple: bool = False
    abs_limit: int = 256
    include_abstract: bool | None = None
    include_overview: bool = False
    overview_limit: int = 4000
    show_all_hidden: bool = False
    node_limit: int = 1000
    offset: int = 0
    level_limit: int = 3
    directories_only: bool = False
    sort_by: Literal["name", "mtime"] | None = None
    sort_order: Literal["asc", "desc"] = "asc"
    # A file's abstract too (OpenViking's fs/ls gives files an empty one; an MCP listing is read by
    # a model choosing what to open, which needs to know what each file is about)
    file_abstracts: bool = False

    @property
    def abstracts(self) -> bool:
        """Whether entries carry an abstract: asked for, or by default in agent output."""
        return self.include_abstract if self.include_abstract is not None else self.output == "agent"
