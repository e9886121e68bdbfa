"""The LLM backends of the analyzer, estimator and optimizer shells (label ``"llm"``)."""

from ovtui.components.llm.extractor import LLMTrajectoryExtractor
from ovtui.components.llm.merger import LLMPlanMerger
from ovtui.components.llm.proposer import LLMGradientProposer

__all__ = ["LLMGradientProposer", "LLMPlanMerger", "LLMTrajectoryExtractor"]
