"""Which experiences a session's own tool calls read, as OpenViking counts them at a commit."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from ovtui.core.domain import Message, ToolPart
from ovtui.sessions.experience_reads import experience_reads, is_read_tool

EXP = "viking://user/default/memories/experiences"


def call(
    name: str,
    tool_input: dict[str, Any] | None = None,
    output: str = "",
    *,
    tool_id: str = "t",
    status: Literal["completed", "error", "pending", "running"] = "completed",
) -> Message:
    part = ToolPart(
        tool_id=tool_id, tool_name=name, tool_input=tool_input or {}, tool_output=output, tool_status=status
    )
    return Message(role="assistant", parts=[part])


@pytest.mark.parametrize(
    ("name", "reads"),
    [
        ("read", True),
        ("Multi_Read", True),
        ("openviking_read", True),
        ("ov_multi_read", True),
        ("mcp__openviking__read", True),
        ("MCP__plugin_acme_openviking__multi_read", True),
        ("mcp__other__read", False),
        ("mcp__plugin__openviking__read", False),
        ("reader", False),
        ("write", False),
    ],
)
def test_read_tools(name: str, reads: bool) -> None:
    assert is_read_tool(name) is reads


def test_uris_at_any_depth_once_each_in_order() -> None:
    messages = [
        call("read", {"request": {"uri": f"{EXP}/b.md", "more": [{"uris": [f"{EXP}/a.md", f"{EXP}/b.md"]}]}}),
        call("openviking_read", {"uri": "viking://~/memories/experiences/c.md"}, tool_id="t2"),
    ]
    assert experience_reads(messages, "default") == [f"{EXP}/b.md", f"{EXP}/a.md", f"{EXP}/c.md"]


def test_an_empty_input_takes_the_same_call_s_other_part_then_the_output() -> None:
    messages = [
        call("read", {"uri": f"{EXP}/a.md"}, tool_id="c1", status="running"),
        call("read", {}, "done", tool_id="c1"),  # the completed part of that call
        call("read", {}, json.dumps({"uri": f"{EXP}/b.md", "content": "…"}), tool_id="c2"),
    ]
    assert experience_reads(messages, "default") == [f"{EXP}/a.md", f"{EXP}/b.md"]


def test_failed_reads_and_other_uris_do_not_count() -> None:
    failed_multi = json.dumps(
        [{"uri": f"{EXP}/a.md", "success": False}, {"uri": f"{EXP}/b.md", "success": True}]
    )
    section = f"--- START OF {EXP}/c.md ---\nERROR: permission denied\n--- END ---"
    messages = [
        call("multi_read", {"uris": [f"{EXP}/a.md", f"{EXP}/b.md"]}, failed_multi),
        call("read", {"uri": f"{EXP}/c.md"}, section, tool_id="t2"),
        call(
            "read",
            {"uri": f"{EXP}/d.md"},
            json.dumps({"text": f"(nothing found at {EXP}/d.md)"}),
            tool_id="t3",
        ),
        call("read", {"uri": f"{EXP}/e.md"}, status="error", tool_id="t4"),
        call(
            "read",
            {
                "uris": [
                    "viking://user/alice/memories/experiences/f.md",
                    f"{EXP}/g.md?v=1",
                    f"{EXP}/.overview.md",
                    "viking://user/default/memories/profile.md",
                ]
            },
            tool_id="t5",
        ),
        call("get_order", {"uri": f"{EXP}/h.md"}, tool_id="t6"),
    ]
    assert experience_reads(messages, "default") == [f"{EXP}/b.md"]
