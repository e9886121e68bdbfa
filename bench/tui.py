"""Benchmark: the app on a big workspace (10,000 experiences, 5,000 history records).

Figures (targets from issue #4):
  launch     time from building the Workspace to the first interactive screen (≤ 1.0 s); the import of
             Textual and the app is measured apart, in a fresh interpreter
  latency    median and p95 from a key press (j/k on the History table) to the repaint that shows it,
             while a train run processes 1,000 rollouts in its worker process (p95 ≤ 50 ms,
             max ≤ 150 ms; idle p95 is the baseline measured in the same run)
  diff       time from selecting a plan item whose experience has 2,000 lines to the repaint of its
             field diff (≤ 200 ms)
  lists      time from the key that opens Experiences (10,000 rows) or History (5,000 records) to the
             first repaint that shows rows (≤ 0.2 s), to the one with every row in, and to the one
             with the cursor on the last row after a G pressed then (all rows reachable, ≤ 1.0 s), and
             to the one with every row filled in (a folder no ovtui process read lists its names first);
             key-to-repaint of j/k pressed from the first rows on, while the rows arrive and after
             (p95 ≤ 50 ms, max ≤ 150 ms), and keys whose move never showed (none); medians of
             --repeats runs, each in a fresh interpreter, with the launch of each as baseline, every
             run's figures kept in "lists_runs"; one run before them, on the workspace as its first
             process opens it (no experiences cache yet), kept as "lists_cold"
The last line printed is one JSON object: figures (with the load average), baselines and goals.

Run: .venv/bin/python bench/tui.py [--experiences N] [--history N] [--rollouts N] [--repeats N] [--lists-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan  # noqa: E402
from ovtui.core.fileformat import render_memory  # noqa: E402
from ovtui.environments.sample.generate import generate_dataset, write_cases  # noqa: E402
from ovtui.environments.sample.workspace import write_sample_workspace  # noqa: E402
from ovtui.memory.store import MemoryStore  # noqa: E402
from ovtui.storage.paths import EXPERIENCE_CACHE_FILE  # noqa: E402
from ovtui.testing.big_workspace import EXPERIENCES_DIR, experience_fields, write_experiences, write_history  # noqa: E402
from ovtui.train.review.pending import PendingPlans  # noqa: E402
from ovtui.train.review.plans import ItemDecision  # noqa: E402

PREFIX = "viking://user/default/memories/experiences/"
BIG_NAME = "long_procedure"
MIN_PRESSES = 40  # j/k timed on each big list, from its first rows on
LOST_KEY_S = 2.0  # a key whose move has not shown by then is lost


def big_content(changed: bool) -> str:
    lines = [
        f"- step {i}: check the {'revised ' if changed and i % 10 == 0 else ''}item {i % 37} and log it"
        for i in range(2000)
    ]
    return "## Approach\n" + "\n".join(lines)


def build_workspace(root: Path, experiences: int, history: int, rollouts: int) -> None:
    write_sample_workspace(root)  # the package's sample data, never the repository folder's state
    config = (root / "ovtui.toml").read_text()
    (root / "ovtui.toml").write_text(config.replace('policy = "ask"', 'policy = "all"'))
    write_experiences(root, experiences)
    big = render_memory(big_content(False), experience_fields(BIG_NAME, 1))
    (root / EXPERIENCES_DIR / f"{BIG_NAME}.md").write_text(big, encoding="utf-8")
    write_history(root, history)
    train, test = generate_dataset(train=rollouts, test=15)
    write_cases(root / "datasets" / "bench" / "train.jsonl", train)
    write_cases(root / "datasets" / "bench" / "test.jsonl", test)


def park_big_plan(workspace: Any) -> None:
    item = PolicyPlanItem(
        kind="upsert",
        target_name=BIG_NAME,
        target_uri=PREFIX + BIG_NAME + ".md",
        before_content=big_content(False),
        after_content=big_content(True),
        base_version=1,
        confidence=0.9,
    )
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": "benchbigplan"})
    PendingPlans(MemoryStore.open(workspace.root)).park(plan, [ItemDecision(item=0)])  # as a run parks it


class Frames:
    """Wraps App._display: every call with a renderable is a repaint the terminal would receive."""

    def __init__(self, app: Any) -> None:
        self.event = asyncio.Event()
        self.count = 0
        self.watch: Callable[[], None] | None = None  # called at each repaint: what it showed
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is not None:
                self.count += 1
                if self.watch is not None:
                    self.watch()
                self.event.set()

        app._display = display

    async def next(self, timeout: float = 5.0) -> None:
        self.event.clear()
        await asyncio.wait_for(self.event.wait(), timeout)


def import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import ovtui.app.app; print(time.perf_counter() - t)"
    return float(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )


async def measure_lists(root: Path) -> dict[str, Any]:
    """Launch, then open Experiences and History: the lists' figures (one fresh app)."""
    from ovtui.app.app import OvtuiApp
    from ovtui.wiring.workspace import Workspace

    figures: dict[str, Any] = {}
    started = time.perf_counter()
    app = OvtuiApp(Workspace(root), watch_files=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        figures["launch_s"] = time.perf_counter() - started
        frames = Frames(app)
        expected_experiences = len(list((root / "memories" / "experiences").glob("*.md")))
        expected_history = len([p for p in (root / "history").iterdir() if p.is_dir()])
        for name, key, table_id, expected in (
            ("experiences", "4", "#memories", expected_experiences),
            ("history", "3", "#records", expected_history),
        ):
            fill = await fill_time(app, frames, key, table_id, expected)
            figures.update({f"{name}_{figure}": value for figure, value in fill.items()})
            # Let the screen settle before the next one opens: the row under the cursor draws its
            # detail 80 ms after the last key.
            await pilot.pause(0.5)
            await app.workers.wait_for_complete()
            await pilot.pause()
    return figures


def lists_in_fresh_interpreters(root: Path, repeats: int) -> dict[str, Any]:
    """The lists' figures, each run in a fresh interpreter (as a user opens the app: the first
    showing of a screen pays for whatever it imports). The first run opens the workspace as its
    first process does, before any experiences cache (every file parsed): kept apart as
    "lists_cold"; the medians are of the ``repeats`` runs after it, which find the cache."""

    def one_run() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, __file__, "--lists-at", str(root)], capture_output=True, text=True, check=True
        ).stdout
        return dict(json.loads(out.splitlines()[-1]))

    (root / EXPERIENCE_CACHE_FILE).unlink(missing_ok=True)
    cold = one_run()
    runs = [one_run() for _ in range(repeats)]
    figures: dict[str, Any] = {"lists_cold": cold, "lists_runs": runs}
    for name, value in runs[0].items():
        if isinstance(value, dict):
            figures[name] = {k: statistics.median(run[name][k] for run in runs) for k in value}
        else:
            figures[name] = statistics.median(run[name] for run in runs)
    figures["lost_keys"] = sum(
        run[f"{n}_lost_keys"] for run in [cold, *runs] for n in ("experiences", "history")
    )
    return figures


async def measure(root: Path, rollouts: int) -> dict[str, Any]:
    """Key-to-repaint idle and during a run, and the field diff (launch and lists: measure_lists)."""
    from ovtui.app.app import OvtuiApp
    from ovtui.app.screens.review import ReviewScreen
    from ovtui.app.screens.run import RunScreen
    from ovtui.wiring.workspace import TrainOptions, Workspace

    figures: dict[str, Any] = {}
    workspace = Workspace(root)
    app = OvtuiApp(workspace, watch_files=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        frames = Frames(app)

        await pilot.press("3")  # the History table is what j/k move below
        await pilot.pause()
        figures["idle_latency_ms"] = await key_latencies(app, frames, presses=100, while_running=None)

        park_big_plan(workspace)
        app.pending_changed()
        await pilot.press("2")
        await pilot.pause()
        review = app.screen
        assert isinstance(review, ReviewScreen)
        samples = []
        for _ in range(5):
            review._show_item(None)
            await pilot.pause()
            t = time.perf_counter()
            review._show_item(0)
            await frames.next()
            samples.append(time.perf_counter() - t)
        figures["diff_2000_lines_s"] = statistics.median(samples)

        await pilot.press("3")
        await pilot.pause()
        run = app.main_screens["run"]
        assert isinstance(run, RunScreen)
        run._start("train", TrainOptions(dataset="bench", epochs=1, batch_size=50, eval_split=None))
        while run.running and run.progress.counts["rollouts"] < 50:
            await asyncio.sleep(0.01)  # let the run get going: the measure is under load
        figures["run_latency_ms"] = await key_latencies(app, frames, presses=None, while_running=run)
        figures["rollouts_processed"] = run.progress.counts["rollouts"]
        figures["run_report"] = run.last_report.summary().splitlines()[0] if run.last_report else "no report"
    return figures


async def fill_time(app: Any, frames: Frames, key: str, table_id: str, expected: int) -> dict[str, Any]:
    """From the key that opens a screen: seconds to the first repaint that shows rows, to the one
    that shows them all, and to the one that shows the cursor on the last row after a G pressed as
    soon as they are all in (every row reachable), and to the one with every row filled in; the row
    count; and key-to-repaint of j/k pressed
    from the first rows on, while the rows arrive and after, MIN_PRESSES of them at least."""
    t = time.perf_counter()
    first: float | None = None
    full: float | None = None
    read: float | None = None  # every row filled in (a big folder never read lists its names first)
    reached: float | None = None
    bottom_asked = False
    moves: list[float] = []
    pressed: tuple[float, int] | None = None  # when the last key went, and the cursor row before it
    table: Any = None

    def repainted() -> None:  # at each repaint, what it showed
        nonlocal table, first, full, read, reached, pressed
        if table is None:
            found = app.screen.query(table_id)
            table = found.first() if found else None
        if table is None or not table.row_count:
            return
        now = time.perf_counter()
        first = now - t if first is None else first
        if full is None and table.row_count >= expected:
            full = now - t
        if (
            read is None
            and full is not None
            and not getattr(getattr(app.screen, "_all", None), "reading", False)
        ):
            read = now - t
        if pressed is not None and table.cursor_row != pressed[1]:
            if bottom_asked and reached is None and table.cursor_row == table.row_count - 1:
                reached = now - t
            else:
                moves.append(now - pressed[0])
            pressed = None

    frames.watch = repainted
    lost = 0  # keys whose move never showed: a defect, counted (once one stalled this loop for 120 s)
    # simulate_key, not pilot.press: press waits until the app is idle, i.e. until every row is in.
    app.simulate_key(key)
    while (
        full is None or read is None or reached is None or len(moves) < MIN_PRESSES
    ) and time.perf_counter() - t < 120:
        await asyncio.sleep(0.03)  # the app runs on this loop; a fast typist, not a flood
        if pressed is not None and time.perf_counter() - pressed[0] > LOST_KEY_S:
            lost, pressed = lost + 1, None
            bottom_asked = bottom_asked and reached is not None  # a lost G is asked again
        if first is None or pressed is not None:
            continue
        pressed = (time.perf_counter(), table.cursor_row)
        if full is not None and not bottom_asked:
            bottom_asked = True
            app.simulate_key("G")
        else:  # down, or up where the cursor is on the last row
            app.simulate_key("k" if table.cursor_row == table.row_count - 1 else "jk"[len(moves) % 2])
    frames.watch = None
    end = time.perf_counter() - t
    return {
        "first_rows_s": end if first is None else first,
        "fill_s": end if full is None else full,
        "every_row_read_s": end if read is None else read,
        "all_rows_reachable_s": end if reached is None else reached,
        "rows": table.row_count,
        "fill_latency_ms": spread(moves),
        "lost_keys": lost,
    }


def spread(samples: list[float]) -> dict[str, float]:
    """Count, median, p95 and max of ``samples`` (seconds) in milliseconds."""
    ordered = sorted(samples) or [0.0]
    return {
        "presses": len(samples),
        "median": statistics.median(ordered) * 1000,
        "p95": ordered[math.ceil(0.95 * len(ordered)) - 1] * 1000,  # nearest rank
        "max": ordered[-1] * 1000,
    }


async def key_latencies(
    app: Any, frames: Frames, *, presses: int | None, while_running: Any
) -> dict[str, float]:
    """j/k on the History table, each timed from the key to the repaint that shows it."""
    samples: list[float] = []
    while (presses is not None and len(samples) < presses) or (
        while_running is not None and while_running.running
    ):
        t = time.perf_counter()
        app.simulate_key("jk"[len(samples) % 2])
        try:
            await frames.next()
        except TimeoutError:
            continue
        samples.append(time.perf_counter() - t)
        await asyncio.sleep(0.03)  # a fast typist, not a flood
    return spread(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiences", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=5_000)
    parser.add_argument("--rollouts", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5, help="runs of the lists' measure (medians)")
    parser.add_argument("--lists-only", action="store_true", help="only launch and the big lists")
    parser.add_argument("--lists-at", type=Path, help=argparse.SUPPRESS)  # one run, in a fresh interpreter
    args = parser.parse_args()
    if args.lists_at:
        print(json.dumps(asyncio.run(measure_lists(args.lists_at))))
        return
    with tempfile.TemporaryDirectory(prefix="ovtui-bench-") as tmp:
        root = Path(tmp) / "ws"
        t = time.perf_counter()
        rollouts = 0 if args.lists_only else args.rollouts
        build_workspace(root, args.experiences, args.history, rollouts)
        print(
            f"workspace: {args.experiences} experiences, {args.history} history records, "
            f"{rollouts} train cases (built in {time.perf_counter() - t:.1f} s)"
        )
        print(f"import of the app (fresh interpreter): {import_seconds():.2f} s")
        figures = lists_in_fresh_interpreters(root, args.repeats)
        if not args.lists_only:
            figures.update(asyncio.run(measure(root, args.rollouts)))
    load = os.getloadavg()
    figures["load_average"] = [round(x, 2) for x in load]
    print(f"load average while measuring (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"launch to first interactive screen: {figures['launch_s']:.2f} s   (target ≤ 1.0 s)")
    if not args.lists_only:
        diff_ms = figures["diff_2000_lines_s"] * 1000
        print(f"field diff of a 2,000-line experience: {diff_ms:.0f} ms   (target ≤ 200 ms)")
        for label, key in (("idle", "idle_latency_ms"), ("during the run", "run_latency_ms")):
            lat = figures[key]
            print(
                f"key-to-repaint {label}: median {lat['median']:.1f} ms, p95 {lat['p95']:.1f} ms, "
                f"max {lat['max']:.0f} ms over {lat['presses']} presses   (target p95 ≤ 50 ms)"
            )
        print(f"rollouts processed during the measure: {figures['rollouts_processed']}")
    cold = figures["lists_cold"]
    cold_keys = cold["experiences_fill_latency_ms"]
    print(
        f"Experiences on the workspace's first open (no experiences cache yet): all rows in "
        f"{cold['experiences_fill_s']:.2f} s, the last one reached with G at "
        f"{cold['experiences_all_rows_reachable_s']:.2f} s, every row read "
        f"{cold['experiences_every_row_read_s']:.2f} s; j/k p95 "
        f"{cold_keys['p95']:.0f} ms, max {cold_keys['max']:.0f} ms"
    )
    print(f"keys whose move never showed (all runs): {figures['lost_keys']}")
    for name, label in (("experiences", "Experiences"), ("history", "History")):
        lat = figures[f"{name}_fill_latency_ms"]
        print(
            f"{label}: first rows {figures[f'{name}_first_rows_s']:.3f} s (target ≤ 0.2 s; launch "
            f"{figures['launch_s']:.2f} s), all {figures[f'{name}_rows']:.0f} rows in "
            f"{figures[f'{name}_fill_s']:.2f} s, the last one reached with G at "
            f"{figures[f'{name}_all_rows_reachable_s']:.2f} s (target ≤ 1.0 s); j/k from the first rows: "
            f"median {lat['median']:.0f} ms, p95 {lat['p95']:.0f} ms, max {lat['max']:.0f} ms "
            f"(target p95 ≤ 50, max ≤ 150)   (medians of {args.repeats} runs after the first)"
        )
    summary = {
        "bench": "tui",
        "figures": figures,
        "baseline": {
            "launch_s": figures["launch_s"],
            **({} if args.lists_only else {"idle_latency_p95_ms": figures["idle_latency_ms"]["p95"]}),
        },
        "goals": {
            "launch_s": 1.0,
            "diff_2000_lines_s": 0.2,
            "run_latency_p95_ms": 50,
            "run_latency_max_ms": 150,
            "first_rows_s": 0.2,
            "all_rows_reachable_s": 1.0,
            "fill_latency_p95_ms": 50,
            "fill_latency_max_ms": 150,
            "lost_keys": 0,
        },
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
