"""Commit a change set and its history record in one journaled transaction.

Shared by the policy updaters and revert: both stage file changes under the workspace lock, then
call ``commit_record``. Recovery of an earlier interrupted commit runs first (``prepare``).
"""

from __future__ import annotations

import threading

from ovtui.memory.chain import seal
from ovtui.memory.history import HistoryEntry, HistoryStore
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.storage.journal import FileOp, Journal, RecoveryReport, recover, sha256_text
from ovtui.storage.paths import WorkspacePaths

_swept: set[str] = set()
_swept_guard = threading.Lock()


def prepare(paths: WorkspacePaths) -> RecoveryReport:
    """Recover before an apply (caller holds the lock). The first call per workspace and process
    also sweeps stale temp files from every memory folder; later calls only look at the journal,
    so an apply never rescans the workspace."""
    key = str(paths.root)
    with _swept_guard:
        first = key not in _swept
        _swept.add(key)
    return recover(paths, sweep=first)


def record_ops(paths: WorkspacePaths, record: MemoryDiff) -> list[FileOp]:
    """The writes a record describes. Files are written from the record itself, so what is on
    disk and what the audit trail says can never disagree (a filtered no-op is not written)."""
    ops = record.operations
    rel = paths.relative_of  # lexical; the journal checks containment before writing
    return [
        *(FileOp(rel(o.uri), "write", o.after, None) for o in ops.adds),
        *(FileOp(rel(o.uri), "write", o.after, sha256_text(o.before)) for o in ops.updates),
        *(FileOp(rel(o.uri), "delete", None, sha256_text(o.deleted_content)) for o in ops.deletes),
    ]


def commit_record(
    paths: WorkspacePaths, record: MemoryDiff, record_id: str, *, dry_run: bool = False
) -> None:
    """Perform the record's writes (unless ``dry_run``) and store the record, chained to the one
    before it, all-or-nothing; then index it."""
    history = HistoryStore(paths)
    ops = [] if dry_run else record_ops(paths, record)
    # The record is linked into the history's hash chain in the same transaction: a crash leaves
    # either the files, the record and the chain's new head, or none of them.
    ops += seal(history, record, record_id)
    Journal(paths).commit(ops, txid=record_id)
    # After the commit: a crash here only loses an index line, which the next listing restores.
    history.append_index(HistoryEntry.from_record(record_id, record))
