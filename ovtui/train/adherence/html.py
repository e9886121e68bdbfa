"""The HTML report's adherence section: one row per experience recorded (its class and why, its
uses followed / violated / not applicable, the case pass rates with exact 95% intervals) and the
directive broken most, as plain escaped text (the page loads nothing from elsewhere)."""

from __future__ import annotations

from html import escape

from ovtui.train.adherence.summary import Adherence, Rate


def _rate(rate: Rate | None) -> str:
    return "–" if rate is None else escape(rate.text())


def adherence_section(found: list[Adherence]) -> str:
    if not found:
        return (
            "<p>No adherence recorded yet: a train run or a committed session that uses one records it.</p>"
        )
    rows = []
    for entry in found:
        r, broken = entry.record, entry.most_ignored
        worst = (
            f"{escape(broken.line)} ({broken.violated} of {broken.violated + broken.followed})"
            if broken
            else "–"
        )
        rows.append(
            f'<tr class="adherence" data-class="{escape(entry.klass)}" data-violated="{r.violated}">'
            f"<td>{escape(r.name)}</td><td>{escape(entry.klass)}<br><small>{escape(entry.reason)}</small></td>"
            f"<td>{r.uses}</td><td>{r.followed}</td><td>{r.violated}</td><td>{r.not_applicable}</td>"
            f"<td>{_rate(entry.followed_rate)}</td><td>{_rate(entry.violated_rate)}</td><td>{worst}</td></tr>"
        )
    head = (
        "<tr><th>experience</th><th>class</th><th>uses</th><th>followed</th><th>violated</th><th>n/a</th>"
        "<th>pass rate followed</th><th>pass rate violated</th><th>most ignored</th></tr>"
    )
    note = "<p>The workspace's record as this page was written: every rollout and session that used each.</p>"
    return f"{note}<table>{head}{''.join(rows)}</table>"
