"""``ovtui review`` end to end in real processes: park → show → approve some → apply → history, an
all-stale plan that applies nothing, and re-planning one stale plan and then all of them at once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from plan_support import park_peer_preference
from workspace_support import build_sample_workspace

from ovtui.memory.store import MemoryStore
from ovtui.train.review.pending import PendingPlans


@pytest.fixture(scope="module")
def parked_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample workspace where one epoch parked four plans on the same base (trained once: the
    offline learner parks the same plans every time)."""
    folder = tmp_path_factory.mktemp("parked")
    root = build_sample_workspace(folder / "ws")
    proc = run_ovtui("train", "ws", "--epochs", "1", "--no-eval", "--approve", "ask", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "plan(s) waiting for review: `ovtui review`" in proc.stdout
    return root


@pytest.fixture
def parked(parked_once: Path, tmp_path: Path) -> Path:
    """A copy of ``parked_once`` of this test's own, to decide, apply and discard in."""
    return Path(shutil.copytree(parked_once, tmp_path / "ws", symlinks=True))


def review(root: Path, *args: str) -> tuple[int, str, str]:
    proc = run_ovtui("review", *args, cwd=root)  # in the workspace folder, as `ovtui history` runs
    return proc.returncode, proc.stdout, proc.stderr


def listed(root: Path) -> list[dict[str, Any]]:
    code, out, err = review(root, "list", "--json")
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def history(root: Path) -> list[dict[str, Any]]:
    proc = run_ovtui("history", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    records: list[dict[str, Any]] = json.loads(proc.stdout)
    return records


def test_park_show_approve_some_apply_and_the_record_keeps_the_decisions(parked: Path) -> None:
    plans = listed(parked)
    assert len(plans) == 4
    first = plans[0]
    assert {"plan_id", "items", "undecided", "stale"} <= set(first)
    assert first["undecided"] == first["items"] == 5 and first["stale"] == 0
    plan_id = first["plan_id"]

    code, out, _ = review(parked, "show", plan_id[:6])  # a unique part of the id is enough
    assert code == 0 and f"plan      {plan_id}" in out
    assert out.count("pending   new") == 5

    code, out, _ = review(parked, "show", plan_id, "1")
    assert code == 0 and "Field Diff: content" in out and "+++ after/content" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes
    _, coloured, _ = review(parked, "show", plan_id, "1", "--color", "always")
    assert "\x1b[32m+" in coloured

    code, out, _ = review(parked, "apply", plan_id)
    assert code == 2 and not history(parked)  # undecided items: refused, nothing written
    code, out, _ = review(parked, "approve", plan_id, "0", "1", "--note", "reads right")
    assert code == 0 and "approved item(s) 0, 1; 3 undecided" in out
    code, out, _ = review(parked, "reject", plan_id)
    assert code == 0 and "rejected item(s) 2, 3, 4; 0 undecided" in out

    code, out, err = review(parked, "apply", plan_id)
    assert code == 0, err
    assert f"Applied plan {plan_id}: wrote 2 and deleted 0 file(s)" in out
    [record] = history(parked)
    assert record["plan_id"] == plan_id
    shown = run_ovtui("history", "show", record["id"], cwd=parked).stdout
    assert "decision  item 0: approved — reads right" in shown
    assert "decision  item 1: approved — reads right" in shown
    assert "decision  item 4: rejected" in shown
    assert plan_id not in [p["plan_id"] for p in listed(parked)]


def test_an_all_stale_plan_applies_nothing_then_is_replanned(parked: Path) -> None:
    plans = listed(parked)
    assert review(parked, "approve", plans[0]["plan_id"])[0] == 0
    assert review(parked, "apply", plans[0]["plan_id"])[0] == 0
    records = history(parked)
    now = {p["plan_id"]: p for p in listed(parked)}
    stale_plan = next(p for p in plans[1:] if now[p["plan_id"]]["stale"])
    plan_id = stale_plan["plan_id"]

    # Approve only the stale items: applying must say nothing happened, and write no record.
    _, shown, _ = review(parked, "show", plan_id)
    stale_items = [line.split()[0] for line in shown.splitlines() if line.endswith("STALE")]
    assert len(stale_items) == now[plan_id]["stale"]
    review(parked, "approve", plan_id, *stale_items)
    review(parked, "reject", plan_id)
    code, out, _ = review(parked, "apply", plan_id)
    assert code == 1
    assert f"Plan {plan_id}: nothing applied: {len(stale_items)} item(s) stale" in out
    assert history(parked) == records
    assert plan_id in [p["plan_id"] for p in listed(parked)]  # still waiting, to be re-planned

    code, out, err = review(parked, "replan", plan_id)
    assert code == 0, err
    assert out.startswith(f"re-planned {plan_id} as plan ")
    fresh = out.split(" as plan ")[1].split()[0]
    waiting = {p["plan_id"]: p for p in listed(parked)}
    # (an item that comes back unchanged keeps the decision it had: the fresh plan may start decided)
    assert plan_id not in waiting and waiting[fresh]["stale"] == 0 and waiting[fresh]["items"] > 0

    # Every remaining stale plan becomes ONE fresh plan.
    stale_ids = [p for p, row in waiting.items() if row["stale"]]
    assert stale_ids
    code, out, err = review(parked, "replan", "--all-stale")
    assert code == 0, err
    assert all(p in out for p in stale_ids)
    after = listed(parked)
    assert all(row["stale"] == 0 for row in after) and len(after) == len(waiting) - len(stale_ids) + 1
    assert review(parked, "replan", "--all-stale")[1].startswith("no waiting plan has a stale item")


def test_discard_and_bad_references(parked: Path) -> None:
    plan_id = listed(parked)[0]["plan_id"]
    code, out, _ = review(parked, "discard", plan_id)
    assert code == 0 and "nothing was written" in out
    assert plan_id not in [p["plan_id"] for p in listed(parked)] and not history(parked)
    code, _, err = review(parked, "show", "nope")
    assert code == 2 and "no pending plan matches 'nope'" in err
    code, _, err = review(parked, "approve", listed(parked)[0]["plan_id"], "99")
    assert code == 2 and "has no item 99" in err


def test_show_names_the_file_a_new_session_memory_will_write(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    park_peer_preference(PendingPlans(MemoryStore.open(root)))
    code, out, err = review(root, "show", "plansession1", "0")
    assert code == 0, err
    assert (
        "target    preferences: viking://user/default/peers/alice/memories/preferences/alice/aisle_seats.md"
        in out
    )


def test_replan_all_stale_keeps_the_decisions_and_notes_of_unchanged_items(parked: Path) -> None:
    """Re-planning keeps what a person decided on an item whose target and text come back the same,
    and asks again only about the item that changed (it once threw every decision and note away)."""
    first, second, *others = listed(parked)
    for plan in others:
        assert review(parked, "discard", plan["plan_id"])[0] == 0
    assert review(parked, "approve", first["plan_id"], "0")[0] == 0
    assert review(parked, "reject", first["plan_id"])[0] == 0
    assert review(parked, "apply", first["plan_id"])[0] == 0  # one file changes under the second plan
    plan_id = second["plan_id"]
    _, shown, _ = review(parked, "show", plan_id)
    items = [line.split() for line in shown.splitlines() if line[:3].strip().isdigit()]
    [stale] = [int(row[0]) for row in items if row[-1] == "STALE"]
    unchanged = [int(row[0]) for row in items if row[-1] != "STALE"]
    approved, rejected = unchanged[0], unchanged[1]
    assert review(parked, "approve", plan_id, str(approved), str(stale), "--note", "reads right")[0] == 0
    assert review(parked, "reject", plan_id, str(rejected), "--note", "too vague")[0] == 0

    code, out, err = review(parked, "replan", "--all-stale")
    assert code == 0, err
    assert f"re-planned {plan_id} as plan " in out and "2 kept their decision (same target, same text)" in out
    fresh = out.split(" as plan ")[1].split()[0]
    store = PendingPlans(MemoryStore.open(parked))
    old, new = store.get(plan_id), store.get(fresh)
    by_target = {item.target_name: d for item, d in zip(new.plan.items, new.decisions, strict=True)}
    name = {i: old.plan.items[i].target_name for i in range(len(old.plan.items))}
    assert (by_target[name[approved]].decision, by_target[name[approved]].note) == ("approved", "reads right")
    assert (by_target[name[rejected]].decision, by_target[name[rejected]].note) == ("rejected", "too vague")
    # Its file changed under it: the fresh plan changes it differently or not at all, never approved
    # on the strength of the old decision.
    assert name[stale] not in by_target or by_target[name[stale]].decision == "pending"
    assert f"kept: item {list(by_target).index(name[rejected])} {name[rejected]}: rejected — too vague" in out


def test_a_plan_file_that_cannot_be_read_is_named_not_skipped_silently(parked: Path) -> None:
    before = listed(parked)
    broken = parked / ".ovtui" / "pending" / "zz_broken.json"
    broken.write_text('{"plan_id": "zz_broken", "plan": ')  # cut short, as a full disk may leave it
    code, out, err = review(parked, "list")
    assert code == 0 and all(p["plan_id"] in out for p in before)  # the others are listed as before
    assert err.count("\n") == 1 and ".ovtui/pending/zz_broken.json is not a plan ovtui can read" in err
    assert broken.read_text() == '{"plan_id": "zz_broken", "plan": '  # left as it was, for `check`
