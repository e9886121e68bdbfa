"""PatchMergePolicyOptimizer: one batch of gradients → one PolicyUpdatePlan.

It only plans. Each item records the content and version it was planned against, so the updater
can refuse to overwrite a change it did not see. The backend may merge, split, dedupe and delete;
provenance (evidence trajectories) is routed from the gradients each item came from.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from ovtui.core.decisions import PastRejection, RejectionSource
from ovtui.core.domain import (
    Experience,
    ExperienceSet,
    PatchSemanticGradient,
    PolicyPlanItem,
    PolicyUpdatePlan,
)
from ovtui.core.errors import OvtuiError
from ovtui.core.names import validate_name
from ovtui.memory.merge_ops import apply_patch
from ovtui.memory.search import tokenize
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES
from ovtui.plugins.backends import REPORTED_CONTRADICTIONS, MergeDecision, PlanMerger
from ovtui.train.components.experience_set_loader import experience_index
from ovtui.train.review.rejections import held_back_line, mark, matching_rejection, stronger


def similar_experiences(
    gradients: list[PatchSemanticGradient], policy_set: ExperienceSet
) -> list[Experience]:
    """Existing files that look like the proposals, beyond the ones they target (duplicates to merge)."""
    targets = {g.target_experience_name for g in gradients}
    policies, index = experience_index(policy_set)
    limit = max(5, len(targets))
    found: dict[str, Experience] = {}
    for gradient in gradients:
        query = tokenize(gradient.after_file.content)
        for position, _ in index.top(query, 2 + len(targets)):
            policy = policies[position]
            if policy.name not in targets:
                found.setdefault(policy.name, policy)
    return list(found.values())[:limit]


def _cases(decision: MergeDecision, gradients: list[PatchSemanticGradient]) -> set[str]:
    sources = [gradients[i] for i in decision.source_gradients if 0 <= i < len(gradients)]
    return {str(g.metadata.get("case_name") or "") for g in sources}


def turned_down(
    item: PolicyPlanItem, cases: set[str], feedback: RejectionSource | None
) -> PastRejection | None:
    """The rejection of exactly this change (same target, same kind, same text) from the same
    evidence: proposing it again would only ask the reviewer the same question."""
    if feedback is None:
        return None
    after = (item.after_content or "").strip() if item.kind == "upsert" else None
    for rejection in feedback.rejections(item.memory_type, item.target_name):
        same = (rejection.after or "").strip() if rejection.after is not None else None
        exact = not rejection.edited and rejection.kind == item.kind and same == after
        if exact and rejection.is_old_evidence(cases):
            return rejection
    return None


class PatchMergePolicyOptimizer:
    """``feedback``: what reviewers rejected; an item identical to a rejected one, learned from
    no new case, is left out of the plan (named in its ``held_back`` metadata), and so is one that
    brings a rejected rule back from other cases without stronger evidence; with it, the item is
    marked ``previously_rejected`` (``train/review/rejections.py``)."""

    def __init__(
        self, store: MemoryStore, merger: PlanMerger, feedback: RejectionSource | None = None
    ) -> None:
        self.store = store
        self.merger = merger
        self.feedback = feedback

    async def plan(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet
    ) -> PolicyUpdatePlan:
        meta: dict[str, Any] = {
            "plan_id": uuid.uuid4().hex[:12],
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "backend": self.merger.label,
            "gradients": len(gradients),
        }
        if not gradients:
            return PolicyUpdatePlan(items=[], metadata=meta)
        decisions = await self.merger.merge(gradients, policy_set, similar_experiences(gradients, policy_set))
        current = policy_set.by_name()
        items: list[PolicyPlanItem] = []
        held_back: list[str] = []
        accounted: set[int] = set()  # the gradients behind an item, or behind one held back
        for decision in decisions:
            item = self._item(decision, gradients, current)
            if item is None:
                continue
            accounted.update(decision.source_gradients)
            cases = _cases(decision, gradients)
            rejection = turned_down(item, cases, self.feedback)
            if rejection is not None:
                why = f" ({rejection.note})" if rejection.note else ""
                held_back.append(f"{item.target_name}: rejected in plan {rejection.plan_id}{why}")
                continue
            # The same rule rejected from other cases: back only on stronger evidence, marked.
            previous = matching_rejection(item, self.feedback)
            if previous is not None and not stronger(cases, previous):
                held_back.append(held_back_line(item, previous, cases))
                continue
            if previous is not None:
                mark(item, previous, cases)
            items.append(item)
        if held_back:
            meta["held_back"] = held_back
        # The rest were merged into experiences that already say it (the merger or ``_item`` left
        # them out): named, so an empty plan can say why its counted edits came to nothing.
        unchanged = [g.target_experience_name for i, g in enumerate(gradients) if i not in accounted]
        if unchanged:
            meta["unchanged"] = list(dict.fromkeys(unchanged))
        return PolicyUpdatePlan(items=items, metadata=meta)

    def _item(
        self, decision: MergeDecision, gradients: list[PatchSemanticGradient], current: dict[str, Experience]
    ) -> PolicyPlanItem | None:
        name = validate_name(decision.experience_name, what="experience name")
        existing = current.get(name)
        sources = [gradients[i] for i in decision.source_gradients if 0 <= i < len(gradients)]
        evidence = list(dict.fromkeys(uri for g in sources for uri in g.evidence_trajectory_uris))
        confidence = round(sum(g.confidence for g in sources) / len(sources), 3) if sources else None
        metadata: dict[str, Any] = {
            "rationale": decision.rationale,
            "source_gradients": decision.source_gradients,
        }
        if decision.status:
            metadata["status"] = decision.status
        if decision.contradictions is not None:  # the contradiction check reads and removes them
            metadata[REPORTED_CONTRADICTIONS] = [c.model_dump() for c in decision.contradictions]
        if decision.kind == "delete":
            if existing is None:
                return None  # nothing to delete: a no-op, not an error
            return PolicyPlanItem(
                kind="delete",
                target_name=name,
                target_uri=existing.uri,
                before_content=existing.content,
                after_content=None,
                base_version=existing.version,
                confidence=confidence,
                evidence_trajectory_uris=evidence,
                metadata=metadata,
            )
        after = decision.content or ""
        if existing is not None:
            try:
                after = apply_patch(existing.content, after)
            except OvtuiError as exc:
                raise OvtuiError(f"merged edit of experience {name!r}: {exc}") from exc
            if after.strip() == existing.content.strip() and not decision.status:
                return None  # the merge changed nothing
        return PolicyPlanItem(
            kind="upsert",
            target_name=name,
            target_uri=existing.uri if existing else self.store.uri_for_name(EXPERIENCES, name),
            before_content=existing.content if existing else None,
            after_content=after.strip(),
            base_version=existing.version if existing else None,
            confidence=confidence,
            evidence_trajectory_uris=evidence,
            metadata=metadata,
        )
