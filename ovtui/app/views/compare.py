"""What the Compare screen shows (no Textual): where the three runs of a comparison are, and its
result — the verdict first, then what ``ovtui compare`` prints (Δ, interval, p, the A/A null, the
flips both ways with what each policy's agent did)."""

from __future__ import annotations

from rich.text import Text

from ovtui.core.events import Event
from ovtui.train.comparison import STAGE_A, STAGE_AA, STAGE_B, Comparison
from ovtui.train.inference import NOISE

RUNS = {STAGE_A: "A", STAGE_B: "B", STAGE_AA: "A again (the A/A null)"}
EMPTY = (
    "Compare two policies on the same cases: A and B are each `current` (the experiences now), a "
    "history record id (the policy right after it: 3 History lists them) or a folder of experience "
    "files. Both run the split with the same trials, and A runs once more beside them as the A/A "
    "null (the noise floor). Fill A and B above, then press enter."
)


def progress_line(event: Event) -> tuple[int, int, str] | None:
    """(done, total, line) for a run's progress event, None for any other."""
    if event.kind != "progress":
        return None
    data = event.data
    stage = str(data.get("stage", ""))
    if stage not in RUNS:
        return None
    done, total = int(data.get("done", 0)), int(data.get("total", 0))
    run = list(RUNS).index(stage) + 1
    return done, total, f"run {run} of 3: {RUNS[stage]} · {done}/{total} case trial(s)"


def result_text(result: Comparison) -> Text:
    text = Text()
    style = "bold" if result.verdict.startswith(NOISE) else "bold reverse"
    text.append(f"verdict: {result.verdict}\n\n", style=style)
    text.append("\n".join(result.lines()[:-1]))
    return text
