"""The look-up tools the extract loop offers a model: read(uri), search(query, memory_type), ls(memory_type).

They are offered as OpenAI function tools when the server supports them, and otherwise through a
``{"tool_calls": [...]}`` JSON convention described in the prompt. Every URI a model passes is
checked with ``WorkspacePaths.path_for`` (nothing outside the workspace can be read) and must lie
in a declared memory type directory.

Spaces: the user's own memories are always reachable; a peer's (``peers/<peer_id>/…``) only for the
peers the loop was given (a session's peers that its MemoryPolicy allows): search and ls take a
``peer_id`` then, and a read of any other peer's file is refused whether it exists or not, so a peer
the policy leaves out is invisible to the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ovtui.core.errors import OvtuiError, UnsafePathError
from ovtui.core.fileformat import MemoryFile
from ovtui.llm.results import ToolCall
from ovtui.memory.search import rank
from ovtui.memory.store import MemoryStore

MAX_LS = 100
MAX_SEARCH = 5
MAX_SNIPPET = 240
MAX_READ_CHARS = 20_000

TOOL_NAMES = ("read", "search", "ls")


# Fields a model never needs to see on a file it may edit.
HIDDEN_FIELDS = frozenset({"version", "memory_type", "updated_at", "created_at", "content"})
MAX_LISTED = 3
MAX_ITEM_CHARS = 80


def _function(name: str, description: str, params: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": params, "required": required},
        },
    }


def tool_specs(memory_types: list[str], peers: Sequence[str] = ()) -> list[dict[str, Any]]:
    kind = {"type": "string", "enum": memory_types}
    space: dict[str, Any] = {}
    if peers:
        space["peer_id"] = {
            "type": "string",
            "enum": list(peers),
            "description": "look in this peer's files instead of the user's own",
        }
    return [
        _function(
            "read",
            "Read one memory file (its fields and full content) by URI.",
            {"uri": {"type": "string"}},
            ["uri"],
        ),
        _function(
            "search",
            "Lexical search over one memory type; returns the best matching files with a snippet.",
            {"query": {"type": "string"}, "memory_type": kind, **space},
            ["query", "memory_type"],
        ),
        _function(
            "ls",
            "List the files of one memory type (URI and name).",
            {"memory_type": kind, **space},
            ["memory_type"],
        ),
    ]


TOOL_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "Look-ups to run before answering (only when the files shown are not enough).",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string", "enum": list(TOOL_NAMES)}, "arguments": {"type": "object"}},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    },
}


def _field_text(value: object) -> str:
    """A field for the model: scalars as they are, a list (links, tags) as a count and a few names."""
    if isinstance(value, list):
        names = [_item_name(v) for v in value[:MAX_LISTED]]
        more = f", … {len(value) - MAX_LISTED} more" if len(value) > MAX_LISTED else ""
        return f"{', '.join(names)}{more}" if value else "none"
    if isinstance(value, dict):
        return f"{len(value)} entries"
    return value if isinstance(value, str) else json.dumps(value)  # JSON's null/true, never Python's


def _item_name(value: object) -> str:
    """One entry of a listed field: a link object by its target's name, a URI by its last path part
    (``…/trajectories/refund_x.md`` → ``refund_x``), anything else as compact JSON."""
    if isinstance(value, dict):
        target = value.get("to_uri") or value.get("uri")
        if not isinstance(target, str):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))[:MAX_ITEM_CHARS]
        value = target
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.rsplit("/", 1)[-1].removesuffix(".md") if "://" in text else text


def render_file(memory: MemoryFile, *, limit: int = MAX_READ_CHARS, whose: str | None = None) -> str:
    """A file as the model sees it: URI (and ``whose`` it is, where that matters), a few fields, and
    the exact content (SEARCH blocks copy it).

    Bookkeeping fields (the version is in the header; updated_at, memory_type) are left out and a
    list such as the trajectory links is a count with a few names: the whole fields JSON of a
    well-linked experience cost about a thousand tokens and told the model nothing it edits.
    """
    fields = "; ".join(
        f"{k}: {_field_text(v)}"
        for k, v in memory.fields.items()
        if k not in HIDDEN_FIELDS and v not in (None, "")
    )
    content = memory.content if len(memory.content) <= limit else memory.content[:limit] + "\n[… truncated]"
    owner = f"; {whose}" if whose else ""
    head = f"=== FILE {memory.uri} (version {memory.version}{owner}) ===\n"
    field_line = f"{fields}\n" if fields else ""
    return f"{head}{field_line}--- content ---\n{content}\n=== END FILE ==="


def check_space(store: MemoryStore, uri: str, peers: Sequence[str]) -> None:
    """Refuse a URI in the space of a peer not in ``peers`` (whether the file exists is not told)."""
    if store.peer_of_uri(uri) not in (None, *peers):
        raise UnsafePathError(f"{uri} is not in the user's memories or those of a peer in this conversation")


class MemoryTools:
    """Runs tool calls against one workspace; ``run`` never raises for a bad request, it explains.
    ``peers``: the peers whose spaces the model may see besides the user's own."""

    def __init__(self, store: MemoryStore, memory_types: list[str], peers: Sequence[str] = ()) -> None:
        self.store = store
        self.memory_types = memory_types
        self.peers = tuple(peers)

    def run(self, call: ToolCall) -> tuple[str, MemoryFile | None]:
        """The text result of one call, and the file it read (``read`` only)."""
        args = call.arguments
        peer = args.get("peer_id")
        try:
            if call.name == "read":
                return self.read(str(args.get("uri", "")))
            if call.name == "search":
                query, memory_type = str(args.get("query", "")), str(args.get("memory_type", ""))
                return self.search(query, memory_type, self.space(peer)), None
            if call.name == "ls":
                return self.ls(str(args.get("memory_type", "")), self.space(peer)), None
        except (OvtuiError, OSError) as exc:
            return f"error: {exc}", None
        return f"error: unknown tool {call.name!r}; the tools are {', '.join(TOOL_NAMES)}", None

    def space(self, peer: object) -> str | None:
        """The peer a look-up asks for (None: the user's own), which must be one of ``peers``."""
        if peer in (None, ""):
            return None
        if peer not in self.peers:
            offered = f"; the peers are {', '.join(self.peers)}" if self.peers else ""
            raise OvtuiError(f"there is no peer {str(peer)[:40]!r} in this conversation{offered}")
        return str(peer)

    def whose(self, uri: str) -> str | None:
        """Whose file ``uri`` is, for the model, when peers are in play (None otherwise)."""
        if not self.peers:
            return None
        peer = self.store.peer_of_uri(uri)
        if peer is None:
            return "the user's own file: an edit carries no peer_id"
        return f'peer {peer}\'s file: an edit carries peer_id "{peer}"'

    def render(self, memory: MemoryFile) -> str:
        return render_file(memory, whose=self.whose(memory.uri) if memory.uri else None)

    def _check_type(self, memory_type: str) -> None:
        if memory_type not in self.store.registry.names():
            raise OvtuiError(f"unknown memory type {memory_type!r}; known: {', '.join(self.memory_types)}")

    def read(self, uri: str) -> tuple[str, MemoryFile | None]:
        check_space(self.store, uri, self.peers)
        self.store.schema_for_uri(uri)  # raises for a path outside the workspace or the memory folders
        memory = self.store.read_uri(uri)
        if memory is None:
            return f"error: there is no file at {uri}", None
        return self.render(memory), memory

    def ls(self, memory_type: str, peer_id: str | None = None) -> str:
        self._check_type(memory_type)
        paths = self.store.list_paths(memory_type, peer_id)
        if not paths:
            whose = f" of peer {peer_id}" if peer_id else ""
            return f"(no {memory_type} files{whose} yet)"
        lines = [self.store.paths.uri_for(p) for p in paths[:MAX_LS]]
        if len(paths) > MAX_LS:
            lines.append(f"[… {len(paths) - MAX_LS} more; use search]")
        return "\n".join(lines)

    def search(
        self, query: str, memory_type: str, peer_id: str | None = None, limit: int = MAX_SEARCH
    ) -> str:
        self._check_type(memory_type)
        report = self.store.load_type(memory_type, peer_id)
        files = [f for f in report.files if f.uri]
        documents = [f"{f.uri} {json.dumps(f.fields)} {f.content}" for f in files]
        hits = [(score, files[i]) for i, score in rank(query, documents, limit=limit)]
        if not hits:
            whose = f" of peer {peer_id}" if peer_id else ""
            return f"(no {memory_type} files{whose} match {json.dumps(query, ensure_ascii=False)})"
        return "\n".join(f"{f.uri} (score {s:.2f}): {_snippet(f.content)}" for s, f in hits)


def tool_requests(data: dict[str, Any]) -> list[ToolCall]:
    """Tool requests written in the JSON convention (for servers without function tools)."""
    return [
        ToolCall(f"json_{i}", str(req.get("name", "")), dict(req.get("arguments") or {}), json.dumps(req))
        for i, req in enumerate(data.get("tool_calls") or [], start=1)
        if isinstance(req, dict)
    ]


def _snippet(content: str) -> str:
    """The start of a file's text on one line (the model reads it: no escapes, no quotes)."""
    flat = " ".join(content.split())
    return flat if len(flat) <= MAX_SNIPPET else f"{flat[:MAX_SNIPPET]}…"


def describe_call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"
