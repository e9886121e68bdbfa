"""OpenViking's agent-evolution routes on ``ovtui serve``, over a real socket: a session that used
experiences (through the facade, as a find or read with its id does, and through its own read tool
calls) is committed, and the trajectories and outcomes its case fed are served in OpenViking's
shapes; paging, date ranges, and every refusal with OpenViking's codes, messages and details."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from session_support import CONVERSATION, ok, served_sample_workspace

from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import OUTCOMES, Outcome, Result, Use
from ovtui.storage.paths import WorkspacePaths
from ovtui.wiring.workspace import Workspace

EXP = "viking://user/default/memories/experiences"
SEAT = f"{EXP}/seat_selection.md"
PETS = f"{EXP}/pet_travel_request.md"
MEALS = f"{EXP}/special_meal_request.md"
TRAJECTORIES = "/api/v1/agent-evolution/experiences/trajectories"
OUTCOMES_ROUTE = "/api/v1/agent-evolution/experiences/outcomes"
DAY = 86_400.0
JAN_1 = 1_798_761_600.0  # 2027-01-01 00:00 UTC


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("evolution") / "ws") as served:
        yield served


def read_call(
    tool_id: str, tool_name: str, tool_input: dict[str, Any], output: str, status: str = "completed"
) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool_id": tool_id,
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_output": output,
        "tool_status": status,
    }


READS = {
    "role": "assistant",
    "parts": [
        read_call("r1", "openviking_read", {"uri": SEAT}, "## Situation ..."),  # also read through the API
        read_call(
            "r2",
            "mcp__openviking__multi_read",
            {"uris": [PETS, MEALS]},
            f'[{{"uri": "{MEALS}", "success": false}}]',
        ),
        read_call("r3", "read", {"uri": "viking://~/memories/experiences/upgrade_request.md"}, "ok", "error"),
        read_call(
            "r4",
            "ov_read",
            {"uri": f"{EXP}/flight_status_inquiry.md"},
            f"(nothing found at {EXP}/flight_status_inquiry.md)",
        ),
        read_call("r5", "get_order", {"uri": f"{EXP}/lost_baggage_report.md"}, "not a read"),
    ],
}


def commit(client: httpx.Client, session_id: str) -> dict[str, Any]:
    accepted = ok(client.post(f"/api/v1/sessions/{session_id}/commit"))
    for _ in range(60):
        task: dict[str, Any] = ok(client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 5}))
        if task["status"] in ("completed", "failed"):
            assert task["status"] == "completed", task
            return task
    raise AssertionError("the commit never finished")


def error(response: httpx.Response, status: int) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == status, body
    assert body["status"] == "error", body
    return dict(body)


def test_a_committed_session_s_uses_and_outcome_are_served(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    # A find or read made with the session's id records its uses through the facade.
    Workspace(root).agent.record_uses("s1", [SEAT], "read")
    Workspace(root).agent.record_uses(None, [PETS], "find")  # no session asked: not a use
    ok(
        client.post(
            "/api/v1/sessions/s1/messages/batch",
            json={"messages": [*CONVERSATION[:3], READS, CONVERSATION[3]]},
        )
    )
    task = commit(client, "s1")
    assert task["result"]["memories_extracted"]["cases"] == 1
    usage = UseLedger(WorkspacePaths(root)).usage()
    # the API read and the tool call that reported it are one use; the failed and refused reads,
    # the read of another tool and the reads that did not complete count nothing
    assert {uri: u.count for uri, u in usage.items()} == {SEAT: 1, PETS: 1}
    assert usage[SEAT].sessions == usage[PETS].sessions == 1 and sum(usage[SEAT].outcomes) >= 1
    seat = Workspace(root).reading.memory(SEAT)
    assert seat is not None and [v for v, _ in usage[SEAT].versions] == [seat.version]  # the version served

    listed = client.get(TRAJECTORIES, params={"experience_uri": SEAT, "unknown": "ignored"})
    body = listed.json()
    assert set(body) == {"status", "result", "error", "telemetry", "profile"} and body["error"] is None
    page = ok(listed)
    assert set(page) == {"experience_uri", "items", "total", "limit", "offset", "has_more"}
    assert page["experience_uri"] == SEAT and page["limit"] == 50 and page["offset"] == 0
    assert page["total"] == len(page["items"]) >= 1 and page["has_more"] is False
    [item] = page["items"]
    assert set(item) == {"uri", "name", "created_at", "updated_at"}
    assert item["uri"].startswith("viking://user/default/memories/trajectories/") and item["uri"].endswith(
        ".md"
    )
    assert (root / item["uri"].split("/default/", 1)[1]).is_file()  # the trajectory the commit wrote
    assert item["created_at"].endswith("Z") and item["created_at"] == item["updated_at"]

    distribution = ok(client.get(OUTCOMES_ROUTE, params={"experience_uri": PETS}))
    assert distribution["experience_uri"] == PETS
    assert [d["outcome"] for d in distribution["outcome_distribution"]] == list(OUTCOMES)
    assert sum(d["count"] for d in distribution["outcome_distribution"]) == sum(usage[PETS].outcomes) >= 1
    # an experience never used: every outcome, each zero; no trajectory
    unused = ok(client.get(OUTCOMES_ROUTE, params={"experience_uri": f"{EXP}/upgrade_request.md"}))
    assert unused["outcome_distribution"] == [{"outcome": o, "count": 0} for o in OUTCOMES]
    assert ok(client.get(TRAJECTORIES, params={"experience_uri": MEALS}))["items"] == []


def test_paging_and_date_ranges(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    uri = f"{EXP}/baggage_allowance_question.md"
    ledger = UseLedger(WorkspacePaths(root))
    for day, outcome in enumerate(["success", "failure", "partial", "success", "unknown"]):
        consumer = f"session:paged{day}"
        trajectory = f"viking://user/default/memories/trajectories/t{day}.md"
        ledger.record(
            [Use(uri, consumer), Outcome(consumer, (Result(outcome, trajectory),))], at=JAN_1 + day * DAY
        )
    ledger.record([Use(uri, "rollout:r"), Outcome("rollout:r", (Result("success"),), final=True)], at=JAN_1)

    first = ok(client.get(TRAJECTORIES, params={"experience_uri": uri, "limit": 2}))
    assert [i["name"] for i in first["items"]] == ["t4", "t3"] and first["total"] == 5 and first["has_more"]
    last = ok(client.get(TRAJECTORIES, params={"experience_uri": uri, "limit": 2, "offset": 4}))
    assert [i["name"] for i in last["items"]] == ["t0"] and last["has_more"] is False
    assert last["items"][0]["created_at"] == "2027-01-01T00:00:00.000Z"
    ranged = {"experience_uri": uri, "start_date": "2027-01-02", "end_date": "2027-01-04"}
    assert [i["name"] for i in ok(client.get(TRAJECTORIES, params=ranged))["items"]] == ["t3", "t2", "t1"]

    def distribution(**params: str) -> list[int]:
        found = ok(client.get(OUTCOMES_ROUTE, params={"experience_uri": uri, **params}))
        return [d["count"] for d in found["outcome_distribution"]]

    assert distribution() == [3, 1, 1, 1, 0]  # the graded rollout without a trajectory counts too
    assert distribution(start_date="2027-01-02", end_date="2027-01-04") == [1, 1, 1, 0, 0]
    assert distribution(start_date="2027-01-05") == [0, 0, 0, 1, 0]
    assert distribution(end_date="2027-01-01") == [2, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        (
            {"experience_uri": "viking://user/alice/memories/experiences/seat_selection.md"},
            400,
            "owned by the current user",
        ),
        ({"experience_uri": f"{EXP}/../profile.md"}, 400, "owned by the current user"),
        ({"experience_uri": f"{EXP}/seat_selection.md?x=1"}, 400, "owned by the current user"),
        ({"experience_uri": f"{EXP}/.abstract.md"}, 400, "owned by the current user"),
        ({"experience_uri": f"{EXP}/"}, 400, "owned by the current user"),
        ({"experience_uri": "viking://user/default/memories/profile.md"}, 400, "owned by the current user"),
        ({"experience_uri": SEAT, "start_date": "2027-1-2"}, 400, "start_date must use YYYY-MM-DD format"),
        ({"experience_uri": SEAT, "end_date": "2027-02-30"}, 400, "end_date must be a valid YYYY-MM-DD date"),
        (
            {"experience_uri": SEAT, "start_date": "2027-01-03", "end_date": "2027-01-02"},
            400,
            "start_date must be on or before end_date",
        ),
    ],
)
@pytest.mark.parametrize("route", [TRAJECTORIES, OUTCOMES_ROUTE])
def test_refusals_are_openviking_s(
    served: tuple[httpx.Client, Path], route: str, params: dict[str, str], status: int, message: str
) -> None:
    client, _ = served
    body = error(client.get(route, params=params), status)
    assert body["error"]["code"] == "INVALID_ARGUMENT" and message in body["error"]["message"]
    assert body["error"]["details"] == {} and body["result"] is None and "telemetry" in body


def test_a_missing_file_a_folder_and_a_link_leading_out(
    served: tuple[httpx.Client, Path], tmp_path: Path
) -> None:
    client, root = served
    gone = f"{EXP}/no_such_experience.md"
    missing = error(client.get(TRAJECTORIES, params={"experience_uri": gone}), 404)["error"]
    assert missing == {
        "code": "NOT_FOUND",
        "message": f"File not found: {gone}",
        "details": {"type": "file", "resource": gone},
    }
    (root / "memories/experiences/a_folder").mkdir()
    folder = error(client.get(OUTCOMES_ROUTE, params={"experience_uri": f"{EXP}/a_folder"}), 400)["error"]
    assert folder["message"] == "experience_uri must identify an Experience file"
    outside = tmp_path / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    (root / "memories/experiences/leak.md").symlink_to(outside)
    leak = error(client.get(OUTCOMES_ROUTE, params={"experience_uri": f"{EXP}/leak.md"}), 400)["error"]
    assert "owned by the current user" in leak["message"]
    # the home alias names the user's own experience, answered under its full URI
    aliased = ok(
        client.get(
            OUTCOMES_ROUTE, params={"experience_uri": "viking://~/memories/experiences/seat_selection.md"}
        )
    )
    assert aliased["experience_uri"] == SEAT


@pytest.mark.parametrize(
    ("param", "value", "message", "kind"),
    [
        ("experience_uri", None, "Field required", "missing"),
        ("limit", "0", "Input should be greater than or equal to 1", "greater_than_equal"),
        ("limit", "1001", "Input should be less than or equal to 1000", "less_than_equal"),
        ("offset", "-1", "Input should be greater than or equal to 0", "greater_than_equal"),
        ("limit", "ten", "Input should be a valid integer", "int_parsing"),
    ],
)
def test_invalid_parameters_are_openviking_s_validation_errors(
    served: tuple[httpx.Client, Path], param: str, value: str | None, message: str, kind: str
) -> None:
    client, _ = served
    params = {} if value is None else {"experience_uri": SEAT, param: value}
    body = error(client.get(TRAJECTORIES, params=params), 400)
    assert set(body) == {"status", "error"}  # the compact form of a validation error
    assert body["error"]["code"] == "INVALID_ARGUMENT"
    assert body["error"]["message"].startswith(f"Invalid request parameters: query.{param}: {message}")
    [first] = body["error"]["details"]["validation_errors"]
    assert first["type"] == kind and first["loc"] == ["query", param]
