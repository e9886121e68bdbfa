"""Checking the experiences a rollout or a session used, and recording what was found.

A rollout names the experiences its agent used in its metadata (``experiences_used``, or
``experiences`` for the model agent); a session's are the ones the ledger says it was served or it
read itself. Each is read into directives — by the environment when it ``ReadsDirectives``, else by
ovtui (``directives``) — once per version, and checked against the trajectory (``checker``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from ovtui.core.domain import Experience, ExperienceSet, Message, Rollout, RolloutAnalysis
from ovtui.core.errors import OvtuiError
from ovtui.memory.ledger_state import ROLLOUT_ID
from ovtui.plugins.adherence import Directive, ReadsDirectives
from ovtui.storage.faults import os_error_line
from ovtui.train.adherence.checker import Trajectory, check
from ovtui.train.adherence.directives import directives_of
from ovtui.train.adherence.store import AdherenceStore, Observation

if TYPE_CHECKING:
    from ovtui.core.events import EventBus
    from ovtui.train.adherence.judge import ModelJudge

USED_KEYS = ("experiences_used", "experiences")  # rollout metadata naming the experiences used

log = logging.getLogger(__name__)


class DirectiveReader:
    """An experience's directives: the environment's reading when it has one, else ovtui's."""

    def __init__(self, environment: object | None = None, tools: Collection[str] = ()) -> None:
        self.environment = environment if isinstance(environment, ReadsDirectives) else None
        self.tools = frozenset(tools)
        self._read = lru_cache(maxsize=1024)(self._directives)

    def _directives(self, content: str) -> tuple[Directive, ...]:
        if self.environment is not None:
            return tuple(self.environment.directives(content))
        return tuple(directives_of(content, self.tools))

    def directives(self, content: str) -> tuple[Directive, ...]:
        return self._read(content)

    def trajectory(self, messages: list[Message]) -> Trajectory:
        situation = self.environment.situation(messages) if self.environment is not None else None
        return Trajectory.of(messages, situation)


def used_experiences(rollout: Rollout, policy_set: ExperienceSet) -> list[Experience]:
    named: list[object] = next(
        (rollout.metadata[k] for k in USED_KEYS if isinstance(rollout.metadata.get(k), list)), []
    )
    by_name = policy_set.by_name()
    return [by_name[n] for n in dict.fromkeys(named) if isinstance(n, str) and n in by_name]


def observations(
    reader: DirectiveReader,
    experiences: Iterable[Experience],
    messages: list[Message],
    *,
    case: str,
    passed: bool | None,
    trajectory: str | None = None,
) -> list[Observation]:
    """Each experience's directives checked against one conversation."""
    path = reader.trajectory(messages)
    found: list[Observation] = []
    for experience in experiences:
        verdicts = tuple((d, check(d, path)) for d in reader.directives(experience.content))
        if verdicts:
            found.append(
                Observation(
                    experience.uri, experience.name, experience.version, case, passed, verdicts, trajectory
                )
            )
    return found


Recording = tuple[str | None, list[Observation]]  # its key (counted once by it), what was found


class AdherenceRecorder:
    """``judge``: the model asked about the lines the offline check could not check, when
    ``[adherence] model_judge`` is on (None: every check is offline)."""

    def __init__(
        self, store: AdherenceStore, reader: DirectiveReader, judge: ModelJudge | None = None
    ) -> None:
        self.store, self.reader, self.judge = store, reader, judge

    def observe(
        self, rollouts: Iterable[Rollout], policy_set: ExperienceSet, analyses: Iterable[RolloutAnalysis] = ()
    ) -> list[tuple[Recording, Rollout]]:
        """Each rollout that names the experiences it used, checked offline (keyed by its id, if it
        has one)."""
        written = {a.rollout.metadata.get(ROLLOUT_ID): a for a in analyses}
        found: list[tuple[Recording, Rollout]] = []
        for rollout in rollouts:
            used = used_experiences(rollout, policy_set)
            if not used:
                continue
            rollout_id = rollout.metadata.get(ROLLOUT_ID)
            analysis = written.get(rollout_id) if isinstance(rollout_id, str) else None
            reference = analysis.trajectories[0].uri if analysis and analysis.trajectories else None
            passed = rollout.evaluation.passed if rollout.evaluation is not None else None
            seen = observations(
                self.reader,
                used,
                rollout.messages,
                case=rollout.case.name,
                passed=passed,
                trajectory=reference or (f"rollout:{rollout_id}" if isinstance(rollout_id, str) else None),
            )
            found.append(((f"rollout:{rollout_id}" if isinstance(rollout_id, str) else None, seen), rollout))
        return found

    def rollouts(
        self, rollouts: Iterable[Rollout], policy_set: ExperienceSet, analyses: Iterable[RolloutAnalysis] = ()
    ) -> None:
        """Record each rollout's offline checks (file work: call it in a thread)."""
        self.try_record([recording for recording, _ in self.observe(rollouts, policy_set, analyses)])

    async def record_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis],
        events: EventBus,
    ) -> None:
        """``rollouts``, off the loop, and with the judge (when there is one) asked about each
        rollout's unchecked lines first — at most one call per rollout, none for one recorded before."""
        found = await asyncio.to_thread(self.observe, rollouts, policy_set, analyses)
        if self.judge is not None and found:
            keys = [key for (key, _), _ in found if key is not None]
            try:
                recorded = await asyncio.to_thread(self.store.recorded, keys)
            except (OvtuiError, OSError):
                recorded = set()  # the write below says what is wrong with the record
            judge = self.judge

            async def judged(recording: Recording, rollout: Rollout) -> Recording:
                key, seen = recording
                if key in recorded:
                    return recording
                what = f"{rollout.case.name} ({key})" if key else rollout.case.name
                return key, await judge.judge(seen, rollout.messages, events, what=what)

            recordings = list(await asyncio.gather(*(judged(r, rollout) for r, rollout in found)))
        else:
            recordings = [recording for recording, _ in found]
        await asyncio.to_thread(self.try_record, recordings)  # one write for the batch

    def try_record(self, recordings: list[Recording]) -> None:
        """``store.record_all``; a record that cannot be written is logged, naming the file, and
        the run goes on (as the ledger's)."""
        try:
            self.store.record_all(recordings)
        except OvtuiError as exc:
            log.warning("adherence not recorded: %s", exc)
        except OSError as exc:
            log.warning("adherence not recorded: %s", os_error_line(exc, self.store.paths.relative))
