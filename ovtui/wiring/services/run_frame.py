"""What every run shares, whatever it does: its id, its context and event log, its report saved
however it ends, the checks of its trials and of a sealed split, and the words it opens with.

The run services (``runs``, ``measures``) open each of their runs here, so a train, an eval, a
compare or a utility run all end alike: ``run_finished`` once, ``runs/<id>/report.json`` written.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ovtui.core.config import MAX_TRIALS
from ovtui.core.errors import OvtuiError, RunCancelled

if TYPE_CHECKING:
    from pathlib import Path

    from ovtui.core.context import RunContext, RunSteering
    from ovtui.core.domain import Case, ExperienceSet
    from ovtui.core.events import Listener
    from ovtui.core.interfaces import CaseLoader
    from ovtui.train.reports import RunReport
    from ovtui.wiring.composition import Composition

REPORT_FILE = "report.json"
BATCH = 64  # cases read at a time where a whole split is read to pick cases by name


def run_stamp() -> str:
    """A run's id: its start time to the microsecond (so run folders sort in the order runs began,
    even two in one second) and a random tail (two processes at the same instant)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f") + "_" + uuid.uuid4().hex[:6]


def _joined(first: list[str], second: list[str]) -> list[str]:
    """Both lists' ids in order, each once."""
    return list(dict.fromkeys([*first, *second]))


async def all_cases(loader: CaseLoader) -> list[Case]:
    return [case async for batch in loader.batches() for case in batch]


class RunFrame:
    def __init__(self, parts: Composition) -> None:
        self.parts = parts
        self.config = parts.config

    def report_path(self, run_id: str) -> Path:
        """Where a run's report is saved."""
        return self.parts.paths.runs / run_id / REPORT_FILE

    def trials(self, trials: int | None) -> int:
        """Runs of each eval case: ``trials`` (checked) or ``[trainer] eval_trials``."""
        if trials is None:
            return self.config.trainer.eval_trials
        if not 1 <= trials <= MAX_TRIALS:
            raise OvtuiError(f"trials must be 1 to {MAX_TRIALS} (got {trials})")
        return trials

    async def sealed(self, dataset: str, split: str | None, unseal: bool) -> dict[str, int]:
        """For a run about to score ``split``: nothing when the split is not sealed; when it is and
        ``unseal`` asks to score it, ``{"<dataset>/<split>": runs that scored it}``, this one
        counted; when it is not asked for, refused, saying how often it was scored. Counted before
        the run opens, so a refused or unreadable count leaves no run behind."""
        if split is None or split not in self.config.evaluation.sealed:
            return {}
        from ovtui.storage.sealed import count_scoring, sealed_scores

        paths = self.parts.paths
        key = f"{dataset}/{split}"
        if not unseal:
            scored = (await asyncio.to_thread(sealed_scores, paths)).get(key, 0)
            raise OvtuiError(
                f"split {split!r} is sealed ([evaluation] sealed): it is scored only on explicit "
                f"request (--unseal); {key} has been scored {scored} time(s)"
            )
        return {key: await asyncio.to_thread(count_scoring, paths, self.parts.store.lock, key)}

    @asynccontextmanager
    async def open(
        self,
        command: str,
        dataset: str,
        listeners: list[Listener] | None,
        cancel: asyncio.Event | None,
        steering: RunSteering | None = None,
    ) -> AsyncIterator[tuple[RunReport, RunContext]]:
        """A run's report and context; however it ends, the report is saved and ``run_finished`` sent."""
        from ovtui.core.context import RunContext, RunSteering
        from ovtui.core.events import EventBus
        from ovtui.train.reports import RunReport, RunTally, failure_reason

        parts = self.parts
        run_id = run_stamp()
        log = parts.event_log(run_id)
        # What the run applied and parked, from its events: a run stopped half-way (cancelled
        # while a plan waits, failed) has no results to collect them from.
        tally = RunTally()
        events = EventBus([log, tally, *(listeners or [])])
        run = RunContext(run_id, events, cancel or asyncio.Event(), steering or RunSteering())
        backend = parts.backend()
        report = RunReport(
            run_id=run_id,
            command=command,
            backend=parts.backend_label(),
            model=self.config.llm.model if backend.uses_model else None,
            dataset=dataset,
        )
        parts.run_events = events
        failed = False
        try:
            yield report, run
        except RunCancelled:
            report.cancelled = True
        except asyncio.CancelledError:  # the task itself was cancelled (e.g. while waiting for review)
            report.cancelled = True
            raise
        except Exception as exc:
            failed = True
            report.failed = failure_reason(exc)
            report.errors.append(report.failed)
            raise
        except BaseException:
            failed = True
            raise
        finally:
            report.usage = parts.usage()
            report.history_ids = _joined(report.history_ids, tally.history_ids)
            report.pending_plans = _joined(report.pending_plans, tally.pending_plans)
            try:
                await asyncio.to_thread(self._close_report, report)
            except OSError:
                # The disk that stopped the run (full, read-only) refuses its report too: the run's
                # own error is the one to show, in one line.
                if not failed:
                    raise
            finally:  # cancelled again meanwhile: the thread still saves the report
                events.emit(
                    "run_finished",
                    report=report.model_dump(mode="json"),
                    cancelled=report.cancelled,
                    failed=report.failed,
                )
                parts.run_events = None
                log.close()

    def _close_report(self, report: RunReport) -> None:
        from ovtui.storage.fsio import atomic_write_text

        # Plans parked during the run but settled before its end are no longer waiting.
        report.pending_plans = [p for p in report.pending_plans if self.parts.pending.is_waiting(p)]
        paths = self.parts.paths
        atomic_write_text(
            self.report_path(report.run_id),
            report.model_dump_json(indent=2),
            root=paths.root,
            temp_dir=paths.runs,
        )

    @staticmethod
    def started(run: RunContext, report: RunReport, **settings: Any) -> None:
        """``run_started``: what every run says once its parts are built, before its first case."""
        run.events.emit(
            "run_started",
            run_id=report.run_id,
            command=report.command,
            dataset=report.dataset,
            backend=report.backend,
            **settings,
        )

    @staticmethod
    def warn_unread(run: RunContext, policy_set: ExperienceSet) -> None:
        """An experience file the loader could not read is left out of the run: said, never silently."""
        for problem in policy_set.metadata.get("problems", []):
            run.events.log(f"experience left out of this run: {problem}", level="warning")
