"""A session as an agent reads it back, in OpenViking's shapes: its context (the live messages a
token budget keeps, some shortened, and the overview of its newest commit), one archive (a
commit's messages with an abstract and an overview), and deleting it.

An archive is complete once its commit wrote ``memory_diff.json``; its overview is made from that
record (what the commit changed) and its messages, deterministically. Messages and the overview
are counted with the same estimate as the session's pending tokens (OpenViking uses one for both),
so budgets mean the same on both servers.
"""

from __future__ import annotations

import shutil
from typing import Any

from ovtui.core.domain import ToolPart
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.retrieval.access import AccessError, not_found
from ovtui.protocols.sessions import TURN_FIELDS, SessionMessage, estimate_tokens, message_tokens
from ovtui.sessions.context_budget import KeptMessage, fit_to_budget
from ovtui.sessions.store import Archive, SessionError, SessionStore
from ovtui.storage import fsio

CHANGES_SHOWN = 20  # changed memories an archive's overview names


def message_body(message: SessionMessage) -> dict[str, Any]:
    """OpenViking's message: id, role, parts, created_at (and peer_id and the turn fields when
    set: an empty turn id or source list is set, as 0.5.2 returns it)."""
    parts = []
    for part in message.parts:
        dumped = part.model_dump(mode="json")
        if dumped.get("type") == "tool":
            dumped = {"tool_uri": "", "skill_uri": "", **dumped}
        parts.append(dumped)
    body: dict[str, Any] = {
        "id": message.id,
        "role": message.role,
        "parts": parts,
        "created_at": message.created_at,
    }
    if message.peer_id:
        body["peer_id"] = message.peer_id
    for name in TURN_FIELDS:
        if (value := getattr(message, name)) is not None:
            body[name] = value
    return body


def _session(store: SessionStore, session_id: str) -> None:
    try:
        store.meta(session_id)
    except SessionError as exc:
        if exc.code == "NOT_FOUND":
            raise not_found(session_id, "session") from None
        raise


def _diff(store: SessionStore, archive: Archive) -> MemoryDiff | None:
    try:
        return store.read_diff(archive)
    except ValueError:  # a record that does not parse: the archive is not a completed one
        return None


def archive_overview(
    store: SessionStore, archive: Archive, diff: MemoryDiff, messages: list[SessionMessage]
) -> str:
    roles = {role: sum(m.role == role for m in messages) for role in ("user", "assistant")}
    ops = diff.operations
    changed = [("added", op.uri, op.memory_type) for op in ops.adds]
    changed += [("updated", op.uri, op.memory_type) for op in ops.updates]
    changed += [("deleted", op.uri, op.memory_type) for op in ops.deletes]
    lines = [
        f"# {archive.name} of session {archive.session_id}",
        "",
        f"- {len(messages)} messages ({roles['user']} from the user, {roles['assistant']} from the agent)",
        f"- committed {diff.extracted_at}" if diff.extracted_at else "- committed",
        f"- memories: {diff.summary.total_adds} added, {diff.summary.total_updates} updated, "
        f"{diff.summary.total_deletes} deleted",
    ]
    lines += [f"  - {how} {memory_type}: {uri}" for how, uri, memory_type in changed[:CHANGES_SHOWN]]
    if len(changed) > CHANGES_SHOWN:
        lines.append(f"  - … {len(changed) - CHANGES_SHOWN} more")
    first_user = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
    if first_user:
        lines.append(f"- opened with: {first_user.strip()[:300]}")
    return "\n".join(lines)


def archive_abstract(archive: Archive, diff: MemoryDiff, messages: list[SessionMessage]) -> str:
    changed = diff.summary.total_adds + diff.summary.total_updates + diff.summary.total_deletes
    return (
        f"Session {archive.session_id}, {archive.name}: {len(messages)} messages; {changed} memories changed."
    )


def _completed(store: SessionStore, session_id: str) -> list[tuple[Archive, MemoryDiff]]:
    return [(a, d) for a in store.archives(session_id) if (d := _diff(store, a)) is not None]


def shown_body(kept: KeptMessage) -> dict[str, Any]:
    """A kept message's body; a tool output that was cut says so, with its stored and shown
    lengths, and a tool input dropped to make room is left out, as OpenViking marks them."""
    body = message_body(kept.shown)
    for stored, shown, part in zip(kept.stored.parts, kept.shown.parts, body["parts"], strict=True):
        if not isinstance(stored, ToolPart) or not isinstance(shown, ToolPart):
            continue
        if stored.tool_input and not shown.tool_input:
            part.pop("tool_input", None)
        if shown.tool_output != stored.tool_output:
            part["tool_output_truncated"] = True
            part["tool_output_original_chars"] = len(stored.tool_output)
            part["tool_output_preview_chars"] = len(shown.tool_output)
    return body


def session_context(store: SessionStore, session_id: str, token_budget: int) -> dict[str, Any]:
    """The live messages ``token_budget`` keeps (OpenViking's turn-aware rule: see
    ``context_budget``), and the newest completed archive's overview when it fits what the
    messages left."""
    _session(store, session_id)
    kept = fit_to_budget(store.messages(session_id), token_budget)
    used = sum(message_tokens(k.shown) for k in kept)
    archives = store.archives(session_id)
    completed = _completed(store, session_id)
    overview, overview_tokens = "", 0
    if completed:
        archive, diff = completed[-1]
        text = archive_overview(store, archive, diff, store.messages(session_id, archive))
        if used + (cost := estimate_tokens(text)) <= token_budget:
            overview, overview_tokens = text, cost
    return {
        "latest_archive_overview": overview,
        "pre_archive_abstracts": [],
        "messages": [shown_body(k) for k in kept],
        "estimatedTokens": used + overview_tokens,
        "stats": {
            "totalArchives": len(archives),
            "includedArchives": 0,
            "droppedArchives": len(archives),
            "failedArchives": 0,
            "activeTokens": used,
            "archiveTokens": overview_tokens,
        },
    }


def session_archive(store: SessionStore, session_id: str, archive_id: str) -> dict[str, Any]:
    """One completed archive: its messages, abstract and overview."""
    _session(store, session_id)
    for archive, diff in _completed(store, session_id):
        if archive.name == archive_id:
            messages = store.messages(session_id, archive)
            return {
                "archive_id": archive.name,
                "abstract": archive_abstract(archive, diff, messages),
                "overview": archive_overview(store, archive, diff, messages),
                "messages": [message_body(m) for m in messages],
            }
    raise AccessError("NOT_FOUND", f"Archive {archive_id} not found", 404, None)


def delete_session(store: SessionStore, session_id: str) -> None:
    """Remove the session's whole folder (its memories stay: they are the user's now)."""
    _session(store, session_id)
    folder = store.folder(session_id)
    with store.locked(session_id):
        shutil.rmtree(fsio.contained(folder, root=store.paths.root))
