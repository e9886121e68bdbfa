"""SessionCommitPolicyTrainer over real sockets: against ``ovtui serve`` in its own process (it trains
cases, trajectories and experiences and mines no user memory); against a fake OpenViking-shaped
server that ignores ``wait`` (backoff, counted polls) and serves each commit's memory_diff (what
it changed comes back as a pending plan here); and, opt-in, against a real OpenViking server named
by OVTUI_OPENVIKING_URL (skipped otherwise)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from server_support import threaded_server
from session_support import approving_sample_workspace, ovtui_serve
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.domain import (
    Case,
    CriterionResult,
    ExperienceSet,
    Message,
    Rollout,
    RolloutTrainingResult,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
)
from ovtui.core.events import Event, EventBus
from ovtui.core.fileformat import parse_memory
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config
from ovtui.train.components.session_commit_trainer import (
    LocalReview,
    PollSchedule,
    SessionCommitPolicyTrainer,
)
from ovtui.train.review.pending import PendingPlans
from ovtui.wiring.registry import TRAINERS
from ovtui.wiring.workspace import Workspace

USER_TYPES = ("profile", "preferences", "entities", "events")


def rollout(passed: bool = True, action: str = "cancel", run: str = "") -> Rollout:
    """A rollout of ``<action>_order`` (two actions train two different experiences; ``run``
    suffixes the case and its task, so a server that learned them before learns them anew)."""
    case = Case(
        name=f"{action}_order_7{run}",
        task_signature=f"{action}_order{run}",
        input={"user_query": f"{action.title()} my order 7", "policy": "dropped from the CaseSpec"},
        rubric=Rubric(name=f"{action}_order", criteria=[RubricCriterion(name="cancelled")]),
    )
    messages = [
        Message(
            role="user", parts=[TextPart(text="Hi, I am Ana Ruiz and I prefer email. Cancel my order 7.")]
        ),
        Message(
            role="assistant",
            parts=[
                ToolPart(tool_id="a", tool_name="get_order", tool_input={"order_id": "7"}, tool_output="ok")
            ],
        ),
        Message(
            role="assistant",
            parts=[
                ToolPart(
                    tool_id="b", tool_name=f"{action}_order", tool_input={"order_id": "7"}, tool_output="ok"
                )
            ],
        ),
        Message(role="assistant", parts=[TextPart(text="Done, order 7 is cancelled.")]),
    ]
    evaluation = RubricEvaluation(
        passed=passed,
        score=1.0 if passed else 0.0,
        criterion_results=[CriterionResult(criterion_name="cancelled", passed=passed, score=float(passed))],
    )
    return Rollout(case=case, messages=messages, evaluation=evaluation)


def fenced(text: str) -> Any:
    return json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])


def memory_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.glob("memories/**/*.md")}


def train(
    url: str,
    rollouts: list[Rollout],
    *,
    local: Path | None = None,
    events: list[Event] | None = None,
    **options: Any,
) -> RolloutTrainingResult:
    """The trainer's result for ``rollouts`` sent to ``url``; with ``local``, what the server
    changed comes back to that workspace (its events to ``events``)."""

    async def run() -> RolloutTrainingResult:
        review = None
        if local is not None:
            store = MemoryStore.open(local)
            review = LocalReview(
                store, PendingPlans(store), EventBus([events.append]) if events is not None else None
            )
        trainer = SessionCommitPolicyTrainer(url, review=review, **{"timeout": 60, **options})
        try:
            return await trainer.train_rollouts(rollouts, ExperienceSet(root_uri="x"))
        finally:
            await trainer.close()

    return asyncio.run(run())


# --- against ovtui serve -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = approving_sample_workspace(tmp_path_factory.mktemp("trainer") / "ws")
    with ovtui_serve(root) as url:
        yield url, root


def test_rollouts_train_ovtui_serve_as_casespec_v1_sessions(served: tuple[str, Path], tmp_path: Path) -> None:
    url, root = served
    local = build_sample_workspace(tmp_path / "local")
    events: list[Event] = []
    before = memory_files(root)
    # Two different tasks: whether the server batches them together or not (it flushes as soon as
    # no other commit is being analysed), each commit's training changes a file.
    result = train(url, [rollout(), rollout(action="refund")], local=local, events=events)
    assert result.errors == []
    tasks = result.metadata["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    for task in tasks:
        session = root / "sessions" / task["resource_id"]
        policy = json.loads((session / "meta.json").read_text())["memory_policy"]
        assert policy["memory_types"] == ["cases", "trajectories", "experiences"]
        lines = [
            json.loads(line)
            for line in (session / "history/archive_001/messages.jsonl").read_text().splitlines()
        ]
        first, last = lines[0]["parts"][0]["text"], lines[-1]["parts"][0]["text"]
        assert lines[0]["role"] == "system" and first.startswith("# OpenViking Batch Training CaseSpec v1\n")
        spec = fenced(first)
        assert spec["protocol"] == "openviking.batch_train.case_spec.v1"
        assert spec["case"]["input"] == {"user_query": spec["case"]["input"]["user_query"]}  # no "policy"
        assert spec["case"]["rubric"]["criteria"][0]["description"] == "cancelled"  # OpenViking requires one
        assert lines[-1]["role"] == "user" and last.startswith("# OpenViking OutcomeEvaluation\n")
        assert fenced(last)["evaluation"]["passed"] is True
        diff = MemoryDiff.model_validate_json((session / "history/archive_001/memory_diff.json").read_text())
        assert diff.metadata["history_ids"], diff.metadata  # the server trained and applied
    new = memory_files(root) - before
    assert {"memories/cases/cancel_order_7.md", "memories/cases/refund_order_7.md"} <= new
    assert {"memories/experiences/cancel_order.md", "memories/experiences/refund_order.md"} <= new
    assert len([n for n in new if n.startswith("memories/trajectories/")]) == 2
    assert not [
        n for n in new if n.split("/")[1] in USER_TYPES
    ]  # the stated name and preference stay unmined
    # ovtui's server holds each poll until its task finishes: one poll per `wait` at most.
    for commit in result.metadata["commits"]:
        assert not commit["wait_ignored"] and commit["polls"] <= math.ceil(commit["seconds"] / 10) + 1, commit
    # What the server learned comes back through its content API as one plan parked here, each
    # item the server's text of an experience this workspace has not got.
    plan_id = result.metadata["pending_plan"]
    assert [e.data["plan_id"] for e in events if e.kind == "plan_pending"] == [plan_id]
    [pending] = PendingPlans(MemoryStore.open(local)).list()
    assert pending.plan_id == plan_id
    items = {i.target_name: i for i in pending.plan.items}
    assert {"cancel_order", "refund_order"} <= set(items)
    for name in ("cancel_order", "refund_order"):
        on_server = (root / "memories" / "experiences" / f"{name}.md").read_text()
        after = items[name].after_content
        assert items[name].before_content is None and after
        assert after.strip() in on_server


def test_a_refused_session_is_that_rollouts_error(served: tuple[str, Path]) -> None:
    url, _ = served

    result = train(url + "/nowhere", [rollout()], timeout=5)
    assert len(result.errors) == 1 and "cancel_order_7" in result.errors[0] and "404" in result.errors[0]


def test_registered_by_name(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text(
        (root / "ovtui.toml").read_text() + '\n[sessions]\napi_url = "http://127.0.0.1:9"\n'
    )
    workspace = Workspace(root, load_config(root))
    resources = kernel_of(workspace)
    trainer = TRAINERS.get("session-commit")(resources, None, ExperienceSet(root_uri="x"))  # type: ignore[arg-type]
    assert isinstance(trainer, SessionCommitPolicyTrainer) and trainer.base_url == "http://127.0.0.1:9"
    assert trainer.review is not None and trainer.review.store.paths.root == root  # [sessions] review_remote
    asyncio.run(trainer.close())


# --- against a fake OpenViking: wait ignored, memory_diffs served ---------------------------------

PREFIX = "viking://user/default/"


@dataclass
class FakeOpenViking:
    """Answers as OpenViking 0.5.2 does where the trainer looks: envelopes, a task that stays
    pending for ``pending_polls`` polls whatever ``wait`` says, then completes naming its diff;
    ``content/read`` serves the diffs (the nth commit gets ``diffs[n]``) and the ``files`` the server
    holds now (a URI not there is a 404, a None text a 500)."""

    diffs: list[dict[str, Any]]
    files: dict[str, str | None] = field(default_factory=dict)
    pending_polls: int = 0
    polls: dict[str, list[float]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = FastAPI()

        def ok(result: Any) -> dict[str, Any]:
            return {"status": "ok", "result": result, "error": None}

        @app.post("/api/v1/sessions")
        async def create(request: Request) -> dict[str, Any]:
            body = await request.json()
            self.sessions[body["session_id"]] = {"create": body, "messages": []}
            return ok({"session_id": body["session_id"]})

        @app.post("/api/v1/sessions/{sid}/messages/batch")
        async def add(sid: str, request: Request) -> dict[str, Any]:
            self.sessions[sid]["messages"] += (await request.json())["messages"]
            return ok({"session_id": sid, "added": len(self.sessions[sid]["messages"])})

        @app.post("/api/v1/sessions/{sid}/commit")
        async def commit(sid: str) -> dict[str, Any]:
            self.commits.append(sid)
            task_id = f"t{len(self.commits) - 1}"
            self.polls[task_id] = []
            return ok({"session_id": sid, "status": "accepted", "task_id": task_id, "archived": True})

        @app.get("/api/v1/tasks/{task_id}")
        async def task(task_id: str) -> dict[str, Any]:
            self.polls[task_id].append(time.monotonic())
            if len(self.polls[task_id]) <= self.pending_polls:
                return ok({"task_id": task_id, "status": "pending", "result": None})
            uri = f"{PREFIX}sessions/x/history/archive_{task_id}/memory_diff.json"
            result = {"memory_diff_uri": uri, "agent_memory_skip_reason": None}
            return ok({"task_id": task_id, "status": "completed", "result": result})

        @app.get("/api/v1/content/read")
        async def read(uri: str) -> Any:
            if "/archive_t" in uri:
                index = int(uri.split("/archive_t", 1)[1].split("/", 1)[0])
                return ok(json.dumps(self.diffs[index], indent=4))
            if uri not in self.files or self.files[uri] is None:
                status, code = (404, "NOT_FOUND") if uri not in self.files else (500, "INTERNAL")
                error = {"code": code, "message": f"{uri}: no", "details": None}
                return JSONResponse({"status": "error", "result": None, "error": error}, status)
            return ok(self.files[uri])

        return app


def diff(
    at: str, adds: Sequence[Any] = (), updates: Sequence[Any] = (), deletes: Sequence[Any] = ()
) -> dict[str, Any]:
    """A memory_diff.json as OpenViking 0.5.2 writes it (bodies without MEMORY_FIELDS, null trace)."""
    return {
        "archive_uri": f"{PREFIX}sessions/x/history/archive_001",
        "trace_id": None,
        "extracted_at": at,
        "operations": {"adds": list(adds), "updates": list(updates), "deletes": list(deletes)},
        "skipped_operations": [],
        "summary": {
            "total_adds": len(adds),
            "total_updates": len(updates),
            "total_deletes": len(deletes),
            "total_skipped": 0,
        },
    }


def exp(name: str, peer: str | None = None) -> str:
    return f"{PREFIX}{f'peers/{peer}/' if peer else ''}memories/experiences/{name}.md"


def test_a_server_that_ignores_wait_is_polled_with_a_doubling_pause() -> None:
    fake = FakeOpenViking(diffs=[diff("2026-12-01T10:00:00+00:00")], pending_polls=4)
    schedule = PollSchedule(wait=10.0, first_pause=0.02, max_pause=0.08)

    with threaded_server(fake.app()) as url:
        result = train(url, [rollout()], poll=schedule)
    assert result.errors == []
    (commit,) = result.metadata["commits"]
    assert commit["polls"] == 5 and commit["wait_ignored"] is True and result.metadata["polls"] == 5
    times = fake.polls["t0"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= pause for gap, pause in zip(gaps, [0.02, 0.04, 0.08, 0.08], strict=True)), gaps
    created = fake.sessions[commit["session_id"]]["create"]
    assert created["memory_policy"] == {
        "memory_types": ["cases", "trajectories", "experiences"],
        "working_memory": {"enabled": False},
    }


def test_what_the_server_learned_comes_back_as_a_pending_plan(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "local")
    workspace = Workspace(root)
    local = {e.name: e for e in workspace.reading.experiences().policies}
    seat, pet, upgrade = (local[n] for n in ("seat_selection", "pet_travel_request", "upgrade_request"))
    created = (
        "## Situation\n- The customer asks to change a booking.\n\n## Approach\n- Read the booking first."
    )
    chained = created + "\n- Confirm the new date with the customer."
    seat_after = seat.content + "\n- Offer the companion seat first."
    first = diff(
        "2026-12-01T10:00:00+00:00",
        adds=[
            {"uri": exp("booking_change"), "memory_type": "experiences", "after": created},
            {"uri": f"{PREFIX}memories/trajectories/t_1.md", "memory_type": "trajectories", "after": "# t"},
            {"uri": exp("upgrade_request"), "memory_type": "experiences", "after": upgrade.content + "\n"},
            {"uri": exp("shared", peer="bob"), "memory_type": "experiences", "after": "x"},
            {"uri": exp("check_first"), "memory_type": "experiences", "after": "## Approach\n- Check first."},
        ],
        updates=[
            {
                "uri": exp("seat_selection"),
                "memory_type": "experiences",
                "before": seat.content,
                "after": seat_after,
            },
            {
                "uri": exp("special_meal_request"),
                "memory_type": "experiences",
                "before": "another text",
                "after": "y",
            },
            {"uri": f"{PREFIX}memories/cases/c.md", "memory_type": "cases", "before": "a", "after": "b"},
        ],
    )
    second = diff(  # later: builds on the first commit's new experience, retires another
        "2026-12-01T10:00:05+00:00",
        updates=[
            {"uri": exp("booking_change"), "memory_type": "experiences", "before": created, "after": chained}
        ],
        # Two commits trained in one batch each list the file they share, one without its text.
        adds=[{"uri": exp("check_first"), "memory_type": "experiences", "after": ""}],
        deletes=[
            {"uri": exp("pet_travel_request"), "memory_type": "experiences", "deleted_content": pet.content}
        ],
    )
    held = {  # the server's files now: booking_change cannot be read (its diffs' last text is used)
        exp("booking_change"): None,
        exp("check_first"): "## Approach\n- Check first.",
        exp("seat_selection"): seat_after,
        exp("special_meal_request"): "y",
        exp("upgrade_request"): upgrade.content,
    }
    # The order of the tasks is not the order of the changes.
    fake = FakeOpenViking(diffs=[second, first], files=held)
    events: list[Event] = []
    with threaded_server(fake.app()) as url:
        result = train(url, [rollout(), rollout(action="refund")], local=root, events=events)
    assert result.errors == []
    review = result.metadata["remote_review"]
    assert review["already_here"] == 1 and review["other_changes"] == 2
    left_out = "\n".join(review["left_out"])
    assert "special_meal_request" in left_out and "another text" in left_out and "bob" in left_out
    assert len(review["left_out"]) == 2
    plan_id = result.metadata["pending_plan"]
    assert [e.data["plan_id"] for e in events if e.kind == "plan_pending"] == [plan_id]
    plan = workspace.review.pending_plan(plan_id).plan
    items = {i.target_name: i for i in plan.items}
    assert set(items) == {"booking_change", "check_first", "pet_travel_request", "seat_selection"}
    assert items["check_first"].after_content == "## Approach\n- Check first."
    assert items["booking_change"].before_content is None and items["booking_change"].after_content == chained
    assert (
        items["seat_selection"].before_content == seat.content
        and items["seat_selection"].base_version == seat.version
    )
    assert (
        items["pet_travel_request"].kind == "delete"
        and items["pet_travel_request"].base_version == pet.version
    )
    assert items["seat_selection"].metadata["remote"]["server"] == url

    # Applying the reviewed plan writes the server's texts here; eval reads these files.
    workspace.review.decide_all(plan_id, "approved")
    applied = asyncio.run(workspace.review.apply_pending(plan_id))
    assert applied.errors == [] and applied.history_id
    after = {e.name: e for e in workspace.reading.experiences().policies}
    assert after["booking_change"].content == chained and after["seat_selection"].content == seat_after
    assert "pet_travel_request" not in after
    assert (
        parse_memory((root / "memories/experiences/booking_change.md").read_text()).fields["status"]
        == "draft"
    )


def test_a_local_file_changed_since_parking_is_refused_at_apply(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "local")
    workspace = Workspace(root)
    seat = {e.name: e for e in workspace.reading.experiences().policies}["seat_selection"]
    update = {
        "uri": exp("seat_selection"),
        "memory_type": "experiences",
        "before": seat.content,
        "after": "## Situation\n- new",
    }
    fake = FakeOpenViking(
        diffs=[diff("2026-12-01T10:00:00+00:00", updates=[update])],
        files={exp("seat_selection"): update["after"]},
    )

    with threaded_server(fake.app()) as url:
        plan_id = train(url, [rollout()], local=root).metadata["pending_plan"]
    path = root / "memories/experiences/seat_selection.md"
    path.write_text(path.read_text().replace("## Situation", "## Situation\n- Edited here meanwhile.", 1))
    workspace.review.decide_all(plan_id, "approved")
    applied = asyncio.run(workspace.review.apply_pending(plan_id))
    assert applied.written_uris == [] and "changed after this item was planned" in " ".join(applied.errors)


# --- opt-in: a real OpenViking --------------------------------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("OVTUI_OPENVIKING_URL"), reason="set OVTUI_OPENVIKING_URL to a real OpenViking"
)
def test_against_a_live_openviking_server(tmp_path: Path) -> None:
    """OpenViking (with agent evolution on) takes the CaseSpec v1 path: its memory_diffs hold
    cases, trajectories and experiences and no user memory, and the experience it learned comes
    back here as a pending plan. Rerunnable against a server that already learned: each run trains
    a task of its own (a unique case and task name); a model that still merges it into an earlier
    experience without a change gives no plan, which is then checked to be exactly that."""
    url = os.environ["OVTUI_OPENVIKING_URL"]
    root = build_sample_workspace(tmp_path / "local")
    # Two at once: OpenViking trains concurrent commits in one batch; a task of this run's own, so
    # a server that learned the last run's still has something to learn.
    run = f"_{uuid.uuid4().hex[:8]}"
    pair = [rollout(run=run), rollout(action="refund", run=run)]
    result = train(url, pair, local=root, api_key=os.environ.get("OVTUI_OPENVIKING_KEY"), timeout=600)
    assert result.errors == [] and [t["status"] for t in result.metadata["tasks"]] == ["completed"] * 2
    types: set[str] = set()
    unchanged: list[bool] = []  # per experience operation: whether it left the text as it was
    for task in result.metadata["tasks"]:
        diff_uri = task["result"]["memory_diff_uri"]
        read = httpx.get(f"{url}/api/v1/content/read", params={"uri": diff_uri}, timeout=30)
        ops = json.loads(read.json()["result"])["operations"]
        types |= {o["memory_type"] for kind in ("adds", "updates", "deletes") for o in ops[kind]}
        unchanged += [
            kind == "updates" and o.get("before") == o.get("after")
            for kind in ("adds", "updates")
            for o in ops[kind]
            if o["memory_type"] == "experiences"
        ]
    assert types == {"cases", "trajectories", "experiences"}, types  # no user memory mined
    # OpenViking answers at once whatever `wait` says: polled with a pause, not ~2 times a second.
    for commit in result.metadata["commits"]:
        assert commit["wait_ignored"] is True and commit["polls"] <= commit["seconds"] / 0.5 + 1, commit
    if result.metadata.get("pending_plan") is None:
        # a model that names experiences by something other than the task (a scripted one) may
        # merge this run into what it learned before without a change: then, and only then, no plan
        assert unchanged and all(unchanged), unchanged
        return
    plan = PendingPlans(MemoryStore.open(root)).get(result.metadata["pending_plan"]).plan
    assert plan.items and all(i.memory_type == "experiences" and i.after_content for i in plan.items)
