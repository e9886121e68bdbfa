"""Every declared memory type: files of every shape OpenViking 0.5.2 writes (the fixtures under
``tests/fixtures/openviking/``, a workspace of memories, a peer's space and a commit's memory_diff)
load, render back to the same bytes and resolve to their type by path; hypothesis round trips of
each type; ``-->`` in every string field survives both ovtui's parser and an OpenViking-style one
(first marker, first ``-->``). With ``OVTUI_OPENVIKING_WORKSPACE`` naming the user folder of a live
OpenViking (``<storage>/viking/default/user/default``), every file it wrote is checked the same way
and against the fixtures' fields."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import FIXTURES

from ovtui.checks.workspace import CheckReport, check_layouts, check_memories
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.fileformat import FIELDS_OPEN, MemoryFile, parse_memory, render_memory
from ovtui.memory.cases import case_from_memory, memory_from_case
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES, MemoryTypeSchema, default_registry
from ovtui.storage.paths import HIDDEN_MEMORY_NAMES, split_peer

WORKSPACE = FIXTURES / "openviking"  # laid out as OpenViking's user folder
FIXTURES = WORKSPACE / "memories"
SPACES = ("memories", "peers")
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


def memory_files(root: Path) -> list[Path]:
    """Every memory file of a user folder laid out as OpenViking's (hidden overview files left out)."""
    found = [p for space in SPACES for p in (root / space).rglob("*.md")]
    return sorted(p for p in found if p.name not in HIDDEN_MEMORY_NAMES)


def fixture_workspace(root: Path) -> MemoryStore:
    for space in SPACES:
        shutil.copytree(WORKSPACE / space, root / space)
    return MemoryStore.open(root)


def loaded(store: MemoryStore, memory_type: str, peer: str | None = None) -> dict[str, MemoryFile]:
    report = store.load_type(memory_type, peer)
    assert not report.problems, report.problems
    return {str(f.uri).rpartition("/memories/")[2]: f for f in report.files}


def test_the_declared_types_and_their_modes() -> None:
    assert REGISTRY.browse_order()[0] == EXPERIENCES
    modes = {name: REGISTRY.get(name).operation_mode for name in REGISTRY.names()}
    assert modes == {
        "cases": "add_only",
        "entities": "upsert",
        "events": "add_only",
        "experiences": "upsert",
        "identity": "upsert",
        "preferences": "upsert",
        "profile": "upsert",
        "soul": "upsert",
        "trajectories": "add_only",
    }
    case_fields = {f.name for f in REGISTRY.get("cases").fields}
    assert {"case_name", "task_signature", "input", "rubric", "evidence"} <= case_fields
    # identity and soul are only extracted for a session whose MemoryPolicy names them
    assert "identity" not in REGISTRY.extracted_from_sessions()
    assert {"identity", "soul"} <= set(REGISTRY.extracted_from_sessions(["identity", "soul"]))


def test_openviking_files_of_every_type_load_and_render_to_the_same_bytes(tmp_path: Path) -> None:
    types_seen: set[str] = set()
    for path in memory_files(WORKSPACE):
        rel = path.relative_to(WORKSPACE).as_posix()
        schema = REGISTRY.for_path(rel)
        assert schema is not None, rel
        original = path.read_text(encoding="utf-8")
        parsed = parse_memory(original, source=rel)
        # the fast path writes its case without memory_type; every other file names its type
        assert parsed.fields.get("memory_type", schema.memory_type) == schema.memory_type, rel
        # memory_type last, no final newline, "-->" escaped: byte for byte what OpenViking wrote.
        assert render_memory(parsed.content, parsed.fields) == original, rel
        types_seen.add(schema.memory_type)
    assert types_seen == set(REGISTRY.names())  # a fixture of every declared type

    store = fixture_workspace(tmp_path)
    food = loaded(store, "preferences")["preferences/caroline/food.md"]
    assert food.fields["user"] == "Caroline" and food.fields["note"] == "meal request --> confirm the code"
    assert "a meal request --> confirm" in food.content
    meal = loaded(store, "preferences", "bob")["preferences/bob/meal.md"]
    assert (meal.fields["peer_id"], meal.fields["user"]) == ("bob", "Bob")
    assert meal.uri == "viking://user/default/peers/bob/memories/preferences/bob/meal.md"
    assert list(loaded(store, "profile", "bob")) == ["profile.md"]
    assert list(loaded(store, "events")) == ["events/2026/11/29/pottery_class.md"]
    assert sorted(loaded(store, "cases")) == [
        "cases/cancel_refundable_booking.md",
        "cases/refund_request_t3.md",
    ]
    assert loaded(store, "identity")["identity.md"].fields["name"] == "Wren"
    assert loaded(store, "soul")["soul.md"].fields["boundaries"] == "Never book or cancel without a yes."
    entity = loaded(store, "entities")["entities/person/caroline.md"]
    assert entity.uri == "viking://user/default/memories/entities/person/caroline.md"
    # a fixture workspace is a clean one: no problem, and every file in OpenViking's layout
    report = CheckReport()
    check_memories(store, report)
    check_layouts(store, report)
    assert report.problems == [] and report.notes == []
    assert report.memory_files["preferences"] == 2 and report.memory_files["profile"] == 2


def test_trajectory_names_carry_the_first_message_time_and_the_archive_hash() -> None:
    for path in (FIXTURES / "trajectories").glob("*.md"):
        fields = parse_memory(path.read_text()).fields
        archive = fields["source_archive_uri"].encode()
        digest = hashlib.sha256(archive).hexdigest()[:16]
        assert re.fullmatch(rf"{fields['trajectory_name']}_\d{{14}}_{digest}\.md", path.name), path.name
        assert {"task_query", "retrieval_anchor", "case_name", "case_uris"} <= set(fields)
        assert "related_case_ids" not in fields  # OpenViking asks its model for them, never stores them


def test_openviking_memory_diff_reads_with_its_skipped_operations() -> None:
    path = WORKSPACE / "sessions/refund_train_3/history/archive_001/memory_diff.json"
    diff = MemoryDiff.model_validate_json(path.read_text())
    assert diff.trace_id == ""  # null without a tracer
    assert (diff.summary.total_adds, diff.summary.total_updates, diff.summary.total_skipped) == (2, 1, 1)
    [skipped] = diff.skipped_operations
    assert (skipped.memory_type, skipped.page_id, skipped.reason_code) == ("events", 101, "invalid_ranges")
    again = json.loads(diff.render())
    assert again["skipped_operations"] == json.loads(path.read_text())["skipped_operations"]


@pytest.mark.skipif(
    not os.environ.get("OVTUI_OPENVIKING_WORKSPACE"),
    reason="set OVTUI_OPENVIKING_WORKSPACE to the user folder of a live OpenViking's storage",
)
def test_files_a_live_openviking_wrote_match_the_fixtures() -> None:
    live = Path(os.environ["OVTUI_OPENVIKING_WORKSPACE"])
    keys: dict[str, list[list[str]]] = {}
    for path in memory_files(WORKSPACE):
        schema = REGISTRY.for_path(path.relative_to(WORKSPACE).as_posix())
        assert schema is not None
        keys.setdefault(schema.memory_type, []).append(list(parse_memory(path.read_text()).fields))
    files = memory_files(live)
    assert files, f"no memory file under {live}"
    for path in files:
        rel = path.relative_to(live).as_posix()
        schema = REGISTRY.for_path(rel)
        assert schema is not None and not schema.holds_former(split_peer(rel)[1]), rel  # OpenViking's layout
        text = path.read_text(encoding="utf-8")
        parsed = parse_memory(text, source=rel)
        assert render_memory(parsed.content, parsed.fields) == text, rel
        # its fields, in OpenViking's order, are those of a fixture of its type
        written = list(parsed.fields)
        assert any([k for k in fixture if k in written] == written for fixture in keys[schema.memory_type]), (
            rel,
            written,
        )


def test_paths_that_are_no_type_are_refused() -> None:
    for rel in (
        "memories/notes.md",
        "memories/unknown/x.md",
        "memories/events/pottery_class.md",  # events live under year/month/day
        "memories/entities/caroline.md",  # entities live under a category
        "memories/preferences/food.txt",
        "memories/preferences/caroline/food/x.md",  # one folder: whose it is
    ):
        assert REGISTRY.for_path(rel) is None, rel
    assert REGISTRY.get("profile").holds("memories/profile.md")
    assert REGISTRY.for_path("memories/identity.md") is REGISTRY.get("identity")


def test_a_preference_in_ovtuis_former_layout_is_still_a_preference() -> None:
    preferences = REGISTRY.get("preferences")
    assert REGISTRY.for_path("memories/preferences/food.md") is preferences
    assert preferences.holds_former("memories/preferences/food.md")
    assert not preferences.holds_former("memories/preferences/caroline/food.md")
    assert preferences.filename("Food", fields={"user": "Caroline"}) == "caroline/food.md"


def test_a_case_memory_becomes_a_training_case_and_back(tmp_path: Path) -> None:
    store = fixture_workspace(tmp_path)
    memory = loaded(store, "cases")["cases/cancel_refundable_booking.md"]
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
    # the fast path's case (a CaseSpec's input and rubric, sorted keys) is a training case too
    spec = case_from_memory(loaded(store, "cases")["cases/refund_request_t3.md"])
    assert spec.input["task_id"] == "3" and spec.rubric.criteria[0].name == "task_success"


def test_a_broken_case_rubric_names_the_file_and_field() -> None:
    memory = parse_memory(render_memory("x", {"case_name": "c", "input": "{}", "rubric": "{not json"}))
    with pytest.raises(Exception, match=r"cases/c.md.*'rubric' is not valid JSON"):
        case_from_memory(memory, source="memories/cases/c.md")


def test_a_missing_version_reads_as_one() -> None:
    event = parse_memory(render_memory("# Summary\nx", {"event_name": "x", "memory_type": "events"}))
    assert "version" not in event.fields and event.version == 1  # as OpenViking reads it


def test_check_flags_a_field_that_names_another_folder_or_file(tmp_path: Path) -> None:
    store = fixture_workspace(tmp_path)
    fields = {"user": "Dana", "topic": "tea", "memory_type": "preferences"}
    (tmp_path / "memories/preferences/caroline/drinks.md").write_text(render_memory("- Tea", fields))
    report = CheckReport()
    check_memories(store, report)
    assert [p.message for p in report.problems] == [
        "user 'Dana' does not match the folder name 'caroline'",
        "topic 'tea' does not match the file name 'drinks'",
    ]


def test_check_flags_a_hand_written_body_quoting_the_fields_marker_and_ovtui_never_writes_one(
    tmp_path: Path,
) -> None:
    store = fixture_workspace(tmp_path)
    quoted = f"How a memory file ends:\n{FIELDS_OPEN}\n{{}}\n-->\nthat is all"
    fields = {"user": "Caroline", "topic": "memory_files", "memory_type": "preferences"}
    by_hand = f'{quoted}\n\n{FIELDS_OPEN}\n{{"user": "Caroline", "topic": "memory_files"}}\n-->'
    (tmp_path / "memories/preferences/caroline/by_hand.md").write_text(by_hand)
    written = tmp_path / "memories/preferences/caroline/memory_files.md"
    written.write_text(render_memory(quoted, fields))  # escaped: no parser takes it for the trailer
    report = CheckReport()
    check_memories(store, report)
    problems = [p for p in report.problems if "quotes a '<!-- MEMORY_FIELDS' marker" in p.message]
    assert [(p.path, p.line) for p in problems] == [("memories/preferences/caroline/by_hand.md", 2)]
    assert parse_memory(written.read_text()).content == quoted  # reads back as written
    assert OPENVIKING_TRAILER.search(written.read_text()).group(1).startswith("{")  # type: ignore[union-attr]
    assert report.memory_files["events"] == 1 and report.memory_files["preferences"] == 4


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
