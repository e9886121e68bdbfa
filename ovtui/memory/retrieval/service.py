"""Retrieval for one workspace: the index, the embedder and its vector cache, the model's abstracts,
behind the calls the facade's use cases make (find, read, abstract, overview, ls, tree, stat).

Every call refreshes the index first (a stat per folder when nothing changed) and does its file
work in a worker thread, so the event loop stays free. With an embedder, memories without a vector
are embedded before the query is ranked (cached per content hash, so only new or changed texts
are ever sent); an endpoint that fails leaves that query lexical, said once in the log.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ovtui.core.errors import OvtuiError
from ovtui.memory.retrieval.access import Located, Visibility, locate
from ovtui.memory.retrieval.cache import DigestLog, digest
from ovtui.memory.retrieval.content import Lister, ListOptions, read
from ovtui.memory.retrieval.documents import MemoryDoc, cut
from ovtui.memory.retrieval.index import Filters, Hit, MemoryIndex
from ovtui.memory.retrieval.ranking import Fusion, Mix
from ovtui.memory.search import stemmed_tokens
from ovtui.memory.store import MemoryStore

if TYPE_CHECKING:
    from ovtui.core.interfaces import Embedder

log = logging.getLogger(__name__)

EMBEDDINGS_DIR = ".ovtui/embeddings"
ABSTRACTS_DIR = ".ovtui/abstracts"
MAX_VECTOR_CACHE_BYTES = 512 * 1024 * 1024
MAX_ABSTRACT_CACHE_BYTES = 64 * 1024 * 1024
QUERY_VECTORS_KEPT = 256
CONTEXT_WEIGHT = 0.4  # a session's recent messages next to the query itself, in search
SummaryKind = Literal["abstract", "overview"]
# A model's abstract or overview of a memory's text (``[llm]``), when one is configured.
Summarize = Callable[[SummaryKind, str], Awaitable[str]]
SUMMARY_PROMPTS: dict[SummaryKind, str] = {
    "abstract": (
        "You index an agent's memory files. Answer with one or two plain sentences saying what the "
        "memory is about and when it applies. No preamble, no Markdown."
    ),
    "overview": (
        "You index an agent's memory files. Answer with a short outline of the memory (at most ten "
        "lines of Markdown bullets): what it covers, its main steps or facts, and its rules."
    ),
}


@dataclass(frozen=True)
class FindQuery:
    text: str
    limit: int = 10
    targets: tuple[str, ...] = ()  # viking:// URIs of folders or files to search under
    memory_types: frozenset[str] | None = None
    peers: frozenset[str] | None = (
        None  # only memories of these (visible) peers; None: the user's and the visible peers'
    )
    statuses: frozenset[str] | None = None
    threshold: float | None = None
    context: str = ""  # what the session said lately (search with a session_id)
    dense: bool = True  # False: lexical only, even with an embedder


@dataclass(frozen=True, slots=True)
class Found:
    doc: MemoryDoc
    score: float
    abstract: str


class Retrieval:
    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: Embedder | None = None,
        fusion: Fusion | None = None,
        mix: Mix | None = None,
        summarize: Summarize | None = None,
        summary_model: str = "",
    ) -> None:
        self.store = store
        self.paths = store.paths
        self.embedder = embedder
        self.mix = mix
        self.index = MemoryIndex(store, fusion=fusion, dense=embedder is not None)
        self._vectors = (
            DigestLog(self.paths, f"{EMBEDDINGS_DIR}/{embedder.space}.bin", limit=MAX_VECTOR_CACHE_BYTES)
            if embedder is not None
            else None
        )
        self._summarize = summarize
        self._summaries = (
            DigestLog(
                self.paths,
                f"{ABSTRACTS_DIR}/{digest(summary_model).hex()[:16]}.bin",
                limit=MAX_ABSTRACT_CACHE_BYTES,
            )
            if summarize is not None
            else None
        )
        self._embedding = threading.Lock()
        self._query_vectors: OrderedDict[str, Any] = OrderedDict()
        self._warned = False

    # --- finding ------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        if self.embedder is not None:
            await self.embedder.aclose()

    async def find(self, query: FindQuery, visibility: Visibility) -> list[Found]:
        targets = tuple(self._target(uri, visibility) for uri in query.targets)
        only = query.peers

        def peer_visible(peer: str | None) -> bool:
            return (
                visibility.sees(peer)
                if only is None
                else peer is not None and peer in only and visibility.sees(peer)
            )

        filters = Filters(
            prefixes=tuple(t for t in targets if t is not None),
            memory_types=query.memory_types,
            statuses=query.statuses,
            peer_visible=peer_visible,
        )
        if query.targets and not filters.prefixes:
            return []  # only targets ovtui holds nothing under (OpenViking's resources, a session)
        texts = [t for t in (query.text, query.context) if t.strip()] if query.dense else []
        if self.embedder is None or not texts:
            # Lexical: refreshed and ranked in one trip to a thread; each trip costs two thread
            # wakeups, which on a busy machine are most of a find's time.
            return await asyncio.to_thread(self._found, query, filters, {}, refresh=True)
        await asyncio.to_thread(self.index.refresh)  # the vectors wanted are the refreshed index's
        vectors = await self._query_vectors_of(texts)
        return await asyncio.to_thread(self._found, query, filters, vectors)

    def _found(
        self, query: FindQuery, filters: Filters, vectors: dict[str, Any], *, refresh: bool = False
    ) -> list[Found]:
        """The ranked hits with their abstracts (file work: call it in a thread)."""
        if refresh:
            self.index.refresh()
        return [Found(h.doc, h.score, self.abstract_of(h.doc)) for h in self._rank(query, filters, vectors)]

    def _target(self, uri: str, visibility: Visibility) -> str | None:
        """A target folder's canonical URI; None for a scope ovtui holds nothing in."""
        try:
            return locate(self.paths, uri, visibility).uri
        except OvtuiError as exc:
            if getattr(exc, "code", "") == "NOT_FOUND":
                return None
            raise

    def _rank(self, query: FindQuery, filters: Filters, vectors: dict[str, Any]) -> list[Hit]:
        if not query.text.strip():
            return self.index.browse(filters, limit=query.limit)
        context = query.context.strip()
        found = self.index.search(
            stemmed_tokens(query.text),
            filters,
            limit=query.limit * 4 if context else query.limit,
            vector=vectors.get(query.text),
            threshold=query.threshold,
            mix=self.mix,
        )
        if not context:
            return found
        # What the session said lately counts next to the query: it reorders the query's hits and
        # brings in the memories it matches itself (a vague "what now?" after "my bag is lost").
        around = self.index.search(
            stemmed_tokens(context),
            filters,
            limit=query.limit * 4,
            vector=vectors.get(query.context),
            mix=self.mix,
        )
        docs = {h.doc.uri: h.doc for h in [*found, *around]}
        mine, theirs = {h.doc.uri: h.score for h in found}, {h.doc.uri: h.score for h in around}
        scored = [
            Hit(doc, (1 - CONTEXT_WEIGHT) * mine.get(uri, 0.0) + CONTEXT_WEIGHT * theirs.get(uri, 0.0))
            for uri, doc in docs.items()
        ]
        floor = query.threshold or 0.0
        return sorted((h for h in scored if h.score > floor), key=lambda h: (-h.score, h.doc.uri))[
            : query.limit
        ]

    async def _query_vectors_of(self, texts: Sequence[str]) -> dict[str, Any]:
        """Unit vectors of the query texts (none without an embedder, or when it fails)."""
        if self.embedder is None or not texts:
            return {}
        from ovtui.memory.retrieval.vectors import unit

        try:
            await self._embed_memories()
            missing = [t for t in texts if t not in self._query_vectors]
            if missing:
                for text, vector in zip(missing, await self.embedder.embed(missing), strict=True):
                    self._query_vectors[text] = unit(vector)
            while len(self._query_vectors) > QUERY_VECTORS_KEPT:
                self._query_vectors.popitem(last=False)
            return {t: self._query_vectors[t] for t in texts if t in self._query_vectors}
        except OvtuiError as exc:
            if not self._warned:
                log.warning("retrieval is lexical only until the embedder answers: %s", exc)
                self._warned = True
            return {}

    async def _embed_memories(self) -> None:
        """Vectors for the memories that have none: from the cache, else from the embedder."""
        assert self.embedder is not None and self._vectors is not None
        if not self._embedding.acquire(blocking=False):
            return  # another call is embedding them: this query ranks with what is there
        try:
            from ovtui.memory.retrieval.vectors import to_bytes, unit

            wanted = self.index.texts_to_embed()
            if not wanted:
                return
            space, cache = self.embedder.space, self._vectors
            keys = {uri: digest(space, text) for uri, (_, text) in wanted.items()}
            cached = await asyncio.to_thread(lambda: {uri: cache.get(key) for uri, key in keys.items()})
            ready = [(uri, wanted[uri][0], unit(raw)) for uri, raw in cached.items() if raw is not None]
            missing = [uri for uri, raw in cached.items() if raw is None]
            if missing:
                made = await self.embedder.embed([wanted[uri][1] for uri in missing])
                await asyncio.to_thread(
                    cache.put, [(keys[u], to_bytes(v)) for u, v in zip(missing, made, strict=True)]
                )
                ready += [(u, wanted[u][0], unit(v)) for u, v in zip(missing, made, strict=True)]
            self.index.put_vectors(ready)
            self._warned = False
        finally:
            self._embedding.release()

    # --- abstracts ----------------------------------------------------------------------------------
    def abstract_of(self, doc: MemoryDoc) -> str:
        """A memory's abstract: the model's when it made one already, else the deterministic one."""
        if self._summaries is not None:
            made = self._summaries.get(digest("abstract", doc.digest))
            if made is not None:
                return made.decode("utf-8")
        return doc.abstract

    def _indexed_abstract(self, uri: str) -> str | None:
        doc = self.index.get(uri)
        return None if doc is None else self.abstract_of(doc)

    async def summary(self, uri: str, visibility: Visibility, kind: SummaryKind) -> str:
        """``content/abstract`` and ``content/overview``: a memory file's by the model when one is
        configured (cached per content hash), else made without one, as is any folder's."""
        located = locate(self.paths, uri, visibility)
        await asyncio.to_thread(self.index.refresh)
        lister = self.lister(visibility)
        doc = self.index.get(located.uri)
        if doc is not None and self._summarize is not None and self._summaries is not None:
            key = digest(kind, doc.digest)
            made = await asyncio.to_thread(self._summaries.get, key)
            if made is not None:
                return made.decode("utf-8")
            text = await asyncio.to_thread(read, located)
            try:
                answer = cut((await self._summarize(kind, text)).strip(), 4000)
            except OvtuiError as exc:
                log.warning("%s of %s made without the model: %s", kind, located.uri, exc)
            else:
                if answer:
                    await asyncio.to_thread(self._summaries.put, [(key, answer.encode("utf-8"))])
                    return answer
        return await asyncio.to_thread(lister.abstract if kind == "abstract" else lister.overview, located)

    # --- reading ------------------------------------------------------------------------------------
    def lister(self, visibility: Visibility) -> Lister:
        return Lister(self.paths, visibility, self._indexed_abstract)

    def locate(self, uri: str, visibility: Visibility) -> Located:
        return locate(self.paths, uri, visibility)

    async def read(
        self, uri: str, visibility: Visibility, *, offset: int = 0, limit: int = -1, raw: bool = False
    ) -> tuple[Located, str]:
        located = locate(self.paths, uri, visibility)
        return located, await asyncio.to_thread(read, located, offset=offset, limit=limit, raw=raw)

    async def listing(self, uri: str, visibility: Visibility, options: ListOptions) -> tuple[list[Any], bool]:
        from ovtui.memory.retrieval.scopes import scope_listing

        above = await asyncio.to_thread(scope_listing, self.lister(visibility), self.paths, uri, options)
        if above is not None:
            return above
        located = locate(self.paths, uri, visibility)
        await asyncio.to_thread(self.index.refresh)
        return await asyncio.to_thread(self.lister(visibility).listing, located, options)

    async def stat(self, uri: str, visibility: Visibility) -> dict[str, Any]:
        located = locate(self.paths, uri, visibility)
        return await asyncio.to_thread(self.lister(visibility).stat, located)
