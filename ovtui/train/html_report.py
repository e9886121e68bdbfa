"""A run's report as one self-contained HTML page: for sharing a result with someone who does not
have the terminal.

Inline SVG only — no script, no stylesheet or font fetched, nothing a browser loads from elsewhere.
The page holds the learning curve (accuracy per stage: the test split's evaluations with their 95%
intervals, the training epochs, the do-nothing floor), the flips map (case × stage, a flipped cell
outlined and marked with an arrow), each case's results with what the agent did, what the run cost,
and the verdict: a compare run's B against A with its A/A null, or a training run's final against
its baseline by the paired rule. Every mark says what it is in text and shape as well as colour.
The plotted values are also attributes of their marks (``data-accuracy``, ``data-passed``), so
what is drawn can be checked against the report.
"""

from __future__ import annotations

from html import escape

from ovtui.train.paired import direction, paired
from ovtui.train.reports import RunReport
from ovtui.train.run_charts import curve_points, do_nothing_floor
from ovtui.train.run_charts import flips_map as read_flips_map

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 56, 24, 20, 56
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
CELL, NAME_WIDTH, HEADER = 18, 220, 90
FILLS = {"✓": "#7fbf7f", "✗": "#e08080", "½": "#e0c070"}
MAX_MAP_CASES = 400  # rows of the flips map; the table below still lists every case
STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#111}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #999;padding:.2em .5em;text-align:left}
.verdict{font-size:1.2em;font-weight:bold}svg{max-width:100%;height:auto}code{font-size:.9em}
"""


def _y(value: float) -> float:
    return TOP + (1 - value) * (HEIGHT - TOP - BOTTOM)


def _x(index: int, count: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span * (index + 0.5) / count if count else span / 2)


def learning_curve(report: RunReport) -> str:
    stages = report.stages
    n = len(stages)
    parts = [f'<svg class="curve" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="accuracy per stage">']
    for tick in Y_TICKS:
        y = _y(tick)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.2f}" y2="{y:.2f}" stroke="#ddd"/>')
        parts.append(
            f'<text class="ytick" data-value="{tick}" x="{LEFT - 6}" y="{y:.2f}" text-anchor="end" '
            f'dominant-baseline="middle" font-size="11">{tick:.0%}</text>'
        )
    curve = curve_points(stages)
    for kind, marker in (("test", "circle"), ("train", "square")):
        points = [p for p in curve if p.series == kind]
        if len(points) > 1:
            line = " ".join(f"{_x(p.index, n):.2f},{_y(p.stage.accuracy):.2f}" for p in points)
            dash = "" if kind == "test" else ' stroke-dasharray="6 4"'
            parts.append(f'<polyline class="series-{kind}" points="{line}" fill="none" stroke="#333"{dash}/>')
        for point in points:
            s, interval = point.stage, point.interval
            x, y = _x(point.index, n), _y(s.accuracy)
            label = escape(f"{s.stage} epoch {s.epoch}: {s.accuracy:.1%} ({s.passed}/{s.cases})")
            if interval is not None:
                parts.append(
                    f'<line class="ci" data-stage="{escape(s.stage)}" data-low="{interval[0]:.6f}" '
                    f'data-high="{interval[1]:.6f}" x1="{x:.2f}" x2="{x:.2f}" y1="{_y(interval[0]):.2f}" '
                    f'y2="{_y(interval[1]):.2f}" stroke="#333" stroke-width="2"/>'
                )
            common = (
                f'class="point" data-series="{kind}" data-stage="{escape(s.stage)}" data-epoch="{s.epoch}" '
                f'data-accuracy="{s.accuracy:.6f}"'
            )
            if marker == "circle":
                parts.append(
                    f'<circle {common} cx="{x:.2f}" cy="{y:.2f}" r="5" fill="#1f5fbf">'
                    f"<title>{label}</title></circle>"
                )
            else:
                parts.append(
                    f'<rect {common} x="{x - 4:.2f}" y="{y - 4:.2f}" width="8" height="8" fill="#bf6f1f">'
                    f"<title>{label}</title></rect>"
                )
            parts.append(
                f'<text x="{x:.2f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="10">'
                f"{escape(s.stage.replace('_', ' '))}{'' if s.epoch < 0 else f' {s.epoch}'}</text>"
            )
    value = do_nothing_floor(stages)
    if value is not None:
        y = _y(value)
        parts.append(
            f'<line class="do-nothing" data-accuracy="{value:.6f}" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
            f'y1="{y:.2f}" y2="{y:.2f}" stroke="#900" stroke-dasharray="2 3"/>'
            f'<text x="{WIDTH - RIGHT}" y="{y - 4:.2f}" text-anchor="end" font-size="10">'
            f"do-nothing {value:.0%}</text>"
        )
    parts.append("</svg>")
    legend = (
        "● test-split evaluations (bar: 95% interval) · ■ training epochs (dashed) · dotted: do-nothing floor"
    )
    return "\n".join(parts) + f"<p><small>{legend}</small></p>"


def flips_map(report: RunReport) -> str:
    read = read_flips_map(report.stages)
    stages, cases = read.stages, read.cases
    shown = cases[:MAX_MAP_CASES]
    width = NAME_WIDTH + CELL * len(stages) + 10
    height = HEADER + CELL * len(shown) + 10
    parts = [f'<svg class="flips" viewBox="0 0 {width} {height}" role="img" aria-label="case by stage">']
    for j, s in enumerate(stages):
        x = NAME_WIDTH + CELL * j + CELL / 2
        parts.append(
            f'<text transform="translate({x:.1f},{HEADER - 4}) rotate(-60)" font-size="10">'
            f"{escape(s.stage)}{'' if s.epoch < 0 else f' {s.epoch}'}</text>"
        )
    for i, case in enumerate(shown):
        y = HEADER + CELL * i
        parts.append(
            f'<text x="{NAME_WIDTH - 4}" y="{y + 13}" text-anchor="end" font-size="11">{escape(case)}</text>'
        )
        for j, (s, cell) in enumerate(zip(stages, read.cells[case], strict=True)):
            if cell is None:
                continue
            flip = cell.flip
            stroke = ' stroke="#000" stroke-width="3"' if flip else ' stroke="#fff"'
            x = NAME_WIDTH + CELL * j
            glyph = cell.glyph + {"gained": "↑", "lost": "↓", "": ""}[flip]
            parts.append(
                f'<rect class="cell" data-case="{escape(case)}" data-stage="{escape(s.stage)}" '
                f'data-epoch="{s.epoch}" '
                f'data-passed="{cell.passed}/{cell.trials}" data-flip="{flip}" x="{x}" y="{y}" '
                f'width="{CELL}" height="{CELL}" fill="{FILLS[cell.glyph]}"{stroke}><title>{escape(case)}: '
                f"{cell.passed}/{cell.trials} passed{' · ' + flip if flip else ''}</title></rect>"
                f'<text x="{x + CELL / 2}" y="{y + 13}" text-anchor="middle" font-size="10">{glyph}</text>'
            )
    parts.append("</svg>")
    more = f"<p>(the first {MAX_MAP_CASES} of {len(cases)} cases)</p>" if len(cases) > len(shown) else ""
    legend = (
        "✓ passed every trial · ✗ failed every trial · ½ some · outlined ↑ / ↓: flipped from the stage before"
    )
    return "\n".join(parts) + f"<p><small>{legend}</small></p>{more}"


def case_table(report: RunReport) -> str:
    stages = [s for s in report.stages if s.results]
    cases = sorted({c for s in stages for c in s.results})
    head = "".join(f"<th>{escape(s.stage)}{'' if s.epoch < 0 else f' {s.epoch}'}</th>" for s in stages)
    rows = []
    for case in cases:
        cells = "".join(
            f"<td>{sum(s.results[case])}/{len(s.results[case])}</td>" if case in s.results else "<td></td>"
            for s in stages
        )
        said = next((s.evidence[case] for s in reversed(stages) if case in s.evidence), "")
        rows.append(f"<tr><td>{escape(case)}</td>{cells}<td><code>{escape(said)}</code></td></tr>")
    header = f"<tr><th>case</th>{head}<th>what the agent did (last stage)</th></tr>"
    return f'<table class="cases">{header}{"".join(rows)}</table>'


def cost_table(report: RunReport) -> str:
    if not report.usage:
        return "<p>No model calls were made (an offline backend and agent cost nothing).</p>"
    keys = sorted({k for figures in report.usage.values() for k in figures})
    head = "".join(f"<th>{escape(k)}</th>" for k in keys)
    rows = "".join(
        f"<tr><td>{escape(stage)}</td>{''.join(f'<td>{figures.get(k, 0):g}</td>' for k in keys)}</tr>"
        for stage, figures in report.usage.items()
    )
    return f'<table class="cost"><tr><th>stage</th>{head}</tr>{rows}</table>'


def verdict_section(report: RunReport, k: float) -> str:
    if report.comparison is not None:
        c = report.comparison
        lines = "".join(f"<li>{escape(line)}</li>" for line in c.lines()[:-1])
        return (
            f'<p class="verdict" data-verdict="{escape(c.verdict)}">{escape(c.verdict)}</p><ul>{lines}</ul>'
        )
    first, last = report.stage("baseline_eval"), report.stage("final_eval")
    if first is None or last is None or not first.results or not last.results:
        return "<p>No baseline and final evaluation to compare in this run.</p>"
    result = paired(first.results, last.results)
    way = {"better": "final better than baseline", "worse": "final worse than baseline"}
    said = way.get(direction(result.delta, result.se, k), "no measurable difference")
    ci = f"[{result.ci[0]:+.1%}, {result.ci[1]:+.1%}]" if result.ci else "n/a"
    return (
        f'<p class="verdict" data-verdict="{escape(said)}">{escape(said)} (paired rule, k={k:g})</p>'
        f"<p>Δ {result.delta:+.1%} (SE {result.se:.1%}), 95% CI {ci}, McNemar p={result.p_value:.3g}; "
        f"gained {len(result.gained)}, lost {len(result.lost)}. No A/A null in a training run: "
        "<code>ovtui compare</code> measures one.</p>"
    )


def render_html(report: RunReport, k: float = 2.0, adherence: str = "") -> str:
    """``adherence``: the adherence section's HTML (``train.adherence.html``), when there is one."""
    title = f"ovtui {report.command} {report.run_id}"
    sealed = "".join(
        f"<p>Sealed split {escape(key)}: scored {count} time(s), this run included.</p>"
        for key, count in report.sealed.items()
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>dataset {escape(report.dataset)} · backend {escape(report.backend)}"
        f"{' · cancelled' if report.cancelled else ''}</p>{sealed}"
        f"<h2>Verdict</h2>{verdict_section(report, k)}"
        f"<h2>Learning curve</h2>{learning_curve(report)}"
        f"<h2>Flips map</h2>{flips_map(report)}"
        f"<h2>Per case</h2>{case_table(report)}"
        f"<h2>Cost</h2>{cost_table(report)}"
        f"{f'<h2>Adherence</h2>{adherence}' if adherence else ''}"
        f"<h2>Report</h2><pre>{escape(report.summary())}</pre>"
        "</body></html>\n"
    )
