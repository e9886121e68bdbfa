"""The adherence record beside the use ledger: ``.ovtui/adherence.json``, per experience.

Each checked use adds one observation: the verdict of each of the experience's directives on one
rollout or committed session, and how that ended. Counts are exact; what is kept besides them is
bounded like the ledger's: the newest violations per directive (the trajectories a person opens),
the directives of the experience as it last read, the cases a pass rate is taken over, the
experiences (the least recently used go past ``MAX_EXPERIENCES``) and the keys of what was
recorded (a rollout or a commit recorded again is skipped whole). Written whole, atomically, under
``.ovtui/adherence.lock``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field, ValidationError

from ovtui.core.errors import LockTimeoutError, OvtuiError
from ovtui.plugins.adherence import Directive, Verdict
from ovtui.storage import fsio
from ovtui.storage.paths import ADHERENCE_FILE, ADHERENCE_LOCK_FILE, WorkspacePaths
from ovtui.storage.reading import read_model

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_EXPERIENCES = 4096
MAX_DIRECTIVES = 64  # per experience; the rest of a long file is counted as one experience's uses
MAX_CASES = 512  # per experience: the cases its pass rates are taken over (the newest kept)
MAX_VIOLATIONS = 5  # per directive: the newest trajectories that broke it
MAX_KEYS = 8192
_LOCK_TIMEOUT_S = 30.0
BY_MODEL = "model"  # what gave a verdict the offline check could not: the model's judgement


class Violation(BaseModel):
    at: float
    case: str
    passed: bool | None
    trajectory: str | None = None  # the trajectory written for the rollout, else its consumer
    by: str | None = None  # "model": the model judged it (``judge``); None: the offline check


class DirectiveRecord(BaseModel):
    line: str
    kind: str
    tools: list[str] = Field(default_factory=list)
    followed: int = 0
    violated: int = 0
    not_applicable: int = 0
    unchecked: int = 0
    violations: list[Violation] = Field(default_factory=list)
    # Of the counts above, those the model judged (``judge``): verdict → count.
    judged: dict[str, int] = Field(default_factory=dict)

    def count(self, verdict: Verdict, *, by_model: bool = False) -> None:
        setattr(self, verdict, getattr(self, verdict) + 1)
        if by_model:
            self.judged[verdict] = self.judged.get(verdict, 0) + 1


class ExperienceRecord(BaseModel):
    """``followed``: uses where a directive applied and none was broken; ``violated``: one or more
    broken; ``not_applicable``: none applied; ``unchecked``: none could be checked. ``cases``: per
    case, [passed followed, failed followed, passed violated, failed violated] uses."""

    name: str
    version: int | None = None
    last: float = 0.0
    uses: int = 0
    followed: int = 0
    violated: int = 0
    not_applicable: int = 0
    unchecked: int = 0
    directives: list[DirectiveRecord] = Field(default_factory=list)
    cases: dict[str, list[int]] = Field(default_factory=dict)

    def directive(self, directive: Directive) -> DirectiveRecord | None:
        text = directive.text()
        found = next((d for d in self.directives if d.line == text and d.kind == directive.kind), None)
        if found is None and len(self.directives) < MAX_DIRECTIVES:
            found = DirectiveRecord(line=text, kind=directive.kind, tools=list(directive.tools))
            self.directives.append(found)
        return found


class AdherenceRecord(BaseModel):
    format: int = 1
    experiences: dict[str, ExperienceRecord] = Field(default_factory=dict)
    keys: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Observation:
    """One use of one experience checked: each directive's verdict on it, and how the use ended."""

    uri: str
    name: str
    version: int | None
    case: str
    passed: bool | None  # None: not graded (a session without a case)
    verdicts: tuple[tuple[Directive, Verdict], ...]
    trajectory: str | None = None
    judged: frozenset[int] = frozenset()  # the verdicts (by index) the model gave, not the checker

    @property
    def verdict(self) -> Verdict:
        """The use's verdict: broken if any directive was, followed if one applied and none was."""
        found = {v for _, v in self.verdicts}
        for verdict in ("violated", "followed", "not_applicable"):
            if verdict in found:
                return verdict
        return "unchecked"


def _add(record: AdherenceRecord, seen: Observation, at: float) -> None:
    entry = record.experiences.pop(seen.uri, None) or ExperienceRecord(name=seen.name)
    record.experiences[seen.uri] = entry  # now the most recently used
    entry.name, entry.last, entry.uses = seen.name, at, entry.uses + 1
    if seen.version is not None:
        entry.version = seen.version
    verdict = seen.verdict
    setattr(entry, verdict, getattr(entry, verdict) + 1)
    for index, (directive, said) in enumerate(seen.verdicts):
        kept = entry.directive(directive)
        if kept is None:
            continue
        by_model = index in seen.judged
        kept.count(said, by_model=by_model)
        if said == "violated":
            by = BY_MODEL if by_model else None
            kept.violations.append(
                Violation(at=at, case=seen.case, passed=seen.passed, trajectory=seen.trajectory, by=by)
            )
            del kept.violations[:-MAX_VIOLATIONS]
    if verdict in ("followed", "violated") and seen.passed is not None:
        counts = entry.cases.pop(seen.case, None) or [0, 0, 0, 0]
        counts[(0 if verdict == "followed" else 2) + (0 if seen.passed else 1)] += 1
        entry.cases[seen.case] = counts
        while len(entry.cases) > MAX_CASES:
            del entry.cases[next(iter(entry.cases))]
    while len(record.experiences) > MAX_EXPERIENCES:
        del record.experiences[next(iter(record.experiences))]


class AdherenceStore:
    def __init__(self, paths: WorkspacePaths) -> None:
        self.paths = paths
        self.path = paths.root / ADHERENCE_FILE
        self.lock_path = paths.root / ADHERENCE_LOCK_FILE

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fsio.make_dirs(self.paths.state, root=self.paths.root)
        lock = FileLock(fsio.contained(self.lock_path, root=self.paths.root), thread_local=False)
        try:
            lock.acquire(timeout=_LOCK_TIMEOUT_S, poll_interval=0.005)
        except Timeout:
            raise LockTimeoutError(
                f"{ADHERENCE_LOCK_FILE}: still held after {_LOCK_TIMEOUT_S:.0f} s"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def read(self) -> AdherenceRecord:
        """What was recorded (nothing yet: empty); a damaged file is one line naming it."""
        try:
            return read_model(self.path, AdherenceRecord, MAX_FILE_BYTES, what="the adherence record")
        except FileNotFoundError:
            return AdherenceRecord()
        except ValidationError:
            raise OvtuiError(
                f"{ADHERENCE_FILE}: not an adherence record (move it aside to count afresh)"
            ) from None

    def recorded(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` were recorded already (their recording would be skipped)."""
        wanted = set(keys)
        return wanted & set(self.read().keys) if wanted else set()

    def record(self, observations: Iterable[Observation], *, key: str | None = None) -> bool:
        """Add ``observations`` (one recording: ``key`` names it, so it counts once); returns
        whether anything was added."""
        return self.record_all([(key, list(observations))]) > 0

    def record_all(self, recordings: Iterable[tuple[str | None, list[Observation]]]) -> int:
        """Add each recording (its key, its observations) in one write; a key recorded before is
        skipped. Returns how many were added."""
        waiting = [(key, seen) for key, seen in recordings if seen]
        if not waiting:
            return 0
        added = 0
        with self._locked():
            record = self.read()
            at = time.time()
            for key, seen in waiting:
                if key is not None and key in record.keys:
                    continue
                for observation in seen:
                    _add(record, observation, at)
                if key is not None:
                    record.keys.append(key)
                added += 1
            del record.keys[:-MAX_KEYS]
            if added:
                text = record.model_dump_json(exclude_defaults=False)
                fsio.atomic_write_text(self.path, text, root=self.paths.root)
        return added
