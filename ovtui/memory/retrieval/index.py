"""MemoryIndex: every memory file of a workspace (all declared types; the user's and each peer's),
indexed for find and search, kept current without rebuilding.

One ranked index per memory type (a query for experiences never walks 50,000 trajectories). A
refresh costs a stat per folder when nothing changed: ovtui writes by rename, so a folder's mtime
moves with every write into it, and a changed folder is re-listed (names and inode numbers, which
the listing gives without a stat per file): a new name or a new inode is read, a vanished one
dropped. A folder whose mtime is within ``RACY_S`` of the refresh is listed again next time (a
second write in the same clock tick leaves the mtime as it was). An edit in place (same inode) in
a folder that did not change otherwise is caught by ``sweep``, a stat of every file, which a
refresh runs when the last one is ``sweep_every`` seconds old.

Files are read as the store reads them (bounded, UTF-8, the memory file format); links, hidden
and temporary files, and names the name rule refuses are not indexed. A file that cannot be read
is left out and named in ``problems``.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ovtui.core.errors import MemoryFormatError, UnsafePathError
from ovtui.core.fileformat import parse_memory
from ovtui.core.names import validate_name
from ovtui.memory.retrieval.documents import EMBED_CHARS, MemoryDoc, cut, document, indexed_text, tokens_of
from ovtui.memory.retrieval.ranking import POOL, Fusion, Mix, Ranked, RankedIndex, finish
from ovtui.memory.search import shared_weights
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import MemoryTypeSchema
from ovtui.storage.paths import HIDDEN_MEMORY_NAMES, PEERS_DIR, peer_space

if TYPE_CHECKING:
    import numpy as np

RACY_S = 2.0
SWEEP_EVERY_S = 60.0
FileStamp = tuple[int, int, int]  # inode, mtime_ns, size


@dataclass(frozen=True, slots=True)
class Filters:
    """Which memories a query may return. Deprecated and archived ones never."""

    prefixes: tuple[str, ...] = ()  # URIs of folders or files (empty: anywhere)
    memory_types: frozenset[str] | None = None
    statuses: frozenset[str] | None = None  # "" is a memory without a status field
    peer_visible: Callable[[str | None], bool] = lambda peer: peer is None

    def accepts(self, doc: MemoryDoc) -> bool:
        if not doc.served or not self.peer_visible(doc.peer_id):
            return False
        if self.statuses is not None and doc.status not in self.statuses:
            return False
        return not self.prefixes or any(doc.uri == p or doc.uri.startswith(p + "/") for p in self.prefixes)


@dataclass
class _Folder:
    path: str
    rel: str
    schema: MemoryTypeSchema
    peer: str | None
    # Folder levels below this one at which files lie (0: here): one per layout of the type, so a
    # file still in a former one (a preference in ``preferences/<topic>.md``) is indexed as well.
    levels: frozenset[int]
    only: str | None = None  # the one file of a one-file type (profile.md)
    stamp: int | None = None  # mtime_ns at the last listing (None: list it next time)
    files: dict[str, FileStamp] = field(default_factory=dict)
    children: dict[str, _Folder] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    doc: MemoryDoc
    score: float


class MemoryIndex:
    def __init__(
        self,
        store: MemoryStore,
        *,
        fusion: Fusion | None = None,
        dense: bool = False,
        sweep_every: float = SWEEP_EVERY_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.fusion = fusion or Fusion()
        self.dense = dense  # keep the texts still to embed
        self.sweep_every = sweep_every
        self._clock = clock
        self._lock = threading.RLock()
        self._docs: dict[str, MemoryDoc] = {}
        self._shards: dict[str, RankedIndex] = {}
        self._to_embed: dict[str, tuple[str, str]] = {}  # uri -> (digest, text)
        self._roots: dict[tuple[str, str | None], _Folder] = {}  # (memory type, peer) -> its folder
        self._peers_stamp: int | None = None
        self._last_sweep = 0.0
        self.problems: dict[str, str] = {}  # workspace-relative path -> why it is not indexed

    # --- reading the workspace --------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring the index up to date with the files (see the module's docstring)."""
        with self._lock:
            if not self._roots:
                for schema in self._schemas():
                    self._add_root(schema, None)
            self._sync_peers()
            for folder in list(self._roots.values()):
                self._visit(folder)
            if self._clock() - self._last_sweep >= self.sweep_every:
                self.sweep()

    def _schemas(self) -> list[MemoryTypeSchema]:
        return [self.store.registry.get(name) for name in self.store.registry.names()]

    def _add_root(self, schema: MemoryTypeSchema, peer: str | None) -> None:
        rel = peer_space(peer) + schema.directory
        one_file = not schema.placeholders()
        self._roots[(schema.memory_type, peer)] = _Folder(
            path=str(self.store.paths.root / rel),
            rel=rel,
            schema=schema,
            peer=peer,
            levels=frozenset({0} if one_file else {t.count("/") for t in schema.templates()}),
            only=schema.filename_template if one_file else None,
        )

    def _sync_peers(self) -> None:
        """Peer spaces appear and go as folders under ``peers/``."""
        folder = str(self.store.paths.root / PEERS_DIR)
        try:
            info = os.lstat(folder)
            mtime = info.st_mtime_ns if stat.S_ISDIR(info.st_mode) else None
        except FileNotFoundError:
            mtime = None
        if mtime is not None and mtime == self._peers_stamp:
            return
        peers: set[str] = set()
        if mtime is not None:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                        continue
                    try:
                        peers.add(validate_name(entry.name, what="peer folder"))
                    except UnsafePathError as exc:
                        self.problems[f"{PEERS_DIR}/{entry.name}"] = str(exc)
        self._peers_stamp = None if mtime is None or self._racy(mtime) else mtime
        known = {peer for _, peer in self._roots if peer is not None}
        for peer in known - peers:
            for key in [k for k in self._roots if k[1] == peer]:
                self._drop(self._roots.pop(key))
        for peer in peers - known:
            for schema in self._schemas():
                if schema.peer_enabled:
                    self._add_root(schema, peer)

    def _racy(self, mtime_ns: int) -> bool:
        return self._clock() - mtime_ns / 1e9 < RACY_S

    def _visit(self, folder: _Folder) -> None:
        try:
            info = os.lstat(folder.path)
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is None or not stat.S_ISDIR(info.st_mode):  # gone, or a link: nothing indexed there
            if info is not None:
                self.problems[folder.rel] = "is not a folder (a symbolic link?): not indexed"
            self._drop(folder)
            return
        if folder.stamp != info.st_mtime_ns:
            self._list(folder)
            folder.stamp = None if self._racy(info.st_mtime_ns) else info.st_mtime_ns
        for child in list(folder.children.values()):
            self._visit(child)

    def _list(self, folder: _Folder) -> None:
        found: dict[str, int] = {}
        folders: dict[str, int] = {}
        with os.scandir(folder.path) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in HIDDEN_MEMORY_NAMES:
                    continue
                if max(folder.levels) and entry.is_dir(follow_symlinks=False):
                    folders[name] = entry.inode()
                    continue
                if (
                    0 in folder.levels
                    and (folder.only is None or name == folder.only)
                    and name.endswith(".md")
                ):
                    if entry.is_file(follow_symlinks=False):
                        found[name] = entry.inode()
                    elif entry.is_symlink():
                        self.problems[f"{folder.rel}/{name}"] = "is a symbolic link: not indexed"
        for name in folder.children.keys() - folders.keys():
            self._drop(folder.children.pop(name))
        for name in folders.keys() - folder.children.keys():
            folder.children[name] = _Folder(
                path=f"{folder.path}/{name}",
                rel=f"{folder.rel}/{name}",
                schema=folder.schema,
                peer=folder.peer,
                levels=frozenset(level - 1 for level in folder.levels if level),
            )
        for name in folder.files.keys() - found.keys():
            del folder.files[name]
            self._discard(self._uri(folder, name))
        for name, inode in found.items():
            known = folder.files.get(name)
            if known is None or known[0] != inode:
                self._read(folder, name)

    def sweep(self) -> None:
        """A stat of every indexed file: catches an edit in place (same inode, same folder mtime)."""
        with self._lock:
            self._last_sweep = self._clock()
            for folder in self._leaves():
                for name, known in list(folder.files.items()):
                    try:
                        info = os.lstat(f"{folder.path}/{name}")
                    except FileNotFoundError:
                        folder.stamp = None  # the next refresh lists the folder again
                        continue
                    if (info.st_ino, info.st_mtime_ns, info.st_size) != known:
                        self._read(folder, name)

    def _leaves(self) -> Iterable[_Folder]:
        stack = list(self._roots.values())
        while stack:
            folder = stack.pop()
            stack.extend(folder.children.values())
            if 0 in folder.levels:
                yield folder

    def _uri(self, folder: _Folder, name: str) -> str:
        return f"{self.store.paths.uri_prefix}{folder.rel}/{name}"

    def _read(self, folder: _Folder, name: str) -> None:
        rel, uri = f"{folder.rel}/{name}", self._uri(folder, name)
        path = f"{folder.path}/{name}"
        try:
            if folder.only is None:
                validate_name(name[:-3], what="file name")
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                raise MemoryFormatError(rel, "is not a regular file")
            text = self.store.read_regular(path, rel)
            memory = parse_memory(text, source=rel, uri=uri)
        except FileNotFoundError:
            folder.files.pop(name, None)
            self._discard(uri)
            return
        except (MemoryFormatError, UnsafePathError, OSError) as exc:
            folder.files.pop(name, None)
            self._discard(uri)
            self.problems[rel] = str(exc)
            return
        self.problems.pop(rel, None)
        folder.files[name] = (info.st_ino, info.st_mtime_ns, info.st_size)
        doc = document(
            memory, text, folder.schema, rel=rel, peer_id=folder.peer, size=info.st_size, mtime=info.st_mtime
        )
        self._docs[uri] = doc
        shard = self._shards.get(doc.memory_type)
        if shard is None:
            shard = self._shards[doc.memory_type] = RankedIndex(self.fusion)
        shard.put(uri, tokens_of(doc.name, memory.content))
        if self.dense:
            self._to_embed[uri] = (doc.digest, cut(indexed_text(doc.name, memory.content), EMBED_CHARS))

    def _discard(self, uri: str) -> None:
        doc = self._docs.pop(uri, None)
        self._to_embed.pop(uri, None)
        if doc is not None:
            self._shards[doc.memory_type].discard(uri)

    def _drop(self, folder: _Folder) -> None:
        """Forget everything indexed under ``folder`` (it is gone); list it again if it comes back."""
        for name in list(folder.files):
            self._discard(self._uri(folder, name))
        folder.files.clear()
        for child in folder.children.values():
            self._drop(child)
        folder.children.clear()
        folder.stamp = None

    # --- vectors ----------------------------------------------------------------------------------
    def texts_to_embed(self) -> dict[str, tuple[str, str]]:
        """The memories without a vector yet: uri -> (digest of the file, the text to embed)."""
        with self._lock:
            return dict(self._to_embed)

    def put_vectors(self, vectors: Iterable[tuple[str, str, np.ndarray]]) -> None:
        """Install ``(uri, digest, unit vector)``; a vector of a file changed since is dropped."""
        with self._lock:
            for uri, digest, vector in vectors:
                doc = self._docs.get(uri)
                if doc is not None and doc.digest == digest:
                    self._shards[doc.memory_type].put_vector(uri, vector)
                    self._to_embed.pop(uri, None)

    # --- queries ----------------------------------------------------------------------------------
    def get(self, uri: str) -> MemoryDoc | None:
        with self._lock:
            return self._docs.get(uri)

    def __len__(self) -> int:
        return len(self._docs)

    def search(
        self,
        tokens: list[str],
        filters: Filters,
        *,
        limit: int,
        vector: np.ndarray | None = None,
        threshold: float | None = None,
        mix: Mix | None = None,
    ) -> list[Hit]:
        """The best ``limit`` memories the filters accept, best first."""
        with self._lock:
            docs = self._docs

            def accept(uri: str) -> bool:
                return filters.accepts(docs[uri])

            pool = limit * POOL if mix is not None else limit
            shards = [
                shard
                for memory_type, shard in sorted(self._shards.items())
                if filters.memory_types is None or memory_type in filters.memory_types
            ]
            # Words weigh as in one index of every memory type, whatever the query's filter: a
            # memory's score for a query is the same in any search, and compares across types.
            every = [s.lexical for s in self._shards.values()]
            found: list[Ranked] = []
            for shard in shards:
                weights = shared_weights(tokens, every, shard.lexical)
                found += shard.candidates(
                    tokens, pool=pool, vector=vector, accept=accept, threshold=threshold, weights=weights
                )
            return [Hit(docs[r.key], r.score) for r in finish(found, limit, mix)]

    def browse(self, filters: Filters, *, limit: int) -> list[Hit]:
        """Memories the filters accept without a query (a find by filter alone), by URI."""
        with self._lock:
            chosen = sorted(
                (
                    d
                    for d in self._docs.values()
                    if filters.memory_types is None or d.memory_type in filters.memory_types
                ),
                key=lambda d: d.uri,
            )
            return [Hit(d, 0.0) for d in chosen if filters.accepts(d)][:limit]
