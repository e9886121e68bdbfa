"""Tolerant parsing of answers and validation against the subset of JSON Schema we generate."""

from __future__ import annotations

import pytest

from ovtui.llm.jsonparse import AnswerFormatError, parse_json_answer, prune, validate
from ovtui.memory.types import default_registry


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2], "b": "x"}',
        '```json\n{"a": [1, 2,], "b": "x",}\n```',
        "{'a': [1, 2], 'b': 'x'}",
        'Here is the answer:\n{"a": [1, 2], "b": "x"}\nHope that helps.',
    ],
)
def test_almost_json_is_parsed(text: str) -> None:
    assert parse_json_answer(text) == {"a": [1, 2], "b": "x"}


@pytest.mark.parametrize("text", ["", "   ", None, "I'm sorry, I cannot help with that."])
def test_prose_and_empty_answers_are_format_errors(text: str | None) -> None:
    with pytest.raises(AnswerFormatError):
        parse_json_answer(text)


SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0, "maximum": 9},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["items"],
    "additionalProperties": False,
}


def test_valid_instance_has_no_problems() -> None:
    assert validate({"items": [{"name": "x", "count": 3, "kind": "a"}]}, SCHEMA) == []


def test_every_problem_is_reported_with_its_path() -> None:
    problems = validate(
        {"items": [{"count": True}, {"name": 1, "count": 12, "kind": "c", "extra": 1}], "more": 1}, SCHEMA
    )
    assert "$.items[0]: required field 'name' is missing" in problems
    assert "$.items[0].count: expected integer, got boolean" in problems
    assert "$.items[1].name: expected string, got integer" in problems
    assert "$.items[1].count: 12 is above the maximum 9" in problems
    assert "$.items[1].kind: 'c' is not one of ['a', 'b']" in problems
    assert any(p.startswith("$.items[1]: unknown field 'extra'") for p in problems)
    assert any(p.startswith("$: unknown field 'more'") for p in problems)


def test_top_level_type_mismatch() -> None:
    assert validate([1], SCHEMA) == ["$: expected object, got array"]


def test_any_of_accepts_either_branch() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert validate("x", schema) == []
    assert validate(3, schema) == []
    assert validate(1.5, schema)[0].startswith("$: matches none")


def test_prune_drops_commentary_keys_and_null_optionals_only() -> None:
    pruned = prune({"items": [{"name": "x", "kind": None, "note": "mine"}], "comment": "hi"}, SCHEMA)
    assert pruned == {"items": [{"name": "x"}]}
    # a required field that is null stays, so validation names it
    assert validate(prune({"items": [{"name": None}]}, SCHEMA), SCHEMA) == [
        "$.items[0].name: expected string, got null"
    ]


def test_generated_operation_schemas_validate_real_answers() -> None:
    schema = default_registry().operations_json_schema(["experiences"])
    answer = {
        "experiences": [
            {"experience_name": "x", "content": "## Situation", "status": "draft", "tags": ["a"]}
        ],
        "delete_uris": [],
    }
    assert validate(answer, schema) == []
    answer["experiences"][0]["status"] = "live"
    assert validate(answer, schema) == [
        "$.experiences[0].status: 'live' is not one of "
        "['draft', 'staging', 'production', 'deprecated', 'archived']"
    ]


@pytest.mark.parametrize(
    "answer",
    [
        '<think>The user wants {"experiences": []}? No: one item.</think>\n{"n": 1}',
        'Okay, I will write {"n": 2} first.</think>{"n": 1}',  # the opening tag dropped by the server
        '<THINKING>\n{"n": 3}\n</THINKING>\n```json\n{"n": 1}\n```',
        '```\n{"n": 1}\n```',
    ],
)
def test_reasoning_and_fences_are_taken_off_before_the_json(answer: str) -> None:
    assert parse_json_answer(answer) == {"n": 1}


def test_an_answer_of_only_reasoning_is_empty() -> None:
    with pytest.raises(AnswerFormatError, match="only reasoning"):
        parse_json_answer('<think>{"n": 2}</think>')
