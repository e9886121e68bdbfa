"""MemoryFilePolicyUpdater and DryRunPolicyUpdater: the only writers of planned memory changes.

Under the workspace lock: recover any interrupted apply, re-read every target, compare-and-swap
each item against what it was planned on, stage the target files (of any declared type) and the
trajectory backlinks,
then commit the files and the memory_diff record in one journal transaction. The dry-run updater
does the same checks and writes only the record. Neither holds the lock across anything but file
work, and both run that work in a thread so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ovtui.core.context import ApplyOptions
from ovtui.core.domain import ExperienceSet, Model, PolicyApplyResult, PolicyUpdatePlan
from ovtui.core.experience_files import experience_from_file
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.history import HistoryStore, new_history_id
from ovtui.memory.memory_diff import (
    ITEM_REFUSED,
    STALE_BASE,
    UNCHANGED,
    FileChange,
    Review,
    SkippedOperation,
    build_memory_diff,
)
from ovtui.memory.store import MemoryStore
from ovtui.memory.transaction import commit_record, prepare
from ovtui.memory.types import EXPERIENCES
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_staging import PlanStager, StagedPlan
from ovtui.train.revalidation import LEARNED_AGAINST


def _utcnow() -> datetime:
    return datetime.now(UTC)


class MemoryFilePolicyUpdater:
    dry_run = False

    def __init__(
        self,
        store: MemoryStore,
        *,
        clock: Callable[[], datetime] = _utcnow,
        learned_against: Callable[[], Model] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        # What the experiences written are learned against, recorded in each record
        # (``ovtui.train.revalidation``); None: not said (a session's own memories).
        self.learned_against = learned_against

    async def apply(
        self, plan: PolicyUpdatePlan, policy_set: ExperienceSet | None, options: ApplyOptions | None = None
    ) -> PolicyApplyResult:
        if not plan.items and not self.dry_run and policy_set is not None:
            # Nothing to write, so nothing to lock or recover for: a trainer plans many of these.
            return self._result(StagedPlan(), [], None, policy_set)
        options = (options or ApplyOptions()).for_plan(plan)
        # Read before the lock is taken: the lock is held across the files' work only.
        learned = None
        if self.learned_against is not None and not self.dry_run:
            learned = (await asyncio.to_thread(self.learned_against)).model_dump()
        async with self.store.lock.held(options.purpose, options.lock_timeout):
            staged, changes, record_id = await asyncio.to_thread(self._apply_locked, plan, options, learned)
        return await asyncio.to_thread(self._result, staged, changes, record_id, policy_set)

    # --- under the lock ----------------------------------------------------------------------
    def _apply_locked(
        self, plan: PolicyUpdatePlan, options: ApplyOptions, learned: dict[str, Any] | None
    ) -> tuple[StagedPlan, list[FileChange], str | None]:
        prepare(self.store.paths)
        now = self.clock()
        stager = PlanStager(self.store, now=lambda: now)
        for index, item in enumerate(plan.items):
            stager.stage(index, item)
        staged = stager.plan
        changes = staged.changes()
        if not changes and not self.dry_run:
            return staged, changes, None  # a plan that changed nothing leaves no history record
        record_id = new_history_id(now)
        kind = "dry_run" if self.dry_run else options.kind
        metadata: dict[str, Any] = {}
        if staged.item_errors:
            metadata["item_errors"] = [self._audited(e.model_dump(), options) for e in staged.item_errors]
        if staged.warnings:
            metadata["warnings"] = list(staged.warnings)
        if learned is not None:
            metadata[LEARNED_AGAINST] = learned
        review = Review(
            plan_id=options.plan_id,
            dry_run=self.dry_run,
            decisions=options.decisions,
            item_indices=options.item_indices,
        )
        record = build_memory_diff(
            changes,
            kind=kind,
            trace_id=options.trace_id or "",
            archive_uri=options.archive_uri or HistoryStore(self.store.paths).record_uri(record_id),
            review=review,
            metadata=metadata,
            now=now,
            filter_noops=False,  # staging compared each item already, without re-parsing the texts
            skipped=skipped_items(plan, staged),
        )
        commit_record(self.store.paths, record, record_id, dry_run=self.dry_run)
        return staged, changes, record_id

    @staticmethod
    def _audited(error: dict[str, Any], options: ApplyOptions) -> dict[str, Any]:
        indices = options.item_indices
        if indices is not None and 0 <= error["item"] < len(indices):
            error["plan_item"] = indices[error["item"]]
        return error

    # --- the result --------------------------------------------------------------------------
    def _result(
        self,
        staged: StagedPlan,
        changes: list[FileChange],
        record_id: str | None,
        policy_set: ExperienceSet | None,
    ) -> PolicyApplyResult:
        targeted = [c for c in changes if c.uri in staged.targets]
        written = [c.uri for c in targeted if c.after is not None]
        deleted = [c.uri for c in targeted if c.after is None]
        metadata: dict[str, Any] = {}
        if staged.unchanged:
            metadata["unchanged_uris"] = staged.unchanged
        if staged.warnings:
            metadata["warnings"] = staged.warnings
        linked = [c.uri for c in changes if c.uri not in staged.targets]
        if linked:
            metadata["linked_uris"] = linked
        errors = [f"item {e.item} ({e.target}): {e.message}" for e in staged.item_errors]
        updated = (
            policy_set if self.dry_run and policy_set is not None else self._updated_set(policy_set, staged)
        )
        return PolicyApplyResult(
            updated_policy_set=updated,
            written_uris=written,
            deleted_uris=deleted,
            errors=errors,
            item_errors=staged.item_errors,
            dry_run=self.dry_run,
            history_id=record_id,
            metadata=metadata,
        )

    def _updated_set(self, base: ExperienceSet | None, staged: StagedPlan) -> ExperienceSet:
        """Patch the caller's set (read from this workspace) with what was written instead of
        re-reading every file (a 10,000-file reload per apply would dominate); no set: load one."""
        if base is None:
            return ExperienceSetLoader(self.store).load_sync()
        changed = {f.uri: f for f in staged.files.values() if f.touched and f.memory_type == EXPERIENCES}
        if not changed:
            return base  # a snapshot is never mutated, so an unchanged one can be shared
        return patch_experience_set(base, {uri: f.memory for uri, f in changed.items()})


def skipped_items(plan: PolicyUpdatePlan, staged: StagedPlan) -> list[SkippedOperation]:
    """The items of ``plan`` that wrote nothing: those whose file already said it, and those
    refused (a compare-and-swap conflict, or the reason the item could not be staged)."""
    skipped = [
        SkippedOperation(
            memory_type=staged.files[uri].memory_type,
            uri=uri,
            reason_code=UNCHANGED,
            reason="the file already says this",
        )
        for uri in staged.unchanged
    ]
    for error in staged.item_errors:
        item = plan.items[error.item] if 0 <= error.item < len(plan.items) else None
        skipped.append(
            SkippedOperation(
                memory_type=item.memory_type if item is not None else "",
                uri=item.target_uri if item is not None else None,
                reason_code=STALE_BASE if error.stale else ITEM_REFUSED,
                reason=error.message,
            )
        )
    return skipped


def patch_experience_set(base: ExperienceSet, changed: dict[str, MemoryFile | None]) -> ExperienceSet:
    """A copy of ``base`` with the experiences at ``changed`` URIs replaced (MemoryFile) or removed (None).

    The loader returns policies sorted by URI, so each change is placed by bisection."""
    policies = list(base.policies)
    for uri, memory in sorted(changed.items()):
        at = bisect_left(policies, uri, key=lambda p: p.uri)
        if at >= len(policies) or policies[at].uri != uri:
            # Not where a sorted set would hold it: look everywhere before deciding it is new.
            at = next((i for i, p in enumerate(policies) if p.uri == uri), at)
        present = at < len(policies) and policies[at].uri == uri
        if memory is None:
            if present:
                del policies[at]
        elif present:
            policies[at] = experience_from_file(memory)
        else:
            policies.insert(at, experience_from_file(memory))
    patched = ExperienceSet.model_construct(
        root_uri=base.root_uri, policies=policies, metadata=dict(base.metadata)
    )
    # This is ``base`` plus our writes, not a fresh read: a reload from it must still re-read what
    # others changed since ``base`` was taken, and the files written here.
    patched._created_ns = base.created_ns
    # The loader's file signatures can be shared as they are: a file written here was replaced
    # (new inode), so its old signature no longer matches and the reload reads it again.
    signatures: dict[str, Any] = base.derived("signatures", dict)
    if signatures:
        patched.derived("signatures", lambda: signatures)
    return patched


class DryRunPolicyUpdater(MemoryFilePolicyUpdater):
    """Checks the plan exactly as an apply would and records it (kind dry_run); writes no memory."""

    dry_run = True
