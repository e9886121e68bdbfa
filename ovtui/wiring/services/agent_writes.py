"""What an agent writes and deletes in its memory (OpenViking's ``content/write`` and ``DELETE fs``):
one memory file at a time, through the one write rule.

A write names a file by its URI; it must lie in the caller's space (its user's memories, or a peer
it may see) and be where a declared memory type keeps its files, by the type's file-name template
(``memories/preferences/<user>/<topic>.md``, ``peers/hermes/memories/preferences/<topic>.md``, …):
anything else is refused naming the URI. The change is a one-item plan applied like every other
(compare-and-swap on the file as read, journaled, all-or-nothing) and recorded in History as a
``write`` record a person can see and revert; a delete keeps the file's text in its record, so a
revert brings it back. With ``[review] agent_writes = "wait"`` the plan is parked for Review
instead and nothing is written until a person approves it.

Modes, as OpenViking's: ``create`` (the file must not exist: 409), ``replace`` (the body; the
fields stay), ``append`` (the body, then the text); a ``replace`` or ``append`` of a file that does
not exist creates it. Answers carry OpenViking's result fields (``uri``, ``root_uri``,
``context_type``, ``mode``, ``created``, ``written_bytes``, …) plus ovtui's ``history_id`` or
``pending_plan``.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ovtui.core.context import ApplyOptions
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.retrieval.access import AccessError, invalid_argument, not_found
from ovtui.storage.paths import HIDDEN_MEMORY_NAMES, split_peer

if TYPE_CHECKING:
    from ovtui.core.fileformat import MemoryFile
    from ovtui.memory.retrieval.access import Located, Visibility
    from ovtui.memory.types import MemoryTypeSchema
    from ovtui.wiring.composition import Composition

WriteMode = Literal["create", "replace", "append"]
WRITE_MODES: tuple[WriteMode, ...] = ("create", "replace", "append")
WRITE_KIND = "write"  # the History record of an agent's write or delete


def already_exists(uri: str) -> AccessError:
    details = {"type": "file", "resource": uri}
    return AccessError("ALREADY_EXISTS", f"File already exists: {uri}", 409, details)


def refused(uri: str, why: str) -> AccessError:
    return invalid_argument(f"{uri}: {why}", {"uri": uri})


@dataclass(frozen=True)
class MemoryTarget:
    """The file a write or a delete names: where it is, its type and name, whose space."""

    located: Located
    schema: MemoryTypeSchema
    peer: str | None
    name: str
    fields: dict[str, Any]


def path_fields(schema: MemoryTypeSchema, inner: str) -> dict[str, str]:
    """The placeholders a file's path fills in the type's template that fits it (``{user}/{topic}.md``
    and ``alice/window_seats.md``: user alice, topic window_seats); {} when none fits segment by
    segment (a template mixing text and placeholders in one segment)."""
    rest = inner[len(schema.directory) + 1 :].removesuffix(".md").split("/")
    for template in schema.templates():
        pieces = template.removesuffix(".md").split("/")
        if len(pieces) != len(rest):
            continue
        found: dict[str, str] = {}
        for piece, value in zip(pieces, rest, strict=True):
            if piece.startswith("{") and piece.endswith("}") and piece.count("{") == 1:
                found[piece[1:-1]] = value
            elif piece != value:
                break
        else:
            return found
    return {}


class AgentWrites:
    def __init__(self, parts: Composition) -> None:
        self.parts = parts

    def target(self, uri: str, visibility: Visibility) -> MemoryTarget:
        """The checked memory file ``uri`` names (nothing is read)."""
        located = self.parts.retrieval.locate(uri, visibility)
        if not located.is_memory or located.rel.rpartition("/")[2] in HIDDEN_MEMORY_NAMES:
            raise refused(located.uri, "only memory files are written or deleted by agents")
        peer, inner = split_peer(located.rel)
        schema = self.parts.store.registry.for_path(located.rel)
        if schema is None:
            declared = ", ".join(sorted(self.parts.store.registry.names()))
            why = f"not where a memory type this workspace declares ({declared}) keeps its files"
            raise refused(located.uri, why)
        fields = path_fields(schema, inner)
        name = fields.get(schema.name_field or "", "") or schema.name_of({}, inner)
        return MemoryTarget(located, schema, peer, name, fields)

    # --- writes --------------------------------------------------------------------------------
    async def write(self, uri: str, content: str, mode: str, visibility: Visibility) -> dict[str, Any]:
        if mode not in WRITE_MODES:
            raise invalid_argument(f"unsupported write mode: {mode} (one of {', '.join(WRITE_MODES)})")
        target = self.target(uri, visibility)
        current = await asyncio.to_thread(self.parts.store.read_uri, target.located.uri)
        if mode == "create" and current is not None:
            raise already_exists(target.located.uri)
        body = content if current is None or mode != "append" else current.content + content
        item = self._item(target, current, "upsert", body)
        answer = await self._apply(item, f"content/write ({mode})")
        return {
            "uri": target.located.uri,
            "root_uri": self._root_uri(target),
            "context_type": "memory",
            "mode": mode if current is not None or mode == "create" else "replace",
            "created": current is None,
            "written_bytes": len(content.encode("utf-8")),
            "content_updated": answer.get("history_id") is not None,
            "semantic_status": "not_refreshed",
            "vector_status": "not_refreshed",
            "semantic_updated": False,
            "vector_updated": False,
            "queue_status": None,
            **answer,
        }

    async def forget(self, uri: str, visibility: Visibility) -> dict[str, Any]:
        target = self.target(uri, visibility)
        current = await asyncio.to_thread(self.parts.store.read_uri, target.located.uri)
        if current is None:
            raise not_found(target.located.uri)
        answer = await self._apply(self._item(target, current, "delete", None), "fs delete")
        return {"uri": target.located.uri, "estimated_deleted_count": 1, **answer}

    def _item(
        self,
        target: MemoryTarget,
        current: MemoryFile | None,
        kind: Literal["upsert", "delete"],
        body: str | None,
    ) -> PolicyPlanItem:
        fields = {k: v for k, v in target.fields.items() if k != target.schema.name_field}
        return PolicyPlanItem(
            kind=kind,
            memory_type=target.schema.memory_type,
            target_name=target.name,
            target_uri=target.located.uri,
            after_content=body,
            before_content=current.content if current is not None else None,
            base_version=current.version if current is not None else None,
            confidence=1.0,
            metadata={"fields": fields, "rationale": "written by an agent through the memory API"},
            peer_id=target.peer,
        )

    async def _apply(self, item: PolicyPlanItem, purpose: str) -> dict[str, Any]:
        plan = PolicyUpdatePlan(items=[item])
        plan.metadata.update(plan_id=uuid.uuid4().hex[:12], source="agent_write")
        if self.parts.config.review.agent_writes == "wait":
            from ovtui.train.review.plans import ItemDecision

            await asyncio.to_thread(self.parts.pending.park, plan, [ItemDecision(item=0)])
            return {"history_id": None, "pending_plan": str(plan.metadata["plan_id"])}
        options = ApplyOptions(kind=WRITE_KIND, purpose=purpose)
        applied = await self.parts.updater(False).apply(plan, None, options)
        if applied.item_errors:
            error = applied.item_errors[0]
            code, status = ("CONFLICT", 409) if error.stale else ("INVALID_ARGUMENT", 400)
            raise AccessError(code, f"{item.target_uri}: {error.message}", status, {"uri": item.target_uri})
        if applied.errors:
            raise OvtuiError("; ".join(applied.errors))
        return {"history_id": applied.history_id, "pending_plan": None}

    def _root_uri(self, target: MemoryTarget) -> str:
        """OpenViking's ``root_uri``: the type's folder (``memories/`` for a one-file type)."""
        return self.parts.store.type_uri(target.schema.memory_type, target.peer)
