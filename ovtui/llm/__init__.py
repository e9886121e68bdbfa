"""The LLM path: one client for OpenAI-compatible endpoints, and the extract loop built on it."""

from ovtui.llm.client import LLMClient
from ovtui.llm.extract_loop import ExtractedDelete, ExtractedOperation, ExtractLoop, ExtractResult
from ovtui.llm.results import ChatReply, LLMResult, RetryPolicy, ToolCall
from ovtui.llm.usage import CallUsage, StageUsage, UsageTracker

__all__ = [
    "CallUsage",
    "ChatReply",
    "ExtractLoop",
    "ExtractResult",
    "ExtractedDelete",
    "ExtractedOperation",
    "LLMClient",
    "LLMResult",
    "RetryPolicy",
    "StageUsage",
    "ToolCall",
    "UsageTracker",
]
