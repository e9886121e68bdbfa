"""The offline backend: deterministic trajectory extraction, gradient proposal and plan merging.

No model and no network, so a fresh install can train the sample agent. It implements the three
seams of ``ovtui.plugins.backends`` and is labelled ``"offline"`` wherever results are shown.
"""

from ovtui.train.backends.offline.gradients import OfflineGradientProposer
from ovtui.train.backends.offline.merge import OfflinePlanMerger
from ovtui.train.backends.offline.trajectory import OFFLINE_LABEL, OfflineTrajectoryExtractor

__all__ = ["OFFLINE_LABEL", "OfflineGradientProposer", "OfflinePlanMerger", "OfflineTrajectoryExtractor"]
