"""Tolerant parsing of model answers, then validation against our JSON schemas.

Parsing accepts what models commonly produce around JSON: reasoning blocks (``<think>…</think>``)
and a code fence are taken off first, then a sentence before it, trailing commas and single quotes
are repaired by ``json_repair``. Validation covers the subset of JSON Schema
that our generated schemas use — ``type`` (one or a list), ``enum``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``anyOf``, ``minimum``/``maximum`` — and reports every
problem with its JSON path, so the one repair retry can tell the model exactly what to fix.
"""

from __future__ import annotations

import re
from typing import Any

import json_repair

from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.memory.types import JSON_TYPES


class AnswerFormatError(ValueError):
    """Why an answer is not usable JSON; the message is sent back to the model verbatim."""


# A reasoning model's thoughts before its answer (DeepSeek R1, Qwen3, through Ollama or vLLM): they may
# hold braces of their own, so they go before the JSON is looked for.
REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
REASONING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```$", re.S)


def strip_reasoning(text: str) -> str:
    """The answer without its reasoning blocks (one whose opening tag the server dropped too: all up
    to the last closing tag) and without a code fence around it."""
    text = REASONING.sub("", text)
    ends = list(REASONING_END.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    text = text.strip()
    fenced = FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def parse_json_answer(text: str | None) -> Any:
    if text is None or not text.strip():
        raise AnswerFormatError("the answer is empty")
    stripped = strip_reasoning(text)
    if not stripped:
        raise AnswerFormatError("the answer is empty: it holds only reasoning, no JSON object")
    try:
        return parse_json(stripped, source="the answer")
    except JsonError as exc:
        if exc.too_deep:  # no repair makes it shallower
            raise AnswerFormatError(f"the answer is {exc.reason}") from None
    if "{" not in stripped and "[" not in stripped:
        raise AnswerFormatError("the answer is not JSON: it contains no JSON object")
    try:
        value = json_repair.loads(stripped)
    except Exception as exc:  # json_repair raises assorted errors on hopeless input
        raise AnswerFormatError(f"the answer is not JSON and could not be repaired: {exc}") from None
    if value == "" or value is None:
        raise AnswerFormatError("the answer is not JSON: no JSON object could be found in it")
    return value


def _type_ok(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False  # bool is an int in Python, never in JSON
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, JSON_TYPES.get(name, (object,)))


def _describe(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(value, name):
            return name
    return type(value).__name__


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every violation of ``schema`` by ``value``, as ``"<path>: <problem>"`` lines."""
    if "anyOf" in schema:
        branches = [validate(value, branch, path) for branch in schema["anyOf"]]
        if any(not b for b in branches):
            return []
        return [f"{path}: matches none of the allowed shapes ({'; '.join(b[0] for b in branches if b)})"]
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_type_ok(value, n) for n in names):
            return [f"{path}: expected {' or '.join(names)}, got {_describe(value)}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}: required field {key!r} is missing")
        for key, item in value.items():
            if key in props:
                problems.extend(validate(item, props[key], f"{path}.{key}"))
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: unknown field {key!r} (allowed: {sorted(props)})")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problems.extend(validate(item, schema["items"], f"{path}[{index}]"))
    return problems


def prune(value: Any, schema: dict[str, Any]) -> Any:
    """Drop keys a closed object does not declare, and JSON nulls of optional fields.

    Models like to add a commentary key or write ``"status": null``; rejecting those would cost a
    repair call for nothing. Missing, mistyped or malformed fields are still errors.
    """
    if "anyOf" in schema:
        for branch in schema["anyOf"]:
            if not validate(value, branch):
                return prune(value, branch)
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        required = set(schema.get("required", []))
        closed = schema.get("additionalProperties") is False
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in props:
                if item is None and key not in required and not _accepts_null(props[key]):
                    continue
                out[key] = prune(item, props[key])
            elif not closed:
                out[key] = item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"]) for item in value]
    return value


def _accepts_null(schema: dict[str, Any]) -> bool:
    expected = schema.get("type")
    return expected == "null" or (isinstance(expected, list) and "null" in expected)
