"""Environments (seed 000 §15.6): the Environment interface, the registry by name, the benchmark
service that serves one over HTTP (``ovtui env serve``) and its wire models."""

from ovtui.environments.base import Environment, EnvironmentError_
from ovtui.environments.registry import environment_names, get_environment

__all__ = ["Environment", "EnvironmentError_", "environment_names", "get_environment"]
