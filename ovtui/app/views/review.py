"""Rows, headers and messages of the Review screen (Rich only: testable without an app)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rich.text import Text

from ovtui.app.views.memories import share, version_line
from ovtui.core.domain import PolicyApplyResult, PolicyPlanItem
from ovtui.memory.ledger_state import OUTCOMES, Usage
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.validation import validation_line
from ovtui.train.review.policy import PendingPlan, describe_apply

# Unread-line notes shown in an item header (a few fixed rows); the rest are counted.
UNREAD_SHOWN = 3

DECISION_STYLE = {
    "approved": ("✓ approved", "green"),
    "rejected": ("✗ rejected", "red"),
    "pending": ("pending", "dim"),
}


def plan_row(pending: PendingPlan) -> tuple[str, str, str, Text]:
    stale = Text(str(len(pending.stale)), style="bold yellow") if pending.stale else Text("0", style="dim")
    return pending.plan_id, str(len(pending.plan.items)), str(pending.undecided), stale


def decision_text(decision: str) -> Text:
    label, style = DECISION_STYLE.get(decision, (decision, ""))
    return Text(label, style=style)


def kind_word(item: PolicyPlanItem) -> str:
    return "experience" if item.memory_type == EXPERIENCES else item.memory_type


def item_label(item: PolicyPlanItem) -> str:
    """The target as the queue lists it: experiences by name, other types with their type, and a
    peer's memory with the peer (``profile: profile · peer alice``)."""
    label = item.target_name if item.memory_type == EXPERIENCES else f"{item.memory_type}: {item.target_name}"
    return label if item.peer_id is None else f"{label} · peer {item.peer_id}"


def apply_label(dry_run: bool) -> str:
    return "Apply plan — DRY RUN (p)" if dry_run else "Apply plan (p)"


def item_row(
    pending: PendingPlan, index: int, item: PolicyPlanItem
) -> tuple[str, Text, Text, Text, str, str, str]:
    deleting = item.kind == "delete"
    kind = (
        Text("DELETE", style="bold red")
        if deleting
        else Text("new" if item.before_content is None else "edit")
    )
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "–"
    stale = Text("STALE", style="bold yellow") if index in pending.stale else Text("")
    return (
        str(index),
        decision_text(pending.decisions[index].decision),
        stale,
        kind,
        item_label(item),
        confidence,
        str(len(item.evidence_trajectory_uris)),
    )


def item_header(
    pending: PendingPlan,
    index: int,
    item: PolicyPlanItem,
    relative: Callable[[str | None], str],
    where: str | None = None,
    fared: Text | None = None,
) -> Text:
    """``where``: the file the item writes, when the item does not name it (a new memory);
    ``fared``: how the file it edits has fared so far (``fared_text``)."""
    decision = pending.decisions[index]
    text = Text()
    text.append(f"{item.target_name}", style="bold")
    text.append(f"  {where or relative(item.target_uri)}\n", style="dim")
    if fared is not None:
        text.append_text(fared)
        text.append("\n")
    if item.kind == "delete":
        text.append(f"DELETE: approving removes this {kind_word(item)} file\n", style="bold red")
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "unknown"
    evidence = len(item.evidence_trajectory_uris)
    text.append(
        f"confidence {confidence} · {evidence} evidence trajector{'y' if evidence == 1 else 'ies'} (o) · "
    )
    text.append_text(decision_text(decision.decision))
    if decision.note:
        text.append(f" — {decision.note}", style="italic")
    text.append_text(assessment_text(pending, item))
    rationale = str(item.metadata.get("rationale") or "")
    if rationale:
        text.append(f"\nwhy: {rationale}", style="italic")
    if index in pending.stale:
        text.append(
            f"\nSTALE: the {kind_word(item)} changed after this plan was made; "
            "applying will refuse this item",
            style="bold yellow",
        )
    return text


def fared_text(usage: Usage | None, version: int) -> Text:
    """How the experience an item edits has fared: its current version's uses and outcomes, and
    all its versions' (the use ledger's record)."""
    if usage is None or usage.count == 0:
        return Text(f"fared: version {version} (current) not used yet", style="dim")
    counts = ", ".join(f"{n} {name}" for name, n in zip(OUTCOMES, usage.outcomes, strict=True) if n)
    overall = f"all versions {usage.count} use(s) by {usage.sessions} session(s)"
    overall += f", {counts}, success {share(usage)}" if counts else ", no outcome yet"
    return Text(f"fared: {version_line(usage, version)} · {overall}")


def assessment_text(pending: PendingPlan, item: PolicyPlanItem) -> Text:
    """What the item will do, measured before it is applied (ovtui.train.review.gates), in at most
    three lines: validation and evidence, the flipped cases, warnings."""
    text = Text()
    parts: list[str] = []
    validation = item.metadata.get("validation")
    plan_validation = pending.plan.metadata.get("validation")
    if validation:
        parts.append(validation_line(validation))
    if plan_validation:
        n = plan_validation["cases"]
        parts.append(f"plan {plan_validation['before']}/{n} → {plan_validation['after']}/{n}")
    if "evidence" in item.metadata:
        parts.append(
            f"evidence {len(item.metadata['evidence'])}, "
            f"might break {len(item.metadata.get('counter_evidence', []))} passing"
        )
    if parts:
        worse = bool(validation and validation["after"] < validation["before"])
        text.append("\n" + " · ".join(parts), style="bold red" if worse else "")
    if validation and (validation["gained"] or validation["lost"]):
        flips = [f"+{n} {validation['flipped'][n]['after']}" for n in validation["gained"]]
        flips += [f"−{n} {validation['flipped'][n]['after']}" for n in validation["lost"]]
        text.append("\nflips: " + "; ".join(flips), style="dim")
    warnings = []
    if item.metadata.get("leaks"):
        warnings.append(f"LEAK: {', '.join(item.metadata['leaks'])} (never approved automatically)")
    unread = item.metadata.get("unread_lines", [])
    warnings += [f"⚠ {note}" for note in unread[:UNREAD_SHOWN]]
    if len(unread) > UNREAD_SHOWN:  # the header has a few rows: wrapping thousands of notes took 0.3 s
        warnings.append(f"⚠ {len(unread) - UNREAD_SHOWN} more such lines (all: ovtui check)")
    if warnings:
        text.append("\n" + " · ".join(warnings), style="bold yellow")
    return text


def apply_message(plan_id: str, result: PolicyApplyResult) -> tuple[str, Literal["information", "warning"]]:
    """The kernel's words for what applying did (the CLI prints the same); a warning when an item
    was refused or nothing was applied."""
    message = describe_apply(plan_id, result)
    changed = result.dry_run or result.written_uris or result.deleted_uris
    return message, "warning" if result.item_errors or not changed else "information"
