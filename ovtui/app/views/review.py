"""Rows, headers and messages of the Review screen (Rich only: testable without an app)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rich.text import Text

from ovtui.app.views.diff_model import HunkChoice
from ovtui.app.views.memories import share, version_line
from ovtui.core.domain import PolicyApplyResult, PolicyPlanItem
from ovtui.core.errors import MemoryFormatError
from ovtui.core.fileformat import (
    FIELDS_OPEN,
    normalise_content,
    parse_memory,
    quoted_marker_line,
    render_memory,
)
from ovtui.memory.ledger_state import OUTCOMES, Usage
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.contradictions import CONTRADICTIONS
from ovtui.train.review.gates.sanitizer import HAZARDS
from ovtui.train.review.gates.validation import validation_line
from ovtui.train.review.plans import PendingPlan
from ovtui.train.review.policy import describe_apply
from ovtui.train.review.rejections import marked_line

# Unread-line notes shown in an item header (a few fixed rows); the rest are counted.
UNREAD_SHOWN = 3

DECISION_STYLE = {
    "approved": ("✓ approved", "green"),
    "rejected": ("✗ rejected", "red"),
    "pending": ("pending", "dim"),
}
# The queue's decision cell: a mark that reads without colour, one column wide.
DECISION_MARK = {"approved": "✓", "rejected": "✗", "pending": "?"}
# The queue's change cell starts with what the item does to its file, as History's columns say it.
CHANGE_MARK = {"new": "+", "edit": "~", "delete": "−"}

PLAN_COLUMNS = ("plan", "items", "todo", "stale")
# The target third: at 80 columns the queue is ~36 wide, and a name must be readable there; kind,
# confidence and evidence follow where there is room (the item's header says them all).
ITEM_COLUMNS = ("#", "dec", "change", "kind", "conf", "evid")


def plan_row(pending: PendingPlan) -> tuple[str, str, str, Text]:
    stale = Text(str(len(pending.stale)), style="bold yellow") if pending.stale else Text("0", style="dim")
    return pending.plan_id, str(len(pending.plan.items)), str(pending.undecided), stale


def decision_text(decision: str) -> Text:
    label, style = DECISION_STYLE.get(decision, (decision, ""))
    return Text(label, style=style)


def decision_mark(decision: str) -> Text:
    return Text(DECISION_MARK.get(decision, decision), style=DECISION_STYLE.get(decision, ("", ""))[1])


def change_kind(item: PolicyPlanItem) -> str:
    if item.kind == "delete":
        return "delete"
    return "new" if item.before_content is None else "edit"


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
) -> tuple[str, Text, Text, Text, str, str]:
    """``#``, the decision mark, the change (``STALE`` first when it is, then ``+``/``~``/``−`` and the
    target), the kind, the confidence, the number of evidence trajectories."""
    kind = change_kind(item)
    deleting = kind == "delete"
    change = Text()
    if index in pending.stale:
        change.append("STALE ", style="bold yellow")
    change.append(f"{CHANGE_MARK[kind]} {item_label(item)}", style="bold red" if deleting else "")
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "–"
    return (
        str(index),
        decision_mark(pending.decisions[index].decision),
        change,
        Text("DELETE", style="bold red") if deleting else Text(kind),
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
    approvals: str = "",
) -> Text:
    """``where``: the file the item writes, when the item does not name it (a new memory);
    ``fared``: how the file it edits has fared so far (``fared_text``); ``approvals``: how many of
    the reviewers it needs approved it (``1 of 2 approvals (ana)``), for a two-reviewer item."""
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
    if decision.reviewer and decision.decision != "pending":
        text.append(f" by {decision.reviewer}", style="dim")
    if decision.note:
        text.append(f" — {decision.note}", style="italic")
    if approvals:
        text.append(f"\n{approvals}: two reviewers must approve this change", style="bold yellow")
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


@dataclass(frozen=True)
class PlanValidation:
    """The plan's validation: how many of its cases passed before and after it."""

    cases: int
    before: int
    after: int

    @property
    def change(self) -> str:
        """``+3``, ``−6`` or ``±0``: the sign written out, so the change reads without colour."""
        delta = self.after - self.before
        return f"{'+' if delta > 0 else '±' if delta == 0 else '−'}{abs(delta)}"

    @property
    def labels(self) -> tuple[str, str]:
        """The bars' labels, ``before 6/12`` and ``after 9/12 +3``: the counts beside each bar."""
        return f"before {self.before}/{self.cases}", f"after {self.after}/{self.cases} {self.change}"


def plan_validation(validation: dict[str, Any] | None) -> PlanValidation | None:
    """The plan's validation as its bar chart shows it (None: the plan was not validated)."""
    if not validation or not validation.get("cases"):
        return None
    return PlanValidation(int(validation["cases"]), int(validation["before"]), int(validation["after"]))


def hunks_line(choice: HunkChoice, count: int, approved: list[int] | None = None) -> Text:
    """``hunks: 1 ✓ · 2 ✗ · 3 ✓ — approving (a) takes 1, 3``: what an approval of the item takes
    (``approved``: the hunks an approval already took, said while the marks differ from them)."""
    marks = " · ".join(f"{n} {'✓' if n in choice.taken else '✗'}" for n in range(1, count + 1))
    taken = ", ".join(map(str, sorted(choice.taken))) or "nothing: take a hunk (x) or reject (r)"
    text = Text(f"\nhunks: {marks} — approving (a) takes {taken} ([ ] move, x takes or leaves)")
    if approved is not None and set(approved) != choice.taken:
        text.append(f"; approved so far: {', '.join(map(str, approved))}", style="bold yellow")
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
    written = format_warning(item)
    if written:
        warnings.append(f"⚠ {written}")
    if rejected := marked_line(item):
        warnings.append(f"REJECTED: {rejected} (never approved automatically)")
    if item.metadata.get("leaks"):
        warnings.append(f"LEAK: {', '.join(item.metadata['leaks'])} (never approved automatically)")
    hazards = item.metadata.get(HAZARDS, [])
    warnings += [f"FLAG: {note}" for note in hazards[:UNREAD_SHOWN]]
    if len(hazards) > UNREAD_SHOWN:
        warnings.append(f"FLAG: {len(hazards) - UNREAD_SHOWN} more (never approved automatically)")
    unread = item.metadata.get("unread_lines", [])
    warnings += [f"⚠ {note}" for note in unread[:UNREAD_SHOWN]]
    if len(unread) > UNREAD_SHOWN:  # the header has a few rows: wrapping thousands of notes took 0.3 s
        warnings.append(f"⚠ {len(unread) - UNREAD_SHOWN} more such lines (all: ovtui check)")
    if warnings:
        text.append("\n" + " · ".join(warnings), style="bold yellow")
    text.append_text(contradictions_text(item))
    return text


def contradictions_text(item: PolicyPlanItem) -> Text:
    """Each contradiction as its two lines side by side: the item's and the other experience's,
    and which stands once the reviewer has chosen (never chosen for them)."""
    text = Text()
    for number, finding in enumerate(item.metadata.get(CONTRADICTIONS, [])):
        stands = finding.get("stands")
        text.append(f"\nCONTRADICTS #{number} ", style="bold red")
        text.append(f"this, line {finding['line']}: {finding['rule']}")
        text.append("  ║  ", style="bold")
        text.append(f"{finding['other']}: {finding['other_line']}")
        text.append(f"  ({stands} stands)" if stands else "  (choose which stands)", style="italic")
        if finding.get("by"):
            text.append(f"  — found by the {finding['by']}: {finding.get('why', '')}", style="dim")
    return text


def apply_message(plan_id: str, result: PolicyApplyResult) -> tuple[str, Literal["information", "warning"]]:
    """The kernel's words for what applying did (the CLI prints the same); a warning when an item
    was refused or nothing was applied."""
    message = describe_apply(plan_id, result)
    changed = result.dry_run or result.written_uris or result.deleted_uris
    return message, "warning" if result.item_errors or not changed else "information"


def format_warning(item: PolicyPlanItem) -> str | None:
    """What writing the item's text does when the text quotes the fields marker, found by writing
    it as the apply will and reading it back as ``ovtui check`` does; None when nothing happens to it.

    A body that quotes ``<!-- MEMORY_FIELDS`` is read right by ovtui, but OpenViking takes the first
    marker for the fields comment, so ``ovtui check`` rejects such a file; a writer that escapes
    the marker keeps the file valid and changes how the line is stored. Either is said before apply.
    """
    content = item.after_content
    if item.kind != "upsert" or not content or FIELDS_OPEN not in content:
        return None
    written = render_memory(content, {"memory_type": item.memory_type})
    try:
        memory = parse_memory(written)
    except MemoryFormatError as exc:
        return f"the text quotes '{FIELDS_OPEN}': the file written would not read back ({exc.reason})"
    quoted = quoted_marker_line(memory, written)
    if quoted is not None:
        return (
            f"line {quoted} quotes '{FIELDS_OPEN}': applying writes a file `ovtui check` rejects "
            "(OpenViking would take it for the fields comment); quote it without the '<!--'"
        )
    typed = normalise_content(content).splitlines()
    stored = written[: written.rindex(FIELDS_OPEN)].rstrip().splitlines()
    changed = [(n, now) for n, (was, now) in enumerate(zip(typed, stored, strict=False), 1) if was != now]
    if changed:
        number, now = changed[0]
        return f"line {number} quotes '{FIELDS_OPEN}': it is stored escaped, as {now.strip()!r}"
    if memory.content != normalise_content(content):
        return f"the text quotes '{FIELDS_OPEN}': it reads back changed after it is written"
    return None


# Files an Apply confirmation names one by one; the rest are counted (the dialog fits 24 rows).
APPLY_FILES_SHOWN = 6


def apply_preview(pending: PendingPlan, where: Callable[[PolicyPlanItem], str], *, dry_run: bool) -> str:
    """What applying the plan will write, for the confirmation before it: the approved files by
    change, what is left out, and the warnings a person should see before saying yes."""
    approved = [
        (index, item)
        for index, (item, decision) in enumerate(zip(pending.plan.items, pending.decisions, strict=True))
        if decision.decision == "approved"
    ]
    kinds = [change_kind(item) for _, item in approved]
    rejected = len(pending.plan.items) - len(approved)
    counts = f"{kinds.count('new')} added, {kinds.count('edit')} updated, {kinds.count('delete')} deleted"
    if not approved:  # nothing to write, so no record either (the toast and the log say the same)
        lines = ["Writes nothing and no History record: no item is approved. The plan is settled."]
    elif dry_run:
        lines = [
            f"DRY RUN: checks {len(approved)} approved item(s) ({counts}) and writes only a dry-run "
            "History record; no memory file changes."
        ]
    else:
        lines = [
            f"Writes {len(approved)} memory file(s): {counts}; and one History record (revert it there)."
        ]
    for (index, item), kind in list(zip(approved, kinds, strict=True))[:APPLY_FILES_SHOWN]:
        lines.append(f"  {CHANGE_MARK[kind]} {where(item)}  (#{index})")
    if len(approved) > APPLY_FILES_SHOWN:
        lines.append(f"  … and {len(approved) - APPLY_FILES_SHOWN} more")
    if rejected:
        lines.append(f"{rejected} rejected item(s) are not written.")
    for index, item in approved:
        if index in pending.stale:
            lines.append(f"⚠ #{index} {item.target_name} is stale: applying refuses it")
        warning = format_warning(item)
        if warning:
            lines.append(f"⚠ #{index} {item.target_name}: {warning}")
    return "\n".join(lines)
