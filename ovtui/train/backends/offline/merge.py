"""OfflinePlanMerger: one plan item per target experience, by union of the proposed lines.

Gradients for the same experience are merged into one after-content: the current file's lines
and every proposal's, the learner's lessons consolidated (generalised, without contradictions or
repeats, sorted) and a person's lines kept as written. A new name that is a near-duplicate of an
existing experience or of another new name in the batch is folded into it, so "refund_request" and
"request_refund" do not become two files. An existing experience with a near-duplicate name whose
every line the merged result already holds is redundant: the merger proposes deleting it.
"""

from __future__ import annotations

from ovtui.plugins import Experience, ExperienceSet, MergeDecision, PatchSemanticGradient
from ovtui.plugins.wording.sections import SECTIONS, ExperienceSections, line_key, parse_sections
from ovtui.plugins.wording.text import jaccard, name_tokens
from ovtui.train.backends.offline.learned import combine
from ovtui.train.backends.offline.trajectory import OFFLINE_LABEL

NAME_SIMILARITY = 0.6


def _similar_names(a: str, b: str) -> bool:
    return a != b and jaccard(name_tokens(a), name_tokens(b)) >= NAME_SIMILARITY


def _covers(merged: ExperienceSections, other: ExperienceSections) -> bool:
    return all({line_key(x) for x in other.lines(s)} <= merged.keys(s) for s in SECTIONS)


class OfflinePlanMerger:
    """PlanMerger without a model (see the module docstring)."""

    label = OFFLINE_LABEL

    async def merge(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet, similar: list[Experience]
    ) -> list[MergeDecision]:
        return self.decisions(gradients, policy_set, similar)

    def decisions(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet, similar: list[Experience]
    ) -> list[MergeDecision]:
        existing = {p.name: p for p in [*similar, *policy_set.policies]}
        groups: dict[str, list[int]] = {}
        for index, gradient in enumerate(gradients):
            name = self._group_name(gradient.target_experience_name, existing, groups)
            groups.setdefault(name, []).append(index)

        decisions: list[MergeDecision] = []
        merged_by_name: dict[str, ExperienceSections] = {}
        for name, indices in groups.items():
            base_content = existing[name].content if name in existing else ""
            base = parse_sections(base_content)
            merged = combine([base_content, *(gradients[i].after_file.content for i in indices)])
            merged_by_name[name] = merged
            if name in existing and merged.same_as(base):
                continue
            rationales = list(
                dict.fromkeys(gradients[i].rationale.rstrip(".") for i in indices if gradients[i].rationale)
            )
            decisions.append(
                MergeDecision(
                    kind="upsert",
                    experience_name=name,
                    content=merged.render(),
                    rationale=self._summary(len(indices), rationales),
                    source_gradients=indices,
                )
            )
        decisions.extend(self._redundant(existing, groups, merged_by_name))
        return decisions

    def _group_name(self, name: str, existing: dict[str, Experience], groups: dict[str, list[int]]) -> str:
        if name in existing or name in groups:
            return name
        for known in [*groups, *sorted(existing)]:
            if _similar_names(name, known):
                return known
        return name

    def _redundant(
        self,
        existing: dict[str, Experience],
        groups: dict[str, list[int]],
        merged_by_name: dict[str, ExperienceSections],
    ) -> list[MergeDecision]:
        decisions = []
        for name, experience in sorted(existing.items()):
            if name in groups:
                continue
            for target, merged in merged_by_name.items():
                if _similar_names(name, target) and _covers(merged, parse_sections(experience.content)):
                    decisions.append(
                        MergeDecision(
                            kind="delete",
                            experience_name=name,
                            rationale=f"every line of {name} is now in {target}",
                            source_gradients=groups[target],
                        )
                    )
                    break
        return decisions

    @staticmethod
    def _summary(count: int, rationales: list[str]) -> str:
        head = f"merged {count} proposal(s)" if count > 1 else "one proposal"
        shown = "; ".join(rationales[:3]) + (
            f"; and {len(rationales) - 3} more" if len(rationales) > 3 else ""
        )
        return f"{head}: {shown}" if shown else head
