"""Training a workspace offline from recorded tau2 airline conversations: the replay executor runs
them through the same pipeline, graded by the tau2 reward, with trials and the do-nothing floor."""

from __future__ import annotations

import json
from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.environments.tau2_airline.data import tasks
from ovtui.wiring.registry import ENVIRONMENTS
from ovtui.wiring.workspace import TrainOptions, Workspace


def record(task_id: str, *, solve: bool, rollout_id: str) -> dict[str, object]:
    criteria = tasks()[task_id]["evaluation_criteria"]
    return {
        "rollout_id": rollout_id,
        "task_id": task_id,
        "tool_calls": [
            {"name": a["name"], "arguments": a["arguments"], "requestor": "assistant"}
            for a in (criteria["actions"] or [])
        ]
        if solve
        else [],
        "assistant_texts": [f"Noted: {i}" for i in criteria["communicate_info"]] if solve else [],
        "termination": "user_stop",
    }


async def test_train_from_recorded_conversations(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    environment = ENVIRONMENTS.get("tau2-airline")(None)
    train, test = environment.cases("train")[:6], environment.cases("test")[:4]
    folder = root / "datasets" / "airline"
    folder.mkdir(parents=True)
    for name, cases in (("train", train), ("validation", test)):  # tau2's held-out tasks: what runs score
        (folder / f"{name}.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    records = [record(c.input["task_id"], solve=i % 2 == 0, rollout_id=f"tr{i}") for i, c in enumerate(train)]
    # Two recorded trials per test task: the first solves it, the second does nothing.
    for c in test:
        records += [
            record(c.input["task_id"], solve=True, rollout_id=f"{c.name}-1"),
            record(c.input["task_id"], solve=False, rollout_id=f"{c.name}-2"),
        ]
    (root / "recorded.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = (root / "ovtui.toml").read_text().replace('agent = "sample"', 'agent = "tau2-replay"')
    config = config.replace("[trainer]\n", '[trainer]\nenvironment = "tau2-airline"\n')
    config = config.replace("[trainer]\n", "[trainer]\neval_trials = 2\n")
    (root / "ovtui.toml").write_text(config + '\n[tau2]\nreplay = "recorded.jsonl"\n')

    report = await Workspace(root).runs.train(TrainOptions(dataset="airline", epochs=1, approve="all"))

    assert report.errors == []
    epoch = report.stage("train_epoch")
    solved_or_free = sum(
        1 for i, c in enumerate(train) if i % 2 == 0 or c.metadata["do_nothing_reward"] == 1.0
    )
    assert epoch is not None and (epoch.cases, epoch.passed) == (6, solved_or_free)
    final = report.stage("final_eval")
    assert (
        final is not None
        and final.cases == 8
        and final.passed == 4 + sum(1 for c in test if c.metadata["do_nothing_reward"] == 1.0)
    )
    floor = sum(int(c.metadata["do_nothing_reward"]) for c in test)
    assert final.do_nothing_passed == floor
    text = report.summary()
    assert f"[final_eval] do-nothing baseline: {floor}/4" in text
    assert "[final_eval] 2 trials per case: pass^1=" in text
    assert "fail→pass (0): none" in text
    trajectories = [p.read_text() for p in (root / "memories" / "trajectories").glob("airline_*.md")]
    assert len(trajectories) >= 3 and any("get_reservation_details" in t for t in trajectories)


async def test_a_recorded_user_call_changes_nothing_and_stays_the_users() -> None:
    from ovtui.environments.tau2_airline.environment import AirlineEnvironment, case_for
    from ovtui.environments.tau2_airline.replay import rollout_from_record

    solved = record("8", solve=True, rollout_id="u1")
    calls = solved["tool_calls"]
    assert isinstance(calls, list)
    by_user = {**solved, "tool_calls": [{**c, "requestor": "user"} for c in calls]}
    case = case_for("8", "train")
    rollout = rollout_from_record(by_user, case)
    tools = [(m.role, p) for m in rollout.messages for p in m.tool_parts]
    assert tools and all(role == "user" and p.tool_status == "error" for role, p in tools)
    assert rollout.evaluation is not None and not rollout.evaluation.passed
    again = await AirlineEnvironment().evaluate(rollout)  # grading the rollout agrees with the replay
    assert again.score == rollout.evaluation.score == 0.0
    by_agent = rollout_from_record(solved, case).evaluation
    assert by_agent is not None and by_agent.passed
