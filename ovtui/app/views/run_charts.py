"""What the Run screen's charts show, as plain data (no Textual): the learning curve's series, the
flips map as glyph rows, and tokens and cost per stage.

The values come from the kernel's read model of a run's stages (``ovtui.train.run_charts``), the
one the HTML report draws, so both pictures of a run agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from ovtui.train.reports import StageReport
from ovtui.train.run_charts import curve_points, do_nothing_floor, flips_map, stage_tick

# Each series' legend name and its marker: the marker alone tells the series apart without colour.
TEST, TRAIN, CI_LOW, CI_HIGH, FLOOR = "evaluations", "training", "95% CI", "95% CI high", "do-nothing"
MARKERS = {TEST: "o", TRAIN: "x", CI_LOW: "·", CI_HIGH: "·", FLOOR: ":"}
FLIP_ARROWS = {"gained": "↑", "lost": "↓", "": " "}
# The flips map's case column: as wide as its longest name, up to this; a longer name loses its
# middle, never its end, where names of one task differ (``booking_cancellation_test_007``).
MAX_CASE_COLUMN = 40


def case_label(case: str, room: int) -> str:
    if len(case) <= room:
        return case
    head = (room - 1) // 2
    return case[:head] + "…" + case[len(case) - (room - 1 - head) :]


def curve_legend() -> str:
    """Each series' marker and name, said in the curve's title: plotext draws a legend in the plot's
    top corner, over the points at 100%."""
    return " · ".join(f"{MARKERS[name]} {name}" for name in (TEST, TRAIN, CI_LOW, FLOOR))


@dataclass(frozen=True)
class CurveView:
    """Accuracy in percent per stage; each series is (x, y) with x the stage's place in the run."""

    ticks: list[str] = field(default_factory=list)
    series: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.ticks


def learning_curve(stages: list[StageReport]) -> CurveView:
    points = curve_points(stages)
    if not points:
        return CurveView()
    series: dict[str, tuple[list[int], list[float]]] = {}

    def add(name: str, x: int, y: float) -> None:
        xs, ys = series.setdefault(name, ([], []))
        xs.append(x)
        ys.append(round(y * 100, 4))

    for point in points:
        add(TEST if point.series == "eval" else TRAIN, point.index, point.stage.accuracy)
        if point.interval is not None:
            add(CI_LOW, point.index, point.interval[0])
            add(CI_HIGH, point.index, point.interval[1])
    floor = do_nothing_floor(stages)
    if floor is not None:
        series[FLOOR] = ([0, len(points) - 1], [round(floor * 100, 4)] * 2)
    return CurveView([stage_tick(p.stage) for p in points], series)


def flips_text(stages: list[StageReport]) -> Text | None:
    """One row per case, one cell per stage: ✓ / ✗ / ½ and an arrow where the case flipped (the
    flip is also reversed, but reads without colour). None before any stage has results."""
    read = flips_map(stages)
    if not read.cases:
        return None
    ticks = [stage_tick(s) for s in read.stages]
    width = max(4, *(len(t) + 1 for t in ticks))  # a column: its tick, or a glyph and an arrow
    text = Text()
    column = min(MAX_CASE_COLUMN, max(len(case) for case in read.cases) + 1)
    text.append(" " * column + "".join(f"{t:<{width}}" for t in ticks) + "\n", style="bold")
    for case in read.cases:
        text.append(f"{case_label(case, column - 1):<{column}}")
        for cell in read.cells[case]:
            if cell is None:
                text.append(" " * width)
                continue
            glyph = cell.glyph + FLIP_ARROWS[cell.flip]
            style = "bold reverse" if cell.flip else ("green" if cell.glyph == "✓" else "red")
            text.append(glyph, style=style)
            text.append(" " * (width - len(glyph)))
        text.append("\n")
    flipped = sum(1 for row in read.cells.values() for c in row if c is not None and c.flip)
    text.append(f"✓ passed · ✗ failed · ½ some · ↑ gained / ↓ lost: {flipped} flip(s)", style="dim")
    return text


@dataclass(frozen=True)
class CostView:
    stages: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # prompt + completion, per stage
    costs: list[float] = field(default_factory=list)

    @property
    def total_cost(self) -> float:
        return sum(self.costs)

    @property
    def empty(self) -> bool:
        return not self.stages


def stage_costs(usage: dict[str, dict[str, float]]) -> CostView:
    """Tokens and cost per pipeline stage, in the order the stages first spent any."""
    stages = list(usage)
    return CostView(
        stages,
        [int(usage[s].get("prompt_tokens", 0) + usage[s].get("completion_tokens", 0)) for s in stages],
        [float(usage[s].get("cost", 0.0)) for s in stages],
    )
