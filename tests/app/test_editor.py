"""The editor seam of Review's Edit: a real editor process, the text's final newline, and an editor that
cannot start."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from app_support import PLAN_ID, MakeApp, notifications, park_demo_plan, press_and_settle

from ovtui.app.editor import edit_in_editor
from ovtui.wiring.workspace import Workspace

APPEND_A_LINE = ["sh", "-c", 'echo "- ALWAYS repeat the booking code" >> "$1"', "append"]


async def test_a_line_an_editor_appends_lands_on_its_own_line(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """The file for $EDITOR ends with a newline, so a line an editor appends lands on its own line."""
    park_demo_plan(workspace)
    before = workspace.review.pending_plan(PLAN_ID).plan.items[0].after_content

    def editor(text: str) -> str | None:
        return edit_in_editor(text, APPEND_A_LINE)  # a real editor process, no app to suspend

    app = make_app(workspace, editor=editor)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
    after = workspace.review.pending_plan(PLAN_ID).plan.items[0].after_content
    assert (
        after == str(before) + "\n- ALWAYS repeat the booking code"
    )  # one newline between, none added at the end


def test_an_unchanged_edit_comes_back_exactly_as_it_went() -> None:
    """Exactly one newline is stripped, so text that ends in one keeps it."""
    for text in ("no newline", "one newline\n", ""):
        assert edit_in_editor(text, ["true"]) == text


async def test_an_editor_that_cannot_start_is_an_error_and_the_app_resumes(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """A missing $EDITOR is one error line and the app resumes (it once raised inside the suspend: the
    terminal stayed blank and no key worked)."""
    park_demo_plan(workspace)
    resumed: list[bool] = []

    @contextmanager
    def suspend_like_textual() -> Iterator[None]:  # App.suspend has no try/finally around its yield
        yield
        resumed.append(True)

    def editor(text: str) -> str | None:
        return edit_in_editor(text, ["/nonexistent/editor", "--wait"], suspend_like_textual)

    app = make_app(workspace, editor=editor)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
    assert resumed == [True]
    [said] = [n for n in notifications(messages) if "editor" in n]
    assert "cannot run the editor '/nonexistent/editor --wait' ($VISUAL or $EDITOR)" in said


async def test_an_editor_that_exits_with_a_failure_is_reported_and_nothing_is_saved(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """An editor that exits non-zero (vim's :cq, a crash) is an error naming its status, and the item
    keeps its text (it was once reported as "content unchanged")."""
    park_demo_plan(workspace)
    before = workspace.review.pending_plan(PLAN_ID).plan.items[0].after_content
    fails_after_writing = ["sh", "-c", 'echo "- half an edit" >> "$1"; exit 3', "editor"]

    def editor(text: str) -> str | None:
        return edit_in_editor(text, fails_after_writing)

    app = make_app(workspace, editor=editor)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
    said = notifications(messages)
    assert "content unchanged" not in said
    assert any("exited with status 3: the edit was not saved" in n for n in said)
    assert workspace.review.pending_plan(PLAN_ID).plan.items[0].after_content == before
