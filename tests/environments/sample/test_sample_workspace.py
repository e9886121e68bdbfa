"""The sample workspace (`ovtui init --sample`): valid config and memory files, mirrored links,
a low baseline."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import REPO
from workspace_support import build_sample_workspace

from ovtui.core.context import ExecutionContext
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.generate import read_cases
from ovtui.environments.sample.workspace import write_sample_workspace
from ovtui.memory.store import MemoryStore
from ovtui.plugins.wording.sections import SECTIONS
from ovtui.storage.config_file import load_config
from ovtui.train.components.experience_set_loader import ExperienceSetLoader


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_workspace(tmp_path_factory.mktemp("sample") / "ws")


@pytest.fixture(scope="module")
def store(sample: Path) -> MemoryStore:
    return MemoryStore.open(sample)


def test_config_validates(sample: Path) -> None:
    config = load_config(sample)
    assert config.llm.backend == "offline"
    assert (config.trainer.dataset, config.review.policy, config.review.dry_run) == ("support", "ask", False)
    assert (config.workspace.user, config.trainer.agent) == ("default", "sample")


def test_memory_files_parse_and_follow_the_format(sample: Path, store: MemoryStore) -> None:
    experiences, trajectories = store.load_type("experiences"), store.load_type("trajectories")
    assert experiences.problems == [] and trajectories.problems == []
    assert len(experiences.files) == 12 and len(trajectories.files) == 3
    for memory in experiences.files:
        assert memory.uri is not None and memory.uri.endswith(f"/{memory.fields['experience_name']}.md")
        assert (memory.fields["memory_type"], memory.fields["version"]) == ("experiences", 1)
        headings = [line[3:] for line in memory.content.splitlines() if line.startswith("## ")]
        assert headings == list(SECTIONS)
    for memory in trajectories.files:  # as OpenViking writes them: a version and the task's query
        assert memory.fields["version"] == 1 and memory.fields["task_query"], memory.uri
    assert all((sample / "inbox" / name / ".gitkeep").exists() for name in ("rollouts", "sessions"))


def test_links_are_mirrored_as_backlinks(store: MemoryStore) -> None:
    links = [link for m in store.load_type("experiences").files for link in m.fields.get("links", [])]
    assert len(links) == 3
    for link in links:
        assert link["link_type"] == "derived_from" and link["weight"] == 1.0
        trajectory = store.read_uri(link["to_uri"])
        assert trajectory is not None and trajectory.fields["backlinks"] == [link]
        assert store.read_uri(link["from_uri"]) is not None


def test_the_files_are_what_the_builder_writes(sample: Path, tmp_path: Path) -> None:
    write_sample_workspace(tmp_path)
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert built
    for relative in built:
        assert (sample / relative).read_bytes() == (tmp_path / relative).read_bytes(), relative


def test_starter_experiences_leave_the_graded_intents_to_learn(sample: Path, store: MemoryStore) -> None:
    policy_set = ExperienceSetLoader(store).load_sync()
    cases = read_cases(sample / "datasets" / "support" / "test.jsonl")
    rollouts = SampleAgentExecutor().execute_sync(cases, policy_set, ExecutionContext("baseline"))
    used = {name for r in rollouts for name in r.metadata["experiences_used"]}
    assert used <= {"conversation_etiquette"}
    assert sum(bool(r.evaluation and r.evaluation.passed) for r in rollouts) / len(rollouts) <= 0.4


def test_the_tracked_sample_workspace_is_what_init_writes(sample: Path) -> None:
    """The repository's sample_workspace/ must not drift from the package data `init --sample` writes
    (regenerate it with `rm -r sample_workspace && ovtui init sample_workspace --sample`)."""
    tracked = REPO / "sample_workspace"

    def files(root: Path) -> dict[str, bytes]:
        skip = {".ovtui", "runs", "history"}  # what opening the folder may add; git-ignored or empty
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and p.name != ".gitkeep" and not skip & set(p.relative_to(root).parts)
        }

    assert files(tracked) == files(sample)
