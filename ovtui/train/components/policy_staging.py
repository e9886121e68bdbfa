"""Turn plan items into staged file changes, checking each against the files as they are now.

Runs under the workspace lock and writes nothing: the updater commits what is staged. Each item
is staged all-or-nothing (its target file and the backlinks it adds); an item that fails its
compare-and-swap or is invalid is reported and the other items still go through. Items may target
any declared memory type: where the file lives, its name field and which fields a plan may set
all come from the type's declaration.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ovtui.core.bounds import unreadable_memory
from ovtui.core.domain import ItemError, PolicyPlanItem, PolicyStatus
from ovtui.core.errors import MemoryFormatError, OvtuiError, StaleItemError, UnsafePathError
from ovtui.core.fileformat import MemoryFile, normalise_content, parse_memory
from ovtui.core.names import same_name
from ovtui.memory.links import DERIVED_FROM, RELATED_TO, make_link, merge_links
from ovtui.memory.memory_diff import FileChange, same_memory_file
from ovtui.memory.merge_ops import apply_patch, has_patch_blocks
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import Target, plan_target
from ovtui.memory.types import CASES, EXPERIENCES, MemoryTypeSchema
from ovtui.storage.paths import linkless_path

# Fields a plan item may not set through metadata["fields"]: the updater owns them (and the
# type's name field, which the item's target_name sets).
RESERVED_FIELDS = frozenset({"content", "memory_type", "version", "links", "backlinks"})


@dataclass
class StagedFile:
    uri: str
    memory_type: str
    before: str | None  # the text on disk when staging started (None: absent)
    memory: MemoryFile | None  # the working state (None: to be deleted / absent)
    touched: bool = False
    rendered: str | None = None  # the text of ``memory``, rendered once when it was staged

    def render(self) -> str | None:
        if self.memory is None:
            return None
        if self.rendered is None:
            self.rendered = self.memory.render()
        return self.rendered


@dataclass
class StagedPlan:
    files: dict[str, StagedFile] = field(default_factory=dict)
    targets: set[str] = field(default_factory=set)  # URIs an item targets (the rest only get links)
    item_errors: list[ItemError] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def changes(self) -> list[FileChange]:
        out = []
        for staged in self.files.values():
            if staged.touched:
                after = staged.render()
                if after != staged.before:
                    out.append(FileChange(staged.uri, staged.memory_type, staged.before, after))
        return out


class PlanStager:
    def __init__(self, store: MemoryStore, *, now: Callable[[], datetime]) -> None:
        self.store = store
        self.paths = store.paths
        self.now = now
        self.plan = StagedPlan()
        self._root = str(store.paths.root)

    # --- locations -------------------------------------------------------------------------
    def target(self, item: PolicyPlanItem) -> Target:
        return plan_target(self.store, item, when=self.now())

    def file_target(self, uri: str) -> tuple[str, str]:
        rel = self.paths.relative_of(uri)
        schema = self.store.registry.for_path(rel)
        if schema is None:
            raise UnsafePathError(f"{uri} is not in a known memory type directory")
        return linkless_path(self._root, rel), schema.memory_type

    # --- working state ---------------------------------------------------------------------
    def load(self, uri: str, memory_type: str, path: str) -> StagedFile:
        """The working state of a file (read once per apply; bad files raise and stay untouched)."""
        staged = self.plan.files.get(uri)
        if staged is None:
            rel = uri[len(self.paths.uri_prefix) :]
            try:
                mode = os.stat(path).st_mode
            except FileNotFoundError:
                text = None
            else:
                if not stat.S_ISREG(mode):
                    raise MemoryFormatError(rel, "is not a regular file")
                text = self.store.read_regular(path, rel)
            memory = None if text is None else parse_memory(text, source=rel, uri=uri)
            staged = StagedFile(uri, memory_type, text, memory)
            self.plan.files[uri] = staged
        return staged

    def _copy(self, staged: StagedFile) -> MemoryFile | None:
        m = staged.memory
        return None if m is None else m.model_copy(update={"fields": dict(m.fields)})

    # --- items -----------------------------------------------------------------------------
    def stage(self, index: int, item: PolicyPlanItem) -> None:
        label = item.target_name or item.target_uri or "?"
        pending: dict[str, tuple[StagedFile, MemoryFile | None]] = {}
        try:
            target = self.target(item)
            if item.kind == "upsert":
                self._upsert(item, target, pending)
            elif item.kind == "delete":
                self._delete(item, target, pending)
            else:
                raise OvtuiError(f"unknown plan item kind {item.kind!r}")
        except StaleItemError as exc:
            self.plan.item_errors.append(ItemError(item=index, target=label, message=str(exc), stale=True))
            return
        except (OvtuiError, OSError) as exc:
            self.plan.item_errors.append(ItemError(item=index, target=label, message=str(exc)))
            return
        texts: list[str | None] = []
        for staged, memory in pending.values():
            first_write = not staged.touched
            if (
                first_write
                and memory is not None
                and staged.memory is not None
                and "version" in memory.fields
            ):
                memory.fields["version"] = staged.memory.version + 1
            texts.append(None if memory is None else memory.render())
            unreadable = unreadable_memory(staged.uri[len(self.paths.uri_prefix) :], texts[-1])
            if unreadable:
                self.plan.item_errors.append(ItemError(item=index, target=label, message=unreadable))
                return
        for (staged, memory), text in zip(pending.values(), texts, strict=True):
            staged.memory, staged.touched, staged.rendered = memory, True, text
        self.plan.targets.add(target.uri)

    def _check_base(self, item: PolicyPlanItem, staged: StagedFile, rel: str) -> None:
        current = staged.memory
        conflict = item.base_conflict(
            current.content if current else None,
            current.version if current else None,
            exists=current is not None,
        )
        if conflict:
            raise StaleItemError(f"{rel} {conflict}")

    def _upsert(
        self, item: PolicyPlanItem, target: Target, pending: dict[str, tuple[StagedFile, MemoryFile | None]]
    ) -> None:
        schema, uri, rel = target.schema, target.uri, target.rel
        staged = self.load(uri, schema.memory_type, target.path)
        self._check_base(item, staged, rel)
        if item.after_content is None:
            raise OvtuiError(f"{rel}: upsert item has no after_content")
        current = self._copy(staged)
        if current is not None and schema.operation_mode == "add_only":
            raise OvtuiError(f"{rel} already exists and {schema.memory_type} files are add-only")
        after = item.after_content
        if current is not None and has_patch_blocks(after):
            after = apply_patch(current.content, after)
        if current is None:
            # A new file names whose it is where its type says so (a preference's ``user``).
            fields: dict[str, Any] = schema.filled({}, self.store.owner(item.peer_id))
            fields.update(memory_type=schema.memory_type, version=1)
            if schema.name_field is not None:
                fields[schema.name_field] = target.name
            if schema.field("status") is not None:
                fields["status"] = PolicyStatus.DRAFT.value
        else:
            fields = current.fields
            fields["version"] = current.version  # bumped once per apply when committed
            key = schema.name_field
            named = fields.get(key) if key else None
            if key and not (isinstance(named, str) and same_name(named, target.name)):
                fields[key] = target.name  # the file is the memory: its name field follows
        self._apply_metadata(item, schema, fields, rel)
        links, backlinks = self._stage_links(item, uri, pending)
        if links:
            fields["links"] = merge_links(fields.get("links"), links)
        if backlinks:
            fields["backlinks"] = merge_links(fields.get("backlinks"), backlinks)
        memory = MemoryFile(uri=uri, content=normalise_content(after), fields=fields)
        if current is not None:
            memory.line_ending = current.line_ending  # written back as it came (CRLF stays CRLF)
        if staged.memory is not None and same_memory_file(staged.memory, memory):
            # Nothing to write here; a backlink missing on a trajectory is still mirrored.
            self.plan.unchanged.append(uri)
        else:
            pending[uri] = (staged, memory)

    def _apply_metadata(
        self, item: PolicyPlanItem, schema: MemoryTypeSchema, fields: dict[str, Any], rel: str
    ) -> None:
        extra = item.metadata.get("fields") or {}
        if not isinstance(extra, dict):
            raise OvtuiError(f"{rel}: item metadata 'fields' must be an object")
        status = item.metadata.get("status", extra.get("status"))
        status_decl = schema.field("status")
        if status is not None and (status_decl is None or str(status) not in (status_decl.enum or [status])):
            raise OvtuiError(f"{rel}: {schema.memory_type} has no status {status!r}")
        for key, value in extra.items():
            if key not in RESERVED_FIELDS and key != schema.name_field:
                decl = schema.field(key)
                if decl is not None and decl.merge_op == "immutable" and key in fields:
                    continue  # the first value written stays
                fields[key] = value
        if status is not None:
            fields["status"] = str(status)

    def _stage_links(
        self, item: PolicyPlanItem, uri: str, pending: dict[str, tuple[StagedFile, MemoryFile | None]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The links of ``uri`` to its evidence trajectories (mirrored as their backlinks), and the
        backlinks of ``uri`` from the case files those trajectories ran (which link to both)."""
        links: list[dict[str, Any]] = []
        backlinks: list[dict[str, Any]] = []
        if not item.evidence_trajectory_uris:
            return links, backlinks
        created = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        weight = 1.0 if item.confidence is None else round(float(item.confidence), 4)
        match_text = (
            item.metadata.get("match_text") if isinstance(item.metadata.get("match_text"), str) else None
        )
        # An experience derives from its trajectories; a case names them as what its runs produced.
        link_type = RELATED_TO if item.metadata.get("link_type") == RELATED_TO else DERIVED_FROM
        for evidence in dict.fromkeys(item.evidence_trajectory_uris):
            path, memory_type = self.file_target(evidence)  # unsafe URIs fail the item
            if memory_type == EXPERIENCES:
                raise OvtuiError(f"evidence {evidence} is an experience, not a trajectory")
            trajectory = self._existing(evidence, memory_type, path)
            if trajectory is None:
                continue
            link = make_link(
                uri,
                evidence,
                link_type=link_type,
                weight=weight,
                match_text=match_text,
                created_at=created,
            )
            links.append(link)
            self._add_relations(evidence, trajectory, pending, backlinks=[link])
            for case_uri in _case_uris(trajectory):
                if case_uri == uri:
                    continue  # the case itself, linking to its own run
                backlinks += self._link_case(case_uri, evidence, trajectory, uri, created, pending)
        return links, backlinks

    def _existing(self, uri: str, memory_type: str, path: str) -> StagedFile | None:
        """The staged file at ``uri`` when it exists and parses; else a warning and None."""
        try:
            staged = self.load(uri, memory_type, path)
        except OvtuiError as exc:
            self.plan.warnings.append(f"link to {uri} skipped: {exc}")
            return None
        if staged.memory is None:
            self.plan.warnings.append(f"link to {uri} skipped: the file does not exist")
            return None
        return staged

    def _add_relations(
        self,
        uri: str,
        staged: StagedFile,
        pending: dict[str, tuple[StagedFile, MemoryFile | None]],
        *,
        links: list[dict[str, Any]] | None = None,
        backlinks: list[dict[str, Any]] | None = None,
    ) -> None:
        """Merge links/backlinks into the working copy of ``uri``; staged only when they are new."""
        current = pending[uri][1] if uri in pending else self._copy(staged)
        assert current is not None
        changed = False
        for key, new in (("links", links), ("backlinks", backlinks)):
            if new:
                merged = merge_links(current.fields.get(key), new)
                if merged != current.fields.get(key):
                    current.fields[key] = merged
                    changed = True
        if changed:
            pending[uri] = (staged, current)

    def _link_case(
        self,
        case_uri: str,
        trajectory_uri: str,
        trajectory: StagedFile,
        uri: str,
        created: str,
        pending: dict[str, tuple[StagedFile, MemoryFile | None]],
    ) -> list[dict[str, Any]]:
        """The case file a trajectory ran links to that trajectory and to ``uri``, which the
        trajectory now feeds (mirrored as backlinks); returns the backlink for ``uri``."""
        try:
            path, memory_type = self.file_target(case_uri)
        except UnsafePathError as exc:
            self.plan.warnings.append(f"link from {case_uri} skipped: {exc}")
            return []
        if memory_type != CASES:
            self.plan.warnings.append(f"link from {case_uri} skipped: not a case file")
            return []
        case = self._existing(case_uri, memory_type, path)
        if case is None:
            return []
        to_trajectory = make_link(case_uri, trajectory_uri, link_type=RELATED_TO, created_at=created)
        to_target = make_link(case_uri, uri, link_type=RELATED_TO, created_at=created)
        self._add_relations(case_uri, case, pending, links=[to_trajectory, to_target])
        self._add_relations(trajectory_uri, trajectory, pending, backlinks=[to_trajectory])
        return [to_target]

    def _delete(
        self, item: PolicyPlanItem, target: Target, pending: dict[str, tuple[StagedFile, MemoryFile | None]]
    ) -> None:
        rel = target.rel
        if item.before_content is None and item.base_version is None:
            raise OvtuiError(
                f"{rel}: a delete needs before_content or base_version (what it was planned against)"
            )
        staged = self.load(target.uri, target.schema.memory_type, target.path)
        self._check_base(item, staged, rel)
        pending[target.uri] = (staged, None)


def _case_uris(trajectory: StagedFile) -> list[str]:
    """The case files a trajectory says it ran (``case_uris``; anything but strings ignored)."""
    assert trajectory.memory is not None
    value = trajectory.memory.fields.get("case_uris")
    return [u for u in dict.fromkeys(value) if isinstance(u, str)] if isinstance(value, list) else []
