"""The review: the plans that wait for a person, every decision on them, and what is applied,
re-planned, discarded or undone.

A decision names its reviewer (``[review] reviewer``, else the OS login, unless the caller names
one); an apply goes the same path as ``--approve all``, so files and records match whoever
approved. The synchronous methods do file work in the caller's thread (the app calls them from
its workers); the coroutines keep the loop free.
"""

from __future__ import annotations

import asyncio
import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError

if TYPE_CHECKING:
    from ovtui.core.domain import PolicyApplyResult, PolicyPlanItem
    from ovtui.core.events import Listener
    from ovtui.memory.revert import RevertResult
    from ovtui.train.review.gates.contradictions import Stands
    from ovtui.train.review.pending import Signoff
    from ovtui.train.review.plans import Decision, PendingPlan
    from ovtui.train.review.replan import ReplanResult
    from ovtui.train.review.signoffs import Checked, Signing
    from ovtui.wiring.composition import Composition


def login_name() -> str:
    """The OS login of this process, who a decision is by when no reviewer is named."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no entry in the user database (a bare container)
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


class Review:
    def __init__(self, parts: Composition) -> None:
        self.parts = parts
        self.config = parts.config
        self._signing: Signing | None = None

    # --- what waits -------------------------------------------------------------------------------
    def pending_plans(self) -> list[PendingPlan]:
        """The plans waiting for review, oldest first (``unreadable_plans`` names those left out)."""
        return self.parts.pending.list()

    def unreadable_plans(self) -> list[str]:
        """The plan files the last ``pending_plans`` could not read, as the workspace names them."""
        return [self.parts.paths.relative(path) for path in self.parts.pending.unreadable]

    def pending_plan(self, plan_id: str) -> PendingPlan:
        return self.parts.pending.get(plan_id)

    def resolve_plan(self, ref: str) -> str:
        """The id of the one waiting plan ``ref`` names (an id or a unique part of one)."""
        return self.parts.pending.resolve(ref)

    def is_waiting(self, plan_id: str) -> bool:
        return self.parts.pending.is_waiting(plan_id)

    def refresh_stale(self) -> list[str]:
        """Mark the items whose target file changed since planning; the plans that changed."""
        return self.parts.pending.refresh_stale(self.parts.loader.load_sync())

    def planned_uri(self, item: PolicyPlanItem) -> str | None:
        """The file an item writes: its own URI, or for a new memory planned by name (a session's
        profile, preference or entity, a peer's included) where the apply will put it; None when
        that is not known yet (a name that carries the time of the apply) or cannot be a file."""
        if item.target_uri:
            return item.target_uri
        from ovtui.memory.targets import plan_target

        store = self.parts.store
        try:
            if store.registry.get(item.memory_type).timestamped:
                return None
            return plan_target(store, item).uri
        except (OvtuiError, OSError):
            return None

    def unread_lines(self, content: str) -> list[str]:
        """What in an experience's text the configured agent would not act on, one note a line."""
        from ovtui.train.review.gates.readability import unread_notes

        return [note for _, note in unread_notes(self.parts.experience_reader(), content)]

    # --- deciding ---------------------------------------------------------------------------------
    @property
    def reviewer(self) -> str:
        """Who decides in this process: ``[review] reviewer``, else the OS login (normalised:
        ``ovtui.core.reviewers.reviewer_name``)."""
        from ovtui.core.reviewers import reviewer_name

        return reviewer_name(self.config.review.reviewer or login_name())

    def approvals_line(self, plan: PendingPlan, index: int) -> str:
        """``1 of 2 approvals (ana)`` for an item a hunk of which needs two reviewers (per hunk
        when they differ), else ``""``."""
        from ovtui.train.review.approvals import tally

        decision = plan.decisions[index]
        approvals = decision.approvals if decision.decision != "rejected" else []
        return tally(plan.plan.items[index], approvals, self.config.review.second_approver_for).line()

    @property
    def signing(self) -> Signing:
        """``[review] signers`` and the key approvals are signed with (read once a workspace)."""
        if self._signing is None:
            from ovtui.train.review.signoffs import Signing

            review = self.config.review
            self._signing = Signing.of(review.signers, review.key, self.parts.paths.root, os.environ)
        return self._signing

    @property
    def names_are_labels(self) -> bool:
        """Whether reviewer names are unproven labels (no ``[review] signers``)."""
        return not self.config.review.signers

    def _who(self, reviewer: str | None) -> str:
        from ovtui.core.reviewers import reviewer_name

        return reviewer_name(reviewer) if reviewer is not None else self.reviewer

    def _signoff(self, who: str, decision: Decision, key: Path | None) -> Signoff | None:
        return self.signing.signoff(who, key) if decision == "approved" else None

    def decide(
        self,
        plan_id: str,
        item: int,
        decision: Decision,
        note: str = "",
        *,
        reviewer: str | None = None,
        key: Path | None = None,
    ) -> PendingPlan:
        who = self._who(reviewer)
        signoff = self._signoff(who, decision, key)
        return self.parts.pending.decide(plan_id, item, decision, note, reviewer=who, signoff=signoff)

    def decide_items(
        self,
        plan_id: str,
        items: list[int] | None,
        decision: Decision,
        note: str = "",
        *,
        reviewer: str | None = None,
        hunks: list[int] | None = None,
        key: Path | None = None,
    ) -> PendingPlan:
        """Decide ``items`` (None: every undecided one) of a plan at once, as ``reviewer`` (by
        default ``self.reviewer``); ``hunks``: approve only these hunks of their content. With
        ``[review] signers`` each approval is signed with ``key`` (else ``[review] key``, else
        ssh-agent's key for the reviewer) and refused unless it verifies."""
        who = self._who(reviewer)
        signoff = self._signoff(who, decision, key)
        return self.parts.pending.decide_items(
            plan_id, items, decision, note, reviewer=who, hunks=hunks, signoff=signoff
        )

    def decide_all(
        self, plan_id: str, decision: Decision, note: str = "", *, reviewer: str | None = None
    ) -> PendingPlan:
        return self.decide_items(plan_id, None, decision, note, reviewer=reviewer)

    def verify_records(self, ref: str | None = None) -> list[Checked]:
        """Every signed approval the history records keep (or one record's: an id or a unique part
        of one), checked again against ``[review] signers`` as it is now."""
        history = self.parts.history
        ids = [history.resolve(ref)] if ref else sorted(history.entries())
        checked: list[Checked] = []
        for record_id in ids:
            record = history.get(record_id)
            checked += self.signing.verify_record(record_id, record.review.plan_id, record.review.decisions)
        return checked

    def edit_item(self, plan_id: str, item: int, content: str, *, reviewer: str | None = None) -> PendingPlan:
        """A reviewer's own text for an item: what the apply will write instead of the proposal,
        checked as a proposal is (hidden text, secrets, contradictions with the experiences)."""
        who = self._who(reviewer)
        current = self.parts.loader.load_sync()
        return self.parts.pending.edit_after(plan_id, item, content, reviewer=who, policy_set=current)

    def choose_standing(self, plan_id: str, item: int, contradiction: int, stands: Stands) -> PendingPlan:
        """Which line of an item's contradiction stands: ``this`` (the item's), ``other`` (the
        other experience's: the item's line is taken out) or ``both``; never decided automatically."""
        return self.parts.pending.choose_standing(plan_id, item, contradiction, stands)

    # --- settling ---------------------------------------------------------------------------------
    async def apply_pending(self, plan_id: str, *, dry_run: bool = False) -> PolicyApplyResult:
        """Apply a reviewed plan: the same path as ``--approve all``, so files and records match.

        A plan whose approved items were all refused as stale stays waiting (marked stale) so it can
        be re-planned; when only some were, the plan is settled and those items wait as
        ``<plan_id>-stale``. ``describe_apply`` says which happened. The plan is claimed for the
        whole apply, so it is applied once however many processes try; the others get
        ``PlanSettledError`` saying who applied it."""
        from ovtui.train.review.gates.contradictions import unsettled_contradictions
        from ovtui.train.review.plans import apply_reviewed, evidence_for, stale_subplan
        from ovtui.train.review.policy import missing_approvals

        parts = self.parts
        async with parts.pending.claimed([plan_id]) as claim:
            # Under the plan's lock from here: a second apply (any process) waits, then finds it settled.
            [pending] = claim.plans
            if not dry_run:
                await asyncio.to_thread(claim.settle_if_recorded, pending)
            # every approval counted again, by the key that signed it when signing is on
            rule = self.config.review.second_approver_for
            decisions = await asyncio.to_thread(self.signing.counted, pending, rule)
            counted = pending.model_copy(update={"decisions": decisions})
            short = missing_approvals(counted, rule)
            if short:
                raise OvtuiError(f"plan {plan_id}: " + "; ".join(short))
            if counted.undecided:
                raise OvtuiError(f"plan {plan_id} still has {counted.undecided} undecided item(s)")
            unsettled_contradictions(pending)
            result, chosen = await apply_reviewed(
                parts.updater(dry_run), pending.plan, decisions, await parts.loader.load()
            )
            if dry_run:
                return result
            stale = [chosen[i] for i in result.stale_items if i < len(chosen)]
            if stale and not (result.written_uris or result.deleted_uris):
                await asyncio.to_thread(claim.mark_stale, pending, stale)
                return result
            await asyncio.to_thread(claim.settle, pending, "applied", result.history_id)
        if stale:
            subplan = stale_subplan(pending.plan, stale)
            evidence = evidence_for(subplan, pending.evidence)
            parked = await asyncio.to_thread(parts.pending.park_stale, subplan, pending.run_id, evidence)
            result.metadata["stale_plan"] = parked.plan_id
        return result

    def discard_pending(self, plan_id: str) -> None:
        pending = self.parts.pending
        pending.settle(pending.get(plan_id), "discarded", None)

    async def replan(self, plan_ids: list[str], listeners: list[Listener] | None = None) -> ReplanResult:
        """Re-plan waiting plans against the current experiences, as one fresh plan."""
        from ovtui.core.context import RunContext
        from ovtui.core.events import EventBus
        from ovtui.train.review.replan import replan

        parts = self.parts
        run = RunContext(events=EventBus(listeners))
        engine = parts.engine(run, approve="ask", dry_run=False, wait_for_review=False)
        return await replan(engine, parts.pending, plan_ids, await parts.loader.load())

    async def replan_stale(self, listeners: list[Listener] | None = None) -> ReplanResult | None:
        """Re-plan every waiting plan that has a stale item, in one action (None: none is stale)."""
        from ovtui.train.review.replan import stale_plan_ids

        policy_set = await self.parts.loader.load()
        plan_ids = await asyncio.to_thread(stale_plan_ids, self.parts.pending, policy_set)
        return await self.replan(plan_ids, listeners) if plan_ids else None

    async def revert(self, ref: str, *, dry_run: bool = False, force: bool = False) -> RevertResult:
        """Apply the inverse of a record (an id or a unique part of one); it gets its own record.
        Files changed after the record make it refuse (``RevertConflictError``) unless ``force``."""
        from ovtui.memory.revert import arevert

        return await arevert(self.parts.store, ref, dry_run=dry_run, force=force)

    async def edit_memory(self, memory_type: str, uri: str, content: str) -> PolicyApplyResult:
        """A person's own text for one memory file's body, written like any apply (compare-and-swap
        on the version they edited, journaled) and recorded in History as an ``edit``."""
        from ovtui.core.context import ApplyOptions
        from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
        from ovtui.storage.paths import split_peer

        store, paths = self.parts.store, self.parts.paths
        current = await asyncio.to_thread(store.read_uri, uri)
        if current is None:
            raise OvtuiError(f"{paths.display_uri(uri)}: no such memory file (moved or deleted?)")
        schema = store.registry.get(memory_type)
        peer, inner = split_peer(paths.relative_of(uri))
        item = PolicyPlanItem(
            kind="upsert",
            memory_type=memory_type,
            target_name=schema.name_of(current.fields, inner) if schema.name_field else memory_type,
            target_uri=uri,
            after_content=content,
            before_content=current.content,
            base_version=current.version,
            metadata={"rationale": "edited by a person in $EDITOR"},
            peer_id=peer,
        )
        options = ApplyOptions(kind="edit", purpose="edit in $EDITOR")
        return await self.parts.updater(False).apply(PolicyUpdatePlan(items=[item]), None, options)
