"""What the use ledger's records add up to: a pure fold, no files (``memory.ledger`` keeps them).

A **use** is a memory served to a consumer (a session, or a rollout of a run). An **outcome** of a
consumer closes the uses it made since its previous outcome: each memory among them is credited
with every result of the outcome (one per trajectory the commit or the analysis wrote, with that
trajectory's outcome; one per graded rollout that wrote none) and keeps the newest results it fed.
Per memory: uses, distinct consumers ("sessions"), an outcome histogram, the last use, the uses and
outcomes of its newest versions, and the newest results.

Everything kept is bounded (``core.bounds``: results per memory, versions per memory, consumers,
memories and commit keys per consumer), so the summary a compaction writes stays bounded however
long a workspace is used. Past a bound the counts stay exact for uses and outcomes; only the
distinct-consumer count and the linking of an outcome can miss: a consumer forgotten (the least
recently active beyond ``LEDGER_CONSUMERS``) that comes back counts as a new one, and its uses
before it was forgotten get no outcome.

Two rules make recording exactly-once where a commit can run twice (an inbox file committed again
after a crash): an outcome with a ``key`` already folded for its consumer is skipped whole, and the
``reads`` an outcome carries (the experiences its session read through its own tool calls) count
only where the consumer has not already used that memory since its last outcome (a read through
the API, then the same read in the tool call that reported it, is one use).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ovtui.core.bounded_json import parse_json
from ovtui.core.bounds import (
    LEDGER_CONSUMERS,
    LEDGER_FED_PER_MEMORY,
    LEDGER_KEYS_PER_CONSUMER,
    LEDGER_MEMORIES_PER_CONSUMER,
    LEDGER_VERSIONS_PER_MEMORY,
)
from ovtui.core.domain import EXECUTION_ERROR, Rollout, RolloutAnalysis, RubricEvaluation

Via = Literal["find", "search", "read", "mcp", "agent"]
# OpenViking's outcomes, in the order its outcome distribution lists them.
OUTCOMES: tuple[str, ...] = ("success", "failure", "partial", "unknown", "unfinished")
_INDEX = {name: i for i, name in enumerate(OUTCOMES)}
SUMMARY_FORMAT = 1


def normal_outcome(value: object) -> str:
    """One of the five outcomes; anything else is ``unknown`` (as OpenViking normalises them)."""
    text = str(value).lower() if value is not None else ""
    return text if text in _INDEX else "unknown"


# Rollout.metadata key of a rollout whose agent recorded the memories it used (the consumer of
# those uses, which the run's grading then gives their outcome).
ROLLOUT_ID = "rollout_id"


def new_rollout_id() -> str:
    return uuid.uuid4().hex


def session_consumer(session_id: str) -> str:
    return f"session:{session_id}"


def rollout_consumer(rollout_id: str) -> str:
    return f"rollout:{rollout_id}"


# --- records -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Use:
    """``uri`` served to ``consumer`` (None: a use from before consumers were recorded)."""

    uri: str
    consumer: str | None
    via: Via = "agent"
    version: int | None = None

    def row(self) -> list[Any]:
        return ["u", self.uri, self.consumer, self.via, self.version]


@dataclass(frozen=True, slots=True)
class Result:
    outcome: str  # one of OUTCOMES
    trajectory: str | None = None  # the trajectory written for it, if any


@dataclass(frozen=True, slots=True)
class Outcome:
    """How it went for ``consumer``: its results, and the memories it read through its own tool
    calls (``reads``: uri and version, counted as uses first). ``key`` names the commit, so the
    same commit folded twice counts once; ``final``: the consumer never comes back (a rollout)."""

    consumer: str
    results: tuple[Result, ...]
    reads: tuple[tuple[str, int | None], ...] = ()
    key: str | None = None
    final: bool = False

    def row(self) -> list[Any]:
        results = [[r.outcome, r.trajectory] for r in self.results]
        return ["o", self.consumer, results, [list(read) for read in self.reads], self.key, self.final]


Record = Use | Outcome


def graded(evaluation: RubricEvaluation | None) -> str:
    """A grade as an outcome (as trajectories are graded): passed, some score, none, not graded."""
    if evaluation is None:
        return "unknown"
    if evaluation.passed:
        return "success"
    return "partial" if evaluation.score > 0 else "failure"


def rollout_outcomes(rollouts: Iterable[Rollout], analyses: Iterable[RolloutAnalysis] = ()) -> list[Outcome]:
    """The outcome of each rollout whose agent recorded its uses (``ROLLOUT_ID``): a result per
    trajectory its analysis wrote, with that trajectory's outcome; else one from its grade
    (unfinished: its execution failed). A rollout never comes back: each outcome is final."""
    written = {a.rollout.metadata.get(ROLLOUT_ID): a for a in analyses}
    found: list[Outcome] = []
    for rollout in rollouts:
        rollout_id = rollout.metadata.get(ROLLOUT_ID)
        if not isinstance(rollout_id, str):
            continue
        analysis = written.get(rollout_id)
        if analysis is not None and analysis.trajectories:
            results = tuple(Result(normal_outcome(t.outcome), t.uri) for t in analysis.trajectories)
        elif EXECUTION_ERROR in rollout.metadata:
            results = (Result("unfinished"),)
        else:
            results = (Result(graded(rollout.evaluation)),)
        found.append(Outcome(rollout_consumer(rollout_id), results, final=True))
    return found


def encode(records: Iterable[Record], at: float) -> bytes:
    """One log line for one call's records: ``{"at": t, "r": [row, …]}`` (a row is a JSON array:
    one ``json.loads`` per call, however many uses it records)."""
    rows = [r.row() for r in records]
    return (json.dumps({"at": at, "r": rows}, ensure_ascii=False) + "\n").encode() if rows else b""


def _version(value: object) -> int | None:
    if value is None or (type(value) is int):
        return value
    raise TypeError("version")


def _text(value: object) -> str:
    if type(value) is not str:
        raise TypeError("text")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _checked(row: Any) -> Record:
    """A log row as its record, its types checked (raises on a malformed one)."""
    if row[0] == "u":
        _, uri, consumer, via, version = row
        return Use(_text(uri), _optional_text(consumer), via, _version(version))
    if row[0] == "o":
        _, consumer, results, reads, key, final = row
        return Outcome(
            _text(consumer),
            tuple(Result(normal_outcome(o), _optional_text(t)) for o, t in results),
            tuple((_text(uri), _version(v)) for uri, v in reads),
            _optional_text(key),
            final is True,
        )
    raise KeyError(f"no record kind {row[0]!r}")


def parse(entry: Any) -> tuple[list[Record], float]:
    """A log line's records, checked, and their time (none: the header). Raises on a malformed
    line: it is skipped whole, as the one write of one call."""
    if not isinstance(entry, dict):
        raise TypeError("not an object")
    if "r" in entry:
        return [_checked(row) for row in entry["r"]], float(entry["at"])
    if "uri" in entry:  # the hotness log's line: a use with no consumer
        return [Use(_text(entry["uri"]), None)], float(entry["at"])
    if "log" in entry:
        return [], 0.0
    raise KeyError("no records")


# --- what the records fold into ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VersionUsage:
    count: int
    outcomes: tuple[int, ...] = (0,) * len(OUTCOMES)


@dataclass(frozen=True, slots=True)
class Usage:
    """One memory's record: ``count`` uses by ``sessions`` consumers, the last at ``last_used``
    (epoch seconds); ``outcomes`` in ``OUTCOMES`` order; ``versions``: (version, its usage), newest
    first."""

    count: int
    last_used: float
    sessions: int = 0
    outcomes: tuple[int, ...] = (0,) * len(OUTCOMES)
    versions: tuple[tuple[int, VersionUsage], ...] = ()

    def histogram(self) -> dict[str, int]:
        return dict(zip(OUTCOMES, self.outcomes, strict=True))

    @property
    def success_share(self) -> float | None:
        """Successes among the graded outcomes (success, failure, partial); None: none graded."""
        graded = sum(self.outcomes[:3])
        return self.outcomes[0] / graded if graded else None

    def of_version(self, version: int) -> VersionUsage | None:
        return dict(self.versions).get(version)


@dataclass(frozen=True, slots=True)
class Fed:
    """A result a memory fed: when, its outcome, the trajectory written for it (if any)."""

    at: float
    outcome: str
    trajectory: str | None


@dataclass(slots=True)
class _Memory:
    uses: int = 0
    sessions: int = 0
    last: float = 0.0
    outcomes: list[int] = field(default_factory=lambda: [0] * len(OUTCOMES))
    fed: list[int] = field(default_factory=list)  # result ids, oldest first
    versions: dict[int, list[int]] = field(default_factory=dict)  # version -> [uses, *outcomes]

    def count_version(self, version: int) -> None:
        counts = self.versions.get(version)
        if counts is None:
            counts = self.versions[version] = [0] * (1 + len(OUTCOMES))
            while len(self.versions) > LEDGER_VERSIONS_PER_MEMORY:
                del self.versions[min(self.versions)]
        counts[0] += 1

    def to_json(self) -> list[Any]:
        versions = {str(v): c for v, c in self.versions.items()}
        return [self.uses, self.sessions, self.last, self.outcomes, self.fed, versions]

    def usage(self) -> Usage:
        versions = tuple(
            (v, VersionUsage(c[0], tuple(c[1:]))) for v, c in sorted(self.versions.items(), reverse=True)
        )
        return Usage(self.uses, self.last, self.sessions, tuple(self.outcomes), versions)


@dataclass(slots=True)
class _Consumer:
    at: float = 0.0
    open: dict[str, int | None] = field(default_factory=dict)  # used since the last outcome
    seen: set[str] = field(default_factory=set)  # every memory it used (open ones included)
    keys: list[str] = field(default_factory=list)  # the newest commit keys folded

    def to_json(self) -> list[Any]:
        return [self.at, self.open, sorted(self.seen.difference(self.open)), self.keys]


@dataclass(slots=True)
class LedgerState:
    """The fold of a ledger's records, and where in which log it stands (``log``: the generation
    folded last, -1 for none; ``offset``: the byte of that log read to)."""

    memories: dict[str, _Memory] = field(default_factory=dict)
    consumers: dict[str, _Consumer] = field(default_factory=dict)  # least recently active first
    results: dict[int, tuple[float, str, str | None]] = field(default_factory=dict)
    next_result: int = 0
    log: int = -1
    offset: int = 0
    migrated: bool = False  # the hotness files of an older ovtui were folded in

    # --- folding ----------------------------------------------------------------------------------
    def fold_line(self, line: bytes) -> None:
        """Fold one log line; a line that does not read (cut by a crash) is skipped whole."""
        try:
            records, at = parse(parse_json(line, source="a ledger line"))
        except (ValueError, KeyError, TypeError, IndexError):
            return
        for record in records:
            self.apply(record, at)

    def apply(self, record: Record, at: float) -> None:
        if isinstance(record, Use):
            self._use(record.uri, record.consumer, at, record.version, once=False)
        else:
            self._outcome(record, at)

    def add_uses(self, uri: str, count: int, last_used: float) -> None:
        """Uses counted before there was a ledger (the hotness summary's count and last use)."""
        memory = self.memories.setdefault(uri, _Memory())
        memory.uses += count
        memory.last = max(memory.last, last_used)

    def _touch(self, consumer: str, at: float, known: _Consumer | None) -> _Consumer:
        """``consumer``'s entry (``known``, or a new one), now the most recently active."""
        consumers = self.consumers
        if known is None:
            known = consumers[consumer] = _Consumer(at)
            while len(consumers) > LEDGER_CONSUMERS:
                del consumers[next(iter(consumers))]
            return known
        known.at = max(known.at, at)
        if next(reversed(consumers)) != consumer:  # a batch's uses are by the last one: no move
            del consumers[consumer]
            consumers[consumer] = known
        return known

    def _use(self, uri: str, consumer: str | None, at: float, version: int | None, *, once: bool) -> None:
        known = self.consumers.get(consumer) if consumer is not None else None
        if once and known is not None and uri in known.open:
            return  # already used since its last outcome: the tool call reports that use
        memory = self.memories.get(uri)
        if memory is None:
            memory = self.memories[uri] = _Memory()
        memory.uses += 1
        if at > memory.last:
            memory.last = at
        if version is not None:
            memory.count_version(version)
        if consumer is None:
            return
        entry = self._touch(consumer, at, known)
        if uri not in entry.seen and len(entry.seen) < LEDGER_MEMORIES_PER_CONSUMER:
            entry.seen.add(uri)
            memory.sessions += 1
        if version is not None:
            if uri in entry.open or len(entry.open) < LEDGER_MEMORIES_PER_CONSUMER:
                entry.open[uri] = version
        elif uri not in entry.open and len(entry.open) < LEDGER_MEMORIES_PER_CONSUMER:
            entry.open[uri] = None

    def _outcome(self, outcome: Outcome, at: float) -> None:
        known = self.consumers.get(outcome.consumer)
        if outcome.key is not None and known is not None and outcome.key in known.keys:
            return  # this commit is folded already
        for uri, version in outcome.reads:
            self._use(uri, outcome.consumer, at, version, once=True)
        entry = self._touch(outcome.consumer, at, self.consumers.get(outcome.consumer))
        if outcome.key is not None:
            entry.keys.append(outcome.key)
            del entry.keys[:-LEDGER_KEYS_PER_CONSUMER]
        if entry.open and outcome.results:
            ids = list(range(self.next_result, self.next_result + len(outcome.results)))
            self.next_result += len(ids)
            for rid, result in zip(ids, outcome.results, strict=True):
                self.results[rid] = (at, result.outcome, result.trajectory)
            for uri, version in entry.open.items():
                memory = self.memories.get(uri)
                if memory is None:
                    continue  # its file was deleted (and its uses dropped) since
                for result in outcome.results:
                    memory.outcomes[_INDEX[result.outcome]] += 1
                    if version is not None and version in memory.versions:
                        memory.versions[version][1 + _INDEX[result.outcome]] += 1
                memory.fed.extend(ids)
                del memory.fed[:-LEDGER_FED_PER_MEMORY]
        entry.open.clear()
        if outcome.final:
            del self.consumers[outcome.consumer]

    def keep_memories(self, keep: Callable[[str], bool]) -> None:
        """Drop the memories ``keep`` refuses (files deleted since), then every result no memory
        still holds among its newest."""
        self.memories = {uri: m for uri, m in self.memories.items() if keep(uri)}
        held = {rid for memory in self.memories.values() for rid in memory.fed}
        self.results = {rid: r for rid, r in self.results.items() if rid in held}

    # --- reading --------------------------------------------------------------------------------
    def usage_of(self, uri: str) -> Usage | None:
        memory = self.memories.get(uri)
        return memory.usage() if memory is not None else None

    def usage(self) -> dict[str, Usage]:
        return {uri: memory.usage() for uri, memory in self.memories.items()}

    def count_and_last(self, uri: str) -> tuple[int, float] | None:
        """Uses and last use only: what hotness needs, without building the whole record."""
        memory = self.memories.get(uri)
        return (memory.uses, memory.last) if memory is not None else None

    def fed(self, uri: str) -> list[Fed]:
        """The newest results ``uri`` fed, newest first."""
        memory = self.memories.get(uri)
        if memory is None:
            return []
        found = [self.results.get(rid) for rid in reversed(memory.fed)]
        return [Fed(*result) for result in found if result is not None]

    # --- the summary file ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": SUMMARY_FORMAT,
            "log": self.log,
            "offset": self.offset,
            "migrated": self.migrated,
            "next": self.next_result,
            "memories": {uri: m.to_json() for uri, m in self.memories.items()},
            "consumers": [[who, *c.to_json()] for who, c in self.consumers.items()],
            "results": {str(rid): list(r) for rid, r in self.results.items()},
        }

    @classmethod
    def from_json(cls, raw: Any) -> LedgerState:
        """Raises ValueError, KeyError, TypeError or IndexError on a summary that does not read."""
        if raw.get("format") != SUMMARY_FORMAT:
            raise ValueError(f"format {raw.get('format')!r}, not {SUMMARY_FORMAT}")
        state = cls(
            next_result=int(raw["next"]),
            log=int(raw["log"]),
            offset=int(raw["offset"]),
            migrated=bool(raw["migrated"]),
        )
        for uri, (uses, sessions, last, outcomes, fed, versions) in _items(raw["memories"]):
            state.memories[_text(uri)] = _Memory(
                int(uses),
                int(sessions),
                float(last),
                _counts(outcomes, len(OUTCOMES)),
                [int(rid) for rid in fed],
                {int(v): _counts(c, 1 + len(OUTCOMES)) for v, c in _items(versions)},
            )
        for who, at, opened, seen, keys in raw["consumers"]:
            waiting = {_text(uri): _version(v) for uri, v in _items(opened)}
            state.consumers[_text(who)] = _Consumer(
                float(at), waiting, {*map(_text, seen), *waiting}, [_text(k) for k in keys]
            )
        for rid, (at, outcome, trajectory) in _items(raw["results"]):
            written = None if trajectory is None else _text(trajectory)
            state.results[int(rid)] = (float(at), normal_outcome(outcome), written)
        return state


def _items(value: Any) -> Iterator[tuple[Any, Any]]:
    if not isinstance(value, Mapping):
        raise TypeError("not an object")
    return iter(value.items())


def _counts(value: Any, length: int) -> list[int]:
    counts = [int(n) for n in value]
    if len(counts) != length:
        raise ValueError(f"{len(counts)} counts, not {length}")
    return counts
