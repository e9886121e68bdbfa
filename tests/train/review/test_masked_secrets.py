"""A secret an item adds is never kept in the pending plan file: it is stored masked, the item cannot be
approved while its approved text holds a mask, and once the reviewer edits the line, apply writes
exactly the edited text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_support import upsert
from workspace_support import EXPERIENCES, build_workspace, experience_uri

from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import PENDING_FOLDER
from ovtui.train.review.gates.sanitizer import HAZARDS, mark_hazards, masked_text
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision
from ovtui.wiring.workspace import Workspace

PLAN = "plan0000secret"
BEFORE, _ = EXPERIENCES["reservation_cancellation"]
KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98bodyofthekey\n-----END RSA PRIVATE KEY-----"
)
SAFE = "- Read the API key from the OPENAI_API_KEY environment variable"


def secret_item(root: Path, after: str) -> PolicyPlanItem:
    return upsert(MemoryStore.open(root), "reservation_cancellation", after)


def plan_file(root: Path) -> str:
    return (root / PENDING_FOLDER / f"{PLAN}.json").read_text(encoding="utf-8")


async def test_a_secret_is_stored_masked_held_until_edited_and_the_edit_is_what_applies(
    tmp_path: Path,
) -> None:
    root = build_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    store = PendingPlans(MemoryStore.open(root))
    after = f"{BEFORE}\n- Call the refund API with {KEY}\n{PRIVATE_KEY}\n- Say goodbye"
    store.park(
        PolicyUpdatePlan(items=[secret_item(root, after)], metadata={"plan_id": PLAN}), [ItemDecision(item=0)]
    )

    stored = plan_file(root)
    assert KEY not in stored and "bodyofthekey" not in stored
    assert "⟦secret masked: sk-p…n4⟧" in stored and "⟦secret masked: private key line⟧" in stored
    parked = workspace.review.pending_plan(PLAN).plan.items[0]
    assert "- Say goodbye" in str(parked.after_content)  # the rest of the proposal is kept as it was
    assert any("a secret the pending plan does not keep" in note for note in mark_hazards(parked))

    with pytest.raises(OvtuiError, match=r"item 0: line 7 holds a secret the pending plan does not keep"):
        workspace.review.decide_items(PLAN, [0], "approved")
    assert workspace.review.pending_plan(PLAN).decisions[0].decision == "pending"

    workspace.review.edit_item(PLAN, 0, f"{BEFORE}\n{SAFE}\n- Say goodbye")
    workspace.review.decide_items(PLAN, [0], "approved")
    result = await workspace.review.apply_pending(PLAN)
    assert result.written_uris
    written = workspace.reading.memory(experience_uri("reservation_cancellation"))
    assert written is not None and written.content == f"{BEFORE}\n{SAFE}\n- Say goodbye"


def test_a_reviewer_who_types_a_secret_in_an_edit_is_told_and_held(tmp_path: Path) -> None:
    root = build_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    store = PendingPlans(MemoryStore.open(root))
    plan = PolicyUpdatePlan(items=[secret_item(root, f"{BEFORE}\n{SAFE}")], metadata={"plan_id": PLAN})
    store.park(plan, [ItemDecision(item=0, decision="approved")])

    edited = workspace.review.edit_item(PLAN, 0, f"{BEFORE}\n- Use the key {KEY}")

    assert KEY not in plan_file(root)
    [decision] = edited.decisions
    assert decision.decision == "pending" and "looks like an OpenAI API key" in decision.note
    assert any("does not keep" in h for h in mark_hazards(workspace.review.pending_plan(PLAN).plan.items[0]))
    assert HAZARDS in workspace.review.pending_plan(PLAN).plan.items[0].metadata


@settings(max_examples=60, deadline=None)
@given(
    body=st.text(
        st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), min_size=24
    ),
    around=st.text(st.sampled_from(" ,.;:()"), max_size=12),  # a key starts a word
)
def test_no_key_shape_survives_masking_and_lines_the_base_has_are_kept(body: str, around: str) -> None:
    kept = f"- an old line {around}"
    masked = masked_text(kept, f"{kept}\n- use {around}sk-{body} {around}ghp_{body}{body[:6]}")
    assert f"sk-{body}" not in masked and f"ghp_{body}" not in masked
    assert masked.split("\n")[0] == kept and masked.count("⟦secret masked:") == 2
