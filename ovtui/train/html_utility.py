"""A ``utility`` run's page: each experience's verdict, its effect (the accuracy its cases keep
with the file against without it, and the difference with its 95% interval, drawn on one common
scale around zero) and what it costs in prompt tokens per case.

The run's report carries what it measured (``RunReport.utility``), so the page is the run's own,
not whatever ``.ovtui/utility.json`` holds now.
"""

from __future__ import annotations

from html import escape

from pydantic import ValidationError

from ovtui.llm.tokens import figure
from ovtui.train.html_charts import FONT, SMALL, legend, shorten, svg_open, text_width
from ovtui.train.reports import RunReport
from ovtui.train.utility import ExperienceUtility

ROW, TOP_AXIS, PLOT = 22, 28, 360  # px: a row, the axis above the rows, the effect scale's width
SAID = {"helpful": "helpful", "harmful": "harmful", "none": "no measurable effect", "unknown": "unknown"}
# Each verdict its own glyph; "unknown" (too little evidence either way) is a hollow mark.
MARKS = {"helpful": "▲", "harmful": "▼", "none": "●", "unknown": "○"}


def effects_chart(entries: list[ExperienceUtility]) -> str:
    """Each experience's Δ (with minus without) and its interval on one scale, zero marked."""
    names = [shorten(e.name, 36) for e in entries]
    left = max((text_width(n, SMALL) for n in names), default=40) + 12
    reach = max([0.1, *(abs(v) for e in entries for v in (e.delta, *(e.ci or [])))])
    reach = min(1.0, round(reach + 0.05, 1))
    width, height = left + PLOT + 70, TOP_AXIS + ROW * len(entries) + 6

    def x(value: float) -> float:
        return left + (value + reach) / (2 * reach) * PLOT

    parts = [svg_open("effects", width, height, "effect of each experience")]
    for tick in (-reach, -reach / 2, 0.0, reach / 2, reach):
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{TOP_AXIS - 6}" y2="{height - 4}" '
            f'stroke="{"#555" if tick == 0 else "#ddd"}"/>'
            f'<text class="xtick" data-value="{tick:.4f}" x="{x(tick):.1f}" y="{TOP_AXIS - 10}" '
            f'text-anchor="middle" font-size="{SMALL}">{tick:+.0%}</text>'
        )
    for i, (entry, name) in enumerate(zip(entries, names, strict=True)):
        y = TOP_AXIS + ROW * i + ROW / 2
        parts.append(
            f'<text x="{left - 8:.1f}" y="{y + 4:.1f}" text-anchor="end" font-size="{SMALL}">'
            f"<title>{escape(entry.name)}</title>{escape(name)}</text>"
        )
        if entry.ci:
            low, high = entry.ci
            parts.append(
                f'<line class="ci" data-name="{escape(entry.name)}" data-low="{low:.6f}" '
                f'data-high="{high:.6f}" x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                'stroke="#333" stroke-width="2"/>'
            )
        parts.append(
            f'<text class="effect" data-name="{escape(entry.name)}" data-delta="{entry.delta:.6f}" '
            f'data-verdict="{entry.verdict}" x="{x(entry.delta):.1f}" y="{y + 4:.1f}" text-anchor="middle" '
            f'font-size="{FONT}">{MARKS[entry.verdict]}<title>{escape(entry.line())}</title></text>'
            f'<text x="{left + PLOT + 8:.1f}" y="{y + 4:.1f}" font-size="{SMALL}">{entry.delta:+.0%}</text>'
        )
    parts.append("</svg>")
    said = [
        "Δ: the accuracy of the experience's cases with it minus without it (bar: 95% interval)",
        "▲ helpful · ▼ harmful · ● no measurable effect",
        "right of 0: removing it loses cases",
    ]
    return "\n".join(parts) + legend(said)


def utility_table(entries: list[ExperienceUtility]) -> str:
    rows = "".join(
        f'<tr data-name="{escape(e.name)}"><td>{escape(e.name)}</td><td>{escape(SAID[e.verdict])}</td>'
        f'<td class="n">{e.with_rate:.0%}</td><td class="n">{e.without_rate:.0%}</td>'
        f'<td class="n">{e.delta:+.1%}</td><td>{escape(_interval(e))}</td>'
        f'<td class="n">{len(e.cases)} × {e.trials}</td>'
        f'<td class="n tokens">{escape(figure(e.tokens_per_case, e.tokenizer))}</td></tr>'
        for e in entries
    )
    head = (
        "<tr><th>experience</th><th>verdict</th><th>with</th><th>without</th><th>Δ</th><th>95% CI</th>"
        "<th>cases × trials</th><th>tokens per case</th></tr>"
    )
    return f'<table class="utility">{head}{rows}</table>'


def _interval(entry: ExperienceUtility) -> str:
    return f"[{entry.ci[0]:+.1%}, {entry.ci[1]:+.1%}]" if entry.ci else "n/a (under two cases)"


def measured(report: RunReport) -> tuple[list[ExperienceUtility], int]:
    """The run's measured experiences, and how many of its records no longer read as one."""
    entries: list[ExperienceUtility] = []
    for record in report.utility:
        try:
            entries.append(ExperienceUtility.model_validate(record))
        except ValidationError:
            continue
    return entries, len(report.utility) - len(entries)


def utility_sections(report: RunReport) -> str:
    entries, unreadable = measured(report)
    note = f"<p>{unreadable} record(s) of this run no longer read as a measurement.</p>" if unreadable else ""
    if not entries:
        return "<h2>Experiences</h2><p>No experience was measured in this run.</p>"
    counts = {verdict: sum(e.verdict == verdict for e in entries) for verdict in SAID}
    tokens = sum(e.tokens_per_case for e in entries)
    summary = (
        f"<p>{len(entries)} experience(s) measured, each left out in turn on its own cases: "
        f"{counts['helpful']} helpful, {counts['harmful']} harmful, {counts['none']} no measurable effect; "
        f"together {tokens} prompt tokens per case they are served for.</p>"
    )
    return (
        f"<h2>Experiences</h2>{summary}{note}{effects_chart(entries)}"
        f"<h2>Verdicts, effects and tokens</h2>{utility_table(entries)}"
    )
