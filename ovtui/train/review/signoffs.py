"""Signed approvals, when a workspace asks for them (``[review] signers``).

Each approval is then signed with the reviewer's SSH key over ``ovtui.core.reviewers.statement``
(the plan, item, hunks, the item's digest, the decision, the reviewer, the time) and verified
against the keys the signers file lists for that reviewer, when it is given and again when the plan
is applied: an approval whose signature is missing, made by another key, or made for another plan,
item, hunks or content is refused in one line. People are counted by key, so two names that sign
with one key are one approver. A record keeps every signature: ``verify_record`` checks them again
later (``ovtui review verify``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ovtui.core.allowed_signers import AllowedSigners, load_signers
from ovtui.core.decisions import Approval, ReviewDecision
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError
from ovtui.core.reviewers import NAMESPACE, item_digest, statement
from ovtui.core.signing import find_signer
from ovtui.core.sshsig import SignatureError
from ovtui.train.review.pending import Signoff
from ovtui.train.review.plans import ItemDecision, PendingPlan

POLICY = "policy:"  # a review policy's approvals are the workspace's own, never signed


@dataclass(frozen=True)
class Checked:
    """One stored approval checked again: ``ok`` False says ``why``."""

    record: str
    item: int
    reviewer: str
    ok: bool
    why: str

    def line(self) -> str:
        verdict = "ok" if self.ok else "FAILED"
        return f"{verdict:<6} {self.record} item {self.item}: {self.reviewer}: {self.why}"


class Signing:
    """The workspace's signers (None: approvals are unsigned labels) and where keys come from."""

    def __init__(self, signers: AllowedSigners | None, key: Path | None, agent_socket: str | None) -> None:
        self.signers = signers
        self.key = key
        self.agent_socket = agent_socket

    @classmethod
    def of(cls, signers: str | None, key: str | None, root: Path, environ: Mapping[str, str]) -> Signing:
        """From ``[review] signers`` (relative to ``root``) and ``[review] key``; the agent is
        ``SSH_AUTH_SOCK``."""
        loaded = load_signers(root / signers, signers) if signers else None
        chosen = Path(key).expanduser() if key else None
        return cls(loaded, chosen, environ.get("SSH_AUTH_SOCK") or None)

    def signoff(self, reviewer: str, key: Path | None = None) -> Signoff | None:
        """How ``reviewer``'s approvals are made: signed with ``key`` (else ``[review] key``, else
        the agent's key the signers list for them); None: unsigned (no signers, no key named)."""
        key = key or self.key
        if self.signers is None and key is None:
            return None
        wanted = self.signers.keys_of(reviewer, NAMESPACE) if self.signers else []
        if self.signers is not None and not wanted:
            raise OvtuiError(
                f"{self.signers.shown} lists no key for reviewer {reviewer!r}: their approval cannot count "
                "(add `NAME KEYTYPE KEY` to it, or give --reviewer as that file names you)"
            )
        signer = find_signer(key, self.agent_socket, wanted)
        signers = self.signers

        def make(plan_id: str, index: int, item: PolicyPlanItem, hunks: list[int] | None) -> Approval:
            at = datetime.now(UTC).isoformat(timespec="seconds")
            digest = item_digest(item)
            message = statement(plan_id, index, hunks, digest, "approved", reviewer, at)
            armored = signer.sign(NAMESPACE, message)
            try:
                key_id = (
                    signers.verify(reviewer, armored, NAMESPACE, message, at)
                    if signers
                    else signer.public.fingerprint
                )
            except SignatureError as exc:
                raise OvtuiError(
                    f"plan {plan_id} item {index}: the approval by {reviewer} is refused: {exc}"
                ) from None
            return Approval(
                reviewer=reviewer, hunks=hunks, at=at, digest=digest, signature=armored, key=key_id
            )

        return make

    def _key_of(self, plan_id: str, index: int, item: PolicyPlanItem, approval: Approval) -> str:
        assert self.signers is not None
        digest = item_digest(item)
        if approval.digest and approval.digest != digest:
            raise SignatureError("it was signed for other content: the item changed after it was approved")
        message = statement(
            plan_id, index, approval.hunks, digest, "approved", approval.reviewer, approval.at
        )
        return self.signers.verify(approval.reviewer, approval.signature, NAMESPACE, message, approval.at)

    def counted(self, pending: PendingPlan, second_approver_for: Collection[str]) -> list[ItemDecision]:
        """The plan's decisions with every approval's signature checked again and the approvals
        counted by the keys that signed them (without signers: as they are); an approval that does
        not verify raises ``OvtuiError`` naming the item and the reviewer."""
        if self.signers is None:
            return pending.decisions
        decisions = []
        for decision, item in zip(pending.decisions, pending.plan.items, strict=True):
            if decision.decision == "rejected" or not decision.approvals:
                decisions.append(decision)
                continue
            checked = []
            for approval in decision.approvals:
                if approval.reviewer.startswith(POLICY):
                    checked.append(approval.model_copy(update={"key": None}))
                    continue
                try:
                    key = self._key_of(pending.plan_id, decision.item, item, approval)
                except SignatureError as exc:
                    raise OvtuiError(
                        f"plan {pending.plan_id} item {decision.item}: the approval by {approval.reviewer} "
                        f"does not count: {exc}"
                    ) from None
                checked.append(approval.model_copy(update={"key": key}))
            decisions.append(decision.counted(checked, item, second_approver_for))
        return decisions

    def verify_record(
        self, record_id: str, plan_id: str | None, decisions: list[ReviewDecision]
    ) -> list[Checked]:
        """Every approval a history record keeps, its signature checked against the signers as
        they are now (the statement rebuilt from the record: plan, item, hunks, the digest the
        record names for the item)."""
        found = []
        for decision in decisions:
            for approval in decision.signoffs:
                if approval.reviewer.startswith(POLICY):
                    continue
                found.append(self._check(record_id, plan_id, decision, approval))
        return found

    def _check(
        self, record_id: str, plan_id: str | None, decision: ReviewDecision, approval: Approval
    ) -> Checked:
        def result(ok: bool, why: str) -> Checked:
            return Checked(record_id, decision.item, approval.reviewer, ok, why)

        if self.signers is None:
            return result(False, "no [review] signers to check it against")
        if plan_id is None or approval.digest != decision.content_sha256:
            return result(False, "the record's plan or content digest is not what was signed")
        message = statement(
            plan_id,
            decision.item,
            approval.hunks,
            approval.digest,
            "approved",
            approval.reviewer,
            approval.at,
        )
        try:
            key = self.signers.verify(approval.reviewer, approval.signature, NAMESPACE, message, approval.at)
        except SignatureError as exc:
            return result(False, str(exc))
        covered = "all hunks" if approval.hunks is None else "hunks " + ", ".join(map(str, approval.hunks))
        return result(True, f"signed by {key} ({covered}, {approval.at})")
