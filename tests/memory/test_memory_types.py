"""Every declared memory type: files of the shape OpenViking writes load, render back to the same
bytes and resolve to their type by path; hypothesis round trips of each type; ``-->`` in every
string field survives both ovtui's parser and an OpenViking-style one (first marker, first ``-->``)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import FIXTURES

from ovtui.checks.workspace import CheckReport, check_memories
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.fileformat import FIELDS_OPEN, parse_memory, render_memory
from ovtui.memory.cases import case_from_memory, memory_from_case
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES, MemoryTypeSchema, default_registry

FIXTURES = FIXTURES / "openviking" / "memories"
REGISTRY = default_registry()
WHEN = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
# How OpenViking finds the fields: the FIRST marker, up to the FIRST "-->" after it.
OPENVIKING_TRAILER = re.compile(r"<!-- MEMORY_FIELDS\s*\n(.*?)\n?-->", re.DOTALL)


def openviking_fields(text: str) -> dict[str, Any]:
    match = OPENVIKING_TRAILER.search(text)
    assert match is not None
    value = json.loads(match.group(1))
    assert isinstance(value, dict)
    return value


def fixture_workspace(root: Path) -> MemoryStore:
    shutil.copytree(FIXTURES, root / "memories")
    return MemoryStore.open(root)


def test_the_declared_types_and_their_modes() -> None:
    assert REGISTRY.browse_order()[0] == EXPERIENCES
    modes = {name: REGISTRY.get(name).operation_mode for name in REGISTRY.names()}
    assert modes == {
        "cases": "add_only",
        "entities": "upsert",
        "events": "add_only",
        "experiences": "upsert",
        "preferences": "upsert",
        "profile": "upsert",
        "trajectories": "add_only",
    }
    case_fields = {f.name for f in REGISTRY.get("cases").fields}
    assert {"case_name", "task_signature", "input", "rubric", "evidence"} <= case_fields


def test_openviking_files_of_every_type_load_and_render_to_the_same_bytes(tmp_path: Path) -> None:
    store = fixture_workspace(tmp_path)
    for path in sorted(FIXTURES.rglob("*.md")):
        rel = "memories/" + path.relative_to(FIXTURES).as_posix()
        schema = REGISTRY.for_path(rel)
        assert schema is not None, rel
        original = path.read_text(encoding="utf-8")
        parsed = parse_memory(original, source=rel)
        assert parsed.fields["memory_type"] == schema.memory_type
        # memory_type last, no final newline, "-->" escaped: byte for byte what OpenViking wrote.
        assert render_memory(parsed.content, parsed.fields) == original, rel
    loaded = {t: store.load_type(t) for t in ("profile", "preferences", "entities", "events", "cases")}
    assert all(len(r.files) == 1 and not r.problems for r in loaded.values()), loaded
    food = loaded["preferences"].files[0]
    assert food.fields["note"] == "meal request --> confirm the code"
    assert "a request --> confirm" in food.content
    event = loaded["events"].files[0]
    assert "version" not in event.fields and event.version == 1  # missing reads as 1, as OpenViking
    assert loaded["entities"].files[0].uri == "viking://user/default/memories/entities/person/caroline.md"


def test_paths_that_are_no_type_are_refused() -> None:
    for rel in (
        "memories/notes.md",
        "memories/unknown/x.md",
        "memories/events/pottery_class.md",  # events live under year/month/day
        "memories/entities/caroline.md",  # entities live under a category
        "memories/preferences/food.txt",
    ):
        assert REGISTRY.for_path(rel) is None, rel
    assert REGISTRY.get("profile").holds("memories/profile.md")


def test_a_case_memory_becomes_a_training_case_and_back(tmp_path: Path) -> None:
    store = fixture_workspace(tmp_path)
    (memory,) = store.load_type("cases").files
    case = case_from_memory(memory)
    assert case.name == "cancel_refundable_booking"
    assert case.input["preconditions"] == ["the booking is refundable"]
    assert case.rubric.criteria[0].name == "confirmed_first" and case.rubric.criteria[0].required
    again = memory_from_case(case, evidence=memory.fields["evidence"])
    parsed = parse_memory(again.render())
    # input and rubric stay JSON strings, as OpenViking declares them
    assert isinstance(parsed.fields["input"], str) and isinstance(parsed.fields["rubric"], str)
    back = case_from_memory(parsed)
    assert back.model_dump(exclude={"metadata"}) == case.model_dump(exclude={"metadata"})


def test_a_broken_case_rubric_names_the_file_and_field() -> None:
    memory = parse_memory(render_memory("x", {"case_name": "c", "input": "{}", "rubric": "{not json"}))
    with pytest.raises(Exception, match=r"cases/c.md.*'rubric' is not valid JSON"):
        case_from_memory(memory, source="memories/cases/c.md")


def test_check_flags_a_hand_written_body_quoting_the_fields_marker_and_ovtui_never_writes_one(
    tmp_path: Path,
) -> None:
    store = fixture_workspace(tmp_path)
    quoted = f"How a memory file ends:\n{FIELDS_OPEN}\n{{}}\n-->\nthat is all"
    fields = {"topic": "memory_files", "memory_type": "preferences"}
    by_hand = f'{quoted}\n\n{FIELDS_OPEN}\n{{"topic": "memory_files"}}\n-->'
    (tmp_path / "memories/preferences/by_hand.md").write_text(by_hand)
    written = tmp_path / "memories/preferences/memory_files.md"
    written.write_text(render_memory(quoted, fields))  # escaped: no parser takes it for the trailer
    report = CheckReport()
    check_memories(store, report)
    problems = [p for p in report.problems if "quotes a '<!-- MEMORY_FIELDS' marker" in p.message]
    assert [(p.path, p.line) for p in problems] == [("memories/preferences/by_hand.md", 2)]
    assert parse_memory(written.read_text()).content == quoted  # reads back as written
    assert OPENVIKING_TRAILER.search(written.read_text()).group(1).startswith("{")  # type: ignore[union-attr]
    assert report.memory_files["events"] == 1 and report.memory_files["profile"] == 1


# --- hypothesis: every declared type ------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
texts = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=SURROGATES), max_size=30
)
# Values that stress the trailer: the closing marker and the opening one inside a field.
tricky = st.sampled_from(["a --> b", "-->", f"{FIELDS_OPEN}\n{{}}\n-->", "--\\u003e", ""]) | texts


def value_for(decl_type: str) -> st.SearchStrategy[Any]:
    return {
        "string": tricky,
        "integer": st.integers(min_value=-(2**40), max_value=2**40),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
        "array": st.lists(tricky, max_size=3),
        "object": st.dictionaries(names, tricky, max_size=3),
    }[decl_type]


@st.composite
def memories(draw: st.DrawFn, schema: MemoryTypeSchema) -> tuple[str, str, dict[str, Any]]:
    fields: dict[str, Any] = {}
    for decl in schema.fields:
        if decl.name == "content":
            continue
        if decl.name in schema.placeholders():
            fields[decl.name] = draw(names)  # it becomes a path component
        elif decl.enum:
            fields[decl.name] = draw(st.sampled_from(decl.enum))
        elif decl.required or draw(st.booleans()):
            fields[decl.name] = draw(value_for(decl.type))
    fields["version"] = draw(st.integers(min_value=1, max_value=10_000))
    fields["memory_type"] = schema.memory_type
    name = fields.get(schema.name_field) if schema.name_field else None
    rel = f"{schema.directory}/{schema.filename(name, fields=fields, when=WHEN)}"
    return rel, draw(texts), fields


@pytest.mark.parametrize("memory_type", REGISTRY.names())
def test_every_declared_type_round_trips(memory_type: str) -> None:
    schema = REGISTRY.get(memory_type)

    @settings(max_examples=40, deadline=None)
    @given(memory=memories(schema))
    def round_trip(memory: tuple[str, str, dict[str, Any]]) -> None:
        rel, content, fields = memory
        assert REGISTRY.for_path(rel) is schema
        text = render_memory(content, fields)
        parsed = parse_memory(text)
        assert parsed.fields == fields and parsed.version == fields["version"]
        assert render_memory(parsed.content, parsed.fields) == text
        # OpenViking's reader (first marker, first "-->") gets the very same fields.
        assert openviking_fields(text) == fields

    round_trip()


@pytest.mark.parametrize("memory_type", REGISTRY.names())
def test_arrow_in_every_string_field_is_escaped_and_read_back(memory_type: str) -> None:
    schema = REGISTRY.get(memory_type)
    strings = [d.name for d in schema.fields if d.type == "string" and d.name != "content" and not d.enum]
    fields: dict[str, Any] = {name: f"{name} --> next" for name in strings}
    fields["memory_type"] = memory_type
    text = render_memory("content --> body", fields)  # content is the body, before the trailer
    trailer = text[text.index(FIELDS_OPEN) :]
    assert trailer.count("-->") == 1 and trailer.endswith("\n-->")  # only the closing marker is raw
    parsed = parse_memory(text)
    assert parsed.fields == fields and parsed.content == "content --> body"
    assert openviking_fields(text) == fields


def test_plans_parked_in_the_old_format_still_load() -> None:
    old = {
        "kind": "upsert_experience",
        "target_experience_name": "refund_status",
        "target_experience_uri": "viking://user/default/memories/experiences/refund_status.md",
        "after_content": "x",
    }
    item = PolicyPlanItem.model_validate_json(json.dumps(old))
    assert (item.kind, item.memory_type, item.target_name) == ("upsert", EXPERIENCES, "refund_status")
    assert item.target_uri is not None and item.target_uri.endswith("refund_status.md")
    assert (
        PolicyPlanItem.model_validate({"kind": "delete_experience", "target_experience_name": "a"}).kind
        == "delete"
    )


def test_check_flags_a_case_memory_that_is_no_training_case(tmp_path: Path) -> None:
    store = fixture_workspace(tmp_path)
    fields = {"case_name": "broken", "task_signature": "x", "input": "{}", "rubric": "[1, 2]"}
    (tmp_path / "memories/cases/broken.md").write_text(
        render_memory("# broken", {**fields, "memory_type": "cases"})
    )
    report = CheckReport()
    check_memories(store, report)
    cases = [(p.path, p.message) for p in report.problems if p.path.startswith("memories/cases/")]
    assert cases == [
        ("memories/cases/broken.md", "not a training case: case field 'rubric' must hold a JSON object")
    ]
