"""The tau2 reward for airline tasks (reward basis DB × COMMUNICATE), computed as tau2 does:

- 0 unless the conversation ended because the agent or the user stopped it;
- DB: the database after replaying the agent's tool calls, in order, equals the database after
  replaying the task's reference actions (reads change nothing, refused calls change nothing, so
  extra reads, reordered reads and failed calls do not matter; a reference write that fails
  makes the DB verdict "not evaluated" and leaves it out of the product, as tau2 does);
- COMMUNICATE: every ``communicate_info`` string is, lower-cased, a substring of some assistant
  text that is lower-cased with its commas removed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from ovtui.environments.tau2_airline.data import tasks
from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.tools import AirlineTools

STOPPED = frozenset({"agent_stop", "user_stop"})
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


def replay(calls: list[ToolCall]) -> AirlineDB:
    db = AirlineDB()
    tools = AirlineTools(db)
    for call in calls:
        if call.requestor == "assistant":  # the airline domain has no user tools
            tools.call(call.name, call.arguments)
    return db


@functools.cache
def reference(task_id: str) -> tuple[AirlineDB, bool]:
    """The database after the task's reference actions, and whether every reference write worked."""
    db = AirlineDB()
    tools = AirlineTools(db)
    complete = True
    for action in tasks()[task_id]["evaluation_criteria"].get("actions") or []:
        result = tools.call(action["name"], action.get("arguments") or {})
        if not result.ok and action["name"] not in READ_ONLY:
            complete = False
    return db, complete


def communicated(info: str, assistant_texts: list[str]) -> bool:
    wanted = info.lower()
    return any(wanted in text.lower().replace(",", "") for text in assistant_texts if text)


def score(task_id: str, calls: list[ToolCall], assistant_texts: list[str], termination: str) -> AirlineScore:
    task = tasks()[task_id]
    criteria = task["evaluation_criteria"]
    gold, complete = reference(task_id)
    db_match = replay(calls).same_as(gold)
    missing = [i for i in criteria.get("communicate_info") or [] if not communicated(i, assistant_texts)]
    breakdown: dict[str, int] = {}
    basis = criteria.get("reward_basis") or []
    if "DB" in basis and complete:
        breakdown["DB"] = int(db_match)
    if "COMMUNICATE" in basis:
        breakdown["COMMUNICATE"] = int(not missing)
    notes = []
    if not complete:
        notes.append("a reference write failed: the DB verdict is not evaluated (as in tau2)")
    if termination not in STOPPED:
        notes.append(f"ended by {termination!r}, not by the agent or the user: reward 0")
        return AirlineScore(0.0, breakdown, db_match, notes)
    reward = 1.0
    for value in breakdown.values():
        reward *= value
    return AirlineScore(reward, breakdown, db_match, notes)
