"""Train/eval reports, printed and saved as runs/<ts>/report.json.

One line per stage, the same in every run so runs compare by eye and by ``diff``:
``[final_eval] epoch=1 cases=10 accuracy=30.00% passed=3/10 avg_reward=0.300000`` (a training epoch
adds ``commits=`` and ``errors=``), then the accuracy delta between the baseline and the final eval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from ovtui.core.domain import Model
from ovtui.core.events import Event
from ovtui.train.comparison import Comparison


class StageReport(Model):
    stage: str  # baseline_eval | train_epoch | final_eval | eval
    epoch: int
    cases: int
    passed: int
    avg_reward: float
    commits: int | None = None
    errors: int | None = None
    failed_cases: list[str] = Field(default_factory=list)
    # Case name -> 1/0 per trial (several with [trainer] eval_trials > 1): flips, pass^k, the CI.
    results: dict[str, list[int]] = Field(default_factory=dict)
    # Case name -> what the agent did in it and how it was graded (its first failed trial, else
    # its first): the evidence beside each case's results.
    evidence: dict[str, str] = Field(default_factory=dict)
    # What an agent that does nothing scores on these cases, when the environment says
    # (case.metadata["do_nothing_reward"], e.g. tau2 airline): the floor to compare against.
    do_nothing_passed: int | None = None

    @property
    def trials(self) -> int:
        return min((len(t) for t in self.results.values()), default=1)

    @property
    def accuracy(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    def line(self) -> str:
        # An evaluation outside the epochs (a baseline, `ovtui eval`) has no epoch to name: -1 read as one.
        epoch = f" epoch={self.epoch}" if self.epoch >= 0 else ""
        text = (
            f"[{self.stage}]{epoch} cases={self.cases} accuracy={self.accuracy:.2%} "
            f"passed={self.passed}/{self.cases} avg_reward={self.avg_reward:.6f}"
        )
        if self.commits is not None:
            text += f" commits={self.commits} errors={self.errors or 0}"
        return text


def _names(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "") if names else "none"


class RunReport(Model):
    run_id: str
    command: str
    backend: str  # the backend's label, with the model where it uses one (``llm:gpt-4o-mini``)
    dataset: str
    model: str | None = None  # the model the backend learns with; None for a model-free backend
    stages: list[StageReport] = Field(default_factory=list)
    usage: dict[str, dict[str, float | int]] = Field(default_factory=dict)
    pending_plans: list[str] = Field(default_factory=list)
    history_ids: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    inbox: dict[str, int] = Field(default_factory=dict)  # streaming: files processed / rejected
    services: dict[str, int] = Field(default_factory=dict)  # remote dataset: executions per service URL
    cancelled: bool = False
    failed: str | None = None  # why the run stopped on an error (also the last of ``errors``)
    # `ovtui compare`: B against A with the A/A null and the verdict (its runs are the stages).
    comparison: Comparison | None = None
    # Each sealed split this run scored ("<dataset>/<split>") -> runs that have scored it, this one
    # included: a guard against tuning to the test.
    sealed: dict[str, int] = Field(default_factory=dict)
    # `ovtui utility`: what each experience measured in this run, in the order measured, as
    # ``ovtui.train.utility.ExperienceUtility`` JSON (read back by the page; utility imports this).
    utility: list[dict[str, Any]] = Field(default_factory=list)
    # The split the evaluations scored (validation unless a sealed split was asked for); None: none.
    split: str | None = None

    def stage(self, name: str) -> StageReport | None:
        return next((s for s in reversed(self.stages) if s.stage == name), None)

    @property
    def accuracy_delta(self) -> float | None:
        first, last = self.stage("baseline_eval"), self.stage("final_eval")
        return None if first is None or last is None else last.accuracy - first.accuracy

    def summary(self) -> str:
        lines = [s.line() for s in self.stages]
        if self.comparison is not None:
            lines += ["", *self.comparison.lines()]
        if self.command == "stream":
            lines.append(
                f"inbox: {self.inbox.get('processed', 0)} file(s) trained on, "
                f"{self.inbox.get('rejected', 0)} rejected; {len(self.history_ids)} history record(s)"
            )
        first, last = self.stage("baseline_eval"), self.stage("final_eval")
        if first and last and self.accuracy_delta is not None:
            lines += [
                "",
                f"baseline accuracy: {first.accuracy:.2%} ({first.passed}/{first.cases})",
                f"final accuracy: {last.accuracy:.2%} ({last.passed}/{last.cases})",
                f"accuracy delta: {self.accuracy_delta * 100:+.2f}pp",
            ]
            if self.split:
                lines.append(f"scored on: {self.dataset}/{self.split}{self._sealed_note()}")
        lines += self._statistics(first, last)
        lines += [
            f"sealed split {key}: scored {count} time(s), this run included"
            for key, count in self.sealed.items()
        ]
        if self.services:
            spread = ", ".join(f"{n} on {url}" for url, n in self.services.items())
            lines.append(f"executions: {spread}")
        if self.pending_plans:
            lines.append(f"{len(self.pending_plans)} plan(s) waiting for review: `ovtui review` (or the app)")
        if self.errors:
            lines.append(f"{len(self.errors)} error(s):")
            lines += [f"  - {e}" for e in self.errors[:20]]
        return "\n".join(lines)

    def _sealed_note(self) -> str:
        if self.sealed:
            return " (a sealed split, unsealed on request)"
        return " (held out of training; the test split stays sealed until --unseal)"

    def _statistics(self, first: StageReport | None, last: StageReport | None) -> list[str]:
        """Flips, the delta's interval and test by the case, pass^k and the do-nothing floor."""
        from ovtui.train.inference import paired
        from ovtui.train.report_stats import flips, pass_hat_k

        lines: list[str] = []
        if first and last and first.results and last.results:
            fixed, broken = flips(first.results, last.results)
            lines.append(f"fail→pass ({len(fixed)}): {_names(fixed)}")
            lines.append(f"pass→fail ({len(broken)}): {_names(broken)}")
            inference = paired(first.results, last.results).inference
            low, high = inference.ci
            lines.append(
                f"accuracy delta 95% CI (by the case): [{low * 100:+.2f}pp, {high * 100:+.2f}pp], "
                f"{inference.test} p={inference.p_value:.3g}"
            )
        for stage in (s for s in self.stages if s.stage != "train_epoch"):
            if stage.trials > 1:
                ks = ", ".join(
                    f"pass^{k}={value:.2%}"
                    for k in range(1, stage.trials + 1)
                    if (value := pass_hat_k(stage.results, k)) is not None
                )
                lines.append(f"[{stage.stage}] {stage.trials} trials per case: {ks}")
            if stage.do_nothing_passed is not None:
                n = stage.cases // max(1, stage.trials)
                lines.append(
                    f"[{stage.stage}] do-nothing baseline: {stage.do_nothing_passed}/{n} "
                    f"({stage.do_nothing_passed / max(1, n):.2%}) — what an agent that changes nothing and "
                    "says nothing scores here; accuracy at or below it is not learning"
                )
        return lines


@dataclass
class RunTally:
    """A listener that keeps what a run wrote and parked, from its events (a streaming run has no
    per-batch results to collect them from)."""

    history_ids: list[str] = field(default_factory=list)
    pending_plans: list[str] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        # A plan the run waited on is applied by whoever reviewed it, maybe in another process:
        # its record is the run's all the same.
        if event.kind in ("plan_applied", "plan_settled") and event.data.get("history_id"):
            if str(event.data["history_id"]) not in self.history_ids:
                self.history_ids.append(str(event.data["history_id"]))
        elif event.kind == "plan_pending" and event.data.get("plan_id"):
            self.pending_plans.append(str(event.data["plan_id"]))


def failure_reason(exc: BaseException) -> str:
    """What a person reads about a run that raised: the kernel's own message for an error it
    raises on purpose (it names the file, field or service), the exception's kind otherwise."""
    from ovtui.core.errors import OvtuiError

    text = str(exc).strip()
    if isinstance(exc, OvtuiError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def describe_inbox_processed(data: dict[str, Any]) -> str:
    """What the inbox did with one file (an ``inbox_processed`` event), for every log that shows it."""
    file = data.get("file")
    if data.get("taken_before"):
        return f"{file} was trained on before a restart; not trained again"
    graded = " (graded by the workspace's evaluator)" if data.get("evaluated") else ""
    errors = data.get("errors") or []
    problems = f"; {len(errors)} error(s): {errors[0]}" if errors else ""
    gradients = int(data.get("gradients") or 0)
    # Silence here reads as success: a rollout that teaches nothing says so, and where to look.
    nothing = ": nothing to learn from it (docs/rollouts.md)" if not gradients and not errors else ""
    return f"trained on {file}{graded}: {gradients} gradient(s){nothing}{problems}"


def describe_plan_applied(data: dict[str, Any]) -> str:
    """One line for a ``plan_applied`` event: what was written, and how many items were refused and
    why (the CLI's watch log and the app's run log)."""
    kind = "dry run" if data.get("dry_run") else "applied"
    written, deleted = data.get("written", 0), data.get("deleted", 0)
    text = f"plan {data.get('plan_id')} {kind}: {written} written, {deleted} deleted"
    errors = [str(error) for error in data.get("errors") or []]
    if errors:  # what was refused, and why (the first reasons; the record and the report have them all)
        text += f"; {len(errors)} refused: " + "; ".join(errors[:2]) + ("; …" if len(errors) > 2 else "")
    record = data.get("history_id")
    if record:
        return f"{text} · record history/{record}"
    return text if written or deleted else f"{text} · nothing changed, no record"
