"""The LLM backends of the analyzer, estimator and optimizer shells (label ``"llm"``)."""

from ovtui.train.backends.llm.extractor import LLMTrajectoryExtractor
from ovtui.train.backends.llm.merger import LLMPlanMerger
from ovtui.train.backends.llm.proposer import LLMGradientProposer

__all__ = ["LLMGradientProposer", "LLMPlanMerger", "LLMTrajectoryExtractor"]
