"""A conversation as an OpenViking client sends it (with fields ovtui ignores), for session tests."""

from __future__ import annotations

from typing import Any

CONVERSATION: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "Hi, my name is Ana Ruiz. I prefer window seats. Please cancel order 1234.",
        "role_id": "ignored-by-ovtui",
        "created_at": "2026-11-30T10:00:00Z",
    },
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "Let me look it up."},
            {"type": "context", "uri": "viking://user/default/memories/x.md", "abstract": "ignored"},
            {
                "type": "tool",
                "tool_id": "c1",
                "tool_name": "get_order",
                "tool_uri": "ignored",
                "tool_input": {"order_id": "1234"},
                "tool_output": '{"status": "pending"}',
                "tool_status": "completed",
            },
        ],
    },
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool",
                "tool_id": "c2",
                "tool_name": "cancel_order",
                "tool_input": {"order_id": "1234", "reason": "customer request"},
                "tool_output": "cancelled",
                "tool_status": "completed",
            }
        ],
    },
    {"role": "assistant", "content": "Order 1234 is cancelled."},
]
