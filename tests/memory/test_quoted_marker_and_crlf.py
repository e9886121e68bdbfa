"""A person's text that quotes the fields marker is escaped where ovtui writes it and reads back as
written (``ovtui check`` finds nothing wrong with ovtui's own file); a file whose lines end in CRLF
reads like any other and is written back with CRLF."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from plan_support import append_line, apply, experience

from ovtui.checks.workspace import check_workspace
from ovtui.cli.main import main
from ovtui.core.domain import Case, Rubric
from ovtui.core.fileformat import FIELDS_OPEN, normalise_content, parse_memory, render_memory
from ovtui.memory.cases import case_from_memory, memory_from_case
from ovtui.memory.store import MemoryStore

QUOTE = f'my notes end with {FIELDS_OPEN}\n{{"secret": 1}}\n--> keep that'
# What OpenViking's parser takes for the trailer: the first marker followed by a line break.
OPENVIKING_TRAILER = re.compile(r"<!-- MEMORY_FIELDS\s*\n(.*?)\n?-->", re.DOTALL)

pieces = st.sampled_from(
    [FIELDS_OPEN, "&lt;!-- MEMORY_FIELDS", "&amp;lt;!-- MEMORY_FIELDS", "&", "<", "\n", "-->", "x"]
)


@given(body=st.lists(pieces, max_size=12).map("".join), value=st.lists(pieces, max_size=8).map("".join))
def test_any_text_quoting_the_marker_reads_back_as_written(body: str, value: str) -> None:
    text = render_memory(body, {"note": value, "memory_type": "experiences"})
    memory = parse_memory(text)
    assert memory.content == normalise_content(body) and memory.fields["note"] == value
    found = OPENVIKING_TRAILER.search(text)
    assert found is not None and '"note"' in found.group(1)  # OpenViking finds the real fields


def test_a_case_quoting_the_marker_passes_ovtuis_own_check(store: MemoryStore) -> None:
    case = Case(name="quoted", task_signature="t", input={"query": QUOTE}, rubric=Rubric(name="r"))
    path = store.paths.memories / "cases" / "quoted.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(memory_from_case(case).render())
    assert check_workspace(store).problems == []
    assert case_from_memory(parse_memory(path.read_text())).input == {"query": QUOTE}
    assert FIELDS_OPEN in parse_memory(path.read_text()).content  # the body shows the input as it was
    assert "&lt;!-- MEMORY_FIELDS" in path.read_text()  # and the file holds it escaped


def test_a_crlf_file_reads_and_is_written_back_with_crlf(store: MemoryStore, tmp_workspace: Path) -> None:
    (name,) = [p.stem for p in sorted(store.list_paths("experiences"))][:1]
    path = store.paths.memories / "experiences" / f"{name}.md"
    lf = path.read_bytes()
    path.write_bytes(lf.replace(b"\n", b"\r\n"))
    memory = experience(store, name)
    assert memory is not None and "\r" not in memory.content
    same = parse_memory(lf.decode())  # the same memory as the LF file
    assert (memory.content, memory.fields) == (same.content, same.fields) and memory.line_ending == "\r\n"
    assert main(["check", str(tmp_workspace)]) == 0
    result = apply(store, append_line(store, name, "- ALWAYS answer in the customer's language"))
    assert result.errors == [] and result.written_uris
    written = path.read_bytes()
    assert written.count(b"\n") == written.count(b"\r\n") > 0
    assert parse_memory(written.decode()).content.endswith("- ALWAYS answer in the customer's language")


def test_the_fields_marker_tells_a_crlf_file_and_a_crlf_in_an_lf_files_body_is_text() -> None:
    lf = render_memory("first\nsecond", {"topic": "t", "memory_type": "experiences"})
    partly = lf.replace("\n", "\r\n").replace("\r\n", "\n", 1)  # one line left as it was
    memory = parse_memory(partly)
    assert (memory.content, memory.fields["topic"], memory.line_ending) == ("first\nsecond", "t", "\r\n")
    body_only = parse_memory("first\r\nsecond\r\n")
    assert (body_only.content, body_only.line_ending) == ("first\nsecond", "\r\n")
    own = render_memory("a\r\nb", {"topic": "t", "memory_type": "experiences"})  # ovtui's LF file
    assert parse_memory(own).content == "a\r\nb" and parse_memory(own).render() == own
