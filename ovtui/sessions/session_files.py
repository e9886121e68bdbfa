"""The files of one session and how they are read and written: ``meta.json``, the live
``messages.jsonl``, and each archive's ``commit.json`` and ``messages.jsonl``.

A live file is read whole (a commit archives it whole; it never grows past what a read accepts).
Every whole line is a message — a bad one is an error naming the file and line — and a last line
without its newline is an append still being written, or one a kill cut short: readers skip it,
and the next writer of the session (holding its lock) repairs it: a whole message that only lacks
its newline gets one; anything else moves to ``messages.jsonl.torn-<time>`` beside it, said in
one line, and the rest of the session stays usable.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ovtui.core.bounds import MAX_ROLLOUT_BYTES
from ovtui.core.errors import OvtuiError, UnsafePathError, first_problem
from ovtui.core.names import validate_name
from ovtui.protocols.sessions import MemoryPolicy, SessionMessage, SessionMeta, now_iso
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import jsonl_lines, read_bounded

Line = TypeVar("Line", bound=BaseModel)

SESSIONS_DIR = "sessions"
MESSAGES = "messages.jsonl"
META = "meta.json"
LOCK = "lock"
DIFF = "memory_diff.json"
COMMIT = "commit.json"
TORN = ".torn-"  # messages.jsonl.torn-<time>: a last line an interrupted write cut short
ARCHIVE_RE = re.compile(r"^archive_(\d{3,})$")
OUT_OF_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


class SessionError(OvtuiError):
    """A session request that cannot be done (unknown session, a file that cannot be written)."""

    def __init__(
        self, message: str, code: str = "INVALID_ARGUMENT", details: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = details  # what OpenViking's error of the same kind carries besides its message


class SessionLocked(SessionError):
    """Another holder keeps the session's lock past the caller's wait."""

    def __init__(self, session_id: str, waited: float) -> None:
        after = f" for more than {waited:g} s" if waited > 0 else ""
        super().__init__(
            f"session {session_id!r} is locked by another writer{after}: try again", code="UNAVAILABLE"
        )
        self.session_id = session_id


def storage_error(shown: str, exc: OSError) -> SessionError:
    """An OSError of a session write as one line naming the file; a full disk has its own code."""
    code = "INSUFFICIENT_STORAGE" if exc.errno in OUT_OF_SPACE else "UNAVAILABLE"
    return SessionError(f"{shown}: cannot write: {exc.strerror or exc}", code=code)


def check_session_id(session_id: str) -> str:
    try:
        return validate_name(session_id, what="session_id")
    except UnsafePathError as exc:
        raise SessionError(str(exc)) from None


def archive_number(name: str) -> int:
    match = ARCHIVE_RE.match(name)
    if match is None:
        raise SessionError(f"archive_id: {name[:40]!r} is not an archive name (archive_001)")
    return int(match.group(1))


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

    @property
    def record_path(self) -> Path:
        return self.folder / COMMIT


class CommitRecord(BaseModel):
    """``archive_NNN/commit.json``: the commit's task and what the live file was before it."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = None
    # api / auto: the server's task store has the task (or its start must queue it); local: a
    # commit of ``ovtui commit`` or the inbox, processed in place.
    origin: Literal["api", "auto", "local"] = "local"
    created_at: str = Field(default_factory=now_iso)
    archived_messages: int
    kept_messages: int = 0
    live_size: int
    live_sha256: str
    memory_policy: dict[str, object] = Field(default_factory=lambda: MemoryPolicy().dump())
    earlier_task_ids: list[str] = Field(default_factory=list)  # tasks of this archive before a resubmit

    def policy(self) -> MemoryPolicy:
        return MemoryPolicy.model_validate(self.memory_policy)


@dataclass(frozen=True)
class LiveFile:
    """The live file as read: its whole lines, their messages and where each line ends."""

    data: bytes
    messages: list[SessionMessage]
    line_ends: list[int]
    torn: bytes  # an unfinished last line (no newline): being written, or cut short by a crash

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class SessionFolder:
    """One session's folder: where its files are, and their reads and writes."""

    paths: WorkspacePaths
    session_id: str
    folder: Path
    uri: str
    notice: Callable[[str], None]

    @property
    def live_path(self) -> Path:
        return self.folder / MESSAGES

    @property
    def meta_path(self) -> Path:
        return self.folder / META

    def shown(self, path: Path) -> str:
        return self.paths.relative(path)

    def archive(self, name: str) -> Archive:
        return Archive(self.session_id, name, self.folder / "history" / name, f"{self.uri}/history/{name}")

    def read_meta(self) -> SessionMeta:
        try:
            data = self.meta_path.read_bytes()
        except FileNotFoundError:
            raise SessionError(f"session {self.session_id!r} not found", code="NOT_FOUND") from None
        try:
            return SessionMeta.model_validate_json(data)
        except ValidationError as exc:
            raise SessionError(
                f"{self.shown(self.meta_path)}: not a session meta file ({exc.errors()[0]['msg']})"
            ) from None

    def write_meta(self, meta: SessionMeta) -> None:
        try:
            text = meta.model_dump_json(indent=2) + "\n"
            fsio.atomic_write_text(self.meta_path, text, root=self.paths.root)
        except OSError as exc:
            raise storage_error(self.shown(self.meta_path), exc) from None

    def read_live(self) -> LiveFile:
        return read_live_file(self.live_path, shown=self.shown(self.live_path))

    def read_record(self, archive: Archive) -> CommitRecord | None:
        try:
            return CommitRecord.model_validate_json(archive.record_path.read_bytes())
        except FileNotFoundError:
            return None
        except ValidationError as exc:
            raise SessionError(f"{self.shown(archive.record_path)}: {first_problem(exc)}") from None

    def write_record(self, archive: Archive, record: CommitRecord, *, sync_dir: bool = True) -> None:
        text = record.model_dump_json(indent=1) + "\n"
        fsio.atomic_write_text(archive.record_path, text, root=self.paths.root, sync_dir=sync_dir)

    def repair_torn_line(self) -> LiveFile:
        """The live file with an unfinished last line repaired (the caller holds the lock)."""
        live = self.read_live()
        if not live.torn:
            return live
        try:
            whole = SessionMessage.model_validate_json(live.torn)
        except ValidationError:
            whole = None
        aside = self.live_path.with_name(f"{MESSAGES}{TORN}{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}")
        try:
            if whole is None:
                fsio.atomic_write_bytes(aside, live.torn, root=self.paths.root)
            fd = fsio.open_in_place(self.live_path, os.O_WRONLY, root=self.paths.root)
            try:
                if whole is None:
                    os.ftruncate(fd, len(live.data))
                else:  # a whole message that only lacks its newline: kept
                    os.lseek(fd, 0, os.SEEK_END)
                    os.write(fd, b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise storage_error(self.shown(self.live_path), exc) from None
        if whole is not None:
            return self.read_live()
        self.notice(
            f"{self.shown(self.live_path)}: its last line ({len(live.torn)} bytes) was cut short by an "
            f"interrupted write; kept as {self.shown(aside)}, the rest of the session is intact"
        )
        return LiveFile(live.data, live.messages, live.line_ends, b"")


def sweep_temps(folder: Path, *, root: Path) -> None:
    """Remove the temp files in ``folder`` that a writer killed mid-write left (its process gone)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        writer = fsio.temp_writer(name)
        if writer is not None and not fsio.writer_alive(writer):
            fsio.remove_file(folder / name, root=root, sync_dir=False)


def read_live_file(path: Path, *, shown: str) -> LiveFile:
    """A live messages file: every whole line a message (a bad one an error naming the file and
    line), an unfinished last line set aside as ``torn``."""
    try:
        data = read_bounded(path, MAX_ROLLOUT_BYTES, what="the session", shown=shown)
    except FileNotFoundError:
        return LiveFile(b"", [], [], b"")
    except OvtuiError as exc:
        raise SessionError(str(exc)) from None
    end = data.rfind(b"\n") + 1
    messages: list[SessionMessage] = []
    line_ends: list[int] = []
    offset = 0
    for number, line in enumerate(data[:end].split(b"\n")[:-1], start=1):
        offset += len(line) + 1
        if not line.strip():
            continue
        try:
            messages.append(SessionMessage.model_validate_json(line))
        except ValidationError as exc:
            raise SessionError(f"{shown}:{number}: {first_problem(exc)}") from None
        line_ends.append(offset)
    return LiveFile(data[:end], messages, line_ends, data[end:])


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
