"""A new memory type is one JSON file: a package that ships a declaration (and names its folder with
an ``ovtui.memory_types`` entry point) adds the type everywhere — a plan item of it is applied and
recorded in memory_diff.json, the store lists it, ``ovtui check`` validates its files by its
declared fields, ``ovtui revert`` undoes it, and the session extraction asks for it as its flags
say."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_ovtui
from plugin_support import install_distribution

from ovtui.cli.init import init_workspace
from ovtui.core import plugins
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import ConfigError
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import default_registry
from ovtui.train.backends.llm.session_extractor import instruction
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater

GOALS = {
    "memory_type": "goals",
    "description": "What the user is working towards, one goal per file.",
    "directory": "memories/goals",
    "filename_template": "{goal}.md",
    "name_field": "goal",
    "operation_mode": "upsert",
    "peer_enabled": True,
    "extract_from_sessions": True,
    "editable_by_model": True,
    "extraction_guidance": "a goal the user states they are working towards, with its horizon.",
    "fields": [
        {"name": "goal", "type": "string", "merge_op": "immutable", "required": True,
         "description": "the goal in English lowercase snake_case"},
        {"name": "horizon", "type": "string", "merge_op": "replace", "enum": ["week", "year"],
         "description": "when the user wants to get there"},
        {"name": "content", "type": "string", "merge_op": "patch", "required": True,
         "description": "Markdown: the goal and the user's progress"},
    ],
}  # fmt: skip


def _install(site: Path, package: str, declaration: dict[str, object]) -> Path:
    return install_distribution(
        site,
        package,
        {f"{declaration['memory_type']}.json": json.dumps(declaration, indent=2)},
        {"ovtui.memory_types": {package: package}},
    )


def _reread() -> None:
    plugins.rescan()
    default_registry.cache_clear()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package installed in this process too (and forgotten afterwards)."""
    folder = _install(tmp_path / "site", "toy_goals", GOALS)
    monkeypatch.syspath_prepend(str(folder))
    _reread()
    yield folder
    monkeypatch.undo()
    _reread()


async def test_a_type_from_one_json_file_is_applied_recorded_listed_checked_and_reverted(
    site: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    store = MemoryStore.open(root)
    item = PolicyPlanItem(
        kind="upsert",
        memory_type="goals",
        target_name="run_a_marathon",
        after_content="- Run a marathon in under four hours.",
        metadata={"fields": {"horizon": "year"}},
    )
    result = await MemoryFilePolicyUpdater(store).apply(PolicyUpdatePlan(items=[item]), None)
    assert result.history_id and not result.errors, result
    written = root / "memories/goals/run_a_marathon.md"
    assert written.is_file()

    record = HistoryStore(store.paths).get(result.history_id)
    [added] = record.operations.adds
    assert (added.memory_type, added.uri) == ("goals", store.paths.uri_for(written))
    assert (root / "history" / result.history_id / "memory_diff.json").is_file()

    [listed] = store.load_type("goals").files
    assert listed.fields["horizon"] == "year" and "marathon" in listed.content

    # `ovtui check` knows the type from the package's declaration: its files, its fields' enums.
    checked = run_ovtui("check", str(root), cwd=tmp_path, also_installed=site)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "goals 1" in checked.stdout
    bad = root / "memories/goals/learn_welsh.md"
    bad.write_text(written.read_text().replace('"year"', '"decade"').replace("run_a_marathon", "learn_welsh"))
    checked = run_ovtui("check", str(root), cwd=tmp_path, also_installed=site)
    assert checked.returncode == 1
    assert "memories/goals/learn_welsh.md" in checked.stdout
    assert "field 'horizon' is 'decade', expected one of week, year" in checked.stdout
    bad.unlink()

    arguments = ("revert", result.history_id, "--workspace", str(root))
    reverted = run_ovtui(*arguments, cwd=tmp_path, also_installed=site)
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    assert not written.exists()
    assert MemoryStore.open(root).load_type("goals").files == []


def test_the_session_extraction_asks_for_the_type_as_its_declaration_says(site: Path) -> None:
    registry = default_registry()
    assert "goals" in registry.extracted_from_sessions()
    assert registry.get("goals").editable_by_model
    told = instruction(registry, registry.extracted_from_sessions())
    assert "- goals: a goal the user states they are working towards, with its horizon." in told
    assert "- events: something that happened" in told  # the bundled types' guidance is theirs too
    assert "experiences" not in registry.extracted_from_sessions()


def test_a_type_declared_twice_names_both_declarations(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = _install(site.parent / "other", "more_goals", GOALS)
    monkeypatch.syspath_prepend(str(other))
    _reread()
    with pytest.raises(ConfigError) as caught:
        default_registry()
    message = str(caught.value)
    assert "memory type 'goals' is declared twice" in message
    assert "toy_goals 0.1" in message and "more_goals 0.1" in message
