"""SingleTurnLLMRolloutExecutor: one chat call per case, with the relevant experiences in the prompt.

The agent is the model itself: a system prompt carrying the experiences most relevant to the
case's request (the ranking every ovtui retriever shares, deprecated and archived ones left out), then
the user's query. The rollouts come back ungraded: the environment the cases are for grades them
(``train.components.graded_executor``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, Experience, ExperienceSet, Message, Rollout, TextPart
from ovtui.core.rollouts import user_query
from ovtui.memory.experience_prompt import EXPERIENCES_HEADER, relevant_experiences
from ovtui.memory.hotness import HotnessMix
from ovtui.memory.ledger_state import ROLLOUT_ID, Use, new_rollout_id, rollout_consumer

if TYPE_CHECKING:  # the openai client loads only when an LLM executor is built
    from ovtui.llm.client import LLMClient

SYSTEM_PROMPT = """\
You are a helpful customer-support agent. Answer the user's request in one reply.
{experiences}"""


class SingleTurnLLMRolloutExecutor:
    label = "llm"

    def __init__(
        self,
        client: LLMClient,
        *,
        max_experiences: int = 5,
        system_prompt: str = SYSTEM_PROMPT,
        stage: str = "rollout",
        hotness: HotnessMix | None = None,
    ) -> None:
        self.hotness = hotness
        self.client = client
        self.max_experiences = max_experiences
        self.system_prompt = system_prompt
        self.stage = stage

    def system_message(self, experiences: list[Experience]) -> str:
        block = "\n\n".join(f"### {e.name}\n{e.content.strip()}" for e in experiences)
        return self.system_prompt.format(experiences=EXPERIENCES_HEADER + block if block else "").strip()

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        # The client's semaphore bounds the calls; a failed case fails the batch with its own error.
        results = await asyncio.gather(
            *(self._run(c, policy_set, context) for c in cases), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, Rollout)]

    async def _run(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        query = user_query(case)
        experiences = relevant_experiences(policy_set, query, self.max_experiences, self.hotness)
        used: dict[str, object] = {}
        if self.hotness is not None and experiences:
            # Each rollout is the consumer of what it retrieved; the run links its outcome when graded.
            used[ROLLOUT_ID] = rollout_id = new_rollout_id()
            uses = [Use(e.uri, rollout_consumer(rollout_id), "agent", e.version) for e in experiences]
            await asyncio.to_thread(self.hotness.ledger.try_record, uses)
        messages = [
            {"role": "system", "content": self.system_message(experiences)},
            {"role": "user", "content": query},
        ]
        text, reply = await self.client.complete_text(self.stage, messages)
        rollout = Rollout(
            case=case,
            messages=[
                Message(role="user", parts=[TextPart(text=query)]),
                Message(role="assistant", parts=[TextPart(text=text)]),
            ],
            policy_snapshot_id=context.policy_snapshot_id,
            metadata={
                "executor": "single_turn_llm",
                "experiences": [e.name for e in experiences],
                "finish_reason": reply.finish_reason,
                **used,
            },
        )
        return rollout
