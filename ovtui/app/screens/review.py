"""The Review screen: pending plans, their items, a field diff of the selected item, decisions, apply.

A decision or an edit writes its plan under the plan's file lock, which may wait for another writer
(a run, the CLI): it is made in a thread by a worker, never on the UI loop, and the decisions are
made in the order the keys asked for them. Apply and re-plan await the facade's coroutines, each
after a confirmation that says what it will do.
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
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ovtui.app.messages import ExperiencesChanged, PendingChanged, WorkspaceEdited
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.screens.confirm import ConfirmModal, NoteModal, when_confirmed
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.screens.help import HintFooter
from ovtui.app.screens.stands import StandsModal
from ovtui.app.services import ScreenServices
from ovtui.app.views.adherence import adherence_text
from ovtui.app.views.diff_model import HunkChoice, item_section
from ovtui.app.views.review import (
    ITEM_COLUMNS,
    PLAN_COLUMNS,
    apply_label,
    apply_message,
    apply_preview,
    fared_text,
    format_warning,
    hunks_line,
    item_header,
    item_row,
    plan_row,
    plan_validation,
)
from ovtui.app.widgets.charts import ValidationBarPlot
from ovtui.app.widgets.field_diff import UNIFIED_BELOW, FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.hunks import hunks
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.contradictions import CONTRADICTIONS, Stands
from ovtui.train.review.gates.sanitizer import mark_hazards
from ovtui.train.review.plans import Decision, PendingPlan

NEEDS_ITEM = {"decide", "undo_decision", "note", "edit", "evidence", "choose_standing"}
NEEDS_HUNKS = {"hunk", "toggle_hunk"}  # shown only for an item whose content has two hunks or more
NEEDS_PLAN = {"decide_all", "apply", "discard"}
NO_PLANS = (
    "no plans wait for review. A run parks its plans here when its review policy is 'ask': "
    "press 1 then t (or run `ovtui train --approve ask`)"
)


class ReviewScreen(MainScreen):
    KEY = "review"
    AUTO_FOCUS = "#items"
    HOME = ("#items", "#plans")
    # Decisions are saved as they are made: what quitting would cut short is a write under way.
    WORK_LOST: ClassVar[dict[str, str]] = {
        "review-record": "a decision or an edit is still being saved",
        "apply": "a plan is being applied or re-planned",
    }
    DEFAULT_CSS = """
    /* The focused pane has a bar at its left edge: a shape, not only a colour. */
    ReviewScreen #plans:focus, ReviewScreen #items:focus { outline-left: outer $accent; }
    ReviewScreen #item-header-scroll, ReviewScreen #diff { border-left: blank; }
    ReviewScreen #item-header-scroll:focus, ReviewScreen #diff:focus { border-left: outer $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # The footer shows these in order and cuts at the terminal's edge, its right end always says
        # how to see them all (? keys): the essential ones first, discard and re-plan next (a stale
        # plan is otherwise a dead end).
        Binding("a", "decide('approved')", "Approve", id="review.approve"),
        Binding("r", "decide('rejected')", "Reject", id="review.reject"),
        Binding(
            "z",
            "undo_decision",
            "Undo",
            id="review.undo",
            tooltip="the item under the cursor back to pending (its note stays)",
        ),
        Binding("n", "note", "Note…", id="review.note"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("p", "apply", "Apply…", id="review.apply"),
        Binding("X", "discard", "Discard…", id="review.discard"),
        Binding(
            "P",
            "replan_stale",
            "Replan…",
            id="review.replan_stale",
            tooltip="re-plan every plan with stale items, as one plan",
        ),
        Binding("A", "decide_all('approved')", "Approve all", id="review.approve_all"),
        Binding("R", "decide_all('rejected')", "Reject all", id="review.reject_all"),
        Binding("o", "evidence", "Evidence", id="review.evidence"),
        Binding("u", "toggle_unified", "Unified", id="review.unified"),
        Binding(
            "w",
            "choose_standing",
            "Which stands…",
            id="review.stands",
            tooltip="of a contradiction with another experience, which line stands",
        ),
        Binding(
            "right_square_bracket",
            "hunk(1)",
            "Next hunk",
            id="review.next_hunk",
            tooltip="on to the next hunk of the item's content",
        ),
        Binding("left_square_bracket", "hunk(-1)", "Prev hunk", id="review.prev_hunk"),
        Binding(
            "x",
            "toggle_hunk",
            "Take/leave",
            id="review.toggle_hunk",
            tooltip="take or leave the hunk the hunk keys are on: approving (a) takes only the taken hunks",
        ),
        *back_bindings("review", main_screen=True),
        Binding("l", "focus_diff", "Diff", id="review.diff", show=False),
        Binding("h", "focus_items", "Items", id="review.items", show=False),
    ]

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.plans: list[PendingPlan] = []
        self.plan: PendingPlan | None = None
        self.item_index: int | None = None
        self._availability: tuple[bool, bool, bool] | None = None
        # Per item shown (plan id, index): the hunks taken (all, or as approved, until a key says
        # otherwise) and the hunk the hunk keys are on.
        self._taken: dict[tuple[str, int], set[int]] = {}
        self._hunk_at: dict[tuple[str, int], int] = {}
        self._recording = asyncio.Lock()  # decisions and edits are written one at a time, in order

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        with Horizontal(id="review-body"):
            with Vertical(id="queue"):
                yield Label("Pending plans", classes="pane-title")
                yield VimTable(id="plans")
                yield Label("Items", classes="pane-title")
                yield VimTable(id="items")
                yield ValidationBarPlot(id="plan-validation")
                yield Button(apply_label(self.dry_run), id="apply", disabled=True, compact=True)
            with Vertical(id="detail"):
                # Scrolls (tab focuses it): a long summary must not hide its why and its warnings.
                with VerticalScroll(id="item-header-scroll"):
                    yield Static(id="item-header")
                yield FieldDiff(id="diff", placeholder=NO_PLANS)
        yield HintFooter()

    def on_mount(self) -> None:
        self.query_one("#plans", VimTable).add_columns(*PLAN_COLUMNS)
        self.query_one("#items", VimTable).add_columns(*ITEM_COLUMNS)
        self.reload(self.focus_plan)

    # --- loading -------------------------------------------------------------------------------
    def reload(self, focus: str | None = None) -> None:
        """Refill the plans, keeping the plan shown (or showing ``focus``, when it is there)."""
        try:
            self.plans = self.workspace.review.pending_plans()
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
        validation = plan_validation(self.plan.plan.metadata.get("validation") if self.plan else None)
        chart = self.query_one("#plan-validation", ValidationBarPlot)
        chart.display = validation is not None
        if validation is not None:
            chart.show(validation)
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
        availability = (self.plan is None, self.item is None, self._hunk_count(self.item) > 1)
        if availability != self._availability:  # the footer recomposes on every refresh: only when needed
            self._availability = availability
            self.query_one("#apply", Button).disabled = self.plan is None
            self.refresh_bindings()
        summary = self.query_one("#item-header", Static)
        diff = self.query_one(FieldDiff)
        item = self.item
        if self.plan is None or item is None or index is None:
            summary.update("")
            diff.show([])
            return
        current = self._current_file(item)
        # Read live, so an edit made in $EDITOR is judged as it is now.
        item.metadata["unread_lines"] = self.workspace.review.unread_lines(item.after_content or "")
        mark_hazards(item)
        where = self.relative(self.workspace.review.planned_uri(item))
        fared = self._fared(item, current)
        approvals = self.workspace.review.approvals_line(self.plan, index)
        header = item_header(self.plan, index, item, self.relative, where, fared, approvals)
        choice = self._hunk_choice(index, item)
        if choice is not None:
            approved = self.plan.decisions[index]
            taken = approved.hunks if approved.decision == "approved" else None
            header.append_text(hunks_line(choice, self._hunk_count(item), taken))
        summary.update(header)
        self.query_one("#item-header-scroll", VerticalScroll).scroll_home(animate=False)
        diff.show([item_section(item, current, where, choice)])

    # --- hunks ---------------------------------------------------------------------------------
    @staticmethod
    def _hunk_count(item: PolicyPlanItem | None) -> int:
        if item is None or item.kind != "upsert":
            return 0
        return len(hunks(item.before_content, item.after_content or ""))

    def _hunk_choice(self, index: int, item: PolicyPlanItem) -> HunkChoice | None:
        """The hunks taken of an item with two or more (None: the item is taken whole or not at all)."""
        count = self._hunk_count(item)
        if self.plan is None or count < 2:
            return None
        key = (self.plan.plan_id, index)
        if key not in self._taken:
            approved = self.plan.decisions[index].hunks
            self._taken[key] = set(range(1, count + 1) if approved is None else approved)
        return HunkChoice(frozenset(self._taken[key]), self._hunk_at.get(key))

    def action_hunk(self, step: int) -> None:
        """The hunk keys on to the next (1) or previous (-1) hunk of the item's content."""
        index, item = self._under_cursor()
        count = self._hunk_count(item)
        if self.plan is None or index is None or count < 2:
            return
        key = (self.plan.plan_id, index)
        at = self._hunk_at.get(key)
        self._hunk_at[key] = (1 if step > 0 else count) if at is None else min(max(at + step, 1), count)
        self._show_hunk(index)

    def action_toggle_hunk(self) -> None:
        """Take or leave the hunk the keys are on (the first one, before any move)."""
        index, item = self._under_cursor()
        if self.plan is None or index is None or item is None or self._hunk_choice(index, item) is None:
            return
        key = (self.plan.plan_id, index)
        number = self._hunk_at.setdefault(key, 1)
        self._taken[key] ^= {number}
        self._show_hunk(index)

    def _show_hunk(self, index: int) -> None:
        self._show_item(index)
        if self.plan is not None and (number := self._hunk_at.get((self.plan.plan_id, index))):
            self.query_one(FieldDiff).scroll_to_hunk(number)

    def _fared(self, item: PolicyPlanItem, current: MemoryFile | None) -> Text | None:
        """How the experience the item edits has fared (None: the item edits no experience)."""
        if item.memory_type != EXPERIENCES or current is None or current.uri is None:
            return None
        try:
            usage = self.workspace.reading.memory_use(current.uri)
            followed = self.workspace.reading.adherence_of(current.uri)
        except OvtuiError as exc:
            return Text(f"uses not shown: {exc}", style="yellow")
        return Text("\n").join([fared_text(usage, current.version), adherence_text(followed)])

    def _current_file(self, item: PolicyPlanItem) -> MemoryFile | None:
        try:
            return self.workspace.reading.memory(item.target_uri) if item.target_uri else None
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

    @on(VimTable.RowHighlighted, "#plans")
    def _plan_highlighted(self, event: VimTable.RowHighlighted) -> None:
        if self.plan is None or event.key != self.plan.plan_id:
            self._show_plan(event.key)

    @on(VimTable.RowHighlighted, "#items")
    def _item_highlighted(self, event: VimTable.RowHighlighted) -> None:
        if int(event.key) != self.item_index:
            self._show_item(int(event.key))

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
        if action in NEEDS_HUNKS and self._hunk_count(self.item) < 2:
            return False
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
        chosen = self._hunks_to_approve(index, item) if decision == "approved" else None
        if chosen == []:
            self.notify("no hunk is taken: take one with x, or reject the item (r)", severity="warning")
            return
        # decide_items keeps a note saved before (a decision without a new note once erased it)
        self._confirm_deletes(
            decision, [item], lambda: self._decide_keeping_note(plan_id, index, decision, hunks=chosen)
        )

    def _hunks_to_approve(self, index: int, item: PolicyPlanItem) -> list[int] | None:
        """The hunks an approval takes, as ``review approve --hunks`` names them (None: the whole
        item, unless an earlier approval took only some: then every hunk, named)."""
        choice = self._hunk_choice(index, item)
        if choice is None or self.plan is None:
            return None
        if len(choice.taken) == self._hunk_count(item) and self.plan.decisions[index].hunks is None:
            return None
        return sorted(choice.taken)

    def action_undo_decision(self) -> None:
        """The item back to pending, its note kept: a decision made by mistake is one key away."""
        index, item = self._under_cursor()
        if self.plan is None or item is None or index is None:
            return
        if self.plan.decisions[index].decision == "pending":
            self.notify(f"item {index} is undecided already", severity="warning")
            return
        self._decide_keeping_note(self.plan.plan_id, index, "pending", advance=False)

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
        """Decide with exactly this note (the note dialog: an emptied note is cleared)."""
        if advance:  # on to the next item at once: a key pressed meanwhile decides that one
            self.query_one("#items", VimTable).action_cursor_down()
        decide = partial(self.workspace.review.decide, plan_id, index, decision, note)
        self._record("recording the decision", decide, back_to=index if advance else None)

    def _decide_keeping_note(
        self,
        plan_id: str,
        index: int,
        decision: Decision,
        *,
        advance: bool = True,
        hunks: list[int] | None = None,
    ) -> None:
        """Decide and keep the note the item has when the write happens (read under the plan's lock);
        ``hunks``: approve only these hunks of its content."""
        if advance:
            self.query_one("#items", VimTable).action_cursor_down()
        decide = partial(self.workspace.review.decide_items, plan_id, [index], decision, hunks=hunks)
        self._record("recording the decision", decide, back_to=index if advance else None)

    def _decide_all(self, plan_id: str, decision: Decision) -> None:
        self._record("recording the decisions", partial(self.workspace.review.decide_all, plan_id, decision))

    @work(group="review-record")
    async def _record(
        self,
        doing: str,
        write: Callable[[], object],
        *,
        back_to: int | None = None,
        done: str = "",
        warning: str | None = None,
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
            self.notify(done, markup=False)
        if warning:
            self.notify(warning, title="Before you apply", severity="warning", timeout=12, markup=False)

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
        self._taken.pop((self.plan.plan_id, index), None)  # the edited text has hunks of its own
        self._hunk_at.pop((self.plan.plan_id, index), None)
        warning = format_warning(item.model_copy(update={"after_content": edited.strip()}))
        edit = partial(self.workspace.review.edit_item, self.plan.plan_id, index, edited)
        done = f"edited {item.target_name}: approve it with a"
        self._record("saving the edit", edit, done=done, warning=warning)

    def action_choose_standing(self) -> None:
        """The reviewer chooses which line of the item's first unchosen contradiction stands."""
        index, item = self._under_cursor()
        if self.plan is None or item is None or index is None:
            return
        findings = item.metadata.get(CONTRADICTIONS, [])
        open_ones = [n for n, f in enumerate(findings) if f.get("stands") is None]
        if not open_ones:
            self.notify("this item contradicts no other rule still to choose on", severity="warning")
            return
        plan_id, number = self.plan.plan_id, open_ones[0]

        def chosen(stands: Stands | None) -> None:
            if stands is not None:
                write = partial(self.workspace.review.choose_standing, plan_id, index, number, stands)
                self._record("choosing which line stands", write, done=f"{stands} stands")

        self.app.push_screen(StandsModal(findings[number]), chosen)

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
        if self.app.size.width < UNIFIED_BELOW:  # unified either way: say why instead of doing nothing
            self.notify(
                f"side by side needs a terminal {UNIFIED_BELOW} columns wide (this one is "
                f"{self.app.size.width}): the diff stays unified",
                severity="warning",
            )
            return
        diff.unified = not diff.unified

    # --- apply and discard ---------------------------------------------------------------------
    def action_apply(self) -> None:
        if self.plan is None:
            return
        waiting = [i for i, d in enumerate(self.plan.decisions) if d.decision == "pending" and d.approvals]
        if waiting:
            lines = [f"item {i}: {self.workspace.review.approvals_line(self.plan, i)}" for i in waiting]
            self.notify("; ".join(lines) + ": a second reviewer must approve", severity="warning")
            return
        if self.plan.undecided:
            self.notify(
                f"{self.plan.undecided} item(s) are still undecided: approve or reject them first",
                severity="warning",
            )
            return
        plan_id, dry_run = self.plan.plan_id, self.dry_run

        def where(item: PolicyPlanItem) -> str:
            return self.relative(self.workspace.review.planned_uri(item)) or item.target_name

        modal = ConfirmModal(
            f"Dry run of plan {plan_id}?" if dry_run else f"Apply plan {plan_id}?",
            apply_preview(self.plan, where, dry_run=dry_run),
            confirm="Dry run" if dry_run else "Apply",
            default="confirm",  # an apply is undone by reverting its record in History
        )
        self.app.push_screen(modal, when_confirmed(lambda: self._apply(plan_id, dry_run)))

    @work(exclusive=True, group="apply")
    async def _apply(self, plan_id: str, dry_run: bool) -> None:
        try:
            result = await self.workspace.review.apply_pending(plan_id, dry_run=dry_run)
        except Exception as exc:
            self.report_error(f"applying plan {plan_id}", exc)
            return
        message, severity = apply_message(plan_id, result)
        title = "Dry run" if result.dry_run else "Applied"
        self.notify(message, title=title, severity=severity, timeout=8, markup=False)
        self.post_message(WorkspaceEdited(pending=True, history=True, experiences=not result.dry_run))

    def action_replan_stale(self) -> None:
        self._ask_to_replan()

    @work(exclusive=True, group="apply")
    async def _ask_to_replan(self) -> None:
        """Every plan with a stale item becomes one fresh plan (the kernel call `review replan
        --all-stale` makes), so plans parked on one base are no trap; asked first, since it
        replaces plans a person may be deciding."""
        try:  # the stale marks brought up to date against the files as they are (in a thread)
            await asyncio.to_thread(self.workspace.review.refresh_stale)
            waiting = await asyncio.to_thread(self.workspace.review.pending_plans)
        except Exception as exc:
            self.report_error("checking the plans for stale items", exc)
            return
        stale = [p for p in waiting if p.stale]
        if not stale:
            self.notify("no waiting plan has a stale item")
            return
        ids = [p.plan_id for p in stale]
        items = sum(len(p.plan.items) for p in stale)
        body = (
            f"Plans {', '.join(ids)} ({items} item(s), {sum(len(p.stale) for p in stale)} stale) are "
            "planned again against the experiences as they are now, as one fresh plan that replaces "
            "them. An item that comes back with the same target and text keeps its decision and note; "
            "the others wait for a decision again."
        )
        modal = ConfirmModal("Re-plan the stale plans?", body, confirm="Re-plan", default="confirm")
        self.app.push_screen(modal, when_confirmed(lambda: self._replan(ids)))

    @work(exclusive=True, group="apply")
    async def _replan(self, plan_ids: list[str]) -> None:
        try:
            result = await self.workspace.review.replan(plan_ids)
        except Exception as exc:
            self.report_error("re-planning the stale plans", exc)
            return
        self.notify(result.describe(), markup=False)
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
            await asyncio.to_thread(self.workspace.review.discard_pending, plan_id)
        except Exception as exc:
            self.report_error(f"discarding plan {plan_id}", exc)
            return
        self.notify(f"plan {plan_id} discarded")
        self.post_message(WorkspaceEdited(pending=True))
