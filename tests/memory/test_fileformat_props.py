"""The memory file format: property round trips, and files exactly as OpenViking writes them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import FIXTURES

from ovtui.core.domain import PolicyStatus
from ovtui.core.fileformat import FIELDS_OPEN, normalise_content, parse_memory, render_memory
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader

# Surrogate code points cannot be encoded: never generate them.
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

FIXTURES = FIXTURES / "openviking"

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# Bodies are Markdown-ish text; they may even quote the trailer's opening marker.
text = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=SURROGATES))
bodies = text | st.builds(lambda a, b: f"{a}\n{FIELDS_OPEN}\n{{}}\n-->\n{b}", text, text)


@settings(max_examples=150, deadline=None)
@given(content=bodies, fields=st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_parse_of_render_is_exact(content: str, fields: dict[str, Any]) -> None:
    text = render_memory(content, fields)
    parsed = parse_memory(text)
    expected = {k: v for k, v in fields.items() if v is not None and k != "content"}
    assert parsed.content == normalise_content(content)
    assert parsed.fields == expected
    # Rendering what was parsed gives the same bytes: the format is a fixed point.
    assert render_memory(parsed.content, parsed.fields) == text


@settings(max_examples=60, deadline=None)
@given(content=bodies)
def test_a_file_without_trailer_is_all_content(content: str) -> None:
    if FIELDS_OPEN in content:
        return
    parsed = parse_memory(content)
    # A file whose lines end in CRLF reads as LF (and is written back with CRLF).
    read = content.replace("\r\n", "\n") if parsed.line_ending == "\r\n" else content
    assert parsed.content == normalise_content(read) and parsed.fields == {}


def _workspace_with_fixtures(root: Path) -> MemoryStore:
    for name, folder in [
        ("reservation_cancellation.md", "experiences"),
        ("refund_status.md", "experiences"),
        ("cancel_reservation_20261129120000.md", "trajectories"),
    ]:
        target = root / "memories" / folder
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / name, target / name)
    return MemoryStore.open(root)


def test_openviking_files_load(tmp_path: Path) -> None:
    store = _workspace_with_fixtures(tmp_path)
    policy_set = ExperienceSetLoader(store).load_sync()
    assert not policy_set.metadata.get("problems")
    by_name = policy_set.by_name()
    cancel, refund = by_name["reservation_cancellation"], by_name["refund_status"]
    assert cancel.status is PolicyStatus.DRAFT and cancel.version == 2
    assert cancel.content.startswith("## Situation\n- Customer asks to cancel")
    assert cancel.metadata["links"][0]["match_text"] == "cancel my booking"
    # No status in the file: OpenViking treats it as production.
    assert refund.status is PolicyStatus.PRODUCTION and refund.version == 5
    assert refund.metadata["active_count"] == 12
    trajectory = store.read(tmp_path / "memories/trajectories/cancel_reservation_20261129120000.md")
    assert trajectory.fields["outcome"] == "success"
    assert trajectory.fields["backlinks"] == cancel.metadata["links"]


def test_our_rendering_has_openviking_shape() -> None:
    for path in sorted(FIXTURES.glob("*.md")):
        original = path.read_text(encoding="utf-8")
        parsed = parse_memory(original, source=path.name)
        rendered = render_memory(parsed.content, parsed.fields)
        # Same bytes: memory_type last, no final newline, as OpenViking writes them.
        assert rendered == original, path.name
        lines = rendered.splitlines()
        assert lines[lines.index(FIELDS_OPEN) - 1] == ""  # body, blank line, trailer
        assert lines[-1] == "-->" and lines[lines.index(FIELDS_OPEN) + 2].startswith('  "')  # indent 2


def test_marker_inside_a_field_value_and_the_body() -> None:
    content = f"How files end:\n{FIELDS_OPEN}\n{{}}\n-->\nthat is all"
    fields = {"note": f'{FIELDS_OPEN}\n{{"x": 1}}\n-->', "version": 1}
    parsed = parse_memory(render_memory(content, fields))
    assert parsed.content == content and parsed.fields == fields
