"""The Run screen: start a train run or an eval, watch every stage live, cancel at any moment.

A run that waits for a person says so (status, log, a notification); ``A`` approves the plan it
waits on and every plan still to come (the review policy ``all`` for the rest of the run). A run
that fails shows the kernel's whole reason, wrapped, until the next run starts.

``g`` turns from the log to the run's pictures and back: the learning curve, the case × stage flips
map and tokens and cost per stage, drawn from the evaluations and usage the run reports (the values
the HTML report draws). The charts take the place of the stage rows too, so they get the room.
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.suggester import SuggestFromList
from textual.widgets import Button, ContentSwitcher, Input, Label, Log, Static

from ovtui.app.messages import InboxFilesArrived, PendingChanged, RunEvents, RunFinished, WorkspaceEdited
from ovtui.app.run_process import RunProcess
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.screens.confirm import ConfirmModal, when_confirmed
from ovtui.app.screens.dataset_picker import DatasetPicker
from ovtui.app.screens.help import HintFooter
from ovtui.app.services import ScreenServices
from ovtui.app.views.case_results import case_results
from ovtui.app.views.run import RunProgress, accuracy_line, clock, log_line, usage_line, wrapped
from ovtui.app.views.run_charts import CurveView, flips_text, learning_curve, stage_costs
from ovtui.app.widgets.charts import ChartOrEmpty, LearningCurvePlot, StageCostPlot
from ovtui.app.widgets.pinned_log import PinnedLog
from ovtui.app.widgets.stage_progress import StageProgress
from ovtui.core.events import Event
from ovtui.train.reports import RunReport, StageReport, failure_reason
from ovtui.wiring.workspace import TrainOptions

# How long a cancelled run may take to finish its batch before its process is stopped.
CANCEL_GRACE_S = 10.0
# A failed run's notification stays this long; its reason stays on the screen anyway.
FAILURE_NOTICE_S = 30
SHOWN_COMMANDS = ("train", "eval", "stream")  # the runs the screen starts, and shows again when it opens
APPROVE_REST_NOTE = "approved with the rest of the run (Run screen)"
# What the screen shows below its status, in the order ``g`` steps through them.
VIEWS = {"run-log-pane": "log", "run-curve": "curve", "run-flips": "flips", "run-cost": "cost"}
EMPTY_RUN = (
    "No run yet. t trains on the dataset above (d picks another), v evaluates it, s trains on "
    "rollouts dropped into inbox/rollouts/. g shows the run's charts."
)
NO_CURVE = "No evaluation yet: the learning curve appears with the run's first evaluation (t or v)."
NO_FLIPS = "No case results yet: each case's pass/fail per stage appears as the run evaluates (t or v)."
NO_COST = "No model calls yet: tokens and cost per stage appear as the run calls the model."
NO_MODEL_COST = "The {backend} backend makes no model calls: nothing to count (no tokens, no cost)."


class RunScreen(MainScreen):
    KEY = "run"
    AUTO_FOCUS = "#train"
    WORK_LOST: ClassVar[dict[str, str]] = {
        "run": "a run is in progress: quitting stops it (its report is saved)"
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "train", "Train", id="run.train"),
        Binding("v", "evaluate", "Eval", id="run.eval"),
        Binding("s", "stream", "Stream", id="run.stream"),
        Binding("c", "cancel", "Cancel", id="run.cancel"),
        Binding("A", "approve_rest", "Approve rest", id="run.approve_rest"),
        Binding("d", "pick_dataset", "Dataset…", id="run.pick_dataset"),
        Binding("f", "case_results", "Cases", id="run.case_results"),
        Binding("g", "next_view", "Charts", id="run.next_view"),
        Binding("L", "clear_log", "Clear log", id="run.clear_log", show=False),
        *back_bindings("run", main_screen=True),
    ]

    running: reactive[bool] = reactive(False, bindings=True)

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.progress = RunProgress()
        self._process: RunProcess | None = None
        self._hard_cancelled = False
        self.last_report: RunReport | None = None
        # The progress's stages_version and usage_version the charts show.
        self._charted: tuple[int, int] = (-1, -1)

    def compose(self) -> ComposeResult:
        config = self.workspace.config.trainer
        yield self.top_bar()
        with Vertical(id="run-body"):
            with Horizontal(id="run-form"):
                yield Label("dataset", classes="form-label")
                yield Input(
                    config.dataset,
                    id="dataset",
                    classes="form-input",
                    compact=True,
                    suggester=SuggestFromList(self._dataset_names(), case_sensitive=True),
                    tooltip="d: pick one of the workspace's datasets",
                )
                yield Label("epochs", classes="form-label")
                yield Input(
                    str(config.epochs), id="epochs", type="integer", classes="form-small", compact=True
                )
                yield Label("batch", classes="form-label")
                yield Input(
                    str(config.batch_size),
                    id="batch-size",
                    type="integer",
                    classes="form-small",
                    compact=True,
                )
            with Horizontal(id="run-buttons"):
                yield Button("Train (t)", id="train", variant="primary", compact=True)
                yield Button("Eval (v)", id="eval", compact=True)
                yield Button(
                    "Stream (s)",
                    id="stream",
                    tooltip="Train on rollouts dropped into inbox/rollouts/",
                    compact=True,
                )
                yield Button("Cancel (c)", id="cancel", variant="error", disabled=True, compact=True)
            yield Static("idle", id="run-status")
            with Vertical(id="run-stages"):
                for stage, label in (
                    ("rollouts", "rollouts"),
                    ("trajectories", "trajectories"),
                    ("gradients", "gradients"),
                    ("plans", "plans"),
                ):
                    yield StageProgress(stage, label)
                yield Static(self._usage_line({}), id="usage")
            yield Static(accuracy_line(self.progress), id="accuracy")
            yield Static(self._views_line("run-log-pane"), id="run-views")
            with ContentSwitcher(initial="run-log-pane", id="run-view"):
                with Vertical(id="run-log-pane"):
                    yield Static(EMPTY_RUN, id="run-empty", markup=False)
                    yield PinnedLog(id="run-log", max_lines=2000)
                yield ChartOrEmpty(LearningCurvePlot(id="curve-plot"), NO_CURVE, id="run-curve")
                with VerticalScroll(id="run-flips"):
                    yield Static(NO_FLIPS, id="flips-map", markup=False)
                workspace = self.workspace
                no_cost = (
                    NO_COST if workspace.uses_model else NO_MODEL_COST.format(backend=workspace.backend_label)
                )
                yield ChartOrEmpty(StageCostPlot(id="cost-plot"), no_cost, id="run-cost")
        yield HintFooter()

    def on_mount(self) -> None:
        self._load_last_run()

    @work(thread=True, exclusive=True, group="last-run")
    def _load_last_run(self) -> None:
        """The newest finished train, eval or stream run (``ovtui train`` from the CLI, or this app
        before it was closed), read off the UI loop and shown as it looked when it ended."""
        try:
            events = self.workspace.reading.last_run_events(SHOWN_COMMANDS)
        except Exception as exc:  # an unreadable run folder leaves the screen as a fresh one
            self.app.call_from_thread(self.report_error, "reading the last run", exc)
            return
        if events:
            self.app.call_from_thread(self._show_saved_run, events)

    def _show_saved_run(self, events: list[Event]) -> None:
        if self.running or self.progress.command:  # a run started meanwhile: it is what to show
            return
        self.progress = RunProgress(batch_size=self.workspace.config.trainer.batch_size)
        for event in events:
            self._apply(event)
        if not self.progress.finished:  # a run killed before its end event (its report is saved)
            self.progress.cancel()
        run_id = self.progress.run_id or "?"
        self._log(f"shown from runs/{run_id}/ (the last run); t, v or s starts a new one")
        self._draw()

    def _usage_line(self, usage: dict[str, float]) -> str:
        return usage_line(self.workspace.backend_label, usage, uses_model=self.workspace.uses_model)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("train", "evaluate", "stream", "pick_dataset"):
            return not self.running
        if action == "cancel":
            return self.running
        if action == "approve_rest":
            return self.running and self.progress.command in ("train", "stream")
        if action == "case_results":
            return not self.running and self.last_report is not None and bool(self.last_report.stages)
        return True

    def _dataset_names(self) -> list[str]:
        try:
            return self.workspace.reading.dataset_names()
        except Exception:  # a listing that fails leaves the field free to type in
            return []

    def watch_running(self, running: bool) -> None:
        try:
            buttons = {b.id: b for b in self.query(Button)}
            if running:  # before the buttons go grey, so focus does not fall into a form field
                self.query_one(Log).focus()
        except NoMatches:  # the app is closing
            return
        if not buttons:  # the app is closing (quit during a run): the buttons are gone already
            return
        for button_id in ("train", "eval", "stream"):
            buttons[button_id].disabled = running
        buttons["cancel"].disabled = not running

    # --- starting ------------------------------------------------------------------------------
    @on(Button.Pressed, "#train")
    def _train_pressed(self) -> None:
        self.action_train()

    @on(Button.Pressed, "#eval")
    def _eval_pressed(self) -> None:
        self.action_evaluate()

    @on(Button.Pressed, "#stream")
    def _stream_pressed(self) -> None:
        self.action_stream()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def _options(self) -> TrainOptions | None:
        try:
            epochs = int(self.query_one("#epochs", Input).value or 0) or None
            batch = int(self.query_one("#batch-size", Input).value or 0) or None
        except ValueError:
            self.report_error("starting a run", ValueError("epochs and batch must be whole numbers"))
            return None
        dataset = self.query_one("#dataset", Input).value.strip() or None
        return TrainOptions(dataset=dataset, epochs=epochs, batch_size=batch)

    def action_train(self) -> None:
        options = self._options()
        if options is not None and not self.running:
            self._start("train", options)

    def action_evaluate(self) -> None:
        options = self._options()
        if options is not None and not self.running:
            self._start("eval", options)

    def action_stream(self) -> None:
        if not self.running:
            self._start("stream", TrainOptions())

    def _start(self, command: str, options: TrainOptions) -> None:
        self.progress = RunProgress(
            command=command, batch_size=options.batch_size or self.workspace.config.trainer.batch_size
        )
        self._charted = (-1, -1)
        for stage in self.query(StageProgress):
            stage.reset()
        self.query_one("#accuracy", Static).update(accuracy_line(self.progress))
        self.running = True
        self._run(command, options)

    @work(exclusive=True, group="run")
    async def _run(self, command: str, options: TrainOptions) -> None:
        # The run lives in a worker process: its CPU never competes with key presses for the GIL.
        process = self._process = RunProcess(command, self.workspace, options, self.services.listener)
        self._hard_cancelled = False
        report: RunReport | None = None
        error: str | None = None
        try:
            report = self.last_report = await process.run()
        except asyncio.CancelledError:
            if not self._hard_cancelled:
                raise  # the app is closing (the worker process was stopped on the way out)
            self._log("run cancelled while it waited for review; the pending plan stays for later")
            self.progress.cancel()
        except Exception as exc:
            error = failure_reason(exc)
            self._failed(error)
            self.notify(
                f"{command} run failed: {error} (the reason stays on the Run screen)",
                title="Error",
                severity="error",
                timeout=FAILURE_NOTICE_S,
                markup=False,
            )
        finally:
            self.running = False
            self._process = None
        self._draw()
        self.post_message(RunFinished(command, report, error))

    def _failed(self, error: str) -> None:
        """The run failed: said once in the log, whether the run's last event or its end says it first."""
        if self.progress.failed is None:
            self._log(f"run failed: {error}")
        self.progress.fail(error)

    # --- cancelling ----------------------------------------------------------------------------
    def action_cancel(self) -> None:
        process = self._process
        if not self.running or process is None:
            return
        process.cancel()
        self._log("cancel requested: the run stops after the current batch")
        if self._waiting_for_review():
            # Nothing is being written while a plan waits for a person, so stopping here is safe.
            self._hard_cancelled = True
            self.workers.cancel_group(self, "run")
        else:
            self.set_timer(CANCEL_GRACE_S, lambda: self._stop_lingering(process))

    def _stop_lingering(self, process: RunProcess) -> None:
        """A batch that outlives the grace period (a slow LLM call) is stopped by a signal."""
        if self._process is process:
            self._log(f"the run did not stop within {CANCEL_GRACE_S:.0f}s: stopping its process")
            self._hard_cancelled = True
            self.workers.cancel_group(self, "run")

    def _waiting_for_review(self) -> bool:
        run_id = self.progress.run_id
        try:
            return any(p.run_id == run_id for p in self.workspace.review.pending_plans())
        except Exception:
            return False

    # --- events --------------------------------------------------------------------------------
    def on_run_events(self, message: RunEvents) -> None:
        for event in message.events:
            self._apply(event)
        self._draw()

    def _apply(self, event: Event) -> None:
        failure = event.data.get("failed") if event.kind == "run_finished" else None
        if failure:
            self._failed(str(failure))
            return
        self.progress.apply(event)
        line = log_line(event)
        if line:
            self._log(line, stamped=True)
        if event.kind == "run_finished":
            self.last_report = RunReport.model_validate(event.data["report"])
            delta = self.last_report.accuracy_delta
            if delta is not None:
                self._log(f"accuracy delta: {delta * 100:+.2f}pp", at=event.at)
            for error in self.last_report.errors[:20]:
                self._log(f"ERROR: {error}", at=event.at)

    def _draw(self) -> None:
        p = self.progress
        # Every line here but a failure's reason has a fixed size: skip the re-layout (a run sends
        # many of these). The reason wraps over as many lines as it needs.
        self.query_one("#run-status", Static).update(p.status_line(), layout=p.failed is not None)
        for stage, done, total, text in p.stage_rows():
            self.query_one(f"#stage-{stage}", StageProgress).set(done, total, text)
        self.query_one("#usage", Static).update(self._usage_line(p.usage), layout=False)
        self.query_one("#accuracy", Static).update(accuracy_line(p), layout=False)
        if p.command:
            self.query_one("#run-empty").display = False
        self._draw_charts()

    # --- the charts -------------------------------------------------------------------------------
    def action_next_view(self) -> None:
        switcher = self.query_one("#run-view", ContentSwitcher)
        order = list(VIEWS)
        shown = order[(order.index(switcher.current or order[0]) + 1) % len(order)]
        switcher.current = shown
        self.query_one("#run-stages").display = shown == "run-log-pane"
        self.query_one("#run-views", Static).update(self._views_line(shown))
        self._draw_charts()

    @staticmethod
    def _views_line(shown: str) -> Text:
        text = Text("view: ")
        for view_id, name in VIEWS.items():
            text.append(f" {name} ", style="bold reverse" if view_id == shown else "")
        text.append("  (g: next)", style="dim")
        return text

    def _draw_charts(self) -> None:
        """The charts, redrawn only when the run reported something new for them and only while
        one shows (plotext rebuilds a whole chart on every draw)."""
        if self.query_one("#run-view", ContentSwitcher).current in (None, "run-log-pane"):
            return
        p = self.progress
        stages_seen, usage_seen = self._charted
        self._charted = (p.stages_version, p.usage_version)
        if p.stages_version != stages_seen:
            self._read_stages(list(p.stages))
        if p.usage_version != usage_seen:
            cost = stage_costs(p.stage_usage)
            self.query_one("#cost-plot", StageCostPlot).show(cost)
            self.query_one("#run-cost", ChartOrEmpty).showing(not cost.empty)

    @work(thread=True, exclusive=True, group="charts")
    def _read_stages(self, stages: list[StageReport]) -> None:
        """The curve's intervals are bootstrapped (tens of ms for a run of a few evaluations): read
        off the UI loop, so a key never waits for an epoch's statistics."""
        curve, flips = learning_curve(stages), flips_text(stages)
        self.app.call_from_thread(self._show_stages, curve, flips)

    def _show_stages(self, curve: CurveView, flips: Text | None) -> None:
        self.query_one("#curve-plot", LearningCurvePlot).show(curve)
        self.query_one("#run-curve", ChartOrEmpty).showing(not curve.empty)
        self.query_one("#flips-map", Static).update(NO_FLIPS if flips is None else flips)

    def on_pending_changed(self, _: PendingChanged) -> None:
        """A plan this run sent to review may have been applied or discarded in Review."""
        if not self.progress.sent_to_review:
            return
        try:
            pending = {p.plan_id for p in self.workspace.review.pending_plans()}
        except Exception:
            return  # unreadable now: the count stays until the next change
        self.progress.still_pending(pending)
        self._draw()

    def on_inbox_files_arrived(self, message: InboxFilesArrived) -> None:
        for path in message.paths:
            self._log(f"inbox: {path} arrived")

    def _log(self, line: str, *, at: float | None = None, stamped: bool = False) -> None:
        """A line of the log, stamped with ``at`` (an event's time) or now, wrapped to the log's
        width: a reason cut at the edge is a reason nobody reads."""
        if not stamped:
            line = f"{clock(time.time() if at is None else at)} {line}"
        log = self.query_one(Log)
        # Room for the scrollbar a long log grows, so lines wrapped before it came still fit.
        log.write_lines(wrapped(line, log.content_region.width - 2))

    # --- approving the rest of a run ---------------------------------------------------------------
    def action_approve_rest(self) -> None:
        if not self.running or self._process is None:
            return
        body = "Every plan this run makes from now on is approved and applied without review (all)."
        if self.progress.waiting_on:
            body += f" Plan {self.progress.waiting_on}, which the run waits on, is approved and applied now."
        body += " Items that carry case-specific values still wait for you."
        modal = ConfirmModal("Approve the rest of this run?", body, confirm="Approve the rest")
        self.app.push_screen(modal, when_confirmed(self._approve_rest))

    def _approve_rest(self) -> None:
        process = self._process
        if process is None:
            return
        process.steer("all")
        self._log("review policy for the rest of this run: all (asked on the Run screen)")
        if self.progress.waiting_on:
            self._apply_waiting(self.progress.waiting_on)

    @work(exclusive=True, group="approve-rest")
    async def _apply_waiting(self, plan_id: str) -> None:
        """The plan the run waits on, approved and applied as Review applies one (the run then goes on)."""
        from ovtui.train.review.policy import describe_apply

        try:
            await asyncio.to_thread(
                self.workspace.review.decide_items, plan_id, None, "approved", APPROVE_REST_NOTE
            )
            result = await self.workspace.review.apply_pending(plan_id)
        except Exception as exc:
            self.report_error(f"applying plan {plan_id}", exc)
            return
        self._log(describe_apply(plan_id, result))
        self.post_message(WorkspaceEdited(pending=True, history=True, experiences=True))

    # --- the results, case by case ------------------------------------------------------------------
    def action_case_results(self) -> None:
        report = self.last_report
        if report is None or self.running:
            return
        label = f"{report.command} {report.run_id} ({report.dataset})"
        self.app.push_screen(CaseResultsScreen(label, case_results(report)))

    # --- the dataset ------------------------------------------------------------------------------
    def action_pick_dataset(self) -> None:
        field = self.query_one("#dataset", Input)
        picker = DatasetPicker(self._dataset_names(), field.value.strip())
        self.app.push_screen(picker, self._dataset_picked)

    def _dataset_picked(self, name: str | None) -> None:
        if name:
            self.query_one("#dataset", Input).value = name

    def step_back(self) -> bool:
        """esc out of a form field, so the screen's keys work again; from anywhere else q quits."""
        if not isinstance(self.focused, Input):
            return False
        if self.running:
            self.query_one(Log).focus()
        else:
            self.query_one("#train", Button).focus()
        return True

    def action_clear_log(self) -> None:
        self.query_one(Log).clear()
