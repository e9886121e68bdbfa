"""Sessions in the workspace: ``sessions/<id>/{meta.json, messages.jsonl}`` (the live session) and
``sessions/<id>/history/archive_NNN/{messages.jsonl, memory_diff.json}`` (one per commit).

A session id becomes a folder name, so it is checked by the workspace's one name rule (no
separators, no ``..``, no control characters, not a reserved device name, bounded length) before
anything touches the disk. Every write goes through ``ovtui.storage.fsio`` (inside the root,
links refused, atomic where a reader may look).

Phase 1 of a commit (``archive``) moves the live ``messages.jsonl`` into the next archive folder
with one link-then-unlink: a crash between the two leaves the live file as a second link of the
archived one, which the next open of the session recognises (link count 2) and drops, so no
message is ever committed twice or lost. A per-session file lock serialises appends and archives
between processes (the server, ``ovtui commit``, the inbox) and between threads; taking it blocks, so
the server calls these methods in worker threads, never on its event loop. A lock another holder
keeps is reported once to ``on_wait`` before the wait, and one still held after ``LOCK_TIMEOUT``
is an ``UNAVAILABLE`` error naming the session.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, ValidationError

from ovtui.core.bounds import MAX_ROLLOUT_BYTES
from ovtui.core.errors import OvtuiError, UnsafePathError, first_problem
from ovtui.core.names import validate_name
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.protocols.sessions import MemoryPolicy, SessionMessage, SessionMeta, now_iso
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import jsonl_lines

Line = TypeVar("Line", bound=BaseModel)

SESSIONS_DIR = "sessions"
MESSAGES = "messages.jsonl"
META = "meta.json"
LOCK = "lock"
DIFF = "memory_diff.json"
ARCHIVE_RE = re.compile(r"^archive_(\d{3,})$")
MAX_SESSION_MESSAGES = 10_000
LOCK_TIMEOUT = 30.0


class SessionError(OvtuiError):
    """A session request that cannot be done (unknown session, nothing to commit)."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.code = code


def check_session_id(session_id: str) -> str:
    try:
        return validate_name(session_id, what="session_id")
    except UnsafePathError as exc:
        raise SessionError(str(exc)) from None


def new_session_id() -> str:
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Archive:
    session_id: str
    name: str  # archive_NNN
    folder: Path
    uri: str

    @property
    def messages_path(self) -> Path:
        return self.folder / MESSAGES

    @property
    def diff_path(self) -> Path:
        return self.folder / DIFF


class SessionStore:
    def __init__(self, paths: WorkspacePaths, *, on_wait: Callable[[str], None] | None = None) -> None:
        self.paths = paths
        self.root = paths.root / SESSIONS_DIR
        self.on_wait = on_wait  # told the session id when its lock is held elsewhere and we wait
        self._locks: dict[str, FileLock] = {}

    # --- locations ---
    def folder(self, session_id: str) -> Path:
        return self.root / check_session_id(session_id)

    def uri(self, session_id: str) -> str:
        return f"{self.paths.uri_prefix}{SESSIONS_DIR}/{check_session_id(session_id)}"

    def exists(self, session_id: str) -> bool:
        return (self.folder(session_id) / META).is_file()

    @contextmanager
    def locked(self, session_id: str) -> Iterator[None]:
        folder = self.folder(session_id)
        fsio.make_dirs(folder, root=self.paths.root)
        lock = self._locks.get(folder.name)
        if lock is None:  # one object per session: re-entrant within this process
            lock = FileLock(fsio.contained(folder / LOCK, root=self.paths.root))
            self._locks[folder.name] = lock
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if self.on_wait is not None:
                self.on_wait(folder.name)
            try:
                lock.acquire(timeout=LOCK_TIMEOUT)
            except Timeout:
                raise SessionError(
                    f"session {folder.name!r} is locked by another writer for more than {LOCK_TIMEOUT:g} s",
                    code="UNAVAILABLE",
                ) from None
        try:
            yield
        finally:
            lock.release()

    # --- sessions ---
    def create(self, session_id: str | None = None, policy: MemoryPolicy | None = None) -> SessionMeta:
        """A new session. An existing id is returned as it is when no policy or the same one is
        given; another policy is refused rather than silently ignored (commits already made used
        the first)."""
        session_id = check_session_id(session_id) if session_id else new_session_id()
        with self.locked(session_id):
            if self.exists(session_id):
                meta = self.meta(session_id)
                if policy is not None and policy.dump() != meta.policy().dump():
                    raise SessionError(
                        f"memory_policy: session {session_id!r} exists with another memory_policy "
                        f"({meta.policy().dump()}); a session's policy is set when it is created",
                        code="FAILED_PRECONDITION",
                    )
                return meta
            meta = SessionMeta(session_id=session_id, memory_policy=(policy or MemoryPolicy()).dump())
            self._write_meta(meta)
            return meta

    def ensure(self, session_id: str) -> SessionMeta:
        """OpenViking creates a missing session on its first message."""
        return self.meta(session_id) if self.exists(session_id) else self.create(session_id)

    def meta(self, session_id: str) -> SessionMeta:
        path = self.folder(session_id) / META
        if not path.is_file():
            raise SessionError(f"session {session_id!r} not found", code="NOT_FOUND")
        try:
            return SessionMeta.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            raise SessionError(
                f"{self.paths.relative(path)}: not a session meta file ({exc.errors()[0]['msg']})"
            ) from None

    def _write_meta(self, meta: SessionMeta) -> None:
        path = self.folder(meta.session_id) / META
        fsio.atomic_write_text(path, meta.model_dump_json(indent=2) + "\n", root=self.paths.root)

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

    # --- messages ---
    def _drop_archived_link(self, session_id: str) -> None:
        """A crash between the two steps of ``archive`` leaves the live file linked to the archive."""
        live = self.folder(session_id) / MESSAGES
        try:
            if os.lstat(live).st_nlink > 1:
                fsio.remove_file(live, root=self.paths.root)
        except FileNotFoundError:
            return

    def messages(self, session_id: str, archive: Archive | None = None) -> list[SessionMessage]:
        path = archive.messages_path if archive else self.folder(session_id) / MESSAGES
        if archive is None:
            self._drop_archived_link(session_id)
        return read_messages(path, shown=self.paths.relative(path))

    def append(self, session_id: str, messages: list[SessionMessage]) -> int:
        """Append messages to the live session; returns how many it now holds."""
        with self.locked(session_id):
            meta = self.ensure(session_id)
            self._drop_archived_link(session_id)
            path = self.folder(session_id) / MESSAGES
            count = len(self.messages(session_id))
            if count + len(messages) > MAX_SESSION_MESSAGES:
                raise SessionError(
                    f"session {session_id!r} would hold more than {MAX_SESSION_MESSAGES} messages: "
                    "commit it first",
                    code="FAILED_PRECONDITION",
                )
            data = "".join(m.model_dump_json() + "\n" for m in messages).encode()
            # The live file is read back whole (to commit it), so it never grows past what a read
            # accepts: a session that did would refuse every append and every commit after.
            size = path.stat().st_size if path.is_file() else 0
            if size + len(data) > MAX_ROLLOUT_BYTES:
                raise SessionError(
                    f"session {session_id!r} would hold more than {MAX_ROLLOUT_BYTES} bytes of "
                    "messages: commit it first",
                    code="FAILED_PRECONDITION",
                )
            fd = fsio.open_in_place(path, os.O_WRONLY | os.O_APPEND, root=self.paths.root)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            meta.updated_at = now_iso()
            self._write_meta(meta)
            return count + len(messages)

    def next_message_id(self) -> str:
        return "msg_" + secrets.token_hex(8)

    # --- archives ---
    def archives(self, session_id: str) -> list[Archive]:
        history = self.folder(session_id) / "history"
        if not history.is_dir():
            return []
        found = []
        for entry in os.scandir(history):
            match = ARCHIVE_RE.match(entry.name)
            if match and entry.is_dir(follow_symlinks=False):
                found.append((int(match.group(1)), self._archive(session_id, entry.name)))
        return [a for _, a in sorted(found, key=lambda pair: pair[0])]

    def _archive(self, session_id: str, name: str) -> Archive:
        folder = self.folder(session_id) / "history" / name
        return Archive(session_id, name, folder, f"{self.uri(session_id)}/history/{name}")

    def archive(self, session_id: str) -> tuple[Archive, list[SessionMessage]]:
        """Phase 1 of a commit: the live messages become the next archive; the session is empty again."""
        with self.locked(session_id):
            meta = self.meta(session_id)
            messages = self.messages(session_id)
            if not messages:
                raise SessionError(
                    f"session {session_id!r} has no messages to commit", code="FAILED_PRECONDITION"
                )
            done = self.archives(session_id)
            last = int(ARCHIVE_RE.match(done[-1].name).group(1)) if done else 0  # type: ignore[union-attr]
            archive = self._archive(session_id, f"archive_{last + 1:03d}")
            fsio.move_file(self.folder(session_id) / MESSAGES, archive.messages_path, root=self.paths.root)
            fsio.fsync_dir(archive.folder)
            meta.commit_count += 1
            meta.updated_at = now_iso()
            self._write_meta(meta)
            return archive, messages

    def write_diff(self, archive: Archive, diff: MemoryDiff) -> None:
        fsio.atomic_write_text(archive.diff_path, diff.render(), root=self.paths.root)

    def read_diff(self, archive: Archive) -> MemoryDiff | None:
        if not archive.diff_path.is_file():
            return None
        return MemoryDiff.model_validate_json(archive.diff_path.read_bytes())


def read_messages(path: Path, *, shown: str) -> list[SessionMessage]:
    """The messages of a JSONL file (none when it does not exist)."""
    return read_jsonl(path, SessionMessage, shown=shown) if path.is_file() else []


def read_jsonl(path: Path, model: type[Line], *, shown: str) -> list[Line]:
    """Each line of a JSONL file as ``model``; a file or line too large, or a bad line, is an error
    naming the file and line."""
    if path.stat().st_size > MAX_ROLLOUT_BYTES:
        raise SessionError(f"{shown}: larger than the {MAX_ROLLOUT_BYTES} byte limit")
    out = []
    for number, line in jsonl_lines(path, MAX_ROLLOUT_BYTES):
        if line is None:
            raise SessionError(f"{shown}:{number}: line is too long")
        try:
            out.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise SessionError(f"{shown}:{number}: {first_problem(exc)}") from None
    return out
