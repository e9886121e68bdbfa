"""The tau2 reward for airline tasks (reward basis DB × COMMUNICATE), computed as tau2 does:

- 0 unless the conversation ended because the agent or the user stopped it;
- no evaluation criteria: 1; no reference actions at all (``null``): the DB part is 1;
- DB: the database after replaying the agent's state-changing tool calls, in order, equals the
  database after replaying the task's reference actions. Like tau2's replay, reads and unknown
  tools are skipped and a call by anyone but the assistant changes nothing (airline has no user
  tools), so extra reads, reordered reads and failed calls do not matter. A reference write
  (or a reference call of an unknown tool) that fails leaves the gold state incomplete: a match
  against it is "not evaluated" (DB left out of the product), a mismatch still scores 0;
- COMMUNICATE: every ``communicate_info`` string is, lower-cased, a substring of some non-empty
  assistant text that is lower-cased with its commas removed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from ovtui.environments.tau2_airline.data import tasks
from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.tools import TOOL_NAMES, AirlineTools

STOPPED = frozenset({"agent_stop", "user_stop"})
# How an episode may end: tau2-bench's termination reasons, and max_turns (this conversation's turn
# limit, tau2's max_steps). Only those in STOPPED can earn a reward.
TERMINATIONS = (
    "user_stop",
    "agent_stop",
    "max_turns",
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
)
READ_ONLY = frozenset(
    {
        "calculate",
        "get_flight_status",
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "transfer_to_human_agents",
    }
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"


@dataclass(slots=True)
class AirlineScore:
    reward: float
    breakdown: dict[str, int]
    db_match: bool
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"reward": self.reward, "reward_breakdown": dict(self.breakdown), "db_match": self.db_match}


def changes_state(name: str) -> bool:
    """tau2's ``is_mutating_tool``: an unknown name is assumed to change state."""
    return name not in READ_ONLY


def replay(calls: list[ToolCall]) -> AirlineDB:
    db = AirlineDB()
    tools = AirlineTools(db)
    for call in calls:
        # the airline domain has no user tools: a user's call fails in tau2 and changes nothing
        if call.requestor == "assistant" and call.name in TOOL_NAMES and changes_state(call.name):
            tools.call(call.name, call.arguments)
    return db


def replay_reference(actions: list[dict[str, Any]]) -> tuple[AirlineDB, bool]:
    """The database after the reference actions, and whether every state-changing one worked."""
    db = AirlineDB()
    tools = AirlineTools(db)
    complete = True
    for action in actions:
        requestor = action.get("requestor") or "assistant"
        if requestor == "assistant":
            ok = tools.call(action["name"], action.get("arguments") or {}).ok
        else:
            ok = False  # no user tools in airline: tau2 raises "User tools not available"
        if not ok and changes_state(action["name"]):
            complete = False
    return db, complete


@functools.cache
def reference(task_id: str) -> tuple[AirlineDB, bool]:
    return replay_reference(tasks()[task_id]["evaluation_criteria"].get("actions") or [])


def communicated(info: str, assistant_texts: list[str]) -> bool:
    wanted = info.lower()
    return any(wanted in text.lower().replace(",", "") for text in assistant_texts if text and text.strip())


def score(task_id: str, calls: list[ToolCall], assistant_texts: list[str], termination: str) -> AirlineScore:
    task = tasks()[task_id]
    return score_criteria(task.get("evaluation_criteria"), calls, assistant_texts, termination, task_id)


def score_criteria(
    criteria: dict[str, Any] | None,
    calls: list[ToolCall],
    assistant_texts: list[str],
    termination: str,
    task_id: str | None = None,
) -> AirlineScore:
    """The reward for one task's criteria (``task_id`` caches the reference replay). A run that
    did not stop still gets its DB and COMMUNICATE verdicts, for the report; its reward is 0."""
    if criteria is None:
        return AirlineScore(float(termination in STOPPED), {}, True, ["no evaluation criteria"])
    actions = criteria.get("actions")
    basis = criteria.get("reward_basis") or []
    breakdown: dict[str, int] = {}
    notes = []
    if actions is None:  # tau2: no expected actions (and no assertions) is a DB pass, unscored
        db_match = True
        notes.append("no reference actions: the DB part is 1")
    else:
        gold, complete = reference(task_id) if task_id is not None else replay_reference(actions)
        db_match = replay(calls).same_as(gold)
        if not complete and db_match:
            notes.append("a reference write failed: a DB match is not evaluated (as in tau2)")
        elif "DB" in basis:
            breakdown["DB"] = int(db_match)
    if "COMMUNICATE" in basis:
        missing = [i for i in criteria.get("communicate_info") or [] if not communicated(i, assistant_texts)]
        breakdown["COMMUNICATE"] = int(not missing)
    reward = 1.0
    for value in breakdown.values():
        reward *= value
    if termination not in STOPPED:
        notes.append(f"ended by {termination!r}, not by the agent or the user: reward 0")
        reward = 0.0
    return AirlineScore(reward, breakdown, db_match, notes)
