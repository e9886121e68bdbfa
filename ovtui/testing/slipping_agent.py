"""The sample agent, slipping: with probability ``p`` a rollout leaves out one thing it would have
done — one of its actions, or asking the user before acting — and says which (``SLIP``), so an
adherence check can be held to the slips it was given.

A slipping rollout is the clean one run again with that one step left out: the agent believes it
was done (it does not try again), but no call is made and no question asked.
"""

from __future__ import annotations

import random
from typing import Any

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout
from ovtui.environments.sample.agent import Conversation, ExperienceLibrary, SampleAgentExecutor
from ovtui.environments.sample.tools import is_read_only
from ovtui.plugins.adherence import ASK

SLIP = "slipped"  # Rollout.metadata: the step left out (a tool, or ASK), when the rollout slipped


class _Slipping(Conversation):
    skip: str = ""

    def _call(self, tool: str, args: dict[str, Any]) -> None:
        if tool == self.skip:
            self.skip = ""
            self.done.append(tool)  # believed done: not tried again
            if not is_read_only(tool) and tool != "send_confirmation":
                self.changed.append(tool)
            return
        super()._call(tool, args)

    def _ask_about(self, tool: str) -> bool:
        if self.skip == ASK:
            self.skip = ""
            self.confirmation = True  # acts as if the user had agreed, never having asked
            return True
        return super()._ask_about(tool)


class SlippingAgent(SampleAgentExecutor):
    """``p``: the chance a rollout slips; ``seed``: which ones and how, reproducibly."""

    def __init__(self, p: float, *, seed: int = 0, hotness: Any = None) -> None:
        super().__init__(hotness=hotness)
        self.p = p
        self.random = random.Random(seed)

    def execute_sync(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        rollouts = super().execute_sync(cases, policy_set, context)
        library = ExperienceLibrary(policy_set, top_k=self.top_k)
        return [self._maybe_slip(r, library) for r in rollouts]

    def _maybe_slip(self, clean: Rollout, library: ExperienceLibrary) -> Rollout:
        if self.random.random() >= self.p:
            return clean
        asked = any(m.role == "user" for m in clean.messages[1:])
        steps = [t for t in clean.metadata["tools_used"] if not is_read_only(str(t))]
        choices = [*steps, *([ASK] if asked else [])]
        if not choices:
            return clean
        skip = self.random.choice(choices)
        return self.slipped(clean, library, str(skip))

    def slipped(self, clean: Rollout, library: ExperienceLibrary, skip: str) -> Rollout:
        """``clean``'s case run again leaving ``skip`` out (graded afresh, the same metadata)."""
        from ovtui.environments.sample.evaluator import grade
        from ovtui.environments.sample.understanding import read_request

        request = read_request(str(clean.case.input.get("user_query", "")))
        experiences = library.relevant(request)
        conversation = _Slipping(clean.case, library.guidance_for(experiences), request)
        conversation.skip = skip
        conversation.run()
        return clean.model_copy(
            update={
                "messages": conversation.messages,
                "evaluation": grade(clean.case, conversation.messages, conversation.db),
                "metadata": {**clean.metadata, "tools_used": list(conversation.done), SLIP: skip},
            }
        )
