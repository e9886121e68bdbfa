"""A run's report as one self-contained HTML page: for sharing a result with someone who does not
have the terminal.

Inline SVG only — no script, no stylesheet or font fetched, nothing a browser loads from elsewhere.
The page holds the verdict (a compare run's B against A with its A/A null, or a training run's
final against its baseline by the case: ``ovtui.train.inference``), the accuracy chart
(``ovtui.train.html_charts``: a training run's curve, a compare run's policies side by side), the
flips map, each case's results
with what the agent did, and what the run cost; a ``utility`` run's page holds its experiences'
verdicts, effects and tokens instead (``ovtui.train.html_utility``). It fits a page 800 px wide
without sideways scrolling: tables and text wrap, charts shrink but never grow.
"""

from __future__ import annotations

from html import escape

from ovtui.train.html_charts import accuracy_chart, flips_map
from ovtui.train.html_utility import utility_sections
from ovtui.train.inference import paired
from ovtui.train.reports import RunReport
from ovtui.train.run_charts import stage_tick

STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 1.5em;max-width:64em;color:#111;
line-height:1.4;overflow-wrap:anywhere}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0;width:100%}
td,th{border:1px solid #999;padding:.2em .4em;text-align:left;vertical-align:top}
th{font-weight:600}td.n{white-space:nowrap;text-align:right}
.verdict{font-size:1.2em;font-weight:bold}svg{max-width:100%;height:auto;display:block}
code{font-size:.9em;white-space:pre-wrap}pre{white-space:pre-wrap;font-size:.85em;background:#f6f6f6;
padding:.5em}.legend{margin-top:.3em}
"""


def case_table(report: RunReport) -> str:
    """Each case's evaluations (the training epochs are the flips map's: a column each would
    squeeze what the agent did out of a narrow page) and what the agent did in its last stage."""
    stages = [s for s in report.stages if s.results]
    evaluations = [s for s in stages if s.stage != "train_epoch"]
    stages = evaluations or stages
    cases = sorted({c for s in stages for c in s.results})
    head = "".join(f'<th title="{escape(s.stage)} {s.epoch}">{escape(stage_tick(s))}</th>' for s in stages)
    rows = []
    for case in cases:
        cells = "".join(
            f'<td class="n">{sum(s.results[case])}/{len(s.results[case])}</td>'
            if case in s.results
            else "<td></td>"
            for s in stages
        )
        said = next((s.evidence[case] for s in reversed(stages) if case in s.evidence), "")
        rows.append(f"<tr><td>{escape(case)}</td>{cells}<td><code>{escape(said)}</code></td></tr>")
    header = f"<tr><th>case</th>{head}<th>what the agent did (last stage)</th></tr>"
    return f'<table class="cases">{header}{"".join(rows)}</table>'


def _number(value: float) -> str:
    return f'<td class="n">{value:g}</td>'


def cost_table(report: RunReport) -> str:
    if not report.usage:
        return "<p>No model calls were made (an offline backend and agent cost nothing).</p>"
    keys = sorted({k for figures in report.usage.values() for k in figures})
    head = "".join(f"<th>{escape(k)}</th>" for k in keys)
    rows = "".join(
        f"<tr><td>{escape(stage)}</td>{''.join(_number(figures.get(k, 0)) for k in keys)}</tr>"
        for stage, figures in report.usage.items()
    )
    return f'<table class="cost"><tr><th>stage</th>{head}</tr>{rows}</table>'


def verdict_section(report: RunReport) -> str:
    if report.comparison is not None:
        c = report.comparison
        lines = "".join(f"<li>{escape(line)}</li>" for line in c.lines()[:-1])
        lines += f'<li class="noise">{escape(c.noise)}</li>' if c.noise else ""
        return (
            f'<p class="verdict" data-verdict="{escape(c.verdict)}">{escape(c.verdict)}</p><ul>{lines}</ul>'
        )
    first, last = report.stage("baseline_eval"), report.stage("final_eval")
    if first is None or last is None or not first.results or not last.results:
        return "<p>No baseline and final evaluation to compare in this run.</p>"
    result = paired(first.results, last.results)
    inference = result.inference
    way = {"better": "final better than baseline", "worse": "final worse than baseline"}
    said = way.get(inference.direction, "no measurable difference")
    low, high = inference.ci
    why = inference.why_not() or ""
    return (
        f'<p class="verdict" data-verdict="{escape(said)}">{escape(said)} (by the case)</p>'
        f"<p>Δ {inference.delta:+.1%}, 95% CI [{low:+.1%}, {high:+.1%}], {escape(inference.test)} "
        f"p={inference.p_value:.3g}; gained {len(result.gained)}, lost {len(result.lost)}. "
        f"{escape(why + '; ' if why else '')}{escape(inference.power_text())}. No A/A null in a training "
        "run: <code>ovtui compare</code> measures one.</p>"
    )


def render_html(report: RunReport, adherence: str = "") -> str:
    """``adherence``: the adherence section's HTML (``train.adherence.html``), when there is one."""
    title = f"ovtui {report.command} {report.run_id}"
    sealed = "".join(
        f"<p>Sealed split {escape(key)}: scored {count} time(s), this run included.</p>"
        for key, count in report.sealed.items()
    )
    split = f" · split {escape(report.split)}" if report.split else ""
    if report.command == "utility":
        body = utility_sections(report)
    else:
        body = (
            f"<h2>Verdict</h2>{verdict_section(report)}"
            f"<h2>Accuracy</h2>{accuracy_chart(report)}"
            f"<h2>Flips map</h2>{flips_map(report)}"
            f"<h2>Per case</h2>{case_table(report)}"
        )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f"<p>dataset {escape(report.dataset)}{split} · backend {escape(report.backend)}"
        f"{' · cancelled' if report.cancelled else ''}</p>{sealed}{body}"
        f"<h2>Cost</h2>{cost_table(report)}"
        f"{f'<h2>Adherence</h2>{adherence}' if adherence else ''}"
        f"<h2>Report</h2><pre>{escape(report.summary())}</pre>"
        "</body></html>\n"
    )
