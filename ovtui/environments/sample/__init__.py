"""The sample environment: a small airline help desk with tools, a written policy, seeded case
sets (``generate``), a deterministic evaluator and a scripted agent that learns from experiences."""

from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.evaluator import SampleEvaluator, grade, replay
from ovtui.environments.sample.tools import TOOL_SPECS, SupportTools, load_policy

__all__ = [
    "TOOL_SPECS",
    "SampleAgentExecutor",
    "SampleEvaluator",
    "SupportTools",
    "grade",
    "load_policy",
    "replay",
]
