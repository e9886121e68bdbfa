"""Rows, headers and messages of the Review screen (Rich only: testable without an app)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rich.text import Text

from ovtui.domain import PolicyApplyResult, PolicyPlanItem
from ovtui.review import PendingPlan, describe_apply

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


def apply_label(dry_run: bool) -> str:
    return "Apply plan — DRY RUN (p)" if dry_run else "Apply plan (p)"


def item_row(
    pending: PendingPlan, index: int, item: PolicyPlanItem
) -> tuple[str, Text, Text, Text, str, str, str]:
    deleting = item.kind == "delete_experience"
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
        item.target_experience_name,
        confidence,
        str(len(item.evidence_trajectory_uris)),
    )


def item_header(
    pending: PendingPlan, index: int, item: PolicyPlanItem, relative: Callable[[str | None], str]
) -> Text:
    decision = pending.decisions[index]
    text = Text()
    text.append(f"{item.target_experience_name}", style="bold")
    text.append(f"  {relative(item.target_experience_uri)}\n", style="dim")
    if item.kind == "delete_experience":
        text.append("DELETE: approving removes this experience file\n", style="bold red")
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "unknown"
    text.append(
        f"confidence {confidence} · {len(item.evidence_trajectory_uris)} evidence trajectories (o) · "
    )
    text.append_text(decision_text(decision.decision))
    if decision.note:
        text.append(f" — {decision.note}", style="italic")
    rationale = str(item.metadata.get("rationale") or "")
    if rationale:
        text.append(f"\nwhy: {rationale}", style="italic")
    if index in pending.stale:
        text.append(
            "\nSTALE: the experience changed after this plan was made; applying will refuse this item",
            style="bold yellow",
        )
    return text


def apply_message(plan_id: str, result: PolicyApplyResult) -> tuple[str, Literal["information", "warning"]]:
    """The kernel's words for what applying did (the CLI prints the same); a warning when an item
    was refused or nothing was applied."""
    message = describe_apply(plan_id, result)
    changed = result.dry_run or result.written_uris or result.deleted_uris
    return message, "warning" if result.item_errors or not changed else "information"
