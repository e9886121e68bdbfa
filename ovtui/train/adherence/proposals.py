"""What adherence teaches: one plan for review (never applied without a person).

- An experience **ignored** is proposed followable: its most-ignored lines moved to the head of
  their section (read first, acted on first), each on a line of its own, the others kept as written.
- One that **misleads** (its cases pass more when it was broken) is proposed revised: the lines
  that were broken while the rollout passed are left out, with those trajectories as evidence.

Only an experience whose record is of its current version, and not already in a waiting plan of
this source, is proposed.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.plugins.wording.sections import strip_bullet
from ovtui.train.adherence.summary import Adherence
from ovtui.train.review.plans import proposal_metadata

PLAN_SOURCE = "adherence"
IGNORED_SHARE = 0.5  # a directive broken in at least this share of the uses it applied to


def _ignored_lines(found: Adherence) -> set[str]:
    lines = set()
    for d in found.record.directives:
        applied = d.followed + d.violated
        if applied and d.violated / applied >= IGNORED_SHARE:
            lines.add(d.line)
    return lines


def _moved_first(content: str, lines: set[str]) -> str:
    """``content`` with the lines in ``lines`` first in their section (the others in order)."""
    out: list[str] = []
    section: list[str] = []

    def flush() -> None:
        first = [line for line in section if strip_bullet(line) in lines]
        out.extend(first + [line for line in section if line not in first])
        section.clear()

    for line in content.splitlines():
        if line.lstrip().startswith("#"):
            flush()
            out.append(line)
        elif line.strip():
            section.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out) + ("\n" if content.endswith("\n") else "")


def _without(content: str, lines: set[str]) -> str:
    kept = [line for line in content.splitlines() if strip_bullet(line) not in lines]
    return "\n".join(kept) + ("\n" if content.endswith("\n") else "")


def adherence_plan(found: Iterable[Adherence], policy: ExperienceSet, proposed: set[str]) -> PolicyUpdatePlan:
    current = {e.uri: e for e in policy.policies}
    items: list[PolicyPlanItem] = []
    for entry in found:
        experience = current.get(entry.uri)
        if experience is None or entry.uri in proposed or entry.record.version != experience.version:
            continue
        if entry.klass == "ignored":
            lines = _ignored_lines(entry)
            after = _moved_first(experience.content, lines)
            why = "ignored: its most-ignored lines first, so they are read and acted on first"
            evidence: list[str] = []
        elif entry.klass == "misleads":
            broken_and_passed = [d for d in entry.record.directives if any(v.passed for v in d.violations)]
            lines = {d.line for d in broken_and_passed}
            after = _without(experience.content, lines)
            why = "misleads: the lines its passing rollouts broke are left out"
            evidence = [
                v.trajectory
                for d in broken_and_passed
                for v in d.violations
                if v.passed and v.trajectory and v.trajectory.startswith("viking://")
            ]
        else:
            continue
        if not lines or after == experience.content:
            continue
        items.append(
            PolicyPlanItem(
                kind="upsert",
                target_name=experience.name,
                target_uri=experience.uri,
                before_content=experience.content,
                after_content=after,
                base_version=experience.version,
                evidence_trajectory_uris=list(dict.fromkeys(evidence)),
                metadata={"rationale": f"adherence {why} · {entry.line()}", "adherence": entry.to_json()},
            )
        )
    return PolicyUpdatePlan(items=items, metadata=proposal_metadata(PLAN_SOURCE))
