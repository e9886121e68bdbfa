"""tau2 airline as an Environment: cases from tau2's train/test split, rollouts executed by the
tool-calling agent talking to the LLM user simulator, graded by the tau2 reward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ovtui.environments.tau2_airline import data
from ovtui.environments.tau2_airline.config import Tau2Config, UserSimulatorConfig
from ovtui.environments.tau2_airline.conversation import Conversation
from ovtui.environments.tau2_airline.reward import TERMINATIONS, AirlineScore, ToolCall, score
from ovtui.environments.tau2_airline.schemas import TOOL_SPECS
from ovtui.plugins import (
    Case,
    CriterionResult,
    EnvironmentDefaults,
    EnvironmentError_,
    ExecutionContext,
    ExperienceSet,
    RecordError,
    Rollout,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    check_split,
    cut_text,
)

if TYPE_CHECKING:
    from ovtui.plugins import LLMClient, LLMConfig, OvtuiConfig

CRITERION = "tau2_reward"
# What an agent that changes nothing and says nothing scores (tau2's own reward): the floor a
# learned policy must beat before anyone calls it learning.
DO_NOTHING = {"train": (16, 30), "test": (7, 20)}


def case_for(task_id: str, split: str) -> Case:
    task = data.tasks()[task_id]
    instructions = (task.get("user_scenario") or {}).get("instructions") or {}
    return Case(
        name=f"tau2_airline_{split}_{task_id}",
        task_signature=f"tau2:airline:{split}:{task_id}",
        input={
            "domain": "airline",
            "split": split,
            "task_id": task_id,
            "task_no": int(task_id) if task_id.isdigit() else task_id,
            "user_query": str(instructions.get("reason_for_call") or "").strip(),
            "user_scenario": instructions,
        },
        rubric=Rubric(
            name=f"tau2_airline_{split}_{task_id}_rubric",
            description="The conversation leaves the airline database as it should and tells the user "
            "what the user needs to know.",
            criteria=[RubricCriterion(name=CRITERION, description="The tau2 environment reward is 1.0.")],
        ),
        metadata={
            "dataset": "tau2",
            "domain": "airline",
            "source": "tau2",
            "split": split,
            # What changing nothing and saying nothing earns on this task (tau2's reward): the
            # report sums it into the do-nothing baseline printed beside the accuracy.
            "do_nothing_reward": score(task_id, [], [], "user_stop").reward,
        },
    )


def evaluation_from(result: AirlineScore) -> RubricEvaluation:
    passed = result.reward >= 1.0
    feedback: list[str] = []
    if result.breakdown.get("DB") == 0:
        feedback.append("the database after the conversation is not the one the task needs")
    if result.breakdown.get("COMMUNICATE") == 0:
        feedback.append("the agent did not tell the user everything the task needs told")
    feedback += result.notes
    if not passed and not feedback:
        feedback.append("tau2 environment reward is below 1.0")
    metadata = {"source": "tau2_airline", "reward": result.reward, **result.as_json()}
    return RubricEvaluation(
        passed=passed,
        score=result.reward,
        criterion_results=[
            CriterionResult(
                criterion_name=CRITERION,
                passed=passed,
                score=result.reward,
                feedback=feedback,
                metadata=metadata,
            )
        ],
        feedback=feedback,
        metadata=metadata,
    )


def calls_and_texts(rollout: Rollout) -> tuple[list[ToolCall], list[str]]:
    calls: list[ToolCall] = []
    texts: list[str] = []
    for message in rollout.messages:
        if message.role != "assistant":
            continue
        for part in message.parts:
            if part.type == "tool":
                calls.append(ToolCall(part.tool_name, dict(part.tool_input)))
            elif part.type == "text":
                texts.append(part.text)
    return calls, texts


MAX_SHOWN_CHARS = 80  # of a bad value, as an error shows it


def record_fields(record: dict[str, Any]) -> tuple[str, list[ToolCall], list[str], str]:
    task_id = str(record.get("task_id", ""))
    if task_id not in data.tasks():
        raise RecordError(f"task_id: no airline task {task_id!r}")
    raw_calls = record.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise RecordError("tool_calls: must be a list")
    calls = []
    for index, call in enumerate(raw_calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise RecordError(f"tool_calls[{index}]: needs a name")
        arguments = call.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RecordError(f"tool_calls[{index}].arguments: must be an object")
        calls.append(ToolCall(call["name"], arguments, str(call.get("requestor") or "assistant")))
    texts = record.get("assistant_texts") or []
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise RecordError("assistant_texts: must be a list of strings")
    termination = record.get("termination")
    if not isinstance(termination, str) or termination not in TERMINATIONS:
        if termination is None:
            said = "missing"
        elif isinstance(termination, str):
            said = f"{cut_text(termination, MAX_SHOWN_CHARS)!r} is not a termination reason"
        else:
            said = f"must be a string, not {type(termination).__name__}"
        raise RecordError(f"termination: {said}; one of {', '.join(TERMINATIONS)}")
    return task_id, calls, texts, termination


class AirlineEnvironment(EnvironmentDefaults):
    name = "tau2-airline"
    description = "tau2-bench airline domain (MIT data © 2025 Sierra Research)"

    def __init__(
        self,
        agent: LLMClient | None = None,
        user: LLMClient | None = None,
        *,
        max_turns: int = 30,
        models: tuple[LLMConfig, LLMConfig] | None = None,
    ) -> None:
        """``agent`` and ``user``: the models that play the agent and the user simulator; or
        ``models``, their settings, each client made when the first episode runs (an
        environment that only grades, as for ``tau2-replay``, never makes one)."""
        self._splits = data.splits()
        self.agent_model = agent
        self.user_model = user or agent
        self.max_turns = max_turns
        self._models = models

    @classmethod
    def from_config(cls, config: OvtuiConfig | None) -> AirlineEnvironment:
        """The agent model from ``[llm]``, the user simulator from ``[user_simulator]`` (else
        ``[llm]``); none without a configuration."""
        if config is None:
            return cls()
        simulator = config.table(UserSimulatorConfig) if config.has_table(UserSimulatorConfig.TABLE) else None
        settings = config.table(Tau2Config)
        return cls(max_turns=settings.max_turns, models=(config.llm, simulator or config.llm))

    def _clients(self) -> tuple[LLMClient, LLMClient] | None:
        if self.agent_model is None and self._models is not None:
            from ovtui.plugins import LLMClient

            agent, user = self._models
            self.agent_model = LLMClient(agent)
            self.user_model = self.agent_model if user is agent else LLMClient(user)
        if self.agent_model is None or self.user_model is None:
            return None
        return self.agent_model, self.user_model

    async def aclose(self) -> None:
        """Close the running loop's connections of the agent's and the user simulator's models."""
        for model in {id(m): m for m in (self.agent_model, self.user_model) if m is not None}.values():
            await model.aclose()

    def splits(self) -> list[str]:
        return list(self._splits)

    def cases(self, split: str) -> list[Case]:
        check_split(self, split)
        return [case_for(task_id, split) for task_id in self._splits[split]]

    def policy_text(self) -> str | None:
        return data.policy()

    def tool_schemas(self) -> list[dict[str, Any]] | None:
        return list(TOOL_SPECS)

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        clients = self._clients()
        if clients is None:
            raise EnvironmentError_(
                "tau2-airline needs models for the agent and the user simulator: [llm] (and optionally "
                "[user_simulator]) in the config given to `ovtui env serve --config`"
            )
        conversation = Conversation(*clients, case, policy_set, max_turns=self.max_turns)
        termination = await conversation.run()
        rollout = Rollout(
            case=case,
            messages=conversation.messages,
            policy_snapshot_id=context.policy_snapshot_id,
            metadata=conversation.metadata(termination),
        )
        rollout.evaluation = await self.evaluate(rollout)
        return rollout

    def case_problems(self, case: Case) -> list[str]:
        task_id = str(case.input.get("task_id", ""))
        return [] if task_id in data.tasks() else [f"input.task_id: no airline task {task_id!r}"]

    def can_grade(self, case: Case) -> bool:
        """A case of a tau2 airline task (graded by the tau2 reward of that task)."""
        return str(case.input.get("task_id", "")) in data.tasks()

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        calls, texts = calls_and_texts(rollout)
        termination = str(rollout.metadata.get("termination", ""))
        return evaluation_from(score(str(rollout.case.input.get("task_id")), calls, texts, termination))

    def score_record(self, record: dict[str, Any]) -> dict[str, Any]:
        task_id, calls, texts, termination = record_fields(record)
        result = score(task_id, calls, texts, termination)
        out: dict[str, Any] = {"rollout_id": record["rollout_id"]} if "rollout_id" in record else {}
        return {**out, "task_id": task_id, **result.as_json()}
