"""The domain model: cases, rollouts, evaluations, experiences, trajectories, gradients and plans, as
pydantic models.

The models double as the JSON wire format (rollout files, dataset lines, the remote benchmark
protocol, pending plans), so every one of them round-trips exactly through ``model_dump_json`` /
``model_validate_json``. Nothing here reads or writes a file: loading a policy set is the job of
the loader a stage is given (``interfaces.PolicySetLoader``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ovtui.core.fileformat import EXPERIENCES, MemoryFile, normalise_content

T = TypeVar("T")


class Model(BaseModel):
    """Base: unknown keys are rejected so a typo in a rollout file is an error, not silence."""

    model_config = ConfigDict(extra="forbid")


class PolicyStatus(StrEnum):
    DRAFT = "draft"
    STAGING = "staging"
    PRODUCTION = "production"
    DEPRECATED = "deprecated"
    ARCHIVED = "archived"

    @classmethod
    def parse(cls, value: object) -> PolicyStatus:
        """OpenViking treats a missing or unknown status as production."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.PRODUCTION

    @property
    def serves(self) -> bool:
        """Whether an agent is given experiences of this status: deprecated and archived ones stay on
        file (and in the history) but are never served, retrieved or proposed for edits."""
        return self not in (PolicyStatus.DEPRECATED, PolicyStatus.ARCHIVED)


class TrajectoryOutcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNFINISHED = "unfinished"
    UNKNOWN = "unknown"


# --- messages -----------------------------------------------------------------------------------


class TextPart(Model):
    type: Literal["text"] = "text"
    text: str


class ToolPart(Model):
    type: Literal["tool"] = "tool"
    tool_id: str
    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_output: str = ""
    tool_status: Literal["completed", "error", "pending", "running"] = "completed"


Part = Annotated[TextPart | ToolPart, Field(discriminator="type")]


class Message(Model):
    role: Literal["system", "user", "assistant", "tool"]
    parts: list[Part] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts if isinstance(p, ToolPart)]


# --- cases, rubrics, evaluations ----------------------------------------------------------------


class RubricCriterion(Model):
    name: str
    description: str = ""
    required: bool = True
    weight: float = 1.0
    metadata: dict[str, Any] = Field(default_factory=dict)


class Rubric(Model):
    name: str
    description: str = ""
    criteria: list[RubricCriterion] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Case(Model):
    name: str
    task_signature: str
    input: dict[str, Any] = Field(default_factory=dict)
    rubric: Rubric
    metadata: dict[str, Any] = Field(default_factory=dict)


# A score is a share of the rubric met: 0 (none) to 1 (all), as docs/rollouts.md says.
Score = Annotated[float, Field(ge=0.0, le=1.0)]


class CriterionResult(Model):
    criterion_name: str
    passed: bool
    score: Score
    feedback: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class RubricEvaluation(Model):
    passed: bool
    score: Score
    criterion_results: list[CriterionResult] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


# Rollout.metadata key of a case whose execution failed (e.g. a benchmark service's error text): it
# counts as a failed case and is never trained on.
EXECUTION_ERROR = "execution_error"


class Rollout(Model):
    case: Case
    messages: list[Message] = Field(default_factory=list)
    policy_snapshot_id: str = ""
    evaluation: RubricEvaluation | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


# --- memories -----------------------------------------------------------------------------------


class Experience(Model):
    name: str
    uri: str
    version: int
    status: PolicyStatus
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExperienceSet(Model):
    """A snapshot of the experiences directory, as a loader read it (never mutated afterwards)."""

    root_uri: str
    policies: list[Experience] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Derived data (search indexes, file signatures) computed once per snapshot; never serialised.
    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)
    _created_ns: int = PrivateAttr(default_factory=time.time_ns)

    @property
    def created_ns(self) -> int:
        """When this snapshot was made (wall clock, ns): files older than this are in it."""
        return self._created_ns

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """Compute something from this snapshot once (policies are not mutated after loading)."""
        if key not in self._derived:
            self._derived[key] = build()
        return cast(T, self._derived[key])

    def by_name(self) -> dict[str, Experience]:
        return {p.name: p for p in self.policies}


class Trajectory(Model):
    name: str
    uri: str
    content: str
    outcome: TrajectoryOutcome | str = TrajectoryOutcome.UNKNOWN
    retrieval_anchor: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class RolloutAnalysis(Model):
    rollout: Rollout
    evaluation: RubricEvaluation
    trajectories: list[Trajectory] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


# --- gradients and plans ------------------------------------------------------------------------


class PatchSemanticGradient(Model):
    """A proposed before/after of one experience file. ``before_file`` None means: create."""

    before_file: MemoryFile | None
    after_file: MemoryFile
    base_version: int | None
    rationale: str = ""
    evidence_trajectory_uris: list[str] = Field(default_factory=list)
    confidence: float = 0.5
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def target_experience_name(self) -> str:
        return str(self.after_file.fields.get("experience_name", ""))

    @property
    def target_experience_uri(self) -> str | None:
        return self.before_file.uri if self.before_file is not None else self.after_file.uri


PolicyPlanItemKind = Literal["upsert", "delete"]
# Kinds written before plan items carried a memory type; plans parked in .ovtui/pending may hold them.
LEGACY_ITEM_KINDS = {"upsert_experience": "upsert", "delete_experience": "delete"}


class PolicyPlanItem(Model):
    """One reviewable change to one memory file of any declared type (``memory_type``).

    ``target_name`` is the value of the type's name field (ignored for a one-file type such as
    profile); filename placeholders other than the name (an entity's ``category``) come from
    ``metadata["fields"]``. ``target_uri``, when given, must be where that name lives: an edit is
    never retargeted. For types whose file names carry a timestamp (events), the URI designates
    an existing file. ``peer_id`` puts the file in that peer's own memory space
    (``peers/<peer_id>/``; a peer is another participant of the user's sessions) instead of the
    user's own; it is checked by the one name rule where it becomes a path
    (``ovtui.memory.targets``), and refused for a type that is not ``peer_enabled``."""

    kind: PolicyPlanItemKind
    memory_type: str = EXPERIENCES
    target_name: str = Field(validation_alias=AliasChoices("target_name", "target_experience_name"))
    target_uri: str | None = Field(
        default=None, validation_alias=AliasChoices("target_uri", "target_experience_uri")
    )
    before_content: str | None = None
    after_content: str | None = None
    base_version: int | None = None
    confidence: float | None = None
    evidence_trajectory_uris: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    peer_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kind") in LEGACY_ITEM_KINDS:
            data = {**data, "kind": LEGACY_ITEM_KINDS[data["kind"]]}
        return data

    def base_conflict(self, content: str | None, version: int | None, *, exists: bool) -> str | None:
        """Why the target as it is now (``exists``, ``content``, ``version``) is not what this item was
        planned against, or None when it still is: the one compare-and-swap rule, for the updater
        and for marking pending items stale."""
        if self.before_content is None and self.base_version is None:
            return "was created after this item was planned as a new file" if exists else None
        if not exists:
            return "no longer exists (deleted after this item was planned)"
        if self.before_content is not None and normalise_content(self.before_content) != content:
            return "changed after this item was planned (its content differs)"
        if self.base_version is not None and self.base_version != version:
            return f"is at version {version}; this item was planned against version {self.base_version}"
        return None


class PolicyUpdatePlan(Model):
    items: list[PolicyPlanItem] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ItemError(Model):
    """Why one plan item was not written. ``stale`` marks a compare-and-swap conflict."""

    item: int
    target: str
    message: str
    stale: bool = False


class PolicyApplyResult(Model):
    updated_policy_set: ExperienceSet
    written_uris: list[str] = Field(default_factory=list)
    deleted_uris: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    item_errors: list[ItemError] = Field(default_factory=list)
    dry_run: bool = False
    history_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def stale_items(self) -> list[int]:
        return [e.item for e in self.item_errors if e.stale]


class RolloutTrainingResult(Model):
    analyses: list[RolloutAnalysis] = Field(default_factory=list)
    gradients: list[PatchSemanticGradient] = Field(default_factory=list)
    plan: PolicyUpdatePlan = Field(default_factory=PolicyUpdatePlan)
    apply_result: PolicyApplyResult | None = None
    errors: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
