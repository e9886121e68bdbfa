"""The Review screen: pending plans, their items, a field diff of the selected item, decisions, apply."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

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
from ovtui.app.views.review import apply_label, apply_message, item_header, item_row, plan_row
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.targets import plan_target
from ovtui.train.review.gates.readability import unread_notes
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
            self.plans = self.workspace.pending.list()
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
        unread = unread_notes(self.workspace.experience_reader(), item.after_content or "")
        item.metadata["unread_lines"] = [note for _, note in unread]
        where = self.relative(self._target_uri(item))
        header.update(item_header(self.plan, index, item, self.relative, where), layout=False)  # fixed height
        diff.show([item_section(item, current, where)])

    def _target_uri(self, item: PolicyPlanItem) -> str | None:
        """The file an item writes: its own URI, or for a new memory planned by name (a session's
        profile, preference or entity, a peer's included) where the apply will put it."""
        if item.target_uri:
            return item.target_uri
        try:
            if self.workspace.store.registry.get(item.memory_type).timestamped:
                return None  # its name carries the time of the apply: not known yet
            return plan_target(self.workspace.store, item).uri
        except (OvtuiError, OSError):
            return None

    def _current_file(self, item: PolicyPlanItem) -> MemoryFile | None:
        try:
            return self.workspace.store.read_uri(item.target_uri) if item.target_uri else None
        except (OvtuiError, OSError):
            return None

    @property
    def item(self) -> PolicyPlanItem | None:
        if self.plan is None or self.item_index is None or self.item_index >= len(self.plan.plan.items):
            return None
        return self.plan.plan.items[self.item_index]

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
        item, index = self.item, self.item_index
        if self.plan is None or item is None or index is None:
            return
        plan_id = self.plan.plan_id
        self._confirm_deletes(decision, [item], lambda: self._decide(plan_id, index, decision, ""))

    def action_note(self) -> None:
        item, index = self.item, self.item_index
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
        try:
            self.workspace.pending.decide(plan_id, index, decision, note)
        except Exception as exc:
            self.report_error("recording the decision", exc)
            return
        self.reload()
        if advance:
            self.query_one("#items", VimTable).action_cursor_down()  # on to the next item

    def _decide_all(self, plan_id: str, decision: Decision) -> None:
        try:
            self.workspace.pending.decide_all(plan_id, decision)
        except Exception as exc:
            self.report_error("recording the decisions", exc)
            return
        self.reload()

    def action_edit(self) -> None:
        item, index = self.item, self.item_index
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
        try:
            self.workspace.pending.edit_after(self.plan.plan_id, index, edited)
        except Exception as exc:
            self.report_error("saving the edit", exc)
            return
        self.reload()
        self.notify(f"edited {item.target_name}: approve it with a")

    def action_evidence(self) -> None:
        item = self.item
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
            result = await self.services.kernel.run(self.workspace.apply_pending(plan_id, dry_run=dry_run))
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
            result = await self.services.kernel.run(self.workspace.replan_stale())
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
        async def discard() -> None:  # a file write, off the UI loop; a waiting run sees the file
            self.workspace.discard_pending(plan_id)

        try:
            await self.services.kernel.run(discard())
        except Exception as exc:
            self.report_error(f"discarding plan {plan_id}", exc)
            return
        self.notify(f"plan {plan_id} discarded")
        self.post_message(WorkspaceEdited(pending=True))
