"""The Review screen: pending plans, their items, a field diff of the selected item, decisions, apply.

A decision or an edit writes its plan under the plan's file lock, which may wait for another writer
(a run, the CLI): it is made in a thread by a worker, never on the UI loop, and the decisions are
made in the order the keys asked for them. Apply and re-plan await the facade's coroutines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Footer, Label, Static

from ovtui.app.messages import ExperiencesChanged, PendingChanged, WorkspaceEdited
from ovtui.app.screens.base import MainScreen
from ovtui.app.screens.confirm import ConfirmModal, NoteModal, when_confirmed
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.services import ScreenServices
from ovtui.app.views.diff_model import item_section
from ovtui.app.views.review import apply_label, apply_message, fared_text, item_header, item_row, plan_row
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.policy import Decision, PendingPlan

NEEDS_ITEM = {"decide", "note", "edit", "evidence"}
NEEDS_PLAN = {"decide_all", "apply", "discard"}


class ReviewScreen(MainScreen):
    KEY = "review"
    AUTO_FOCUS = "#items"
    BINDINGS: ClassVar[list[BindingType]] = [
        # The footer shows these in order and cuts at the terminal's edge: the essential ones first.
        Binding("a", "decide('approved')", "Approve", id="review.approve"),
        Binding("r", "decide('rejected')", "Reject", id="review.reject"),
        Binding("p", "apply", "Apply", id="review.apply"),
        Binding("n", "note", "Note…", id="review.note"),
        Binding("A", "decide_all('approved')", "Approve all", id="review.approve_all"),
        Binding("R", "decide_all('rejected')", "Reject all", id="review.reject_all"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("o", "evidence", "Evidence", id="review.evidence"),
        # Discard and re-plan come before the view toggle: a stale plan is otherwise a dead end.
        Binding("X", "discard", "Discard", id="review.discard"),
        Binding(
            "P",
            "replan_stale",
            "Replan",
            id="review.replan_stale",
            tooltip="re-plan every plan with stale items, as one plan",
        ),
        Binding("u", "toggle_unified", "Unified", id="review.unified"),
        Binding("l", "focus_diff", "Diff", id="review.diff", show=False),
        Binding("h", "focus_items", "Items", id="review.items", show=False),
    ]

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.plans: list[PendingPlan] = []
        self.plan: PendingPlan | None = None
        self.item_index: int | None = None
        self._availability: tuple[bool, bool] | None = None
        self._recording = asyncio.Lock()  # decisions and edits are written one at a time, in order

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        with Horizontal(id="review-body"):
            with Vertical(id="queue"):
                yield Label("Pending plans", classes="pane-title")
                yield VimTable(id="plans")
                yield Label("Items", classes="pane-title")
                yield VimTable(id="items")
                yield Button(apply_label(self.dry_run), id="apply", disabled=True, compact=True)
            with Vertical(id="detail"):
                yield Static(id="item-header")
                yield FieldDiff(
                    id="diff",
                    placeholder="no pending plans: a train run with review policy 'ask' parks its plans here",
                )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#plans", VimTable).add_columns("plan", "items", "undecided", "stale")
        # stale early: it must show even when the target name is long and the pane narrow
        self.query_one("#items", VimTable).add_columns(
            "#", "decision", "stale", "kind", "target", "conf", "evid"
        )
        self.reload(self.focus_plan)

    # --- loading -------------------------------------------------------------------------------
    def reload(self, focus: str | None = None) -> None:
        """Refill the plans, keeping the plan shown (or showing ``focus``, when it is there)."""
        try:
            self.plans = self.workspace.pending_plans()
        except Exception as exc:
            self.report_error("reading pending plans", exc)
            self.plans = []
        table = self.query_one("#plans", VimTable)
        keep = self.plan.plan_id if self.plan else None
        if focus is not None and any(p.plan_id == focus for p in self.plans):
            keep = focus
        table.clear()
        for pending in self.plans:
            table.add_row(*plan_row(pending), key=pending.plan_id)
        table.move_to_key(keep)
        self._show_plan(table.selected_key)

    def _show_plan(self, plan_id: str | None) -> None:
        self.plan = next((p for p in self.plans if p.plan_id == plan_id), None)
        table = self.query_one("#items", VimTable)
        keep = table.selected_key
        table.clear()
        if self.plan is not None:
            for index, item in enumerate(self.plan.plan.items):
                table.add_row(*item_row(self.plan, index, item), key=str(index))
            table.move_to_key(keep)
        self._show_item(int(table.selected_key) if table.selected_key is not None else None)

    def _show_item(self, index: int | None) -> None:
        self.item_index = index
        availability = (self.plan is None, self.item is None)
        if availability != self._availability:  # the footer recomposes on every refresh: only when needed
            self._availability = availability
            self.query_one("#apply", Button).disabled = self.plan is None
            self.refresh_bindings()
        header = self.query_one("#item-header", Static)
        diff = self.query_one(FieldDiff)
        item = self.item
        if self.plan is None or item is None or index is None:
            header.update("", layout=False)
            diff.show([])
            return
        current = self._current_file(item)
        # Read live, so an edit made in $EDITOR is judged as it is now.
        item.metadata["unread_lines"] = self.workspace.unread_lines(item.after_content or "")
        where = self.relative(self.workspace.planned_uri(item))
        fared = self._fared(item, current)
        shown = item_header(self.plan, index, item, self.relative, where, fared)
        header.update(shown, layout=False)  # fixed height
        diff.show([item_section(item, current, where)])

    def _fared(self, item: PolicyPlanItem, current: MemoryFile | None) -> Text | None:
        """How the experience the item edits has fared (None: the item edits no experience)."""
        if item.memory_type != EXPERIENCES or current is None or current.uri is None:
            return None
        try:
            usage = self.workspace.memory_use(current.uri)
        except OvtuiError as exc:
            return Text(f"uses not shown: {exc}", style="yellow")
        return fared_text(usage, current.version)

    def _current_file(self, item: PolicyPlanItem) -> MemoryFile | None:
        try:
            return self.workspace.memory(item.target_uri) if item.target_uri else None
        except (OvtuiError, OSError):
            return None

    @property
    def item(self) -> PolicyPlanItem | None:
        if self.plan is None or self.item_index is None or self.item_index >= len(self.plan.plan.items):
            return None
        return self.plan.plan.items[self.item_index]

    def _under_cursor(self) -> tuple[int | None, PolicyPlanItem | None]:
        """The item under the cursor now: a key typed right after another acts on the row the first
        one moved to, even before the screen has shown that row (``item`` is the row shown)."""
        key = self.query_one("#items", VimTable).selected_key
        if self.plan is None or key is None or int(key) >= len(self.plan.plan.items):
            return None, None
        return int(key), self.plan.plan.items[int(key)]

    @on(DataTable.RowHighlighted, "#plans")
    def _plan_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = str(event.row_key.value) if event.row_key.value is not None else None
        if self.plan is None or key != self.plan.plan_id:
            self._show_plan(key)

    @on(DataTable.RowHighlighted, "#items")
    def _item_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None and int(event.row_key.value) != self.item_index:
            self._show_item(int(event.row_key.value))

    def watch_dry_run(self, dry_run: bool) -> None:
        for button in self.query("#apply").results(Button):
            button.label = apply_label(dry_run)
            button.variant = "warning" if dry_run else "primary"

    @on(Button.Pressed, "#apply")
    def _apply_pressed(self) -> None:
        self.action_apply()

    def action_focus_diff(self) -> None:
        self.query_one(FieldDiff).focus()

    def action_focus_items(self) -> None:
        self.query_one("#items", VimTable).focus()

    def on_pending_changed(self, message: PendingChanged) -> None:
        self.reload(message.focus)

    def on_experiences_changed(self, _: ExperiencesChanged) -> None:
        self._show_item(self.item_index)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in NEEDS_ITEM and self.item is None:
            return None
        if action in NEEDS_PLAN and self.plan is None:
            return None
        return True

    # --- decisions -----------------------------------------------------------------------------
    def action_decide(self, decision: Decision) -> None:
        index, item = self._under_cursor()
        if self.plan is None or item is None or index is None:
            return
        plan_id = self.plan.plan_id
        self._confirm_deletes(decision, [item], lambda: self._decide(plan_id, index, decision, ""))

    def action_note(self) -> None:
        index, item = self._under_cursor()
        if self.plan is None or item is None or index is None:
            return
        plan_id, current = self.plan.plan_id, self.plan.decisions[index]

        def decided(choice: tuple[Decision, str] | None) -> None:
            if choice is None:
                return
            decision, text = choice
            if decision == current.decision:  # the note alone: no new confirmation, stay on the item
                self._decide(plan_id, index, decision, text, advance=False)
                return
            self._confirm_deletes(decision, [item], lambda: self._decide(plan_id, index, decision, text))

        modal = NoteModal(item.target_name, current.note, current.decision)
        self.app.push_screen(modal, decided)

    def action_decide_all(self, decision: Decision) -> None:
        if self.plan is None:
            return
        plan_id, pending = self.plan.plan_id, self.plan
        undecided = [
            item
            for item, d in zip(pending.plan.items, pending.decisions, strict=True)
            if d.decision == "pending"
        ]
        self._confirm_deletes(decision, undecided, lambda: self._decide_all(plan_id, decision))

    def _confirm_deletes(
        self, decision: Decision, items: list[PolicyPlanItem], then: Callable[[], None]
    ) -> None:
        """Approving a delete takes its own confirmation: it removes a file on apply."""
        deletes = [i for i in items if i.kind == "delete"] if decision == "approved" else []
        if not deletes:
            then()
            return
        names = ", ".join(i.target_name for i in deletes)
        modal = ConfirmModal(
            "Approve deletion?",
            f"Applying will delete {len(deletes)} experience file(s): {names}.",
            confirm="Approve deletion",
            danger=True,
        )
        self.app.push_screen(modal, when_confirmed(then))

    def _decide(
        self, plan_id: str, index: int, decision: Decision, note: str, *, advance: bool = True
    ) -> None:
        if advance:  # on to the next item at once: a key pressed meanwhile decides that one
            self.query_one("#items", VimTable).action_cursor_down()
        decide = partial(self.workspace.decide, plan_id, index, decision, note)
        self._record("recording the decision", decide, back_to=index if advance else None)

    def _decide_all(self, plan_id: str, decision: Decision) -> None:
        self._record("recording the decisions", partial(self.workspace.decide_all, plan_id, decision))

    @work(group="review-record")
    async def _record(
        self, doing: str, write: Callable[[], object], *, back_to: int | None = None, done: str = ""
    ) -> None:
        """Write a decision or an edit in a thread, after those asked for before it; then show the
        plans as they are now (``back_to``: the item to return to when the write failed)."""
        async with self._recording:
            try:
                await asyncio.to_thread(write)
            except Exception as exc:
                self.report_error(doing, exc)
                if back_to is not None:
                    self.query_one("#items", VimTable).move_to_key(str(back_to))
                return
        self.reload()
        if done:
            self.notify(done)

    def action_edit(self) -> None:
        index, item = self._under_cursor()
        if self.plan is None or item is None or index is None:
            return
        if item.kind != "upsert":
            self.notify("a deletion has no content to edit", severity="warning")
            return
        try:
            edited = self.services.editor(item.after_content or "")
        except Exception as exc:
            self.report_error("running the editor", exc)
            return
        if edited is None or edited.strip() == (item.after_content or "").strip():
            self.notify("content unchanged")
            return
        edit = partial(self.workspace.edit_item, self.plan.plan_id, index, edited)
        self._record("saving the edit", edit, done=f"edited {item.target_name}: approve it with a")

    def action_evidence(self) -> None:
        _, item = self._under_cursor()
        if item is None:
            return
        if not item.evidence_trajectory_uris:
            self.notify("this item has no evidence trajectories", severity="warning")
            return
        counter = [str(u) for u in item.metadata.get("counter_evidence", [])]
        self.app.push_screen(
            EvidenceScreen(self.workspace, item.target_name, item.evidence_trajectory_uris, counter)
        )

    def action_toggle_unified(self) -> None:
        diff = self.query_one(FieldDiff)
        diff.unified = not diff.unified

    # --- apply and discard ---------------------------------------------------------------------
    def action_apply(self) -> None:
        if self.plan is None:
            return
        if self.plan.undecided:
            self.notify(
                f"{self.plan.undecided} item(s) are still undecided: approve or reject them first",
                severity="warning",
            )
            return
        self._apply(self.plan.plan_id, self.dry_run)

    @work(exclusive=True, group="apply")
    async def _apply(self, plan_id: str, dry_run: bool) -> None:
        try:
            result = await self.workspace.apply_pending(plan_id, dry_run=dry_run)
        except Exception as exc:
            self.report_error(f"applying plan {plan_id}", exc)
            return
        message, severity = apply_message(plan_id, result)
        title = "Dry run" if result.dry_run else "Applied"
        self.notify(message, title=title, severity=severity, timeout=8, markup=False)
        self.post_message(WorkspaceEdited(pending=True, history=True, experiences=not result.dry_run))

    def action_replan_stale(self) -> None:
        self._replan_stale()

    @work(exclusive=True, group="apply")
    async def _replan_stale(self) -> None:
        """Every plan with a stale item becomes one fresh plan (the kernel call `review replan
        --all-stale` makes), so plans parked on one base are no trap."""
        try:
            result = await self.workspace.replan_stale()
        except Exception as exc:
            self.report_error("re-planning the stale plans", exc)
            return
        self.notify(result.describe() if result else "no waiting plan has a stale item", markup=False)
        self.post_message(WorkspaceEdited(pending=True))

    def action_discard(self) -> None:
        if self.plan is None:
            return
        plan_id = self.plan.plan_id
        modal = ConfirmModal(
            "Discard plan?",
            f"Plan {plan_id} is dropped without writing anything.",
            confirm="Discard",
            danger=True,
        )
        self.app.push_screen(modal, when_confirmed(lambda: self._discard(plan_id)))

    @work(exclusive=True, group="apply")
    async def _discard(self, plan_id: str) -> None:
        try:  # a file write under the plan's lock, in a thread; a waiting run sees the file
            await asyncio.to_thread(self.workspace.discard_pending, plan_id)
        except Exception as exc:
            self.report_error(f"discarding plan {plan_id}", exc)
            return
        self.notify(f"plan {plan_id} discarded")
        self.post_message(WorkspaceEdited(pending=True))
