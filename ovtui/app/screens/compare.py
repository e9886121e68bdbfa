"""The Compare screen: two policies on the same cases, paired, with the A/A null beside them.

It asks the ``Workspace`` facade for the comparison ``ovtui compare`` makes (the same use case, the
same report under ``runs/``) in a worker, shows where its three runs are while they run, and then
the verdict, Δ with its interval and p by the case, the A/A null and the flips both ways with what each
policy's agent did.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, ProgressBar, Static

from ovtui.app.messages import EventPump, KernelEventsReady
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.screens.help import HintFooter
from ovtui.app.services import ScreenServices
from ovtui.app.views.compare import EMPTY, progress_line, result_text
from ovtui.core.splits import VALIDATION_SPLIT
from ovtui.train.reports import failure_reason
from ovtui.wiring.services.measures import CompareOptions

SUGGESTED_RECORDS = 200  # history record ids offered as A or B while typing (the newest)


class CompareScreen(MainScreen):
    """Opens in field A (to type a policy); esc leaves a field for the result below, where the
    screen's and the app's keys (c, ?, q, 1-5) work again."""

    KEY = "compare"
    AUTO_FOCUS = "#policy-a"
    HOME = ("#compare-result",)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "compare", "Compare", id="compare.run"),
        Binding("x", "cancel", "Cancel", id="compare.cancel"),
        # In a field the letters are text: the footer says how out (esc) and what enter does.
        Binding("escape", "leave_field", "Leave field", id="compare.leave_field"),
        Binding("enter", "compare", "Compare", id="compare.enter", show=False),
        *back_bindings("compare", main_screen=True),
    ]
    WORK_LOST: ClassVar[dict[str, str]] = {"compare": "the comparison running now (it stops unfinished)"}

    running: reactive[bool] = reactive(False, bindings=True)

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self._pump = EventPump(self)
        self._cancel: asyncio.Event | None = None

    def compose(self) -> ComposeResult:
        names = SuggestFromList(self._policy_names(), case_sensitive=True)
        yield self.top_bar()
        with Vertical(id="compare-body"):
            yield Label("Compare two policies (C) · enter compares · esc leaves a field", id="compare-title")
            with Horizontal(id="compare-form"):
                yield Label("A", classes="form-label")
                yield Input("current", id="policy-a", classes="form-input", compact=True, suggester=names)
                yield Label("B", classes="form-label")
                yield Input(
                    id="policy-b",
                    classes="form-input",
                    compact=True,
                    suggester=names,
                    placeholder="record id",
                )
                yield Label("split", classes="form-label")
                yield Input(VALIDATION_SPLIT, id="compare-split", classes="form-small", compact=True)
                yield Label("trials", classes="form-label")
                yield Input(id="compare-trials", type="integer", classes="form-small", compact=True)
            yield Static("", id="compare-status")
            yield ProgressBar(total=1, show_eta=False, id="compare-bar")
            with VerticalScroll(id="compare-result"):
                yield Static(EMPTY, id="compare-text", markup=False)
        yield HintFooter()

    def _policy_names(self) -> list[str]:
        try:
            return ["current", *(e.id for e in self.workspace.reading.newest_history(SUGGESTED_RECORDS))]
        except Exception:  # a history that cannot be read leaves the fields free to type in
            return ["current"]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_field":  # False: esc falls through to the app's back
            return isinstance(self.focused, Input)
        if action == "compare":
            return not self.running
        if action == "cancel":
            return self.running
        return True

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()  # the footer's esc comes and goes with a field's focus

    def on_descendant_blur(self) -> None:
        self.refresh_bindings()

    def action_leave_field(self) -> None:
        self.query_one("#compare-result").focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_compare()

    def action_compare(self) -> None:
        if self.running:
            return
        a = self.query_one("#policy-a", Input).value.strip()
        b = self.query_one("#policy-b", Input).value.strip()
        if not a or not b:
            self._status("name both policies: A and B (current, a history record id or a folder)")
            return
        trials_text = self.query_one("#compare-trials", Input).value.strip()
        split = self.query_one("#compare-split", Input).value.strip() or VALIDATION_SPLIT
        options = CompareOptions(a=a, b=b, split=split, trials=int(trials_text) if trials_text else None)
        self.running = True
        self._cancel = asyncio.Event()
        self._status(f"comparing A = {a} with B = {b} on {split}…")
        self.query_one("#compare-bar", ProgressBar).update(total=1, progress=0)
        self._compare(options, self._cancel)

    @work(exclusive=True, group="compare")
    async def _compare(self, options: CompareOptions, cancel: asyncio.Event) -> None:
        try:
            report = await self.workspace.measures.compare(options, [self._pump], cancel)
        except Exception as exc:
            self._status(f"compare failed: {failure_reason(exc)}")
            return
        finally:
            self.running = False
        if report.comparison is None:
            self._status(
                f"compare {'cancelled' if report.cancelled else 'ended'} before its three runs were done"
            )
            return
        self._status(f"compare {report.run_id}: A = {report.comparison.a} · B = {report.comparison.b}")
        self.query_one("#compare-text", Static).update(result_text(report.comparison))
        self.action_leave_field()  # the result to scroll, and the keys free again

    def on_kernel_events_ready(self, _: KernelEventsReady) -> None:
        for event in self._pump.drain():
            found = progress_line(event)
            if found is not None:
                done, total, line = found
                self.query_one("#compare-bar", ProgressBar).update(total=total or 1, progress=done)
                self._status(line)

    def action_cancel(self) -> None:
        if self._cancel is not None and self.running:
            self._cancel.set()
            self._status("cancel requested: the comparison stops after the current batch")

    def _status(self, line: str) -> None:
        self.query_one("#compare-status", Static).update(line)
