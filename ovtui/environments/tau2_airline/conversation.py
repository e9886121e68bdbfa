"""One tau2 airline episode: a tool-calling agent (the airline policy and the workspace's experiences
as its system prompt) talks with an LLM user simulator that plays the task's scenario.

The agent opens with a greeting; the simulator answers as the customer; the agent may call tools
(each call runs against the episode's database, its result goes back to the agent) until it
writes to the user. The episode ends when the simulator says a stop token (user_stop), the agent
says ###STOP### (agent_stop), the turn limit is reached (max_turns), or the agent's calls fail too
often (too_many_errors). Only the first two can earn a reward (tau2's rule).
"""

from __future__ import annotations

from typing import Any

from ovtui.environments.tau2_airline.data import policy
from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.schemas import TOOL_SPECS
from ovtui.environments.tau2_airline.tools import AirlineTools
from ovtui.plugins import (
    EXPERIENCES_HEADER,
    Case,
    ExperienceSet,
    LLMClient,
    Message,
    TextPart,
    ToolPart,
    relevant_experiences,
)

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
USER_STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)
GREETING = "Hi! How can I help you today?"
MAX_TOOL_ERRORS = 10

AGENT_PROMPT = """\
You are an airline customer service agent. Help the user within the policy below, using the tools.
Make one tool call at a time; when you call a tool, do not write to the user in the same turn.
Before any change to a booking, list what you will do and get the user's explicit yes.

<policy>
{policy}
</policy>
{experiences}"""

USER_PROMPT = """\
You play a customer who contacts an airline's customer service agent. Stay in character; never say
that you are an AI or mention these instructions. Write one short message at a time, as the
customer would, and give information only when the agent asks for it and only what is written
below. Do not invent facts that are not written here.

When your goal is reached, or clearly cannot be reached, write {stop} at the end of your last
message. If you are transferred to a human agent, write {transfer}. If the scenario does not tell
you how to answer, write {out_of_scope}.

<scenario>
{scenario}
</scenario>"""


def scenario_text(case: Case) -> str:
    scenario = case.input.get("user_scenario") or {}
    if not isinstance(scenario, dict):
        return str(scenario)
    labels = {
        "reason_for_call": "Why you call",
        "known_info": "What you know",
        "unknown_info": "What you do not know",
        "task_instructions": "How to behave",
    }
    return "\n\n".join(
        f"{label}:\n{str(scenario[k]).strip()}" for k, label in labels.items() if scenario.get(k)
    )


def agent_system_prompt(case: Case, policy_set: ExperienceSet, max_experiences: int) -> tuple[str, list[str]]:
    query = str(case.input.get("user_query") or "")
    chosen = relevant_experiences(policy_set, query, max_experiences)
    block = "\n\n".join(f"### {e.name}\n{e.content.strip()}" for e in chosen)
    text = AGENT_PROMPT.format(
        policy=policy().strip(), experiences=EXPERIENCES_HEADER + block if block else ""
    )
    return text.strip(), [e.name for e in chosen]


class Conversation:
    def __init__(
        self,
        agent: LLMClient,
        user: LLMClient,
        case: Case,
        policy_set: ExperienceSet,
        *,
        max_turns: int = 30,
        max_experiences: int = 5,
    ) -> None:
        self.agent, self.user, self.case = agent, user, case
        self.max_turns = max_turns
        self.tools = AirlineTools(AirlineDB())
        system, self.experiences_used = agent_system_prompt(case, policy_set, max_experiences)
        user_system = USER_PROMPT.format(
            stop=STOP, transfer=TRANSFER, out_of_scope=OUT_OF_SCOPE, scenario=scenario_text(case)
        )
        self.agent_history: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "assistant", "content": GREETING},
        ]
        # The simulator sees the conversation from the other side: the agent speaks as "user".
        self.user_history: list[dict[str, Any]] = [
            {"role": "system", "content": user_system},
            {"role": "user", "content": GREETING},
        ]
        self.messages: list[Message] = [Message(role="assistant", parts=[TextPart(text=GREETING)])]
        self.turns = 0
        self.tool_errors = 0

    async def run(self) -> str:
        """Play the episode; returns the termination reason."""
        while True:
            user_text, _ = await self.user.complete_text("user_simulator", self.user_history)
            self.user_history.append({"role": "assistant", "content": user_text})
            self.agent_history.append({"role": "user", "content": user_text})
            self.messages.append(Message(role="user", parts=[TextPart(text=user_text)]))
            if any(token in user_text for token in USER_STOP_TOKENS):
                return "user_stop"
            ended = await self._agent_turn()
            if ended is not None:
                return ended

    async def _agent_turn(self) -> str | None:
        while True:
            self.turns += 1
            if self.turns > self.max_turns:
                return "max_turns"
            reply = await self.agent.chat("agent", self.agent_history, tools=TOOL_SPECS)
            if reply.tool_calls:
                self.agent_history.append(
                    {
                        "role": "assistant",
                        "content": reply.content,
                        "tool_calls": [c.to_message() for c in reply.tool_calls],
                    }
                )
                if reply.content and reply.content.strip():
                    # tau2 keeps a tool-calling message's text, and its COMMUNICATE check reads it
                    self.messages.append(Message(role="assistant", parts=[TextPart(text=reply.content)]))
                for call in reply.tool_calls:
                    result = self.tools.call(call.name, call.arguments)
                    self.tool_errors += not result.ok
                    self.agent_history.append(
                        {"role": "tool", "tool_call_id": call.id, "content": result.output}
                    )
                    part = ToolPart(
                        tool_id=call.id or f"tau2-tool-{self.turns}",
                        tool_name=call.name,
                        tool_input=call.arguments,
                        tool_output=result.output,
                        tool_status="completed" if result.ok else "error",
                    )
                    self.messages.append(Message(role="assistant", parts=[part]))
                if self.tool_errors >= MAX_TOOL_ERRORS:
                    return "too_many_errors"
                continue
            text = reply.content or reply.refusal or ""
            self.agent_history.append({"role": "assistant", "content": text})
            self.user_history.append({"role": "user", "content": text})
            self.messages.append(Message(role="assistant", parts=[TextPart(text=text)]))
            return "agent_stop" if STOP in text else None

    def metadata(self, termination: str) -> dict[str, Any]:
        return {
            "termination": termination,
            "tools_used": [p.tool_name for m in self.messages for p in m.tool_parts],
            "iterations": self.turns,
            "experiences_used": self.experiences_used,
            "tool_errors": self.tool_errors,
        }
