"""ExtractLoop: ask a model for memory operations, let it look things up, and check every answer.

One round is one call. The normal case is exactly one call: everything the model needs is
prefetched into the prompt. Beyond that (bounded by ``max_iterations``):

- the model may request look-ups (read / search / ls) instead of answering → run them, next round;
- an edit or delete of an existing file whose text the model has not seen → that file is fetched
  and shown, next round (an edit is only accepted against text the model saw);
- problems that the model can fix — a SEARCH block that does not match exactly once, a uri that
  points at another file than the name designates (never retargeted), an unsafe name or a path
  outside the workspace — get ONE repair message naming each problem exactly; if the corrected
  answer still has problems, ExtractError lists them and nothing is accepted.

Given ``peers`` (a session's peers its MemoryPolicy allows), the model also sees and looks up those
peers' spaces: every file shown says whose it is, and an item's ``peer_id`` edits the peer's file
(``extract_check``); no other peer's file is reachable.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ovtui.core.fileformat import MemoryFile
from ovtui.llm.budget import InputPart, cut_marker, estimate_tokens, fit, prompt_budget, shrink
from ovtui.llm.client import LLMClient
from ovtui.llm.errors import ExtractError
from ovtui.llm.extract_check import (
    DELETES,
    AnswerChecker,
    ExtractedDelete,
    ExtractedOperation,
    ExtractResult,
    ItemCheck,
)
from ovtui.llm.loop_tools import (
    TOOL_REQUEST_SCHEMA,
    MemoryTools,
    describe_call,
    tool_requests,
    tool_specs,
)
from ovtui.llm.results import LLMResult, Messages, ToolCall
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import MemoryTypeRegistry

log = logging.getLogger(__name__)

TOOL_CALLS = "tool_calls"
MESSAGE_OVERHEAD = 16  # the chat format's tokens around the messages and the "## Input" headings


class ExtractLoop:
    def __init__(
        self,
        client: LLMClient,
        store: MemoryStore,
        registry: MemoryTypeRegistry,
        memory_types: list[str],
        max_iterations: int = 3,
        *,
        tools: bool = True,
        allow_deletes: bool = False,
        item_extras: dict[str, dict[str, Any]] | None = None,
        upsert_only_extras: frozenset[str] = frozenset(),
        caller_fields: frozenset[str] = frozenset(),
        item_checks: Mapping[str, ItemCheck] | None = None,
        peers: Sequence[str] = (),
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.client = client
        self.store = store
        self.registry = registry
        self.memory_types = memory_types
        self.schemas = {t: registry.get(t) for t in memory_types}
        self.max_iterations = max_iterations
        self.tools_enabled = tools
        self.allow_deletes = allow_deletes
        # Extra per-item fields a caller wants (rationale, source indices); also on deletes.
        self.item_extras = item_extras or {}
        # Extras that mean nothing on a delete (a merge's contradictions): not offered there.
        self.delete_extras = {k: v for k, v in self.item_extras.items() if k not in upsert_only_extras}
        # Fields the caller fills in itself (a trajectory's case_name, reward): not asked of the model.
        self.caller_fields = caller_fields
        self.peers = tuple(peers)
        self.tools = MemoryTools(store, memory_types, self.peers)
        self.checker = AnswerChecker(store, self.schemas, set(self.item_extras), item_checks, self.peers)
        self._prompts: dict[tuple[str, bool], tuple[dict[str, Any], str]] = {}

    # --- schema and prompt ---
    def answer_schema(self, *, with_tools: bool) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for memory_type, schema in self.schemas.items():
            item = copy.deepcopy(schema.item_json_schema())
            for name in self.caller_fields:
                item["properties"].pop(name, None)
            item["required"] = [r for r in item["required"] if r not in self.caller_fields]
            if schema.operation_mode == "upsert":
                item["properties"]["uri"] = {
                    "type": "string",
                    "description": "only when editing an existing file: its URI, which must be the file "
                    f"that {schema.name_field or 'the type'} designates",
                }
            item["properties"].update(copy.deepcopy(self.item_extras))
            props[memory_type] = {"type": "array", "items": item}
        if self.allow_deletes:
            delete_props = {"uri": {"type": "string", "description": "URI of an existing file to delete"}}
            delete_props.update(copy.deepcopy(self.delete_extras))
            props[DELETES] = {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": delete_props,
                    "required": ["uri"],
                    "additionalProperties": False,
                },
            }
        if with_tools:
            props[TOOL_CALLS] = TOOL_REQUEST_SCHEMA
        # Absent lists mean "nothing of that kind": an empty answer is a valid decision.
        return {"type": "object", "properties": props, "required": [], "additionalProperties": False}

    def _system_prompt(self, instruction: str, with_tools: bool) -> str:
        """Instruction, memory types and rules. The JSON schema is not repeated here: the client
        sends it once, as the response format, or in the prompt where the endpoint refuses that."""
        types = "\n".join(
            f"- {t}: {s.description} {s.naming()}"
            + (" (add-only: every item is a new file)." if s.operation_mode == "add_only" else ".")
            + (
                f"\n  Content template:\n  {s.content_template.replace(chr(10), chr(10) + '  ')}"
                if s.content_template
                else ""
            )
            for t, s in self.schemas.items()
        )
        rules = "Answer with one JSON object. Omit or leave empty a list with nothing to write."
        if any(s.operation_mode != "add_only" for s in self.schemas.values()):
            # How SEARCH/REPLACE blocks work is in the schema's own `content` description: not repeated.
            rules += (
                " To change an existing file use exactly its name (and, if you give one, its uri); its "
                "`content` may also be the complete new text."
            )
        parts = [instruction.strip(), f"## Memory types\n{types}", f"## Answer format\n{rules}"]
        if with_tools:
            parts.append(
                "## Looking things up\nIf the files shown are not enough you may first call the tools "
                "read(uri), search(query, memory_type) or ls(memory_type). Without function calling, answer "
                '{"tool_calls": [{"name": "read", "arguments": {"uri": "..."}}]} instead of operations.'
                + (
                    " search and ls look in the user's own files, or in a peer's given its peer_id."
                    if self.peers
                    else ""
                )
            )
        return "\n\n".join(parts)

    def _fixed_tokens(self, instruction: str) -> int:
        """What the first round spends before its inputs: system prompt, schema, tools."""
        with_tools = self.tools_enabled and self.max_iterations > 1
        schema, system = self._prompt(instruction, with_tools)
        tools = (
            tool_specs(self.memory_types, self.peers) if with_tools and self.client.tools_supported else []
        )
        return (
            sum(estimate_tokens(t) for t in (system, json.dumps(schema), json.dumps(tools)))
            + MESSAGE_OVERHEAD
        )

    def _prompt(self, instruction: str, with_tools: bool) -> tuple[dict[str, Any], str]:
        """Schema and system prompt, built once per instruction: they are the same for every call."""
        key = (instruction, with_tools)
        if key not in self._prompts:
            schema = self.answer_schema(with_tools=with_tools)
            self._prompts[key] = (schema, self._system_prompt(instruction, with_tools))
        return self._prompts[key]

    # --- the loop ---
    async def run(
        self,
        stage: str,
        instruction: str,
        inputs: str | Sequence[InputPart],
        prefetch_uris: list[str],
        *,
        prefetch_files: list[MemoryFile] | None = None,
    ) -> ExtractResult:
        """Operations from the model, checked. ``prefetch_files`` are shown as given (the caller's
        base versions); ``prefetch_uris`` are read from the workspace now. ``inputs``: one text, or
        parts that the context budget cuts by their priority (``ovtui.llm.budget``)."""
        seen: dict[str, MemoryFile] = {}
        for uri in prefetch_uris:
            memory = self.checker.current(uri, {})
            if memory is not None:
                seen[uri] = memory
        for memory in prefetch_files or []:
            if memory.uri:
                seen[memory.uri] = memory
        window = await self.client.context_window()
        room = prompt_budget(window) - self._fixed_tokens(instruction)
        parts = [InputPart(inputs)] if isinstance(inputs, str) else list(inputs)
        fitted = fit(stage, parts, [(u, self.tools.render(m)) for u, m in seen.items()], room, window)
        for uri in fitted.left_out:  # not shown: an edit of one gets it shown in the next round
            del seen[uri]
        shown = fitted.files
        if fitted.left_out:
            shown.append(f"{cut_marker(f'{len(fitted.left_out)} file(s)')}: {', '.join(fitted.left_out)}")
        context = "\n\n".join(shown)
        existing = f"## Existing files\n{context}\n\n" if context else ""
        messages: Messages = [
            {"role": "system", "content": ""},  # filled per round: the schema depends on tool availability
            {"role": "user", "content": f"{existing}## Input\n{fitted.inputs}"},
        ]
        files_read: list[str] = list(seen)
        calls = rounds = prompt_tokens = completion_tokens = 0
        repairing = repaired = False
        schema_name = "_".join(self.memory_types) + "_operations"
        while True:
            if not repairing:
                rounds += 1
            with_tools = self.tools_enabled and rounds < self.max_iterations
            schema, system = self._prompt(instruction, with_tools)
            messages[0] = {"role": "system", "content": system}
            native = (
                tool_specs(self.memory_types, self.peers)
                if with_tools and self.client.tools_supported
                else None
            )
            result = await self.client.complete_json(stage, messages, schema, schema_name, tools=native)
            calls += result.calls
            if not result.cached:
                prompt_tokens += result.usage.prompt_tokens
                completion_tokens += result.usage.completion_tokens
            repairing = False
            data = result.data or {}
            requests = result.tool_calls or tool_requests(data)
            if requests and not any(data.get(k) for k in (*self.memory_types, DELETES)):
                if not with_tools:
                    raise ExtractError(stage, [f"the model still asked for look-ups after {rounds} round(s)"])
                left = room - sum(estimate_tokens(str(m.get("content") or "")) for m in messages[1:])
                self._run_tools(messages, result, requests, seen, files_read, left)
                continue
            checked = self.checker.check(data, seen)
            if checked.unread:
                if rounds >= self.max_iterations:
                    listed = ", ".join(checked.unread)
                    raise ExtractError(
                        stage, [f"edits {listed} without having read it, and no round is left"]
                    )
                self._show_unread(messages, result, checked.unread, seen, files_read)
                continue
            if checked.problems:
                if repaired:
                    raise ExtractError(stage, checked.problems)
                log.info("[%s] %d problem(s) in the answer; one repair round", stage, len(checked.problems))
                messages += [
                    _assistant(result),
                    {"role": "user", "content": _repair_message(checked.problems)},
                ]
                repairing = repaired = True
                continue
            return ExtractResult(
                checked.operations, checked.deletes, files_read, calls, prompt_tokens, completion_tokens
            )

    def _run_tools(
        self,
        messages: Messages,
        result: LLMResult,
        requests: list[ToolCall],
        seen: dict[str, MemoryFile],
        files_read: list[str],
        room: int,
    ) -> None:
        """Run the look-ups; their outputs share the ``room`` left in the context budget (a file
        read is shown whole or cut by lines, and then not taken as read)."""
        outputs: list[tuple[ToolCall, str]] = []
        share = max(room, 0) // max(len(requests), 1)
        for call in requests:
            text, memory = self.tools.run(call)
            if estimate_tokens(text) > share:
                text, memory = shrink(text, share), None
            if memory is not None and memory.uri:
                seen[memory.uri] = memory
                if memory.uri not in files_read:
                    files_read.append(memory.uri)
            outputs.append((call, text))
        if result.tool_calls:  # native: the protocol wants one tool message per call id
            messages.append(
                {
                    "role": "assistant",
                    "content": result.raw or None,
                    "tool_calls": [c.to_message() for c in result.tool_calls],
                }
            )
            messages.extend({"role": "tool", "tool_call_id": c.id, "content": text} for c, text in outputs)
        else:
            body = "\n\n".join(f"### {describe_call(c)}\n{text}" for c, text in outputs)
            messages += [
                _assistant(result),
                {
                    "role": "user",
                    "content": f"Results of your look-ups:\n{body}\n\nNow answer with the operations.",
                },
            ]

    def _show_unread(
        self,
        messages: Messages,
        result: LLMResult,
        unread: dict[str, MemoryFile],
        seen: dict[str, MemoryFile],
        files_read: list[str],
    ) -> None:
        for uri, memory in unread.items():
            seen[uri] = memory
            if uri not in files_read:
                files_read.append(uri)
        shown = "\n\n".join(self.tools.render(m) for m in unread.values())
        messages += [
            _assistant(result),
            {
                "role": "user",
                "content": "You proposed changes to existing files whose current text you had not seen:\n\n"
                f"{shown}\n\nAnswer again with the complete JSON, basing every edit on the text above.",
            },
        ]


def _assistant(result: LLMResult) -> dict[str, Any]:
    return {"role": "assistant", "content": result.raw}


def _repair_message(problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        f"Some operations cannot be applied:\n{listed}\n\nFix exactly these problems and answer again "
        "with the complete JSON (every operation, not only the fixed ones). A SEARCH block must copy text "
        "from the file's current content exactly, including whitespace, and match once; or give the "
        "complete new text instead."
    )


__all__ = ["ExtractLoop", "ExtractResult", "ExtractedDelete", "ExtractedOperation"]
