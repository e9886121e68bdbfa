"""What a run's charts plot, read from its stages: the learning curve's points (each evaluation of
the scored split with its 95% interval, each training epoch), the do-nothing floor, and the flips
map (case × stage: passed, failed or some trials, and whether the case flipped from the stage
before). A compare run's stages are three policies, not points in time: ``is_comparison`` says
so, and both pictures draw them side by side.

The HTML report and the app's Run screen draw these same values, so a picture in the terminal and
one in a browser never disagree about a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ovtui.train.inference import rate_interval
from ovtui.train.reports import StageReport

EVAL_STAGES = ("baseline_eval", "final_eval", "eval", "compare_a", "compare_b", "compare_aa")
# A stage whose flips are counted against another than the one before it: the A/A null's run of A
# against A's first run (not against B).
FLIP_REFERENCE = {"compare_aa": "compare_a"}

# A stage as a column or x tick: short enough that a run of many epochs fits a narrow page and
# 80 terminal columns.
SHORT_STAGES = {
    "baseline_eval": "base",
    "final_eval": "final",
    "eval": "eval",
    "compare_a": "A",
    "compare_b": "B",
    "compare_aa": "A/A",
}
COMPARE_STAGES = ("compare_a", "compare_b", "compare_aa")

Series = Literal["eval", "train"]
Flip = Literal["gained", "lost", ""]


@dataclass(frozen=True)
class CurvePoint:
    index: int  # the stage's place in the run: the curve's x
    stage: StageReport
    series: Series  # an evaluation of the scored split, or a training epoch
    interval: tuple[float, float] | None  # the accuracy's 95% interval (evaluations only)


@dataclass(frozen=True)
class FlipCell:
    passed: int
    trials: int
    flip: Flip  # "" unless the case's majority outcome changed from its reference stage

    @property
    def glyph(self) -> str:
        if self.passed == self.trials:
            return "✓"
        return "✗" if self.passed == 0 else "½"


@dataclass(frozen=True)
class FlipsMap:
    stages: list[StageReport]  # the columns: the stages with per-case results
    cases: list[str]  # the rows, sorted
    cells: dict[str, list[FlipCell | None]]  # case -> one cell per stage (None: not run there)


def stage_tick(stage: StageReport) -> str:
    if stage.stage == "train_epoch":
        return f"t{stage.epoch}"
    return SHORT_STAGES.get(stage.stage, stage.stage)


def is_comparison(stages: list[StageReport]) -> bool:
    """Whether the stages are a compare run's policies (drawn side by side, never joined)."""
    return bool(stages) and all(s.stage in COMPARE_STAGES for s in stages)


def accuracy_interval(stage: StageReport) -> tuple[float, float] | None:
    """The exact 95% interval of a stage's accuracy by the case (``inference.rate_interval``:
    Clopper–Pearson at one trial per case; never zero-width). None without per-case results."""
    return rate_interval(stage.results) if stage.results else None


def curve_points(stages: list[StageReport]) -> list[CurvePoint]:
    points = []
    for index, stage in enumerate(stages):
        series: Series = "eval" if stage.stage in EVAL_STAGES else "train"
        interval = accuracy_interval(stage) if series == "eval" else None
        points.append(CurvePoint(index, stage, series, interval))
    return points


def do_nothing_floor(stages: list[StageReport]) -> float | None:
    """What an agent that does nothing scores, as an accuracy, when the environment says."""
    floor = next((s for s in stages if s.do_nothing_passed is not None and s.cases), None)
    if floor is None:
        return None
    return (floor.do_nothing_passed or 0) / max(1, floor.cases // max(1, floor.trials))


def _majority(trials: list[int]) -> bool:
    return sum(trials) * 2 > len(trials)


def flips_map(stages: list[StageReport]) -> FlipsMap:
    shown = [s for s in stages if s.results]
    cases = sorted({c for s in shown for c in s.results})
    cells: dict[str, list[FlipCell | None]] = {}
    for case in cases:
        row: list[FlipCell | None] = []
        before: bool | None = None
        seen: dict[str, bool] = {}
        for stage in shown:
            trials = stage.results.get(case)
            if not trials:
                row.append(None)
                continue
            now = _majority(trials)
            reference = seen.get(FLIP_REFERENCE.get(stage.stage, ""), before)
            flip: Flip = "" if reference is None or reference == now else ("gained" if now else "lost")
            before = seen[stage.stage] = now
            row.append(FlipCell(sum(trials), len(trials), flip))
        cells[case] = row
    return FlipsMap(shown, cases, cells)
