"""Review as a new user meets it: a saved note survives the next decision, a decision can be undone,
an edit that would write a file `ovtui check` rejects is warned about before apply, the screen at
80×24 (the footer's help hint, readable targets, a summary that scrolls, `u`), q/esc and the focus
bar."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app_support import (
    PLAN_ID,
    MakeApp,
    notifications,
    park_demo_plan,
    park_long_summary_plan,
    press_and_settle,
    screen_text,
    widget_text,
)
from cli_support import run_ovtui
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Static
from workspace_support import experience_uri

from ovtui.app.app import OvtuiApp
from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.history import HistoryScreen
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.fileformat import FIELDS_OPEN
from ovtui.wiring.workspace import Workspace


@asynccontextmanager
async def in_review(
    app: OvtuiApp, messages: list[object] | None = None, size: tuple[int, int] = (120, 40)
) -> AsyncIterator[Pilot[None]]:
    """The app running on the Review screen (``messages``: every message it posts, appended)."""
    async with app.run_test(size=size, message_hook=None if messages is None else messages.append) as pilot:
        await press_and_settle(pilot, "2")
        yield pilot


def demo_app(workspace: Workspace, make_app: MakeApp) -> OvtuiApp:
    """The app on a workspace where the demo plan waits, every item undecided."""
    park_demo_plan(workspace)
    return make_app(workspace)


def decisions(workspace: Workspace) -> list[tuple[str, str]]:
    return [(d.decision, d.note) for d in workspace.review.pending_plan(PLAN_ID).decisions]


async def write_note(pilot: object, text: str) -> None:
    """``n``, the text, Enter: the note saved on the item under the cursor, its decision kept."""
    await press_and_settle(pilot, "n")  # type: ignore[arg-type]
    await press_and_settle(pilot, *text, "enter")  # type: ignore[arg-type]


async def test_a_saved_note_survives_the_next_approve_or_reject_into_the_record_and_history(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """A note saved with Enter, then `a` or `r`: the note stays in the plan, the record and History
    (`a`/`r` once wrote an empty note over it)."""
    app = demo_app(workspace, make_app)
    async with in_review(app) as pilot:
        await write_note(pilot, "checked the refund path")
        await press_and_settle(pilot, "a")  # item 0, then the cursor moves on to item 1
        await write_note(pilot, "too vague")
        await press_and_settle(pilot, "r")
        await press_and_settle(pilot, "r")  # item 2, the delete: rejected without a note
        assert decisions(workspace) == [
            ("approved", "checked the refund path"),
            ("rejected", "too vague"),
            ("rejected", ""),
        ]
        await press_and_settle(pilot, "p")
        await press_and_settle(pilot, "enter")
        [entry] = workspace.reading.history()
        notes = [(d.item, d.note) for d in workspace.reading.history_record(entry.id).review.decisions]
        assert notes == [(0, "checked the refund path"), (1, "too vague"), (2, "")]
        await press_and_settle(pilot, "3")
        assert isinstance(app.screen, HistoryScreen)
        text = screen_text(app)
        assert "#0 approved: checked the refund path" in text and "#1 rejected: too vague" in text


async def test_undo_puts_a_decision_back_to_pending_and_keeps_its_note(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = demo_app(workspace, make_app)
    messages: list[object] = []
    async with in_review(app, messages) as pilot:
        await write_note(pilot, "looks right")
        await press_and_settle(pilot, "a")
        assert decisions(workspace)[0] == ("approved", "looks right")
        await press_and_settle(pilot, "k", "z")  # back on item 0: undo its approval
        assert decisions(workspace)[0] == ("pending", "looks right")
        assert app.screen.query_one("#items", VimTable).selected_key == "0"  # the cursor stays
        await press_and_settle(pilot, "z")
    assert "item 0 is undecided already" in notifications(messages)


def check_says(workspace: Workspace, name: str) -> list[str]:
    """The lines `ovtui check` (a real process) prints about one experience file."""
    done = run_ovtui("check", str(workspace.root), cwd=workspace.root)
    return [line for line in (done.stdout + done.stderr).splitlines() if f"experiences/{name}.md" in line]


async def test_an_edit_quoting_the_fields_marker_is_warned_before_apply_with_what_check_will_say(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """A reviewer's edit whose body quotes `<!-- MEMORY_FIELDS` is warned about when it is saved, in
    the item's summary and in the Apply confirmation; the warning says what happens to the file,
    which `ovtui check` then confirms (it once applied silently and check rejected the file)."""
    park_demo_plan(workspace)

    def editor(text: str) -> str:
        return text + f"\n- A memory file ends with a {FIELDS_OPEN} comment"

    app = make_app(workspace, editor=editor)
    messages: list[object] = []
    async with in_review(app, messages) as pilot:
        await press_and_settle(pilot, "e")
        [warned] = [n for n in notifications(messages) if FIELDS_OPEN in n]
        assert warned.startswith("line 8 quotes '<!-- MEMORY_FIELDS'")  # the line the editor added
        summary = " ".join(str(app.screen.query_one("#item-header", Static).render()).split())
        assert f"⚠ {warned}" in summary  # the item's summary says it too
        await press_and_settle(pilot, "a", "r", "r")
        await press_and_settle(pilot, "p")
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal)
        assert f"⚠ #0 reservation_cancellation: {warned}" in dialog.body
        await press_and_settle(pilot, "enter")
    said = check_says(workspace, "reservation_cancellation")
    if "`ovtui check` rejects" in warned:
        assert any("MEMORY_FIELDS" in line for line in said), said
    else:  # a writer that escapes the marker: the file is valid and the warning says how it is stored
        assert "stored escaped" in warned and said == []
    written = workspace.reading.memory(experience_uri("reservation_cancellation"))
    assert written is not None and "- A memory file ends with a " in written.content  # applied


async def test_review_at_80x24_keeps_its_keys_targets_and_summary_in_reach(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """At 80×24: the footer ends with the help key, the target names are whole, the summary scrolls to
    its why and warnings, and `u` says why the diff stays unified (it once changed nothing visible)."""
    park_long_summary_plan(workspace)
    app = demo_app(workspace, make_app)
    messages: list[object] = []
    async with in_review(app, messages, size=(80, 24)) as pilot:
        footer = screen_text(app).splitlines()[-1]
        assert footer.endswith("? keys") and "a Approve" in footer and "p Apply" in footer
        shown = widget_text(app, app.screen.query_one("#items", VimTable))  # the demo plan's items
        assert "~ reservation_cancellation" in shown and "− refund_status" in shown

        app.screen.query_one("#plans", VimTable).focus()
        await press_and_settle(pilot, "j")  # the plan with the long summary
        summary = app.screen.query_one("#item-header-scroll", VerticalScroll)
        assert summary.max_scroll_y > 0  # longer than its pane
        assert "why:" not in widget_text(app, summary)
        summary.focus()
        await press_and_settle(pilot, "end")
        seen = " ".join(widget_text(app, summary).replace("▌", " ").split())  # without the focus bar
        assert "why: three successful cancellations" in seen and "not understood by the sample agent" in seen

        diff = app.screen.query_one(FieldDiff)
        await press_and_settle(pilot, "u")
        assert diff.is_unified
    assert (
        "side by side needs a terminal 100 columns wide (this one is 80): the diff stays unified"
        in notifications(messages)
    )


async def test_escape_goes_back_to_the_items_and_q_quits_from_there(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = demo_app(workspace, make_app)
    async with in_review(app) as pilot:
        items = app.screen.query_one("#items", VimTable)
        await press_and_settle(pilot, "l")
        assert app.screen.query_one(FieldDiff).has_focus
        await press_and_settle(pilot, "escape")
        assert items.has_focus
        await press_and_settle(pilot, "l", "q")  # q from the diff goes back too…
        assert items.has_focus and app.return_code is None
        await press_and_settle(pilot, "q")  # …and from the list it quits: nothing would be lost
        assert app.return_code == 0


async def test_the_focused_pane_is_marked_by_a_bar_not_only_a_colour(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = demo_app(workspace, make_app)
    async with in_review(app) as pilot:
        items = app.screen.query_one("#items", VimTable)
        diff = app.screen.query_one(FieldDiff)

        def bars() -> tuple[str, str]:
            rows = screen_text(app).splitlines()
            return rows[items.region.y + 1][items.region.x], rows[diff.region.y + 1][diff.region.x]

        assert bars() == ("▌", " ")
        await press_and_settle(pilot, "l")
        assert bars() == (" ", "▌")


async def test_an_empty_review_says_how_plans_get_here(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with in_review(app):
        text = widget_text(app, app.screen.query_one(FieldDiff))
        assert "no plans wait for review" in text and "`ovtui train --approve ask`" in text
