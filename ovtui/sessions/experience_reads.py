"""The experiences a committed session read through its own tool calls, counted as its uses when
it is committed (as OpenViking counts "experiences read during a rollout").

A tool part counts when its tool is a read (``read``, ``multi_read``, ``openviking_read``,
``openviking_multi_read``, ``ov_read``, ``ov_multi_read``, or an MCP server's
``mcp__openviking__read|multi_read`` / ``mcp__plugin_<x>_openviking__read|multi_read``; any case)
and it completed. Its URIs are every ``uri`` / ``uris`` value at any depth of its input; with an
empty input, those of another part of the same call (tool id and name), else those of its output
(JSON). A URI counts when, its home alias expanded, it names an experience of the user
(``memory.experience_uris``) and the output does not say the read failed: ``{"uri": …, "success":
false}`` (a multi-read), ``(nothing found at <uri>)``, or a ``--- START OF <uri> ---`` section that
begins with ``ERROR:``. Each experience counts once per commit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from ovtui.core.bounded_json import parse_json
from ovtui.core.domain import Message, ToolPart
from ovtui.memory.experience_uris import owned_experience_uri

READ_TOOLS = frozenset(
    {"read", "multi_read", "openviking_read", "openviking_multi_read", "ov_read", "ov_multi_read"}
)
_MCP_READ = re.compile(r"mcp__(?:openviking|plugin_.+_openviking)__(?:read|multi_read)")
_MAX_DEPTH = 32  # tool inputs are small JSON objects; a deeper one is not searched further


def is_read_tool(name: str) -> bool:
    lowered = name.lower()
    return lowered in READ_TOOLS or _MCP_READ.fullmatch(lowered) is not None


def _nodes(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` and every value inside it (JSON: objects, arrays, strings, numbers)."""
    yield value
    if depth >= _MAX_DEPTH:
        return
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in inner:
        yield from _nodes(item, depth + 1)


def _uris(value: Any) -> Iterator[str]:
    """Every string under a ``uri`` or ``uris`` key, at any depth."""
    for node in _nodes(value):
        if isinstance(node, dict):
            for key in ("uri", "uris"):
                found = node.get(key)
                if isinstance(found, str):
                    yield found
                elif isinstance(found, list):
                    yield from (u for u in found if isinstance(u, str))


def _failures(value: Any) -> set[str]:
    """The URIs a multi-read's output marks failed (``{"uri": …, "success": false}``)."""
    return {
        node["uri"]
        for node in _nodes(value)
        if isinstance(node, dict) and node.get("success") is False and isinstance(node.get("uri"), str)
    }


def _parsed(output: str) -> Any:
    try:
        return parse_json(output, source="a tool output")
    except ValueError:
        return output


def _failed(output: Any, names: set[str]) -> bool:
    if names & _failures(output):
        return True
    for text in (node for node in _nodes(output) if isinstance(node, str)):
        for name in names:
            if f"(nothing found at {name})" in text:
                return True
            marker = f"--- START OF {name} ---"
            at = text.find(marker)
            while at >= 0:
                if text[at + len(marker) :].lstrip().startswith("ERROR:"):
                    return True
                at = text.find(marker, at + 1)
    return False


def experience_reads(messages: Sequence[Message], user: str) -> list[str]:
    """The experiences of ``user`` that completed read calls in ``messages`` name, in order, once."""
    parts = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    inputs: dict[tuple[str, str], dict[str, Any]] = {}
    for part in parts:
        if part.tool_input:
            inputs.setdefault((part.tool_id, part.tool_name), part.tool_input)
    found: list[str] = []
    for part in parts:
        if part.tool_status != "completed" or not is_read_tool(part.tool_name):
            continue
        output = _parsed(part.tool_output)
        source = part.tool_input or inputs.get((part.tool_id, part.tool_name)) or output
        for raw in _uris(source):
            uri = owned_experience_uri(raw, user)
            if uri is not None and uri not in found and not _failed(output, {raw, uri}):
                found.append(uri)
    return found
