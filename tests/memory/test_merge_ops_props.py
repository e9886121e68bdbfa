"""Merge ops: patch (each SEARCH exactly once), replace, sum, immutable — as properties."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ovtui.core.errors import PatchError
from ovtui.memory.merge_ops import SearchReplace, apply_patch, merge_fields, merge_value, render_blocks
from ovtui.memory.types import MemoryTypeSchema

# Surrogate code points cannot be encoded: never generate them.
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

# Lines without the block markers, so a generated text never looks like a block itself.
line = st.text(
    alphabet=st.characters(blacklist_characters="\x00\n<=>", blacklist_categories=SURROGATES), max_size=20
)
lines = st.lists(line, min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(before=lines, after=lines, index=st.integers(min_value=0), replacement=line)
def test_patch_with_a_unique_search_replaces_exactly_that(
    before: list[str], after: list[str], index: int, replacement: str
) -> None:
    search = "UNIQUE<" + str(index) + ">"
    text = "\n".join([*before, search, *after])
    assume(text.count(search) == 1)
    patched = apply_patch(text, render_blocks([SearchReplace(search, replacement)]))
    assert patched == "\n".join([*before, replacement, *after])


@settings(max_examples=60, deadline=None)
@given(body=lines, missing=line)
def test_patch_whose_search_is_absent_fails(body: list[str], missing: str) -> None:
    text = "\n".join(body)
    search = f"ABSENT[{missing}]"
    assume(search not in text)
    with pytest.raises(PatchError, match="not found"):
        apply_patch(text, render_blocks([SearchReplace(search, "x")]))


@settings(max_examples=60, deadline=None)
@given(body=lines, copies=st.integers(min_value=2, max_value=4))
def test_patch_whose_search_matches_twice_or_more_fails(body: list[str], copies: int) -> None:
    text = "\n".join([*body, *(["TWICE"] * copies)])
    with pytest.raises(PatchError, match=f"found {text.count('TWICE')} times"):
        apply_patch(text, render_blocks([SearchReplace("TWICE", "x")]))


@settings(max_examples=60, deadline=None)
@given(
    current=st.one_of(st.none(), st.text(), st.integers()),
    new=st.one_of(st.text(), st.integers(), st.lists(st.text())),
)
def test_replace_takes_the_new_value(current: object, new: object) -> None:
    assert merge_value("replace", current, new) == new
    assert merge_value("replace", current, None) == current


@settings(max_examples=60, deadline=None)
@given(
    a=st.integers(-(10**9), 10**9) | st.floats(-1e9, 1e9),
    b=st.integers(-(10**9), 10**9) | st.floats(-1e9, 1e9),
)
def test_sum_adds(a: float, b: float) -> None:
    assert merge_value("sum", a, b) == a + b
    assert merge_value("sum", None, b) == b


def test_sum_refuses_non_numbers() -> None:
    with pytest.raises(PatchError, match="sum needs numbers"):
        merge_value("sum", 1, "2")
    with pytest.raises(PatchError):
        merge_value("sum", 1, True)


@settings(max_examples=60, deadline=None)
@given(first=st.text(min_size=1), later=st.text())
def test_immutable_keeps_the_first_value(first: str, later: str) -> None:
    assert merge_value("immutable", None, first) == first
    assert merge_value("immutable", first, later) == first


def test_merge_fields_uses_each_declared_op() -> None:
    schema = MemoryTypeSchema.model_validate(
        {
            "memory_type": "tallies",
            "description": "a type with one field per merge op",
            "directory": "memories/tallies",
            "filename_template": "{name}.md",
            "name_field": "name",
            "fields": [
                {"name": "name", "merge_op": "immutable"},
                {"name": "content", "merge_op": "patch"},
                {"name": "occurrences", "type": "integer", "merge_op": "sum"},
                {"name": "task_signature", "merge_op": "replace"},
            ],
        }
    )
    current = {"name": "refund", "content": "## Request\n- old", "occurrences": 2, "task_signature": "a"}
    proposed = {
        "name": "renamed",
        "content": render_blocks([SearchReplace("- old", "- new")]),
        "occurrences": 3,
        "task_signature": "b",
    }
    merged = merge_fields(schema, current, proposed)
    assert merged == {
        "name": "refund",
        "content": "## Request\n- new",
        "occurrences": 5,
        "task_signature": "b",
    }
