"""Phase 1 of a commit — the live messages become an archive that names its task — in one step
or not at all, and what a crash in it leaves, finished or taken back (the caller holds the
session's lock throughout).

The step:

1. ``archive_NNN/commit.json``: the task id, what is archived and kept, and the live file's size
   and SHA-256 before the commit;
2. ``archive_NNN/messages.jsonl``: the archived messages (a hard link of the live file when nothing
   is kept, so a full disk can still commit);
3. the live file removed, or rewritten with the kept newest messages — **the commit point**: the
   live file no longer is what ``commit.json`` says it was;
4. ``meta.json``: the commit count (the archive's number), times, the keep window.

A write that fails before 3 (a full disk) removes what 1–2 made: nothing archived, the messages in
place, the error naming the file. ``settle`` (the next writer of the session, before anything else)
looks at each archive numbered above the meta's count: one whose ``commit.json`` still describes
the live file never reached its commit point and is taken back; one whose live file changed gets
its meta (4). A folder without ``commit.json`` is an older ovtui's interrupted commit (its messages
go back live) or one made by hand (left alone).
"""

from __future__ import annotations

import errno
import hashlib
import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ovtui.protocols.sessions import SessionMessage, SessionMeta, now_iso
from ovtui.sessions.session_files import (
    COMMIT,
    MESSAGES,
    Archive,
    CommitRecord,
    LiveFile,
    SessionError,
    SessionFolder,
    archive_number,
    storage_error,
    sweep_temps,
)
from ovtui.storage import fsio


@dataclass(frozen=True)
class Skipped:
    """A commit that archived nothing: ``no_messages``, ``all_within_keep_window`` or ``not_due``."""

    reason: str


@dataclass(frozen=True)
class Committed:
    archive: Archive
    messages: list[SessionMessage]  # the archived ones
    record: CommitRecord
    kept: list[SessionMessage]


def settle(session: SessionFolder) -> tuple[SessionMeta, LiveFile]:
    """The session's meta and live file after finishing or taking back a commit a crash
    interrupted, repairing a torn last line and removing the temp files of killed writers."""
    meta = session.read_meta()
    sweep_temps(session.folder, root=session.paths.root)
    number = meta.commit_count + 1
    while True:
        archive = session.archive(f"archive_{number:03d}")
        if not archive.folder.is_dir() or _settle_one(session, archive, meta) == "undone":
            break
        number += 1
    return meta, session.repair_torn_line()


def _settle_one(
    session: SessionFolder, archive: Archive, meta: SessionMeta
) -> Literal["finished", "undone", "foreign"]:
    record = session.read_record(archive)
    live = session.live_path
    shown = session.shown(archive.folder)
    if record is not None:
        if live_unchanged(live, record):  # it never reached its commit point
            undo(session, archive)
            session.notice(f"{shown}: a commit interrupted before its commit point was taken back")
            return "undone"
        finish_meta(session, meta, archive, record)
        session.notice(f"{shown}: a commit interrupted after its commit point was completed")
        return "finished"
    if archive.messages_path.is_file():
        if live.is_file() and os.path.samefile(live, archive.messages_path):
            undo(session, archive)  # linked, the live file not removed yet
        elif not live.exists():
            link_or_copy(session, archive.messages_path, live)  # moved: it goes back
            undo(session, archive)
        else:
            return "foreign"
    elif all(fsio.is_temp_name(name) for name in os.listdir(archive.folder)):
        undo(session, archive)
    else:
        return "foreign"
    session.notice(f"{shown}: an interrupted commit was taken back; its messages are live again")
    return "undone"


def live_unchanged(live: Path, record: CommitRecord) -> bool:
    """Whether the live file still is what it was when ``record`` was written."""
    try:
        if live.stat().st_size != record.live_size:
            return False
        return hashlib.sha256(live.read_bytes()).hexdigest() == record.live_sha256
    except FileNotFoundError:
        return False


def finish_meta(session: SessionFolder, meta: SessionMeta, archive: Archive, record: CommitRecord) -> None:
    meta.commit_count = archive_number(archive.name)
    meta.last_commit_at = record.created_at
    meta.keep_recent_count = record.kept_messages
    if record.origin == "auto":
        meta.last_auto_commit_at = record.created_at
    meta.updated_at = now_iso()
    session.write_meta(meta)


def undo(session: SessionFolder, archive: Archive) -> None:
    """Remove what an unfinished commit put in its archive folder, and the folder."""
    root = session.paths.root
    for name in os.listdir(archive.folder):
        if name in (MESSAGES, COMMIT) or fsio.is_temp_name(name):
            fsio.remove_file(archive.folder / name, root=root, sync_dir=False)
    with suppress(OSError):  # a file ovtui did not make stays, and so does its folder
        os.rmdir(fsio.contained(archive.folder, root=root))
    fsio.fsync_dir(archive.folder.parent)


def link_or_copy(session: SessionFolder, source: Path, target: Path) -> None:
    root = session.paths.root
    src, dst = fsio.contained(source, root=root), fsio.contained(target, root=root)
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        fsio.atomic_write_bytes(dst, Path(src).read_bytes(), root=root, sync_dir=False)


def next_archive(session: SessionFolder, meta: SessionMeta) -> Archive:
    number = meta.commit_count + 1
    while True:  # archive numbers skip folders already there
        archive = session.archive(f"archive_{number:03d}")
        if not os.path.lexists(archive.folder):
            return archive
        number += 1


def commit_live(
    session: SessionFolder,
    meta: SessionMeta,
    live: LiveFile,
    *,
    keep: int,
    task_id: str | None,
    origin: Literal["api", "auto", "local"],
) -> Committed:
    """The step, for a session holding more than ``keep`` messages."""
    split = len(live.messages) - keep
    record = CommitRecord(
        task_id=task_id,
        origin=origin,
        archived_messages=split,
        kept_messages=keep,
        live_size=len(live.data),
        live_sha256=live.sha256,
        memory_policy=meta.policy().dump(),
    )
    archive = next_archive(session, meta)
    _archive_live(session, archive, live, record)
    try:
        finish_meta(session, meta, archive, record)  # its folder sync makes the commit point durable
    except SessionError as exc:  # the commit stands; the next writer of the session settles it
        with suppress(OSError):
            fsio.fsync_dir(session.folder)
        session.notice(f"{exc} (the commit of {archive.name} stands; its count is written next time)")
    return Committed(archive, live.messages[:split], record, live.messages[split:])


def _archive_live(session: SessionFolder, archive: Archive, live: LiveFile, record: CommitRecord) -> None:
    root = session.paths.root
    path = session.live_path
    cut = live.line_ends[record.archived_messages - 1]
    target = archive.record_path
    try:
        fsio.make_dirs(archive.folder, root=root)
        session.write_record(archive, record, sync_dir=False)
        fsio.crash_point("session_commit:recorded")
        target = archive.messages_path
        if record.kept_messages == 0:
            link_or_copy(session, path, archive.messages_path)
        else:
            fsio.atomic_write_bytes(archive.messages_path, live.data[:cut], root=root, sync_dir=False)
        fsio.fsync_dir(archive.folder)  # the record and the messages, durable before the commit point
        fsio.crash_point("session_commit:archived")
        target = path
        if record.kept_messages == 0:
            fsio.remove_file(path, root=root, sync_dir=False)
        else:
            fsio.atomic_write_bytes(path, live.data[cut:], root=root, sync_dir=False)
    except OSError as exc:
        if target == path and not live_unchanged(path, record):
            # Past the commit point (a folder sync failed after the live file changed): it stands.
            session.notice(f"{session.shown(path)}: {exc.strerror or exc} after the commit point")
            return
        with suppress(OSError):
            undo(session, archive)
        raise storage_error(session.shown(target), exc) from None
    fsio.crash_point("session_commit:live_replaced")


def renamed_task(session: SessionFolder, archive: Archive, meta: SessionMeta, task_id: str) -> CommitRecord:
    """The archive's record naming a new task (an archive of an older ovtui gets its first)."""
    record = session.read_record(archive)
    if record is None:
        data = archive.messages_path.read_bytes()
        record = CommitRecord(
            archived_messages=sum(1 for line in data.splitlines() if line.strip()),
            live_size=len(data),
            live_sha256=hashlib.sha256(data).hexdigest(),
            memory_policy=meta.policy().dump(),
        )
    earlier = [*record.earlier_task_ids, *([record.task_id] if record.task_id else [])]
    record = record.model_copy(update={"task_id": task_id, "origin": "api", "earlier_task_ids": earlier})
    try:
        session.write_record(archive, record)
    except OSError as exc:
        raise storage_error(session.shown(archive.record_path), exc) from None
    return record
