"""ovtui: improve an LLM agent from its own experience, with a person in control.

The public API: the ``Workspace`` facade and its ``TrainOptions``, the run's ``RunReport``, the
core models (cases, rollouts, experiences, plans) and the Protocols a component implements. Each
name is imported when first used, so ``import ovtui`` (and ``ovtui --help``) stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ovtui.core.domain import (
        Case,
        Experience,
        ExperienceSet,
        Message,
        PolicyApplyResult,
        PolicyPlanItem,
        PolicyStatus,
        PolicyUpdatePlan,
        Rollout,
        RolloutAnalysis,
        RolloutTrainingResult,
        Rubric,
        RubricCriterion,
        RubricEvaluation,
        Trajectory,
    )
    from ovtui.core.interfaces import (
        CaseLoader,
        GradientEstimator,
        PolicyOptimizer,
        PolicySetLoader,
        PolicySnapshotter,
        PolicyTrainer,
        PolicyUpdater,
        RolloutAnalyzer,
        RolloutEvaluator,
        RolloutExecutor,
        StreamingTrainer,
    )
    from ovtui.train.reports import RunReport
    from ovtui.wiring.workspace import TrainOptions, Workspace

__all__ = [
    "Case",
    "CaseLoader",
    "Experience",
    "ExperienceSet",
    "GradientEstimator",
    "Message",
    "PolicyApplyResult",
    "PolicyOptimizer",
    "PolicyPlanItem",
    "PolicySetLoader",
    "PolicySnapshotter",
    "PolicyStatus",
    "PolicyTrainer",
    "PolicyUpdatePlan",
    "PolicyUpdater",
    "Rollout",
    "RolloutAnalysis",
    "RolloutAnalyzer",
    "RolloutEvaluator",
    "RolloutExecutor",
    "RolloutTrainingResult",
    "Rubric",
    "RubricCriterion",
    "RubricEvaluation",
    "RunReport",
    "StreamingTrainer",
    "TrainOptions",
    "Trajectory",
    "Workspace",
]


def __getattr__(name: str) -> object:
    """A public name, imported on first use (then kept here like any module attribute)."""
    if name not in __all__:
        raise AttributeError(f"module 'ovtui' has no attribute {name!r}")
    if name in ("TrainOptions", "Workspace"):
        from ovtui.wiring import workspace

        value = getattr(workspace, name)
    elif name == "RunReport":
        from ovtui.train import reports

        value = getattr(reports, name)
    else:  # a core model, else a Protocol
        from ovtui.core import domain, interfaces

        value = getattr(domain, name, None) or getattr(interfaces, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
