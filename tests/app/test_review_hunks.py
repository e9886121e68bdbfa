"""Review numbers the hunks of an item's content; the hunk keys move between them and take or leave
each, and approving takes exactly the taken hunks: what apply writes, and what the record names, are
what `ovtui review approve PLAN ITEM --hunks` gives."""

from __future__ import annotations

import json

from app_support import MakeApp, notifications, park_undecided, press_and_settle, screen_text
from plan_support import upsert
from workspace_support import EXPERIENCES, experience_uri, memory_of

from ovtui.app.screens.review import ReviewScreen
from ovtui.core.domain import PolicyUpdatePlan
from ovtui.wiring.workspace import Workspace

PLAN = "plan0000hunks"
BEFORE, _ = EXPERIENCES["reservation_cancellation"]
GREET, CHECKED, GOODBYE = "- Greet the customer", "- Look the reservation up first (checked)", "- Say goodbye"


def three_hunk_plan(workspace: Workspace) -> PolicyUpdatePlan:
    """A line added first, one rewritten in the middle, one added last: three hunks."""
    after = "\n".join(
        [GREET, *BEFORE.replace("- Look the reservation up first", CHECKED).splitlines(), GOODBYE]
    )
    item = upsert(memory_of(workspace), "reservation_cancellation", after)
    return PolicyUpdatePlan(items=[item], metadata={"plan_id": PLAN})


async def test_approving_hunks_1_and_3_in_the_app_applies_exactly_those(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_undecided(workspace, three_hunk_plan(workspace))
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(180, 50), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        assert isinstance(app.screen, ReviewScreen)
        text = screen_text(app)
        for number, line in ((1, 1), (2, 4), (3, 7)):
            assert f"@@ hunk {number} (line {line}) · ✓ taken @@" in text
        assert "] Next hunk [ Prev hunk x Take/leave" in text  # in the footer, for this item

        await press_and_settle(pilot, "right_square_bracket", "right_square_bracket", "x")
        text = screen_text(app)
        assert "▶ @@ hunk 2 (line 4) · ✗ left out @@" in text
        assert "hunks: 1 ✓ · 2 ✗ · 3 ✓ — approving (a) takes 1, 3" in text

        await press_and_settle(pilot, "a")
        [decision] = workspace.review.pending_plan(PLAN).decisions
        assert (decision.decision, decision.hunks) == ("approved", [1, 3])
        await press_and_settle(pilot, "x")  # marks that differ from the approval say so
        assert "takes 1, 2, 3 ([ ] move, x takes or leaves); approved so far: 1, 3" in screen_text(app)
        await press_and_settle(pilot, "x")

        await press_and_settle(pilot, "p", "enter")
        assert any(n.startswith("Applied plan") for n in notifications(messages))

    written = workspace.reading.memory(experience_uri("reservation_cancellation"))
    assert written is not None
    assert written.content.splitlines() == [GREET, *BEFORE.splitlines(), GOODBYE]
    [record_id] = [p.name for p in (workspace.root / "history").iterdir() if p.is_dir()]
    record = json.loads((workspace.root / "history" / record_id / "memory_diff.json").read_text())
    assert record["review"]["decisions"][0]["hunks"] == [1, 3]


async def test_leaving_every_hunk_does_not_approve_and_one_hunk_items_have_no_hunk_keys(
    workspace: Workspace, make_app: MakeApp
) -> None:
    plan = three_hunk_plan(workspace)
    one_hunk = plan.items[0].model_copy(update={"after_content": f"{BEFORE}\n{GOODBYE}"})
    plan.items.append(one_hunk)
    park_undecided(workspace, plan)
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(180, 50), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        for _ in range(3):  # x acts on the first hunk before any move; ] moves on
            await press_and_settle(pilot, "x", "right_square_bracket")
        await press_and_settle(pilot, "a")
        assert any("no hunk is taken" in n for n in notifications(messages))
        assert workspace.review.pending_plan(PLAN).decisions[0].decision == "pending"

        await press_and_settle(pilot, "j")
        text = screen_text(app)
        assert "@@ hunk" not in text and "Next hunk" not in text
