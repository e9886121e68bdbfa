"""Replay recorded tau2 airline conversations (the JSONL of ``ovtui env score``) as rollouts, so a
workspace trains from recorded conversations offline, through the same pipeline.

Each record's tool calls are run again on a fresh database to get their outputs (the evidence the
trajectory extractor reads); the rollout is graded with the tau2 reward. A task recorded several
times is replayed in turn (trial 1, 2, ...).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.environment import evaluation_from, record_fields
from ovtui.environments.tau2_airline.reward import score
from ovtui.environments.tau2_airline.tools import AirlineTools, ToolResult
from ovtui.plugins import (
    Case,
    EnvironmentError_,
    ExecutionContext,
    ExperienceSet,
    Message,
    RecordError,
    Rollout,
    TextPart,
    ToolPart,
    failed_rollout,
    record_of,
)

USER_CALL_REFUSED = ToolResult(False, "Error: User tools not available")


def rollout_from_record(record: dict[str, Any], case: Case, snapshot_id: str = "") -> Rollout:
    task_id, calls, texts, termination = record_fields(record)
    tools = AirlineTools(AirlineDB())
    messages: list[Message] = []
    for index, call in enumerate(calls):
        by_agent = call.requestor == "assistant"
        # airline has no user tools: tau2 answers a user's call with an error and changes nothing
        result = tools.call(call.name, call.arguments) if by_agent else USER_CALL_REFUSED
        part = ToolPart(
            tool_id=f"tau2-tool-{index}",
            tool_name=call.name,
            tool_input=call.arguments,
            tool_output=result.output,
            tool_status="completed" if result.ok else "error",
        )
        messages.append(Message(role="assistant" if by_agent else "user", parts=[part]))
    messages += [Message(role="assistant", parts=[TextPart(text=text)]) for text in texts]
    return Rollout(
        case=case,
        messages=messages,
        policy_snapshot_id=snapshot_id,
        evaluation=evaluation_from(score(task_id, calls, texts, termination)),
        metadata={
            "executor": "tau2_replay",
            "termination": termination,
            "rollout_id": record.get("rollout_id"),
        },
    )


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a bad line is an error naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvironmentError_(f"{path}: cannot read: {exc}") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = record_of(line)
            record_fields(record)
        except (json.JSONDecodeError, RecordError) as exc:
            raise EnvironmentError_(f"{path}:{number}: {exc}") from None
        records.append(record)
    return records


class ReplayRolloutExecutor:
    label = "tau2_replay"

    def __init__(self, records: list[dict[str, Any]]) -> None:
        by_task: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_task.setdefault(str(record["task_id"]), []).append(record)
        self._turns: dict[str, Iterator[dict[str, Any]]] = {t: itertools.cycle(r) for t, r in by_task.items()}

    @classmethod
    def from_file(cls, path: Path) -> ReplayRolloutExecutor:
        return cls(read_records(path))

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        out = []
        for case in cases:
            task_id = str(case.input.get("task_id", ""))
            turns = self._turns.get(task_id)
            if turns is None:
                out.append(
                    failed_rollout(case, context, f"no recorded rollout for task {task_id!r}", "replay")
                )
            else:
                out.append(rollout_from_record(next(turns), case, context.policy_snapshot_id))
        return out
