"""Names: any name safe as a path is read (CJK, spaces, upper case, as OpenViking writes them), file
names are derived as OpenViking derives them (lower-cased), every name ovtui derives passes its own
reader's checks, and an experience is its file — no file can hold another's name hostage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from plan_support import apply, experience
from workspace_support import experience_uri

from ovtui.checks.workspace import check_workspace
from ovtui.cli.main import main
from ovtui.core.domain import Case, PolicyPlanItem, Rollout, Rubric, RubricEvaluation
from ovtui.core.errors import UnsafePathError
from ovtui.core.fileformat import render_memory
from ovtui.core.names import MAX_NAME_LENGTH, file_stem, slugify, validate_name
from ovtui.memory.store import MemoryStore
from ovtui.train.backends.offline import OfflineTrajectoryExtractor
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer

OPENVIKING_NAMES = ["取消预订", "meal request change", "Seat_Change_Request", "Ünïcode_Café-2"]


@pytest.mark.parametrize("name", OPENVIKING_NAMES)
def test_names_safe_as_paths_are_accepted_in_any_script(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["../x", "a/b", "a\\b", "..", ".hidden", " padded", "trailing.", "a:b", "a\u202eb", "nul", "取" * 70],
)
def test_path_escapes_and_unportable_names_are_still_refused(name: str) -> None:
    with pytest.raises(UnsafePathError):
        validate_name(name)


def test_file_names_are_lower_cased_as_openviking_does(store: MemoryStore) -> None:
    assert file_stem("Seat_Change_Request") == "seat_change_request"
    uri = store.uri_for_name("experiences", "Seat_Change_Request")
    assert uri == experience_uri("seat_change_request")
    assert store.path_for_name("experiences", "Seat_Change_Request").name == "seat_change_request.md"


def _write(store: MemoryStore, file_name: str, name_field: str, body: str = "## Situation\n- x") -> Path:
    path = store.paths.root / "memories" / "experiences" / file_name
    fields = {"experience_name": name_field, "memory_type": "experiences", "version": 1}
    path.write_text(render_memory(body, fields), encoding="utf-8")
    return path


def test_openviking_file_names_load_check_and_update_in_place(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(store, "取消预订.md", "取消预订")
    _write(store, "meal request change.md", "meal request change")
    _write(store, "seat_change_request.md", "Seat_Change_Request")
    loaded = ExperienceSetLoader(store).load_sync()
    names = {p.name: p.uri for p in loaded.policies}
    assert names["取消预订"].endswith("/取消预订.md")
    assert names["meal request change"] == experience_uri("meal request change")
    assert names["Seat_Change_Request"] == experience_uri("seat_change_request")
    assert not loaded.metadata.get("problems")
    assert main(["check", str(store.paths.root)]) == 0, capsys.readouterr().out

    # A plan item for the upper-case name (as a planner builds it from the loaded set) edits that file.
    seat = next(p for p in loaded.policies if p.name == "Seat_Change_Request")
    item = PolicyPlanItem(
        kind="upsert",
        target_name=seat.name,
        target_uri=seat.uri,
        before_content=seat.content,
        base_version=seat.version,
        after_content=seat.content + "\n- ask for the seat map first",
    )
    result = apply(store, item)
    assert not result.errors, result.errors
    files = sorted(p.name for p in (store.paths.root / "memories" / "experiences").iterdir())
    assert files.count("seat_change_request.md") == 1 and "Seat_Change_Request.md" not in files
    updated = experience(store, "Seat_Change_Request")
    assert updated is not None and updated.version == 2 and "seat map" in updated.content
    assert updated.fields["experience_name"] == "Seat_Change_Request"  # the display name is kept


def test_a_file_naming_another_experience_cannot_hold_it_hostage(store: MemoryStore) -> None:
    _write(store, "hijack.md", "refund_status", body="## Situation\n- hijacker")
    _write(store, "escape.md", "../../escape", body="## Situation\n- escaper")
    loaded = ExperienceSetLoader(store).load_sync()
    by_name = {p.name: p for p in loaded.policies}
    assert sorted(by_name) == sorted(
        ["address_change", "escape", "hijack", "refund_status", "reservation_cancellation"]
    )
    assert by_name["refund_status"].uri == experience_uri("refund_status")
    assert by_name["hijack"].uri == experience_uri("hijack")
    problems = loaded.metadata["problems"]
    assert len(problems) == 2 and all("does not match the file name" in p for p in problems)
    assert sum("hijack.md" in str(p) for p in check_workspace(store).problems) == 1

    # Plan items built from the set (name and URI of each) apply: no item fails on a name clash.
    items = [
        PolicyPlanItem(
            kind="upsert",
            target_name=p.name,
            target_uri=p.uri,
            before_content=p.content,
            base_version=p.version,
            after_content=p.content + "\n- reviewed",
        )
        for p in (by_name["refund_status"], by_name["escape"], by_name["hijack"])
    ]
    result = apply(store, *items)
    assert not result.errors, result.errors
    real = experience(store, "refund_status")
    assert real is not None and real.content.endswith("- reviewed") and "hijacker" not in real.content
    escape = experience(store, "escape")
    assert escape is not None and escape.fields["experience_name"] == "escape"  # the field follows the file
    # Each reviewed apply put the name field in line with its file: nothing is reported any more.
    assert not ExperienceSetLoader(store).load_sync().metadata.get("problems")


def test_derived_names_fit_what_the_reader_accepts() -> None:
    assert len(slugify("x" * 500)) <= MAX_NAME_LENGTH - 32
    assert slugify("Cancel my booking, please!") == "cancel_my_booking_please"
    assert slugify("取消 预订") == "取消_预订"
    assert validate_name(slugify("取" * 500)) and slugify("!!!", fallback="trajectory") == "trajectory"


def test_trajectories_of_a_very_long_task_signature_round_trip_through_the_reader(store: MemoryStore) -> None:
    """The issue's 500-character task signature, three rollouts in a row (the same second)."""
    case = Case(name="long", task_signature="refund" + "x" * 494, rubric=Rubric(name="r"))
    analyzer = TrajectoryRolloutAnalyzer(store, OfflineTrajectoryExtractor())
    evaluation = RubricEvaluation(passed=True, score=1.0)

    async def three() -> list[str]:
        uris = []
        for _ in range(3):
            analysis = await analyzer.analyze(Rollout(case=case, evaluation=evaluation))
            uris += [t.uri for t in analysis.trajectories]
        return uris

    uris = asyncio.run(three())
    assert len(set(uris)) == 3
    for uri in uris:
        validate_name(store.paths.path_for(uri).stem)
    report = store.load_type("trajectories")
    assert not report.problems and {f.uri for f in report.files} >= set(uris)
    assert check_workspace(store).ok


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a<b", "name 'a<b' contains <, which file names may not hold (Windows)"),
        ('x:"y', "name 'x:\"y' contains \" :, which file names may not hold (Windows)"),
        ("a/b", "name 'a/b' contains a path separator"),
        (".hidden", "name '.hidden' starts with a dot"),
    ],
)
def test_each_refused_character_is_named_for_what_it_is(name: str, message: str) -> None:
    with pytest.raises(UnsafePathError) as refused:
        validate_name(name)
    assert str(refused.value) == message
