"""Sessions in the workspace: ``sessions/<id>/{meta.json, messages.jsonl}`` (the live session) and
``sessions/<id>/history/archive_NNN/{commit.json, messages.jsonl, memory_diff.json}`` (one per
commit; ``sessions.archiving`` says how one is made in one step or not at all).

A session id becomes a folder name, so it is checked by the workspace's one name rule (no
separators, no ``..``, no control characters, not a reserved device name, bounded length) before
anything touches the disk. Every write goes through ``ovtui.storage.fsio`` (inside the root,
links refused, atomic where a reader may look).

Appends are whole or absent: a batch is written by a loop that writes until every byte is out, and
a write that fails (a full disk) truncates the file back to where it was, as does a failed meta
write after it. What a kill leaves (a torn last line, an interrupted commit) is repaired by the
next writer of the session before it does anything else (``sessions.session_files``,
``sessions.archiving``), and said in one line to ``on_notice``.

A per-session file lock serialises appends and commits between processes (the server,
``ovtui commit``, the inbox) and between threads; taking it blocks, so callers run these methods in
worker threads, never on an event loop. How long to wait for a lock another holder keeps is the
caller's (``lock_wait``): ``LOCK_TIMEOUT`` by default, and with 0 a held lock is ``SessionLocked``
at once; a wait is reported to ``on_wait`` first.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout

from ovtui.core.bounds import MAX_ROLLOUT_BYTES
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.protocols.sessions import (
    AutoCommitPolicy,
    MemoryPolicy,
    SessionMessage,
    SessionMeta,
    message_tokens,
    now_iso,
)
from ovtui.sessions.archiving import Committed, Skipped, commit_live, renamed_task, settle
from ovtui.sessions.session_files import (
    ARCHIVE_RE,
    LOCK,
    META,
    SESSIONS_DIR,
    Archive,
    CommitRecord,
    SessionError,
    SessionFolder,
    SessionLocked,
    archive_number,
    check_session_id,
    read_messages,
    storage_error,
    sweep_temps,
)
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths

# What callers of the store use from the modules below it.
__all__ = [
    "LOCK_TIMEOUT",
    "Archive",
    "CommitRecord",
    "Committed",
    "LiveState",
    "SessionError",
    "SessionLocked",
    "SessionStore",
    "Skipped",
    "check_session_id",
    "lock_wait",
    "set_lock_wait",
]

MAX_SESSION_MESSAGES = 10_000
LOCK_TIMEOUT = 30.0

_lock_wait: ContextVar[float | None] = ContextVar("ovtui_session_lock_wait", default=None)


@contextmanager
def lock_wait(seconds: float) -> Iterator[None]:
    """Within this context (and the threads it starts with ``asyncio.to_thread``), a session's
    lock held elsewhere is waited for at most ``seconds``."""
    token = _lock_wait.set(seconds)
    try:
        yield
    finally:
        _lock_wait.reset(token)


def set_lock_wait(seconds: float) -> None:
    """``lock_wait`` for the rest of the current context (a copied context a thread runs in)."""
    _lock_wait.set(seconds)


def already_exists(session_id: str) -> SessionError:
    """OpenViking 0.5.2's refusal of a second session with one id: its session service raises
    ``AlreadyExistsError("Session '<id>' already exists")``, whose constructor prefixes the
    resource type and keeps the text as ``details.resource`` (409 ``ALREADY_EXISTS``)."""
    said = f"Session '{session_id}' already exists"
    return SessionError(
        f"Resource already exists: {said}",
        code="ALREADY_EXISTS",
        details={"resource": said, "type": "resource"},
    )


def new_session_id() -> str:
    return secrets.token_hex(8)


class LiveState:
    """A session as it stands: its meta and live messages."""

    def __init__(self, meta: SessionMeta, messages: list[SessionMessage]) -> None:
        self.meta = meta
        self.messages = messages

    @property
    def message_count(self) -> int:
        return len(self.messages)

    @property
    def pending_tokens(self) -> int:
        """The tokens of what a commit would archive now: all but the kept window's messages."""
        keep = self.meta.keep_recent_count
        pending = self.messages[: max(len(self.messages) - keep, 0)] if keep else self.messages
        return sum(message_tokens(m) for m in pending)

    def auto_commit_due(self, policy: AutoCommitPolicy) -> bool:
        """Whether a message write should commit the session by itself now."""
        tokens = self.pending_tokens
        if not (tokens > 0 or self.message_count > policy.keep_recent_count):
            return False
        last = self.meta.last_auto_commit_at
        if policy.min_commit_interval_seconds and last:
            since = (datetime.now(UTC) - datetime.fromisoformat(last)).total_seconds()
            if since < policy.min_commit_interval_seconds:
                return False
        return policy.due(message_count=self.message_count, pending_tokens=tokens)


class SessionStore:
    def __init__(
        self,
        paths: WorkspacePaths,
        *,
        on_wait: Callable[[str], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.paths = paths
        self.root = paths.root / SESSIONS_DIR
        self.on_wait = on_wait  # told the session id when its lock is held elsewhere and we wait
        self.on_notice = on_notice  # told what a repair did (a torn line put aside, a commit finished)
        self._locks: dict[str, FileLock] = {}

    def _notice(self, message: str) -> None:
        if self.on_notice is not None:
            self.on_notice(message)

    # --- locations ---
    def folder(self, session_id: str) -> Path:
        return self.root / check_session_id(session_id)

    def uri(self, session_id: str) -> str:
        return f"{self.paths.uri_prefix}{SESSIONS_DIR}/{check_session_id(session_id)}"

    def _session(self, session_id: str) -> SessionFolder:
        return SessionFolder(
            self.paths,
            check_session_id(session_id),
            self.folder(session_id),
            self.uri(session_id),
            self._notice,
        )

    def exists(self, session_id: str) -> bool:
        return (self.folder(session_id) / META).is_file()

    def _must_exist(self, session_id: str) -> None:
        if not self.exists(session_id):  # before the lock, which would make its folder
            raise SessionError(f"session {session_id!r} not found", code="NOT_FOUND")

    # --- the lock ---
    def _lock(self, session_id: str) -> FileLock:
        folder = self.folder(session_id)
        fsio.make_dirs(folder, root=self.paths.root)
        lock = self._locks.get(folder.name)
        if lock is None:  # one object per session: re-entrant within a thread
            lock = FileLock(fsio.contained(folder / LOCK, root=self.paths.root))
            self._locks[folder.name] = lock
        return lock

    @contextmanager
    def locked(self, session_id: str) -> Iterator[None]:
        lock = self._lock(session_id)
        try:
            self._acquire(session_id, lock)
        except OSError as exc:  # a read-only or full disk that cannot hold the lock file
            raise storage_error(self.paths.relative(Path(lock.lock_file)), exc) from None
        try:
            yield
        finally:
            lock.release()

    def _acquire(self, session_id: str, lock: FileLock) -> None:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            wait = _lock_wait.get()
            wait = LOCK_TIMEOUT if wait is None else wait
            if wait <= 0:
                raise SessionLocked(session_id, 0) from None
            if self.on_wait is not None:
                self.on_wait(session_id)
            try:
                lock.acquire(timeout=wait)
            except Timeout:
                raise SessionLocked(session_id, wait) from None

    @contextmanager
    def _locked_if_free(self, session_id: str) -> Iterator[bool]:
        try:
            lock = self._lock(session_id)
            lock.acquire(timeout=0)
        except (Timeout, OSError):  # held elsewhere, or a disk that cannot hold the lock file
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    # --- sessions ---
    def create(
        self,
        session_id: str | None = None,
        policy: MemoryPolicy | None = None,
        auto_commit: AutoCommitPolicy | Literal["unchanged"] | None = "unchanged",
        *,
        exclusive: bool = False,
    ) -> SessionMeta:
        """A new session. An existing id is refused when ``exclusive`` (OpenViking's create);
        otherwise it is returned as it is when no policy or the same one is given; another memory
        policy is refused rather than silently ignored (commits already made used the first); an
        auto-commit policy given replaces the session's."""
        session_id = check_session_id(session_id) if session_id else new_session_id()
        with self.locked(session_id):
            session = self._session(session_id)
            if exclusive and self.exists(session_id):
                raise already_exists(session_id)
            if self.exists(session_id):
                meta, _ = settle(session)
                if policy is not None and policy.dump() != meta.policy().dump():
                    raise SessionError(
                        f"memory_policy: session {session_id!r} exists with another memory_policy "
                        f"({meta.policy().dump()}); a session's policy is set when it is created",
                        code="FAILED_PRECONDITION",
                    )
                if auto_commit != "unchanged" and auto_commit != meta.auto_commit_policy:
                    meta.auto_commit_policy = auto_commit
                    session.write_meta(meta)
                return meta
            sweep_temps(session.folder, root=self.paths.root)  # a creation a kill cut short
            meta = SessionMeta(
                session_id=session_id,
                memory_policy=(policy or MemoryPolicy()).dump(),
                auto_commit_policy=None if auto_commit == "unchanged" else auto_commit,
            )
            session.write_meta(meta)
            return meta

    def ensure(self, session_id: str) -> SessionMeta:
        """OpenViking creates a missing session on its first message."""
        return self.meta(session_id) if self.exists(session_id) else self.create(session_id)

    def configure(self, session_id: str, auto_commit: AutoCommitPolicy | None) -> SessionMeta:
        """Set (or, with None, turn off) the session's automatic commits."""
        self._must_exist(session_id)
        with self.locked(session_id):
            session = self._session(session_id)
            meta, _ = settle(session)
            meta.auto_commit_policy = auto_commit
            meta.updated_at = now_iso()
            session.write_meta(meta)
            return meta

    def meta(self, session_id: str) -> SessionMeta:
        return self._session(session_id).read_meta()

    def list_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        ids = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            try:
                if entry.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(entry.path, META)):
                    ids.append(check_session_id(entry.name))
            except SessionError:
                continue  # a folder someone made by hand with a name ovtui would not give
        return ids

    def sweep_unborn(self) -> None:
        """Remove what a writer killed while creating a session left: its folder holds the lock and
        a temp file of its meta, and no meta (it is no session, so nothing else settles it); a
        folder left holding only the lock goes too. A session held by another process is left to
        it."""
        if not self.root.is_dir():
            return
        for entry in os.scandir(self.root):
            if not entry.is_dir(follow_symlinks=False) or os.path.isfile(os.path.join(entry.path, META)):
                continue
            try:
                session_id = check_session_id(entry.name)
            except SessionError:
                continue  # not a folder ovtui made
            with self._locked_if_free(session_id) as held:
                if held and not self.exists(session_id):
                    sweep_temps(Path(entry.path), root=self.paths.root)
                    if os.listdir(entry.path) == [LOCK]:  # nothing but the lock we hold
                        fsio.remove_file(Path(entry.path) / LOCK, root=self.paths.root)
                        os.rmdir(entry.path)
                        self._locks.pop(entry.name, None)

    # --- messages ---
    def messages(self, session_id: str, archive: Archive | None = None) -> list[SessionMessage]:
        """The messages of an archive, or of the live session (an unfinished last line skipped)."""
        if archive is not None:
            return read_messages(archive.messages_path, shown=self.paths.relative(archive.messages_path))
        return self._session(session_id).read_live().messages

    def live(self, session_id: str) -> LiveState:
        """The session as it stands. What a crash left is repaired first when nobody else is
        writing the session and the disk takes the repair; otherwise it is read as it is."""
        self._must_exist(session_id)
        session = self._session(session_id)
        with self._locked_if_free(session_id) as free:
            if free:
                try:
                    meta, live = settle(session)
                    return LiveState(meta, live.messages)
                except SessionError as exc:
                    if exc.code not in ("INSUFFICIENT_STORAGE", "UNAVAILABLE"):
                        raise
            return LiveState(session.read_meta(), session.read_live().messages)

    def append(self, session_id: str, messages: list[SessionMessage]) -> LiveState:
        """Append messages to the live session, all or none; returns the session as it now stands."""
        with self.locked(session_id):
            self.ensure(session_id)
            session = self._session(session_id)
            meta, live = settle(session)
            if len(live.messages) + len(messages) > MAX_SESSION_MESSAGES:
                raise SessionError(
                    f"session {session_id!r} would hold more than {MAX_SESSION_MESSAGES} messages: "
                    "commit it first",
                    code="FAILED_PRECONDITION",
                )
            data = "".join(m.model_dump_json() + "\n" for m in messages).encode()
            # The live file is read back whole (to commit it), so it never grows past what a read
            # accepts: a session that did would refuse every append and every commit after.
            if len(live.data) + len(data) > MAX_ROLLOUT_BYTES:
                raise SessionError(
                    f"session {session_id!r} would hold more than {MAX_ROLLOUT_BYTES} bytes of "
                    "messages: commit it first",
                    code="FAILED_PRECONDITION",
                )
            start = self._append_whole(session, data)
            meta.updated_at = meta.last_message_at = now_iso()
            meta.total_message_count += len(messages)
            try:
                session.write_meta(meta)
            except SessionError:
                self._truncate(session.live_path, start)  # the meta counts what the file holds
                raise
            return LiveState(meta, live.messages + messages)

    def _append_whole(self, session: SessionFolder, data: bytes) -> int:
        """Write every byte of ``data`` at the end of the live file, or none (truncated back);
        returns where it started."""
        path = session.live_path
        try:
            fd = fsio.open_in_place(path, os.O_WRONLY | os.O_APPEND, root=self.paths.root)
        except OSError as exc:
            raise storage_error(session.shown(path), exc) from None
        try:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                os.ftruncate(fd, start)
                raise storage_error(session.shown(path), exc) from None
        finally:
            os.close(fd)
        return start

    def _truncate(self, path: Path, size: int) -> None:
        fd = fsio.open_in_place(path, os.O_WRONLY, root=self.paths.root)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def next_message_id(self) -> str:
        return "msg_" + secrets.token_hex(8)

    # --- commits ---
    def commit(
        self,
        session_id: str,
        *,
        keep_recent_count: int = 0,
        task_id: str | None = None,
        origin: Literal["api", "auto", "local"] = "local",
        when: Callable[[LiveState], bool] | None = None,
    ) -> Committed | Skipped:
        """Phase 1 of a commit: all but the newest ``keep_recent_count`` live messages become the
        next archive, which names ``task_id``; the kept ones stay live. ``when`` (given the session
        as it stands) decides whether to commit at all."""
        self._must_exist(session_id)
        with self.locked(session_id):
            session = self._session(session_id)
            meta, live = settle(session)
            if when is not None and not when(LiveState(meta, live.messages)):
                return Skipped("not_due")
            if len(live.messages) <= keep_recent_count:
                if meta.keep_recent_count != keep_recent_count:  # the window asked for is remembered
                    meta.keep_recent_count = keep_recent_count
                    session.write_meta(meta)
                return Skipped("all_within_keep_window" if live.messages else "no_messages")
            return commit_live(session, meta, live, keep=keep_recent_count, task_id=task_id, origin=origin)

    def archive(self, session_id: str) -> tuple[Archive, list[SessionMessage]]:
        """A commit of every live message (``ovtui commit``, the inbox)."""
        done = self.commit(session_id)
        if isinstance(done, Skipped):
            raise SessionError(
                f"session {session_id!r} has no messages to commit", code="FAILED_PRECONDITION"
            )
        return done.archive, done.messages

    def archives(self, session_id: str) -> list[Archive]:
        history = self.folder(session_id) / "history"
        if not history.is_dir():
            return []
        session = self._session(session_id)
        found = []
        for entry in os.scandir(history):
            if ARCHIVE_RE.match(entry.name) and entry.is_dir(follow_symlinks=False):
                found.append(session.archive(entry.name))
        return sorted(found, key=lambda a: archive_number(a.name))

    def archive_named(self, session_id: str, name: str) -> Archive:
        archive_number(name)
        archive = self._session(session_id).archive(name)
        if not archive.messages_path.is_file():
            raise SessionError(f"session {session_id!r} has no archive {name!r}", code="NOT_FOUND")
        return archive

    def commit_record(self, archive: Archive) -> CommitRecord | None:
        return self._session(archive.session_id).read_record(archive)

    def resubmit(self, archive: Archive, task_id: str) -> CommitRecord:
        """Name a new task for an archive whose memories were never written (its task failed or
        was never recorded); refused once its memory_diff.json exists."""
        with self.locked(archive.session_id):
            session = self._session(archive.session_id)
            meta, _ = settle(session)
            if archive.diff_path.is_file():
                raise SessionError(
                    f"{archive.name} of session {archive.session_id!r} is committed already "
                    f"({self.paths.relative(archive.diff_path)} exists)",
                    code="FAILED_PRECONDITION",
                )
            return renamed_task(session, archive, meta, task_id)

    def awaiting_memories(self, session_id: str) -> list[tuple[Archive, CommitRecord]]:
        """The archives of the session with a commit record and no memory_diff.json, after what a
        crash left is settled (none when another process holds the session: it is at work)."""
        with self._locked_if_free(session_id) as free:
            if not free:
                self._notice(
                    f"session {session_id!r} is held by another process: its archives are not checked"
                )
                return []
            settle(self._session(session_id))
        found = []
        for archive in self.archives(session_id):
            if archive.diff_path.is_file():
                continue
            sweep_temps(archive.folder, root=self.paths.root)  # a memory_diff.json a kill cut short
            record = self.commit_record(archive)
            if record is not None:
                found.append((archive, record))
        return found

    def record_outcome(self, session_id: str, extracted: dict[str, int], usage: dict[str, int]) -> None:
        """Add what one commit's background phase extracted and spent to the session's totals."""
        with self.locked(session_id):
            session = self._session(session_id)
            meta, _ = settle(session)
            totals = meta.memories_extracted
            for memory_type, count in extracted.items():
                totals[memory_type] = totals.get(memory_type, 0) + count
            totals["total"] = sum(v for k, v in totals.items() if k != "total")
            for key in meta.llm_token_usage:
                meta.llm_token_usage[key] += int(usage.get(key, 0))
            meta.updated_at = now_iso()
            session.write_meta(meta)

    def write_diff(self, archive: Archive, diff: MemoryDiff) -> None:
        fsio.atomic_write_text(archive.diff_path, diff.render(), root=self.paths.root)

    def read_diff(self, archive: Archive) -> MemoryDiff | None:
        if not archive.diff_path.is_file():
            return None
        return MemoryDiff.model_validate_json(archive.diff_path.read_bytes())
