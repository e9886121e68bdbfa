"""Benchmark: the app's charts at the 80×24 floor, Run's and Review's (goal: each drawn in ≤ 50 ms).

A run of ``--epochs`` training epochs over ``--cases`` cases (a baseline, each epoch, a final eval,
model calls in three stages) is fed to the app as its worker would send it. Figures, medians of
``--repeats``:

  render_ms    one render of the learning curve, the flips map and the cost chart into lines at
               the size each gets at 80×24 (plotext builds its whole picture each time), and of
               Review's validation bars (a parked plan validated on ``--cases`` cases): the goal
  show_ms      from the ``g`` that shows a chart, its data read afresh (as when an epoch ends), to
               the repaint that shows it: the key, the read (the curve's bootstrapped intervals, in
               a worker), the layout and the paint; beside it the floor, a key that changes nothing,
               measured in the same run

The last line printed is one JSON object: figures, the floor and the goal.

Run: .venv/bin/python bench/charts.py [--epochs 10] [--cases 15] [--repeats 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import ConsoleRenderable  # noqa: E402
from textual.pilot import Pilot  # noqa: E402
from textual.widget import Widget  # noqa: E402
from textual.widgets import ContentSwitcher  # noqa: E402

from ovtui.app.app import OvtuiApp  # noqa: E402
from ovtui.app.screens.review import ReviewScreen  # noqa: E402
from ovtui.app.screens.run import RunScreen  # noqa: E402
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan  # noqa: E402
from ovtui.core.events import Event  # noqa: E402
from ovtui.environments.sample.workspace import write_sample_workspace  # noqa: E402
from ovtui.memory.store import MemoryStore  # noqa: E402
from ovtui.train.reports import StageReport  # noqa: E402
from ovtui.train.review.pending import PendingPlans  # noqa: E402
from ovtui.train.review.plans import ItemDecision  # noqa: E402
from ovtui.wiring.workspace import Workspace  # noqa: E402

GOAL_MS = 50.0
FLOOR = (80, 24)


def run_events(epochs: int, cases: int) -> list[Event]:
    """A run whose pass rate climbs by epoch, with a case or two flipping back each time."""
    names = [f"case_{i:03d}" for i in range(cases)]
    events = [Event("run_started", {"command": "train", "dataset": "support", "epochs": epochs})]
    stages = (
        [("baseline_eval", -1)] + [("train_epoch", e) for e in range(epochs)] + [("final_eval", epochs - 1)]
    )
    for index, (name, epoch) in enumerate(stages):
        results = {
            c: [int((i * 7 + index * 3) % cases < cases * (index + 1) / (len(stages) + 1))]
            for i, c in enumerate(names)
        }
        passed = sum(t[0] for t in results.values())
        stage = StageReport(
            stage=name, epoch=epoch, cases=cases, passed=passed, avg_reward=passed / cases, results=results
        )
        events.append(Event("eval", {**stage.model_dump(), "accuracy": stage.accuracy}))
        for call, prompt in (("extract", 900), ("propose", 600), ("merge", 300)):
            data = {
                "stage": call,
                "prompt_tokens": prompt,
                "completion_tokens": prompt // 3,
                "cost": prompt / 1e5,
            }
            events.append(Event("usage", data))
    return events


def park_validated_plan(root: Path, cases: int) -> None:
    """A plan of one new experience whose validation passed a third of the cases before, two after."""
    item = PolicyPlanItem(
        kind="upsert", target_name="bench_validated", after_content="## Approach\n- ask first"
    )
    validation = {"cases": cases, "before": cases // 3, "after": 2 * cases // 3}
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": "benchvalidated", "validation": validation})
    PendingPlans(MemoryStore.open(root)).park(plan, [ItemDecision(item=0)])  # as a run parks it


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def time_render(widget: Widget, repeats: int) -> float:
    """A widget's picture and its lines at the widget's size (plotext builds the picture anew)."""
    console = widget.app.console
    options = console.options.update_dimensions(widget.size.width, widget.size.height)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        renderable = widget.render()
        assert isinstance(renderable, ConsoleRenderable)  # plotext's picture is a Rich Text
        console.render_lines(renderable, options, pad=False)
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


async def time_key(pilot: Pilot[None], key: str) -> float:
    """From the key to the repaint that shows what it did (a chart's data is read in a worker)."""
    started = time.perf_counter()
    await pilot.press(key)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    return time.perf_counter() - started


VIEWS = {
    "curve": ("run-curve", "#curve-plot"),
    "flips": ("run-flips", "#flips-map"),
    "cost": ("run-cost", "#cost-plot"),
}


async def measure(epochs: int, cases: int, repeats: int) -> dict[str, object]:
    root = Path(tempfile.mkdtemp()) / "ws"
    write_sample_workspace(root)
    app = OvtuiApp(Workspace(root), watch_files=False)
    show: dict[str, list[float]] = {name: [] for name in VIEWS}
    render: dict[str, float] = {}
    floor: list[float] = []
    async with app.run_test(size=FLOOR) as pilot:
        for event in run_events(epochs, cases):
            app.pump(event)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        for _ in range(repeats):
            for name in VIEWS:  # each chart shown, its data redrawn (as when an epoch ends while it shows)
                screen._charted = (-1, -1)  # the screen's mark of what its charts show: none
                show[name].append(await time_key(pilot, "g"))
            await time_key(pilot, "g")  # back to the log
            floor.append(await time_key(pilot, "z"))  # bound to nothing: the cost of a key and a repaint
        sizes = {}
        for name, (view, selector) in VIEWS.items():
            while screen.query_one("#run-view", ContentSwitcher).current != view:
                await time_key(pilot, "g")
            widget = screen.query_one(selector)
            render[name] = time_render(widget, repeats)
            sizes[name] = [widget.size.width, widget.size.height]
        park_validated_plan(root, cases)
        app.pending_changed()
        await time_key(pilot, "2")
        assert isinstance(app.screen, ReviewScreen)
        bars = app.screen.query_one("#plan-validation")
        render["validation"] = time_render(bars, repeats)
        sizes["validation"] = [bars.size.width, bars.size.height]
    return {
        "epochs": epochs,
        "cases": cases,
        "repeats": repeats,
        "sizes": sizes,
        "render_ms": render,
        "show_ms": {name: median_ms(values) for name, values in show.items()},
        "floor_key_ms": median_ms(floor),
        "goal_ms": GOAL_MS,
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--cases", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    figures = asyncio.run(measure(args.epochs, args.cases, args.repeats))
    render, show, floor = figures["render_ms"], figures["show_ms"], figures["floor_key_ms"]
    assert isinstance(render, dict) and isinstance(show, dict) and isinstance(floor, float)
    # What a chart adds to a key's repaint: the key and the repaint themselves are the floor's.
    figures["show_over_floor_ms"] = {name: round(ms - floor, 2) for name, ms in show.items()}
    figures["within_goal"] = max(render.values()) <= GOAL_MS
    print(
        f"charts at 80×24, {args.epochs} epochs × {args.cases} cases: render {figures['render_ms']} ms, "
        f"shown by a key {figures['show_ms']} ms (a key that does nothing: {figures['floor_key_ms']} ms)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
