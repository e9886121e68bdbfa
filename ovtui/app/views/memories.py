"""How the Memories screen shows a memory's record in the use ledger: the table's cells (uses,
sessions, success share, last use) and the view's panel (the outcome histogram, the uses of the
current version, the newest trajectories it fed); and an experience's measured utility (`ovtui
utility`): its cell and its panel lines. Plain text and Markdown: testable without an app."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ovtui.llm.tokens import counted_by, figure
from ovtui.memory.ledger_state import OUTCOMES, Fed, Usage
from ovtui.train.comparison import interval_text

if TYPE_CHECKING:
    from ovtui.train.utility import ExperienceUtility

NONE = "–"
BAR_WIDTH = 24  # the longest bar of the histogram, in characters
TRAJECTORIES_SHOWN = 5
USAGE_COLUMNS = ("uses", "sessions", "success", "last use")
UTILITY_COLUMN = "utility"
_VERDICT_WORD = {
    "helpful": "helpful",
    "harmful": "harmful",
    "none": "no measurable effect",
    "unknown": "unknown (too little evidence)",
}


# What fills each type, for a list that is still empty.
_HOW_TO_GET = {
    "experiences": "a training run proposes them (`1` Run, or `ovtui train`); or write "
    "`memories/experiences/<name>.md` yourself",
    "trajectories": "a training run writes one for each rollout it analyses (`1` Run, or `ovtui train`)",
    "cases": "a committed session whose tool calls ran becomes one (`ovtui commit`, or `ovtui serve`)",
}
_FROM_SESSIONS = "committed sessions fill these (`ovtui commit WORKSPACE FILE.jsonl`, or `ovtui serve`)"


def empty_state(memory_type: str) -> str:
    """What an empty list of ``memory_type`` says: that there is none yet, and how to get some."""
    return f"*no {memory_type} yet:* {_HOW_TO_GET.get(memory_type, _FROM_SESSIONS)}"


def share(usage: Usage | None) -> str:
    """Successes among the graded outcomes, as a percentage ("–" when none was graded)."""
    value = usage.success_share if usage is not None else None
    return NONE if value is None else f"{round(100 * value)}%"


def moment(at: float, *, minutes: bool = False) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M" if minutes else "%Y-%m-%d")


def usage_cells(usage: Usage | None) -> tuple[str, str, str, str]:
    """The table's cells for ``USAGE_COLUMNS`` ("–" for a memory never used)."""
    if usage is None or usage.count == 0:
        return (NONE, NONE, NONE, NONE)
    return (str(usage.count), str(usage.sessions), share(usage), moment(usage.last_used))


def version_line(usage: Usage, version: int | None) -> str:
    """How the current version fared, when the uses recorded which version they read."""
    if version is None:
        return ""
    mine = usage.of_version(version)
    if mine is None:
        return f"version {version} (current): not used yet"
    counts = ", ".join(f"{n} {name}" for name, n in zip(OUTCOMES, mine.outcomes, strict=True) if n)
    return f"version {version} (current): {mine.count} use(s)" + (f" · {counts}" if counts else "")


def histogram(usage: Usage) -> str:
    """The outcomes as a Markdown table with a bar each (scaled to the most frequent)."""
    counts = usage.histogram()
    top = max(counts.values()) or 1
    rows = ["| outcome | count | |", "|---|--:|---|"]
    rows += [f"| {name} | {n} | {'█' * round(BAR_WIDTH * n / top)} |" for name, n in counts.items()]
    return "\n".join(rows)


def usage_panel(
    usage: Usage | None,
    hot: float,
    fed: list[Fed],
    version: int | None,
    relative: Callable[[str | None], str],
) -> str:
    """The view's Markdown about a memory's uses and what came of them."""
    if usage is None or usage.count == 0:
        return "*not used yet*"
    lines = [
        f"**used {usage.count}×** by {usage.sessions} session(s) or rollout(s) · last "
        f"{moment(usage.last_used, minutes=True)} UTC · hotness {hot:.2f} · success {share(usage)}",
    ]
    current = version_line(usage, version)
    if current:
        lines.append(current)
    if sum(usage.outcomes):
        lines.append(histogram(usage))
    else:
        lines.append("*no outcome yet: no session that used it was committed, no rollout graded*")
    written = [f for f in fed if f.trajectory is not None][:TRAJECTORIES_SHOWN]
    if written:
        lines.append(
            "newest trajectories it fed: "
            + ", ".join(f"`{relative(f.trajectory)}` ({f.outcome})" for f in written)
        )
    return "\n\n".join(lines)


def utility_cell(measured: ExperienceUtility | None, version: int) -> str:
    """The verdict ("–": never measured; ``*``: measured on another version), in a few characters:
    at 220 columns the whole table shows beside the view; the panel has the numbers."""
    if measured is None:
        return NONE
    return measured.verdict + ("*" if measured.version != version else "")


def utility_panel(measured: ExperienceUtility | None, version: int) -> str:
    """The view's lines about what removing the experience does, and what it costs."""
    if measured is None:
        return "*utility not measured: `ovtui utility --experience NAME` runs its ablation*"
    lines = [
        f"**utility: {_VERDICT_WORD[measured.verdict]}** · with it {measured.with_rate:.1%}, without it "
        f"{measured.without_rate:.1%}: Δ {measured.delta:+.1%}, 95% CI {interval_text(measured.ci)}, "
        f"p={measured.p_value:.3g}" + (f", q={measured.q_value:.3g}" if measured.q_value is not None else ""),
        f"{len(measured.cases)} case(s) × {measured.trials} trial(s) · "
        f"{figure(measured.tokens_per_case, measured.tokenizer)} prompt tokens per case it is served for "
        f"({counted_by(measured.tokenizer)}) · measured {measured.measured_at} against "
        f"`{measured.policy}`",
    ]
    if measured.version != version:
        lines.append(f"*measured on version {measured.version}; this is version {version}*")
    return "\n\n".join(lines)
