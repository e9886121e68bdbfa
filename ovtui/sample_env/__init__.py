"""The sample environment: a small airline help desk with tools, a written policy, seeded case
sets (``generate``), a deterministic evaluator and a scripted agent that learns from experiences."""

from ovtui.sample_env.agent import SampleAgentExecutor
from ovtui.sample_env.evaluator import SampleEvaluator, grade, replay
from ovtui.sample_env.tools import TOOL_SPECS, SupportTools, load_policy

__all__ = [
    "TOOL_SPECS",
    "SampleAgentExecutor",
    "SampleEvaluator",
    "SupportTools",
    "grade",
    "load_policy",
    "replay",
]
