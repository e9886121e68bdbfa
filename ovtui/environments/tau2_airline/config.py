"""tau2 airline's own ``ovtui.toml`` tables, registered as ``ovtui.config`` entry points."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ovtui.plugins import LLMConfig, PluginConfig


class Tau2Config(PluginConfig):
    """``[tau2]``: how tau2 episodes run (the agent is ``[llm]``, the simulator ``[user_simulator]``)."""

    TABLE: ClassVar[str] = "tau2"

    max_turns: int = Field(30, ge=1, le=200)
    # Recorded conversations (JSONL, workspace-relative) for `[trainer] agent = "tau2-replay"`.
    replay: str | None = None


class UserSimulatorConfig(LLMConfig, PluginConfig):
    """``[user_simulator]``: the tau2 user simulator's own model settings, so agent and simulator
    may differ (absent: the simulator is ``[llm]``'s model too)."""

    TABLE: ClassVar[str] = "user_simulator"
