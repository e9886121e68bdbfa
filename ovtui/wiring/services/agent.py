"""What an agent reads back and hands in: find, session-aware search, read and its summaries,
listings, a session's context, archives and deletion, each for a ``Visibility``; every memory
served to a session recorded in the use ledger; a conversation file committed as a session; and a
server's session API (``open_sessions``: sessions, messages, commits and their tasks).

``ovtui serve``'s routes and ``ovtui mcp``'s tools call these; the coroutines keep the loop free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ovtui.core.errors import OvtuiError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ovtui.core.context import RunContext
    from ovtui.core.events import EventBus
    from ovtui.memory.ledger_state import Via
    from ovtui.memory.retrieval.access import Visibility
    from ovtui.memory.retrieval.content import ListOptions
    from ovtui.memory.retrieval.service import FindQuery, Found
    from ovtui.sessions.commit import CommitOutcome, SessionCommitter
    from ovtui.sessions.inbox import SessionInbox
    from ovtui.wiring.composition import Composition
    from ovtui.wiring.services.sessions import Sessions

RECENT_USER_MESSAGES = 3  # of a session, shaping the query of a search made for it


class AgentAPI:
    def __init__(self, parts: Composition) -> None:
        self.parts = parts

    def visibility(self, session_id: str | None = None, actor_peer: str | None = None) -> Visibility:
        """What a caller sees: its user's space, and the peers the session's MemoryPolicy allows
        (with ``actor_peer``, that one only if allowed), or with ``actor_peer`` alone that peer;
        otherwise no peer. An unknown session allows none."""
        from ovtui.memory.retrieval.access import Visibility, invalid_argument
        from ovtui.protocols.sessions import check_peer_id
        from ovtui.sessions.store import SessionError

        user = self.parts.paths.user
        try:
            actor = check_peer_id(actor_peer)
        except ValueError as exc:
            raise invalid_argument(f"X-OpenViking-Actor-Peer: {exc}") from None
        if session_id is None:
            return Visibility(user, frozenset({actor}) if actor else frozenset())
        try:
            policy = self.parts.sessions.meta(session_id).policy()
        except SessionError:
            return Visibility(user)
        if not policy.peer.enabled:
            return Visibility(user)
        if actor is not None:
            return Visibility(user, frozenset({actor}) if policy.allows_peer(actor) else frozenset())
        allowed = policy.peer.allowed_peer_ids
        return Visibility(user, every_peer=True) if allowed is None else Visibility(user, frozenset(allowed))

    def record_uses(self, consumer: str | None, uris: Sequence[str], via: Via) -> None:
        """The memories served to session ``consumer`` (a find, a search, a read, an MCP call): a
        use each, with the version of each experience as it is now, linked to the session's outcome
        when it is committed. A use without a consumer (a find no session asked for) is not one. A
        ledger that cannot be written is logged, naming the file; serving goes on. File work: call
        it in a thread."""
        if not consumer or not uris:
            return
        from ovtui.memory.experience_uris import owned_experience_uri
        from ovtui.memory.ledger_state import Use, session_consumer

        store = self.parts.store
        who = session_consumer(consumer)
        uses = []
        for uri in uris:
            version = None
            if owned_experience_uri(uri, store.paths.user) is not None:  # what Review asks about
                with suppress(OvtuiError, OSError):
                    memory = store.read_uri(uri)
                    version = memory.version if memory is not None else None
            uses.append(Use(uri, who, via, version))
        self.parts.ledger().try_record(uses)

    async def find(
        self, query: FindQuery, visibility: Visibility, consumer: str | None = None
    ) -> list[Found]:
        """The memories most relevant to ``query`` the caller may see; a consumer's are recorded."""
        found = await self.parts.retrieval.find(query, visibility)
        if consumer and found:  # a use is recorded for a consumer only: no thread trip without one
            await asyncio.to_thread(self.record_uses, consumer, [f.doc.uri for f in found], "find")
        return found

    async def search(
        self, query: FindQuery, visibility: Visibility, session_id: str | None, *, via: Via = "search"
    ) -> list[Found]:
        """``find`` for a session: its recent user messages shape the ranking; the hits are
        recorded as served to it (``via``: the route or tool that served them)."""
        context = await asyncio.to_thread(self._recent_user_text, session_id) if session_id else ""
        found = await self.parts.retrieval.find(replace(query, context=context), visibility)
        if session_id and found:
            await asyncio.to_thread(self.record_uses, session_id, [f.doc.uri for f in found], via)
        return found

    def _recent_user_text(self, session_id: str) -> str:
        from ovtui.sessions.store import SessionError

        sessions = self.parts.sessions
        try:
            messages = sessions.messages(session_id) if sessions.exists(session_id) else []
        except SessionError:
            return ""
        said = [m.text for m in messages if m.role == "user" and m.text.strip()]
        return "\n".join(said[-RECENT_USER_MESSAGES:])

    async def read(
        self,
        uri: str,
        visibility: Visibility,
        *,
        offset: int = 0,
        limit: int = -1,
        raw: bool = False,
        consumer: str | None = None,
        via: Via = "read",
    ) -> str:
        """A file's text (a memory without its MEMORY_FIELDS trailer unless ``raw``; a session's
        messages, an archive's memory_diff.json), ``limit`` lines from line ``offset``; a memory
        read for ``consumer`` is recorded as served to it."""
        located, text = await self.parts.retrieval.read(uri, visibility, offset=offset, limit=limit, raw=raw)
        if located.is_memory and consumer:
            await asyncio.to_thread(self.record_uses, consumer, [located.uri], via)
        return text

    async def write(self, uri: str, content: str, mode: str, visibility: Visibility) -> dict[str, Any]:
        """An agent's write of one memory file (``agent_writes``: the write rule, History, Review)."""
        from ovtui.wiring.services.agent_writes import AgentWrites

        return await AgentWrites(self.parts).write(uri, content, mode, visibility)

    async def forget(self, uri: str, visibility: Visibility) -> dict[str, Any]:
        """An agent's delete of one memory file, recorded so that a revert brings it back."""
        from ovtui.wiring.services.agent_writes import AgentWrites

        return await AgentWrites(self.parts).forget(uri, visibility)

    async def abstract(self, uri: str, visibility: Visibility) -> str:
        return await self.parts.retrieval.summary(uri, visibility, "abstract")

    async def overview(self, uri: str, visibility: Visibility) -> str:
        return await self.parts.retrieval.summary(uri, visibility, "overview")

    async def ls(self, uri: str, visibility: Visibility, options: ListOptions) -> tuple[list[Any], bool]:
        """A folder's entries (``options.recursive``: the tree below it) and whether more follow."""
        return await self.parts.retrieval.listing(uri, visibility, options)

    async def stat(self, uri: str, visibility: Visibility) -> dict[str, Any]:
        return await self.parts.retrieval.stat(uri, visibility)

    def open_sessions(
        self,
        run: RunContext,
        *,
        tasks_folder: Path | None = None,
        recoverable: bool = True,
        workers: int = 4,
        announce: Callable[[str], None] | None = None,
    ) -> Sessions:
        """The session API of one server, with its own task store (under ``tasks_folder``, by
        default the workspace's state folder), pool and committer (see ``services.sessions``)."""
        from ovtui.wiring.services.sessions import Sessions

        return Sessions(
            self.parts,
            run,
            tasks_folder=tasks_folder,
            recoverable=recoverable,
            workers=workers,
            announce=announce,
        )

    async def session_context(self, session_id: str, token_budget: int) -> dict[str, Any]:
        from ovtui.sessions.context import session_context

        return await asyncio.to_thread(session_context, self.parts.sessions, session_id, token_budget)

    async def session_archive(self, session_id: str, archive_id: str) -> dict[str, Any]:
        from ovtui.sessions.context import session_archive

        return await asyncio.to_thread(session_archive, self.parts.sessions, session_id, archive_id)

    async def delete_session(self, session_id: str) -> None:
        from ovtui.sessions.context import delete_session

        await asyncio.to_thread(delete_session, self.parts.sessions, session_id)

    # --- conversations handed in as files -------------------------------------------------------------
    async def commit(self, path: Path, session_id: str | None = None) -> CommitOutcome:
        """Commit a conversation file (a message per line) as session ``session_id`` (default: the
        file's name), the way the session API commits one: archived, extracted, trained, recorded."""
        from ovtui.core.context import RunContext
        from ovtui.core.events import EventBus
        from ovtui.sessions.inbox import commit_messages, read_conversation, session_of

        sessions = self.parts.sessions
        session = session_of(path, session_id)
        messages = await asyncio.to_thread(read_conversation, path, sessions)
        committer = self.parts.session_committer(RunContext(None, EventBus(), asyncio.Event()))
        try:
            return await commit_messages(committer, session, messages)
        finally:
            await committer.close()

    def session_inbox(self, committer: SessionCommitter, events: EventBus) -> SessionInbox:
        """``inbox/sessions/``: each conversation file dropped there committed by ``committer``."""
        from ovtui.sessions.inbox import SessionInbox

        return SessionInbox(self.parts.paths, committer, events)
