"""Train/eval reports in the format of DESIGN §7, printed and saved as runs/<ts>/report.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from ovtui.domain import Model
from ovtui.events import Event


class StageReport(Model):
    stage: str  # baseline_eval | train_epoch | final_eval | eval
    epoch: int
    cases: int
    passed: int
    avg_reward: float
    commits: int | None = None
    errors: int | None = None
    failed_cases: list[str] = Field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    def line(self) -> str:
        text = (
            f"[{self.stage}] epoch={self.epoch} cases={self.cases} accuracy={self.accuracy:.2%} "
            f"passed={self.passed}/{self.cases} avg_reward={self.avg_reward:.6f}"
        )
        if self.commits is not None:
            text += f" commits={self.commits} errors={self.errors or 0}"
        return text


class RunReport(Model):
    run_id: str
    command: str
    backend: str
    dataset: str
    stages: list[StageReport] = Field(default_factory=list)
    usage: dict[str, dict[str, float | int]] = Field(default_factory=dict)
    pending_plans: list[str] = Field(default_factory=list)
    history_ids: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    inbox: dict[str, int] = Field(default_factory=dict)  # streaming: files processed / rejected
    cancelled: bool = False

    def stage(self, name: str) -> StageReport | None:
        return next((s for s in reversed(self.stages) if s.stage == name), None)

    @property
    def accuracy_delta(self) -> float | None:
        first, last = self.stage("baseline_eval"), self.stage("final_eval")
        return None if first is None or last is None else last.accuracy - first.accuracy

    def summary(self) -> str:
        lines = [s.line() for s in self.stages]
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
        if self.pending_plans:
            lines.append(f"{len(self.pending_plans)} plan(s) waiting for review: `ovtui review` (or the app)")
        if self.errors:
            lines.append(f"{len(self.errors)} error(s):")
            lines += [f"  - {e}" for e in self.errors[:20]]
        return "\n".join(lines)


@dataclass
class RunTally:
    """A listener that keeps what a run wrote and parked, from its events (a streaming run has no
    per-batch results to collect them from)."""

    history_ids: list[str] = field(default_factory=list)
    pending_plans: list[str] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        if event.kind == "plan_applied" and event.data.get("history_id"):
            self.history_ids.append(str(event.data["history_id"]))
        elif event.kind == "plan_pending" and event.data.get("plan_id"):
            self.pending_plans.append(str(event.data["plan_id"]))


def describe_plan_applied(data: dict[str, Any]) -> str:
    """One line for a ``plan_applied`` event: what was written, and how many items were refused and
    why (the CLI's watch log and the app's run log)."""
    kind = "dry run" if data.get("dry_run") else "applied"
    written, deleted = data.get("written", 0), data.get("deleted", 0)
    text = f"plan {data.get('plan_id')} {kind}: {written} written, {deleted} deleted"
    stale = int(data.get("stale") or 0)
    invalid = [str(e) for e in data.get("invalid") or []]
    if stale or invalid:
        reasons = ([f"{stale} stale (changed after planning)"] if stale else []) + invalid[:3]
        text += f"; {stale + len(invalid)} item(s) refused: {'; '.join(reasons)}"
    record = data.get("history_id")
    if record:
        return f"{text} · record history/{record}"
    return text if written or deleted else f"{text} · nothing changed, no record"
