"""Train/eval reports in the format of DESIGN §7, printed and saved as runs/<ts>/report.json."""

from __future__ import annotations

from pydantic import Field

from ovtui.domain import Model


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
        first, last = self.stage("baseline_eval"), self.stage("final_eval")
        if first and last and self.accuracy_delta is not None:
            lines += [
                "",
                f"baseline accuracy: {first.accuracy:.2%} ({first.passed}/{first.cases})",
                f"final accuracy: {last.accuracy:.2%} ({last.passed}/{last.cases})",
                f"accuracy delta: {self.accuracy_delta * 100:+.2f}pp",
            ]
        if self.pending_plans:
            lines.append(
                f"{len(self.pending_plans)} plan(s) waiting for review: `ovtui review` (or the app)"
            )
        if self.errors:
            lines.append(f"{len(self.errors)} error(s):")
            lines += [f"  - {e}" for e in self.errors[:20]]
        return "\n".join(lines)
