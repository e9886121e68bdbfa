"""Environments: the Environment interface (``base``), the built-in sample help desk and tau2
airline (each registered by an entry point, as another package's would be), and the scoring of
recorded rollouts. The registry by name is ``ovtui.wiring.registry``."""

from ovtui.plugins.environment import Environment, EnvironmentDefaults, EnvironmentError_

__all__ = ["Environment", "EnvironmentDefaults", "EnvironmentError_"]
