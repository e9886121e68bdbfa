"""LLMPlanMerger: one model call per batch merges the proposals into one plan.

The model sees the original files the proposals were based on, every proposal as a field-level
unified diff, and similar existing experiences. It may merge, split, dedupe and delete; every
output item names the proposals it comes from, which become ``MergeDecision.source_gradients``
(and so the item's evidence). Indices are bounded in the schema, so an out-of-range index is a
format error the client asks the model to fix, not a silent loss of provenance.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ovtui.plugins import (
    EXPERIENCES,
    LISTING,
    Experience,
    ExperienceSet,
    ExtractLoop,
    InputPart,
    LLMClient,
    MemoryFile,
    MemoryStore,
    MemoryTypeRegistry,
    MergeDecision,
    PatchSemanticGradient,
    RejectionSource,
    ReportedContradiction,
    field_unified_diff,
    file_from_experience,
)
from ovtui.train.backends.llm.render import render_rejections

INSTRUCTION = """\
You merge a batch of proposed edits to an AI agent's experience memory into one consistent plan. \
The proposals are numbered from [0]; each is a field diff against the file it was based on (or a \
new file). The existing files involved and similar existing experiences are shown in full.

Produce the final operations:
- combine proposals that change the same experience or describe the same user intent into one item;
- split an experience that mixes several user intents; merge duplicate new experiences;
- delete an existing experience only when this plan wholly supersedes it or it is wrong;
- leave out proposals that add nothing.
Every experience keeps the three sections Situation / Approach / Reflect, covers one user intent, \
and holds no case-specific values (ids, names, amounts, dates). For an existing experience give \
SEARCH/REPLACE blocks against its current content shown here, or its complete new text. Every item \
(deletes too) lists in source_gradients the numbers of the proposals it comes from, and gives a \
short rationale.
Every item also lists in contradictions each line it adds that tells the agent the opposite of a line \
of another experience shown here (or of another line of its own file) in the same circumstances: one \
requires what the other forbids, or they give incompatible actions for the same condition. Quote both \
lines exactly and name the other experience; lines for different conditions, or that add detail, are \
none. An empty list when there is none.
"""


def _describe(index: int, gradient: PatchSemanticGradient, same_as: int | None) -> str:
    name = gradient.target_experience_name
    before = gradient.before_file
    target = f"edit of {before.uri} (version {before.version})" if before is not None else "new experience"
    evidence = len(gradient.evidence_trajectory_uris)
    head = (
        f"### Proposal [{index}]: `{name}` — {target}\n"
        f"confidence {gradient.confidence:.2f}; evidence: {evidence} trajectory(ies)"
    )
    rationale = f"\nrationale: {gradient.rationale}" if gradient.rationale else ""
    if same_as is not None:
        return f"{head}{rationale}\nthe same change as proposal [{same_as}]"
    return f"{head}{rationale}\n{_diff(gradient)}"


def _diff(gradient: PatchSemanticGradient) -> str:
    """Field diffs; a new file shows only its content (its name is in the heading, its type is known)."""
    after = gradient.after_file
    if gradient.before_file is None:
        after = MemoryFile(uri=after.uri, content=after.content, fields={})
    return field_unified_diff(gradient.before_file, after) or "(no change)"


def describe_proposals(gradients: list[PatchSemanticGradient]) -> str:
    """Every proposal; one that repeats an earlier one's change exactly is named, not shown again."""
    first_with: dict[tuple[str, str | None, str], int] = {}
    described: list[str] = []
    for index, gradient in enumerate(gradients):
        before = gradient.before_file
        key = (
            gradient.target_experience_name,
            before.uri if before is not None else None,
            gradient.after_file.content,
        )
        described.append(_describe(index, gradient, first_with.get(key)))
        first_with.setdefault(key, index)
    return "\n\n".join(described)


class LLMPlanMerger:
    label = "llm"

    def __init__(
        self,
        client: LLMClient,
        store: MemoryStore,
        *,
        registry: MemoryTypeRegistry | None = None,
        max_iterations: int = 2,
        stage: str = "merge",
        feedback: RejectionSource | None = None,
    ) -> None:
        self.feedback = feedback  # what reviewers rejected, shown with their reasons
        self.client = client
        self.store = store
        self.registry = registry or store.registry
        self.max_iterations = max_iterations
        self.stage = stage

    def _loop(self, count: int) -> ExtractLoop:
        extras: dict[str, dict[str, Any]] = {
            "source_gradients": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": max(count - 1, 0)},
                "description": "numbers of the proposals this item comes from",
            },
            "rationale": {"type": "string", "description": "one sentence: why"},
            # The contradiction check's question, asked here: it costs no call of its own (#35).
            "contradictions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "line": {"type": "string", "description": "the added line, quoted"},
                        "other": {"type": "string", "description": "the experience of the opposing line"},
                        "other_line": {"type": "string", "description": "the opposing line, quoted"},
                        "why": {"type": "string", "description": "one sentence: why they contradict"},
                    },
                    "required": ["line", "other", "other_line", "why"],
                    "additionalProperties": False,
                },
            },
        }
        return ExtractLoop(
            self.client,
            self.store,
            self.registry,
            [EXPERIENCES],
            self.max_iterations,
            # No look-ups: the files the proposals are based on and the similar ones are shown, and an
            # edit of a file it has not seen gets that file shown in the next round anyway.
            tools=False,
            allow_deletes=True,
            item_extras=extras,
            upsert_only_extras=frozenset({"contradictions"}),
        )

    async def merge(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet, similar: list[Experience]
    ) -> list[MergeDecision]:
        if not gradients:
            return []
        files: dict[str, MemoryFile] = {}
        for gradient in gradients:
            before = gradient.before_file
            if before is not None and before.uri and before.uri not in files:
                files[before.uri] = before  # the base the proposal was computed against
        for experience in similar:
            if experience.uri and experience.uri not in files:
                files[experience.uri] = file_from_experience(experience)
        proposals = describe_proposals(gradients)
        known = ", ".join(sorted(p.name for p in policy_set.policies)) or "(none)"
        inputs = [
            InputPart(f"## Existing experience names\n{known}", LISTING),
            InputPart(f"## Proposals\n{proposals}", 0),
        ]
        rejected = render_rejections(self.feedback, [g.target_experience_name for g in gradients])
        if rejected:
            inputs.append(InputPart(rejected, 0))
        result = await self._loop(len(gradients)).run(
            self.stage, INSTRUCTION, inputs, [], prefetch_files=list(files.values())
        )
        decisions = [
            MergeDecision(
                kind="upsert",
                experience_name=op.name,
                content=op.content,
                status=str(op.fields["status"]) if op.fields.get("status") else None,
                rationale=str(op.extras.get("rationale") or ""),
                source_gradients=_indices(op.extras.get("source_gradients")),
                contradictions=_reported(op.extras.get("contradictions")),
            )
            for op in result.of(EXPERIENCES)
        ]
        for delete in result.deletes:
            name = delete.before.fields.get("experience_name") or PurePosixPath(delete.uri).stem
            decisions.append(
                MergeDecision(
                    kind="delete",
                    experience_name=str(name),
                    rationale=str(delete.extras.get("rationale") or ""),
                    source_gradients=_indices(delete.extras.get("source_gradients")),
                )
            )
        return decisions


def _reported(value: object) -> list[ReportedContradiction] | None:
    """What the model saw, as reports (the check keeps those that quote real lines); None when it
    gave no list (the check then asks on its own); a malformed entry is dropped, not an error."""
    if not isinstance(value, list):
        return None
    reports: list[ReportedContradiction] = []
    for entry in value:
        if isinstance(entry, dict):
            try:
                reports.append(ReportedContradiction.model_validate(entry))
            except ValueError:
                continue
    return reports


def _indices(value: object) -> list[int]:
    """Unique, in order (the schema already bounded them)."""
    out: list[int] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, int) and not isinstance(item, bool) and item not in out:
            out.append(item)
    return out
