"""Preferences in ovtui's former layout (``memories/preferences/<topic>.md``): they keep working,
``ovtui check`` reports them (a note alone, a problem beside files in OpenViking's layout), and
``ovtui check --fix`` moves them in one History record that ``ovtui revert`` undoes — real
processes, a real workspace."""

from __future__ import annotations

from pathlib import Path

from cli_support import run_ovtui
from plan_support import snapshot

from ovtui.core.fileformat import parse_memory, render_memory
from ovtui.memory.history import HistoryStore
from ovtui.memory.layout import move_former_files
from ovtui.memory.store import MemoryStore

FORMER = "memories/preferences/food.md"
FOOD = render_memory("- Vegetarian meals", {"topic": "food", "memory_type": "preferences", "version": 2})


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_former_preference_is_still_read_and_edited_in_place(store: MemoryStore) -> None:
    _write(store.paths.root, FORMER, FOOD)
    [food] = store.load_type("preferences").files
    assert food.uri == "viking://user/default/" + FORMER
    # one memory never becomes two files: its name resolves to the file that exists
    assert store.uri_for_name("preferences", "food") == "viking://user/default/" + FORMER
    assert store.uri_for_name("preferences", "drinks").endswith("memories/preferences/default/drinks.md")


def test_check_fix_moves_former_preferences_and_revert_puts_them_back(tmp_workspace: Path) -> None:
    _write(tmp_workspace, FORMER, FOOD)
    peer_former = "peers/bob/memories/preferences/meal.md"
    _write(
        tmp_workspace,
        peer_former,
        render_memory("- No nuts", {"topic": "meal", "memory_type": "preferences"}),
    )
    before = snapshot(tmp_workspace) | snapshot(tmp_workspace, "peers")

    check = run_ovtui("check", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert check.returncode == 0, check.stdout + check.stderr  # alone, a former layout is a note
    assert (
        f"note: {FORMER}:1: 1 preferences file(s) in ovtui's former layout memories/preferences/<topic>.md"
        in check.stdout
    )
    assert "`ovtui check --fix` moves them to memories/preferences/<user>/<topic>.md" in check.stdout

    fixed = run_ovtui("check", str(tmp_workspace), "--fix", cwd=tmp_workspace.parent)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"moved {FORMER} → memories/preferences/default/food.md" in fixed.stdout
    assert f"moved {peer_former} → peers/bob/memories/preferences/bob/meal.md" in fixed.stdout
    assert "former layout" not in fixed.stdout  # checked after the move: nothing left to report
    assert not (tmp_workspace / FORMER).exists()
    moved = (tmp_workspace / "memories/preferences/default/food.md").read_text(encoding="utf-8")
    # the same body and fields, whose preference it is given first (as OpenViking orders them)
    assert moved == render_memory(
        "- Vegetarian meals", {"user": "default", "topic": "food", "memory_type": "preferences", "version": 2}
    )
    peer_meal = parse_memory((tmp_workspace / "peers/bob/memories/preferences/bob/meal.md").read_text())
    assert peer_meal.fields["user"] == "bob"

    [entry] = HistoryStore(MemoryStore.open(tmp_workspace).paths).list(kind="migrate")
    record_id = fixed.stdout.split("history record ")[1].split()[0]
    assert (entry.id, entry.adds, entry.deletes) == (record_id, 2, 2)
    undo = run_ovtui("revert", record_id, "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert undo.returncode == 0, undo.stderr
    after = snapshot(tmp_workspace) | snapshot(tmp_workspace, "peers")
    assert sorted(after) == sorted(before)  # every file back where it was, none left where it went
    # the same text; a file that counts its writes counts the revert as one (History's rule)
    assert after[FORMER] == FOOD.replace('"version": 2', '"version": 3').encode()
    assert {k: v for k, v in after.items() if k != FORMER} == {k: v for k, v in before.items() if k != FORMER}


def test_two_layouts_at_once_are_a_problem_until_fixed(tmp_workspace: Path) -> None:
    _write(tmp_workspace, FORMER, FOOD)
    current = render_memory("- Aisle", {"user": "default", "topic": "seat", "memory_type": "preferences"})
    _write(tmp_workspace, "memories/preferences/default/seat.md", current)
    check = run_ovtui("check", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert check.returncode == 1
    assert (
        f"{FORMER}:1: preferences are in two layouts: 1 file(s) in ovtui's former "
        "memories/preferences/<topic>.md and 1 in memories/preferences/<user>/<topic>.md"
    ) in check.stdout
    fixed = run_ovtui("check", str(tmp_workspace), "--fix", cwd=tmp_workspace.parent)
    assert fixed.returncode == 0, fixed.stdout
    assert sorted(p.name for p in (tmp_workspace / "memories/preferences/default").iterdir()) == [
        "food.md",
        "seat.md",
    ]


def test_a_move_onto_a_taken_place_is_skipped_with_its_reason(store: MemoryStore) -> None:
    root = store.paths.root
    _write(root, FORMER, FOOD)
    taken = render_memory("- Vegan", {"user": "default", "topic": "food", "memory_type": "preferences"})
    _write(root, "memories/preferences/default/food.md", taken)
    result = move_former_files(store)
    assert result.history_id is None and result.moved == {}
    [skipped] = result.skipped
    assert (skipped.reason_code, skipped.uri) == ("target_exists", "viking://user/default/" + FORMER)
    assert "merge the two files by hand" in skipped.reason
    assert (root / FORMER).read_text(encoding="utf-8") == FOOD  # nothing moved, nothing lost
