"""Remote training, local review: the experiences a session server changed, parked here as a plan.

After the ``session-commit`` trainer's commits, each finished task names the commit's
``memory_diff.json`` on the server; the experience operations in them (adds, updates, deletes of
the user's own ``memories/experiences/<name>.md``) name the files the server changed, and each such
file becomes one item of a pending plan of this workspace, so a person reviews what the server
learned, applying writes it here and ``eval`` measures it. What an item writes is the file's text
on the server now (read through its content API; gone there: a delete) — the diffs' own results
are used only when that read fails, because OpenViking 0.5.2 lists a file that concurrent commits
trained in one batch in each of their diffs, in one of them with an empty text.

An item's base is checked against the local files: the local file is the base when it is where
one of the server's operations on that file started — the text an update or a delete started from
(``before``, ``deleted_content``), or no file for an add. The item then takes the local file to
the server's text. A local file already holding that text is left alone (already here); any other
local file is a conflict — the server changed a text this workspace does not have — left out with
the reason, never overwritten. The item is based on the local file's content and version, so
applying it compare-and-swaps as every plan does (a local edit made after parking is refused
then). Bodies are compared as stored (trailing blank lines aside); a text with a MEMORY_FIELDS
trailer (ovtui's own diffs) is compared by its body, the way OpenViking's diffs hold it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.core.domain import Case, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import MemoryFormatError, OvtuiError, UnsafePathError, first_problem
from ovtui.core.fileformat import normalise_content, parse_memory
from ovtui.core.names import validate_name
from ovtui.memory.memory_diff import Operations
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.leaks import mark_leaks
from ovtui.train.review.gates.sanitizer import mark_plan_hazards
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

# The user's own experiences on an OpenViking-compatible server: viking://user/<user>/memories/...
_OWN_EXPERIENCES = "/memories/experiences/"


@dataclass(frozen=True)
class RemoteDiff:
    """What the review reads of a server's memory_diff.json: when it was made and its operations
    (OpenViking writes ``trace_id: null`` and keys ovtui's records lack: only these two are read)."""

    uri: str
    extracted_at: str
    operations: Operations


@dataclass(frozen=True)
class RemoteOperation:
    """One operation of a server's diff on an experience (None: no file, before or after)."""

    before: str | None
    after: str | None
    diff_uri: str


@dataclass
class RemoteFile:
    """An experience file the server's diffs changed: its operations in the server's order, and
    its text there now once read (``gone``: deleted there; ``read_error``: the read failed)."""

    name: str
    uri: str
    operations: list[RemoteOperation] = field(default_factory=list)
    text: str | None = None
    gone: bool = False
    read_error: str | None = None

    def result(self) -> tuple[str | None, str | None]:
        """What the server holds (None: no file) and why not, when that is unknown."""
        if self.gone:
            return None, None
        if self.text is not None:
            return (self.text, None) if self.text.strip() else (None, "the server's file is empty")
        known = [op.after for op in self.operations if op.after is None or op.after.strip()]
        if known:  # the read failed: the last result the diffs hold
            return known[-1], None
        return None, f"its text could not be read ({self.read_error or 'not read'}) and the diffs hold none"


@dataclass
class RemoteReview:
    """What one review of a server's diffs found: the plan parked (if any) and what was left out."""

    plan_id: str | None = None
    items: int = 0
    left_out: list[str] = field(default_factory=list)  # "<uri>: <why>"
    already_here: int = 0
    other_changes: int = 0  # operations on other memory types (cases, trajectories): they stay there

    def summary(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "items": self.items,
            "already_here": self.already_here,
            "left_out": self.left_out,
            "other_changes": self.other_changes,
        }


def body_of(text: str) -> str:
    """The body of a memory file's text (ovtui's diffs hold whole files, OpenViking's bodies)."""
    try:
        return parse_memory(text).content
    except MemoryFormatError:
        return normalise_content(text)


def _experience_name(uri: str) -> str:
    """The name of the user's own experience at ``uri``; an error for anything else."""
    head, found, file_name = uri.rpartition(_OWN_EXPERIENCES)
    if not found or "/peers/" in head or "/" in file_name or not file_name.endswith(".md"):
        raise UnsafePathError("not an experience of the user's own space")
    return validate_name(file_name.removesuffix(".md"), what="experience name")


def read_diff(text: str, diff_uri: str) -> RemoteDiff:
    try:
        document = parse_json(text, source=diff_uri)
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        operations = Operations.model_validate(document.get("operations") or {})
    except ValidationError as exc:
        problem = first_problem(exc, "operations")
        raise OvtuiError(f"{diff_uri}: not a memory_diff: operations: {problem}") from None
    except JsonError as exc:
        raise OvtuiError(f"{diff_uri}: not a memory_diff: {exc.reason}") from None
    except ValueError as exc:
        raise OvtuiError(f"{diff_uri}: not a memory_diff: {exc}") from None
    return RemoteDiff(diff_uri, str(document.get("extracted_at") or ""), operations)


def changed_experiences(diffs: list[RemoteDiff], review: RemoteReview) -> list[RemoteFile]:
    """The experience files ``diffs`` changed, each with its operations in the order the server
    made them (the diffs by ``extracted_at``); other types are counted, unusable entries left out."""
    files: dict[str, RemoteFile] = {}
    for diff in sorted(diffs, key=lambda d: d.extracted_at):
        ops = diff.operations
        entries: list[tuple[str, str, str | None, str | None]] = [
            *((o.uri, o.memory_type, None, o.after) for o in ops.adds),
            *((o.uri, o.memory_type, o.before, o.after) for o in ops.updates),
            *((o.uri, o.memory_type, o.deleted_content, None) for o in ops.deletes),
        ]
        for uri, memory_type, before, after in entries:
            if (memory_type or EXPERIENCES) != EXPERIENCES or (
                not memory_type and _OWN_EXPERIENCES not in uri
            ):
                review.other_changes += 1
                continue
            try:
                name = _experience_name(uri)
            except UnsafePathError as exc:
                review.left_out.append(f"{uri}: {exc}")
                continue
            operation = RemoteOperation(
                before=None if before is None else body_of(before),
                after=None if after is None else body_of(after),
                diff_uri=diff.uri,
            )
            files.setdefault(name, RemoteFile(name, uri)).operations.append(operation)
    return list(files.values())


@dataclass(frozen=True)
class _Local:
    uri: str
    content: str | None
    version: int | None


def _same(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return normalise_content(a) == normalise_content(b)


def _item(remote: RemoteFile, local: _Local, after: str | None, server: str) -> PolicyPlanItem:
    source = {
        "server": server,
        "uri": remote.uri,
        "memory_diffs": list(dict.fromkeys(op.diff_uri for op in remote.operations)),
    }
    return PolicyPlanItem(
        kind="delete" if after is None else "upsert",
        target_name=remote.name,
        target_uri=local.uri,
        before_content=local.content,
        after_content=after,
        base_version=local.version,
        metadata={"rationale": f"learned by the session server {server}", "remote": source},
    )


def _file_item(
    store: MemoryStore, remote: RemoteFile, server: str, review: RemoteReview
) -> PolicyPlanItem | None:
    """The item taking the local file to the server's text, or None (the rule above)."""
    after, unknown = remote.result()
    if unknown:
        review.left_out.append(f"{remote.uri}: {unknown}")
        return None
    try:
        uri = store.uri_for_name(EXPERIENCES, remote.name)
        memory = store.read_uri(uri)
    except OvtuiError as exc:  # a local file ovtui cannot read: nothing to base an item on
        review.left_out.append(f"{remote.uri}: the local experience cannot be read: {exc}")
        return None
    local = _Local(uri, None, None) if memory is None else _Local(uri, memory.content, memory.version)
    if _same(after, local.content):
        review.already_here += 1
        return None
    if not any(_same(op.before, local.content) for op in remote.operations):
        base = "no such file here" if local.content is None else "the local file has another text"
        diffs = ", ".join(dict.fromkeys(op.diff_uri for op in remote.operations))
        review.left_out.append(
            f"{remote.uri}: the server changed a text this workspace does not have ({base}; {diffs})"
        )
        return None
    return _item(remote, local, after, server)


def plan_from_files(
    store: MemoryStore, files: list[RemoteFile], server: str, review: RemoteReview
) -> PolicyUpdatePlan:
    """One plan taking the local files to the server's texts."""
    found = (_file_item(store, remote, server, review) for remote in sorted(files, key=lambda f: f.name))
    metadata = {
        "plan_id": uuid.uuid4().hex[:12],
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "backend": f"remote: {server}",
        "source": "session-commit",
        "memory_diffs": sorted({op.diff_uri for f in files for op in f.operations}),
    }
    return PolicyUpdatePlan(items=[item for item in found if item is not None], metadata=metadata)


def park_remote_changes(
    store: MemoryStore,
    pending: PendingPlans,
    files: list[RemoteFile],
    server: str,
    cases: list[Case],
    review: RemoteReview,
) -> RemoteReview:
    """Park the server's changed experience ``files`` as one pending plan, every item undecided;
    items carrying values of ``cases`` are flagged as any plan's are. File work: call it in a thread."""
    plan = plan_from_files(store, files, server, review)
    review.items = len(plan.items)
    if plan.items:
        mark_leaks(plan, cases)
        mark_plan_hazards(plan)
        parked = pending.park(plan, [ItemDecision(item=i) for i in range(len(plan.items))])
        review.plan_id = parked.plan_id
    return review
