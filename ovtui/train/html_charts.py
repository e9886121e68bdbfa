"""The report page's charts as inline SVG: a training run's learning curve, a compare run's three
policies side by side, and the flips map (case × stage).

Each chart is drawn at its own size (``width``/``height`` equal to its viewBox) and only shrinks to
fit a narrow page, never grows: a few cases or stages stay at body text size instead of being
blown up to the page's width. Every label is horizontal and sized to fit its box (a label that
could not fit is shortened, its full text in the mark's ``<title>``). The plotted values are also
attributes of their marks (``data-accuracy``, ``data-passed``), so what is drawn can be checked
against the report.
"""

from __future__ import annotations

from html import escape

from ovtui.train.reports import RunReport, StageReport
from ovtui.train.run_charts import (
    CurvePoint,
    accuracy_interval,
    curve_points,
    do_nothing_floor,
    is_comparison,
    stage_tick,
)
from ovtui.train.run_charts import flips_map as read_flips_map

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 56, 24, 20, 56
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
FONT, SMALL = 12, 11  # px: the charts' text, at most the page's body text
CHAR = 0.62  # a character's width in em, generous for system-ui digits and lower case
CELL_HEIGHT, HEADER = 18, 24
FILLS = {"✓": "#7fbf7f", "✗": "#e08080", "½": "#e0c070"}
MAX_MAP_CASES = 60  # rows of the flips map (the flipped cases first); the table lists every case
MAX_NAME = 40  # characters of a case name in the map before it is shortened
COMPARE_NAMES = {"compare_a": "A", "compare_b": "B", "compare_aa": "A again (A/A null)"}


def text_width(text: str, size: float = FONT) -> float:
    return len(text) * size * CHAR


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _y(value: float) -> float:
    return TOP + (1 - value) * (HEIGHT - TOP - BOTTOM)


def _x(index: int, count: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span * (index + 0.5) / count if count else span / 2)


def svg_open(cls: str, width: float, height: float, label: str) -> str:
    return (
        f'<svg class="{cls}" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" '
        f'role="img" aria-label="{escape(label)}" font-size="{FONT}">'
    )


def _axis() -> list[str]:
    parts = []
    for tick in Y_TICKS:
        y = _y(tick)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.2f}" y2="{y:.2f}" stroke="#ddd"/>')
        parts.append(
            f'<text class="ytick" data-value="{tick}" x="{LEFT - 6}" y="{y:.2f}" text-anchor="end" '
            f'dominant-baseline="middle">{tick:.0%}</text>'
        )
    return parts


def _interval(stage: StageReport, x: float) -> str:
    interval = accuracy_interval(stage)
    if interval is None:
        return ""
    return (
        f'<line class="ci" data-stage="{escape(stage.stage)}" data-low="{interval[0]:.6f}" '
        f'data-high="{interval[1]:.6f}" x1="{x:.2f}" x2="{x:.2f}" y1="{_y(interval[0]):.2f}" '
        f'y2="{_y(interval[1]):.2f}" stroke="#333" stroke-width="2"/>'
    )


def _point(point: CurvePoint, x: float, label: str) -> str:
    s = point.stage
    y = _y(s.accuracy)
    title = escape(f"{label}: {s.accuracy:.1%} ({s.passed}/{s.cases})")
    common = (
        f'class="point" data-series="{point.series}" data-stage="{escape(s.stage)}" data-epoch="{s.epoch}" '
        f'data-accuracy="{s.accuracy:.6f}"'
    )
    if point.series == "eval":
        return (
            f'<circle {common} cx="{x:.2f}" cy="{y:.2f}" r="5" fill="#1f5fbf"><title>{title}</title></circle>'
        )
    return (
        f'<rect {common} x="{x - 4:.2f}" y="{y - 4:.2f}" width="8" height="8" fill="#bf6f1f">'
        f"<title>{title}</title></rect>"
    )


def _floor(stages: list[StageReport]) -> tuple[str, str]:
    """The do-nothing floor's line and its legend entry; both empty when the cases say none."""
    value = do_nothing_floor(stages)
    if value is None:
        return "", ""
    y = _y(value)
    line = (
        f'<line class="do-nothing" data-accuracy="{value:.6f}" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
        f'y1="{y:.2f}" y2="{y:.2f}" stroke="#900" stroke-dasharray="2 3"/>'
        f'<text x="{WIDTH - RIGHT}" y="{y - 4:.2f}" text-anchor="end">do-nothing {value:.0%}</text>'
    )
    return line, "dotted: what an agent that does nothing scores"


def legend(entries: list[str]) -> str:
    return f'<p class="legend"><small>{" · ".join(e for e in entries if e)}</small></p>'


def learning_curve(report: RunReport) -> str:
    """Accuracy per stage of a training or eval run, in the order they ran."""
    stages = report.stages
    n = len(stages)
    parts = [svg_open("curve", WIDTH, HEIGHT, "accuracy per stage"), *_axis()]
    curve = curve_points(stages)
    spacing = (WIDTH - LEFT - RIGHT) / max(1, n)
    full = max((text_width(_long_tick(p.stage), SMALL) for p in curve), default=0) < spacing - 4
    every = max(1, round(text_width("final", SMALL) / max(1.0, spacing - 4) + 0.5))
    for kind in ("eval", "train"):
        points = [p for p in curve if p.series == kind]
        if len(points) > 1:
            line = " ".join(f"{_x(p.index, n):.2f},{_y(p.stage.accuracy):.2f}" for p in points)
            dash = "" if kind == "eval" else ' stroke-dasharray="6 4"'
            parts.append(f'<polyline class="series-{kind}" points="{line}" fill="none" stroke="#333"{dash}/>')
    for point in curve:
        x = _x(point.index, n)
        if point.series == "eval":
            parts.append(_interval(point.stage, x))
        parts.append(_point(point, x, _long_tick(point.stage)))
        if full or point.index % every == 0 or point.index == n - 1:
            tick = _long_tick(point.stage) if full else stage_tick(point.stage)
            parts.append(
                f'<text class="xtick" x="{x:.2f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle" '
                f'font-size="{SMALL}">{escape(tick)}</text>'
            )
    floor, floor_said = _floor(stages)
    parts += [floor, "</svg>"]
    split = report.split or "scored"
    said = [
        f"● {escape(split)}-split evaluations (bar: 95% interval)"
        if any(p.series == "eval" for p in curve)
        else "",
        "■ training epochs, on the cases trained on (dashed)"
        if any(p.series == "train" for p in curve)
        else "",
        floor_said,
        "" if full else column_key(stages),
    ]
    return "\n".join(p for p in parts if p) + legend(said)


def column_key(stages: list[StageReport]) -> str:
    """What the short stage names stand for, each kind once."""
    said = {
        "train_epoch": "tN = training epoch N",
        "baseline_eval": "base = baseline evaluation",
        "final_eval": "final = final evaluation",
        "compare_aa": "A/A = A again",
    }
    kinds = dict.fromkeys(said[s.stage] for s in stages if s.stage in said)
    return "columns: " + ", ".join(kinds) if kinds else ""


def _long_tick(stage: StageReport) -> str:
    if stage.stage == "train_epoch":
        return f"epoch {stage.epoch}"
    return stage.stage.replace("_", " ")


def comparison_chart(report: RunReport) -> str:
    """A compare run's policies side by side: each one's accuracy on the same cases with its 95%
    interval. Not joined by a line: they are alternatives, not stages in time."""
    stages = report.stages
    parts = [svg_open("comparison", WIDTH, HEIGHT, "accuracy of each policy on the same cases"), *_axis()]
    n = len(stages)
    for index, stage in enumerate(stages):
        x = _x(index, n)
        name = COMPARE_NAMES.get(stage.stage, stage.stage)
        point = CurvePoint(index, stage, "eval", None)
        parts += [
            _interval(stage, x),
            _point(point, x, name),
            f'<text class="xtick" x="{x:.2f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">'
            f"{escape(name)}</text>",
            f'<text x="{x + 10:.2f}" y="{_y(stage.accuracy) + 4:.2f}" font-size="{SMALL}">'
            f"{stage.accuracy:.0%} ({stage.passed}/{stage.cases})</text>",
        ]
    floor, floor_said = _floor(stages)
    parts += [floor, "</svg>"]
    split = report.split or "the same"
    said = [
        f"● accuracy of each policy on {escape(split)}-split cases, paired (bar: 95% interval)",
        "A again: A run a second time, what the same policy moves by itself",
        floor_said,
    ]
    return "\n".join(p for p in parts if p) + legend(said)


def accuracy_chart(report: RunReport) -> str:
    return comparison_chart(report) if is_comparison(report.stages) else learning_curve(report)


def flips_map(report: RunReport) -> str:
    """Case × stage: passed, failed or some trials, and each flip from the stage before."""
    read = read_flips_map(report.stages)
    stages, cases = read.stages, read.cases
    flipped = [c for c in cases if any(cell is not None and cell.flip for cell in read.cells[c])]
    shown = (flipped + [c for c in cases if c not in flipped])[:MAX_MAP_CASES]
    shown.sort(key=cases.index)
    ticks = [stage_tick(s) for s in stages]
    cell_width = max(24.0, *(text_width(t, SMALL) + 8 for t in ticks)) if ticks else 24.0
    names = {case: shorten(case, MAX_NAME) for case in shown}
    name_width = max((text_width(n, SMALL) for n in names.values()), default=40) + 8
    width = name_width + cell_width * len(stages) + 4
    height = HEADER + CELL_HEIGHT * len(shown) + 4
    parts = [svg_open("flips", width, height, "case by stage")]
    for j, tick in enumerate(ticks):
        x = name_width + cell_width * j + cell_width / 2
        parts.append(
            f'<text class="column" x="{x:.1f}" y="{HEADER - 8}" text-anchor="middle" font-size="{SMALL}">'
            f"{escape(tick)}</text>"
        )
    for i, case in enumerate(shown):
        y = HEADER + CELL_HEIGHT * i
        parts.append(
            f'<text x="{name_width - 6:.1f}" y="{y + 13}" text-anchor="end" font-size="{SMALL}">'
            f"<title>{escape(case)}</title>{escape(names[case])}</text>"
        )
        for j, (s, cell) in enumerate(zip(stages, read.cells[case], strict=True)):
            if cell is None:
                continue
            flip = cell.flip
            stroke = ' stroke="#000" stroke-width="2"' if flip else ' stroke="#fff"'
            x = name_width + cell_width * j
            glyph = cell.glyph + {"gained": "↑", "lost": "↓", "": ""}[flip]
            parts.append(
                f'<rect class="cell" data-case="{escape(case)}" data-stage="{escape(s.stage)}" '
                f'data-epoch="{s.epoch}" '
                f'data-passed="{cell.passed}/{cell.trials}" data-flip="{flip}" x="{x:.1f}" y="{y}" '
                f'width="{cell_width:.1f}" height="{CELL_HEIGHT}" fill="{FILLS[cell.glyph]}"{stroke}>'
                f"<title>{escape(case)}: {cell.passed}/{cell.trials} passed{' · ' + flip if flip else ''}"
                f'</title></rect><text class="glyph" x="{x + cell_width / 2:.1f}" y="{y + 13}" '
                f'text-anchor="middle" font-size="{SMALL}">{glyph}</text>'
            )
    parts.append("</svg>")
    more = (
        f"<p>{len(shown)} of {len(cases)} cases (every flipped one first); the table below lists all.</p>"
        if len(cases) > len(shown)
        else ""
    )
    said = [
        "✓ passed every trial · ✗ failed every trial · ½ some",
        "outlined ↑ / ↓: flipped from the stage before"
        + (" (A again: from A)" if is_comparison(stages) else ""),
        column_key(stages),
    ]
    return "\n".join(parts) + legend(said) + more
