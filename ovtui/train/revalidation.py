"""Revalidation on drift: what an experience was learned against, what changed since, and the
stale items a person reviews when its cases now fail.

Every apply records the **setup** it was made under in its history record
(``metadata["learned_against"]``): the environment, a hash of its written policy and of its tool
schemas, the model and the agent (its name and the distribution that provides it). ``ovtui
revalidate`` compares each experience's setup (that of the newest record that wrote it) with the
setup now; the experiences whose setup drifted have their linked cases (the cases of the
trajectories they were derived from) run again, and each one is judged by the paired rule of
``compare`` (``ovtui.train.inference``): its cases' outcomes now against their outcomes before the
drift (the results it fed, as the use ledger recorded them, by case). An experience whose cases do
worse now by that rule becomes a stale item of one plan parked in Review: the item proposes to
deprecate it, with the failing cases, the paired result and what drifted as its evidence. One
failed trial is never enough, nor are cases with no outcome from before. Nothing is written
without a person.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import Field, ValidationError

from ovtui.core.domain import Experience, Model, PolicyPlanItem, PolicyStatus, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.history import HistoryStore
from ovtui.memory.links import DERIVED_FROM
from ovtui.memory.store import MemoryStore

LEARNED_AGAINST = "learned_against"  # the history record's metadata key holding the setup
REVALIDATION = "revalidation"  # the plan's and each item's metadata key holding what was found
# The parts of a setup, in the order drift is told, with the words that tell it.
PARTS = {"policy_text": "policy text", "tool_schema": "tool schema", "model": "model", "agent": "agent"}
SHOWN_HASH = 12  # hex digits of a hash a drift line shows


def text_hash(text: str | None) -> str | None:
    """A hash of a written policy, blind to line endings (a CRLF copy of one text is the same text)."""
    if text is None:
        return None
    return hashlib.sha256(text.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def schema_hash(schemas: list[dict[str, Any]] | None) -> str | None:
    """A hash of tool schemas, blind to key order (the same schemas written in another order)."""
    if schemas is None:
        return None
    canonical = json.dumps(schemas, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Setup(Model):
    """What an experience is learned against. A hash is None where the environment does not say
    (it has no written policy or no tool schemas): a part nobody can know does not drift."""

    environment: str
    policy_text: str | None = None
    tool_schema: str | None = None
    model: str | None = None  # the model the backend learns with; None for a model-free one
    agent: str
    backend: str | None = None  # who learned it (the backend's label); recorded, never drift


class Drift(Model):
    part: str  # one of PARTS
    was: str | None
    now: str | None

    def line(self) -> str:
        def shown(value: str | None) -> str:
            if value is None:
                return "(not said)"
            return value[:SHOWN_HASH] if self.part in ("policy_text", "tool_schema") else value

        return f"{PARTS[self.part]} changed: {shown(self.was)} → {shown(self.now)}"


def setup_now(
    environment_name: str, environment: object, *, model: str | None, agent: str, backend: str
) -> Setup:
    """The setup of now: ``environment`` (None where it cannot be built) says its written policy
    and tool schemas only when it ``DescribesSetup``."""
    from ovtui.plugins.environment import DescribesSetup

    described = environment if isinstance(environment, DescribesSetup) else None
    return Setup(
        environment=environment_name,
        policy_text=text_hash(described.policy_text()) if described else None,
        tool_schema=schema_hash(described.tool_schemas()) if described else None,
        model=model,
        agent=agent,
        backend=backend,
    )


def drifted(then: Setup, now: Setup) -> list[Drift]:
    """The parts of ``then`` that ``now`` no longer has, in the order of PARTS. The environment's
    name is not a part of its own: another environment shows as another policy and tools."""
    found = []
    for part in PARTS:
        was, is_now = getattr(then, part), getattr(now, part)
        if was is not None and is_now is not None and was != is_now:
            found.append(Drift(part=part, was=was, now=is_now))
    return found


def recorded_setups(history: HistoryStore, uris: list[str]) -> dict[str, tuple[str, Setup]]:
    """Each URI's setup: that of the newest record in effect that wrote it and says one, with
    that record's id. A reverted record is no longer in effect (unless its revert was reverted in
    turn); a revert or a record of an older ovtui says no setup, so an older record counts. A URI
    no such record wrote is left out. Raises when there is no history at all."""
    entries = sorted(
        (e for e in history.entries().values() if not e.dry_run), key=lambda e: e.id, reverse=True
    )
    if not entries:
        raise OvtuiError("no history records yet: nothing was learned to revalidate (run `ovtui train`)")
    setups: dict[str, Setup | None] = {}
    found: dict[str, tuple[str, Setup]] = {}
    wanted = set(uris)
    undone: set[str] = set()
    for entry in entries:
        if entry.id in undone:
            continue  # its changes were reverted: what it was learned against is gone with them
        if entry.reverts:
            undone.add(entry.reverts)
        for uri in wanted.intersection(entry.uris):
            if entry.id not in setups:
                setups[entry.id] = _setup_of(history, entry.id)
            setup = setups[entry.id]
            if setup is not None:
                found[uri] = (entry.id, setup)
        wanted -= found.keys()
        if not wanted:
            break
    return found


def _setup_of(history: HistoryStore, record_id: str) -> Setup | None:
    """A record's setup, or None where it says none or one this ovtui cannot read."""
    try:
        raw = history.get(record_id).metadata.get(LEARNED_AGAINST)
        return Setup.model_validate(raw) if isinstance(raw, dict) else None
    except (OvtuiError, ValidationError):
        return None


def linked_cases(store: MemoryStore, experience: Experience) -> list[str]:
    """The cases an experience was learned from: those its trajectories (``derived_from`` links)
    ran, sorted. A link to a file that is gone or unreadable links no case."""
    links = [link for link in experience.metadata.get("links") or [] if isinstance(link, dict)]
    uris = [str(link.get("to_uri") or "") for link in links if link.get("link_type") == DERIVED_FROM]
    return sorted(trajectory_cases(store, uris))


def trajectory_cases(store: MemoryStore, uris: Iterable[str]) -> set[str]:
    """The cases the trajectories at ``uris`` ran; one gone or unreadable names none."""
    cases = set()
    for uri in uris:
        try:
            trajectory = store.read_uri(uri)
        except (OvtuiError, OSError):
            continue
        name = trajectory.fields.get("case_name") if trajectory is not None else None
        if isinstance(name, str) and name:
            cases.add(name)
    return cases


class Affected(Model):
    """One experience to revalidate: the record its setup is from, what drifted, its linked cases."""

    uri: str
    name: str
    record_id: str | None  # None: no record says its setup (only --force reruns it)
    drift: list[Drift] = Field(default_factory=list)
    cases: list[str] = Field(default_factory=list)  # its linked cases found in the split
    missing: list[str] = Field(default_factory=list)  # its linked cases the split does not have


class DriftCheck(Model):
    """What ``ovtui revalidate`` found before running anything, and what a rerun will cost."""

    dataset: str
    split: str
    trials: int
    setup: Setup
    forced: bool = False
    drift: list[Drift] = Field(default_factory=list)  # every part that drifted for some experience
    affected: list[Affected] = Field(default_factory=list)  # the experiences whose cases are rerun
    unknown: list[str] = Field(default_factory=list)  # experiences no record gives a setup for

    @property
    def cases(self) -> list[str]:
        """The cases to rerun, each once, sorted."""
        return sorted({c for a in self.affected for c in a.cases})

    @property
    def agent_calls(self) -> int:
        return len(self.cases) * self.trials

    def lines(self) -> list[str]:
        out = [d.line() for d in self.drift]
        if not self.drift:
            out.append("nothing drifted since the experiences were learned (their setups are the one of now)")
        if self.unknown:
            out.append(
                f"{len(self.unknown)} experience(s) have no recorded setup (applied before setups "
                "were recorded, or by hand): not compared" + ("" if self.forced else "; --force reruns them")
            )
        if self.affected:
            out.append(
                f"{len(self.affected)} experience(s) to revalidate: {len(self.cases)} linked case(s) of "
                f"{self.dataset}/{self.split} × {self.trials} trial(s) = {self.agent_calls} agent call(s)"
            )
        missing = sorted({c for a in self.affected for c in a.missing})
        if missing:
            out.append(
                f"{len(missing)} linked case(s) are not in {self.dataset}/{self.split}: {', '.join(missing)}"
            )
        return out


def check_drift(
    check: DriftCheck,
    experiences: list[Experience],
    recorded: dict[str, tuple[str, Setup]],
    linked: dict[str, list[str]],
    in_split: set[str],
) -> DriftCheck:
    """``check`` (its dataset, split, trials, setup of now and ``forced``) filled in: every
    experience whose recorded setup drifted is affected, and with ``forced`` every one."""
    drift: dict[str, Drift] = {}
    for experience in experiences:
        record_id, then = recorded.get(experience.uri, (None, None))
        parts = drifted(then, check.setup) if then is not None else []
        if then is None:
            check.unknown.append(experience.name)
        for part in parts:
            drift.setdefault(f"{part.part}|{part.was}", part)
        if parts or check.forced:
            cases = linked.get(experience.uri, [])
            check.affected.append(
                Affected(
                    uri=experience.uri,
                    name=experience.name,
                    record_id=record_id,
                    drift=parts,
                    cases=[c for c in cases if c in in_split],
                    missing=[c for c in cases if c not in in_split],
                )
            )
    order = list(PARTS)
    check.drift = sorted(drift.values(), key=lambda d: (order.index(d.part), d.was or ""))
    return check


class StaleExperience(Model):
    """An affected experience whose linked cases do worse now than before the drift."""

    uri: str
    name: str
    drift: list[Drift]
    failing: dict[str, str]  # case → what the agent did there now (its evidence line)
    paired: str = ""  # before against now, by the case


class Judged(Model):
    """One affected experience, before the drift against now on its cases that have both."""

    name: str
    cases: int
    stale: bool
    line: str


class Revalidation(Model):
    """The result: the check, what each rerun case scored, the stale experiences and their plan."""

    check: DriftCheck
    run_id: str | None = None
    results: dict[str, list[int]] = Field(default_factory=dict)
    stale: list[StaleExperience] = Field(default_factory=list)
    judged: list[Judged] = Field(default_factory=list)
    plan_id: str | None = None

    def lines(self) -> list[str]:
        out = self.check.lines()
        if self.check.affected and not self.check.cases:
            out.append(
                f"nothing to rerun: no linked case of theirs is in {self.check.dataset}/{self.check.split}"
            )
        if not self.results:
            return out
        passing = sum(all(r) for r in self.results.values())
        out.append(f"rerun: {passing} of {len(self.results)} linked case(s) still pass")
        out += [f"{j.name}: {j.line}" for j in self.judged]
        for stale in self.stale:
            out.append(f"stale: {stale.name} ({', '.join(d.part for d in stale.drift) or 'forced'})")
            out += [f"  {case}: {evidence}" for case, evidence in sorted(stale.failing.items())]
        if self.plan_id:
            out.append(f"queued for review as plan {self.plan_id} (ovtui review show {self.plan_id})")
        else:
            out.append("nothing queued: no experience does worse than before the drift by the paired rule")
        return out

    def to_json(self) -> dict[str, Any]:
        """``ovtui revalidate --json``: one object."""
        check = self.check
        return {
            "run_id": self.run_id,
            "dataset": check.dataset,
            "split": check.split,
            "trials": check.trials,
            "forced": check.forced,
            "setup": check.setup.model_dump(),
            "drifted": [d.model_dump() | {"line": d.line()} for d in check.drift],
            "affected": [
                a.model_dump(include={"uri", "name", "record_id", "cases", "missing"}) for a in check.affected
            ],
            "unknown": check.unknown,
            "agent_calls": check.agent_calls,
            "results": self.results,
            "stale": [s.model_dump(include={"uri", "name", "failing", "paired"}) for s in self.stale],
            "judged": [j.model_dump() for j in self.judged],
            "plan_id": self.plan_id,
        }


def stale_plan(
    stale: list[StaleExperience], current: dict[str, Experience], setup: Setup
) -> PolicyUpdatePlan:
    """One plan of stale items: each deprecates an experience as it is now (compare-and-swapped
    against its current version), its rationale the failing cases and what drifted."""
    items = []
    for experience in stale:
        now = current[experience.uri]
        drift = "; ".join(d.line() for d in experience.drift) or "a forced revalidation"
        cases = ", ".join(sorted(experience.failing))
        items.append(
            PolicyPlanItem(
                kind="upsert",
                target_name=now.name,
                target_uri=now.uri,
                before_content=now.content,
                after_content=now.content,
                base_version=now.version,
                metadata={
                    "status": PolicyStatus.DEPRECATED.value,
                    "rationale": (
                        f"stale: its linked case(s) {cases} now fail after {drift} ({experience.paired})"
                    ),
                    REVALIDATION: {
                        "stale": True,
                        "drift": [d.model_dump() for d in experience.drift],
                        "failing": experience.failing,
                        "paired": experience.paired,
                    },
                },
            )
        )
    metadata = {"plan_id": f"revalidate-{uuid.uuid4().hex[:8]}", REVALIDATION: {"setup": setup.model_dump()}}
    return PolicyUpdatePlan(items=items, metadata=metadata)
