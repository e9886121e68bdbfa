"""Acceptance: offline training makes the sample agent good at held-out and brand-new cases.

Trains through the product's own path (``Workspace.train``: pipeline, engine, updater, files):
3 epochs on the shipped train split, starting from the shipped starter memories.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from training_support import accuracy, evaluate, train
from workspace_support import build_sample_workspace

from ovtui.core.domain import Case, Experience, ExperienceSet
from ovtui.core.fileformat import parse_memory, render_memory
from ovtui.environments.sample.generate import generate_cases, read_cases
from ovtui.environments.sample.intents import INTENTS
from ovtui.memory.store import MemoryStore
from ovtui.plugins.wording.sections import SECTIONS, parse_sections
from ovtui.train.backends.offline.consolidate import contradictions
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.reports import RunReport

SPECIFIC = re.compile(r"\bC\d{4}\b|\b(?=[A-Z0-9]*\d)[A-Z0-9]{6}\b|@|\d{4}-\d{2}-\d{2}|\b\d{2,}\b")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_workspace(tmp_path_factory.mktemp("sample") / "ws")


@pytest.fixture(scope="module")
def start(sample: Path) -> ExperienceSet:
    return ExperienceSetLoader(MemoryStore.open(sample)).load_sync()


@pytest.fixture(scope="module")
def trained(sample: Path, start: ExperienceSet) -> tuple[ExperienceSet, RunReport]:
    cases = read_cases(sample / "datasets" / "support" / "train.jsonl")
    return train(cases, start, epochs=3, batch_size=8)


def case_specifics(cases: list[Case]) -> set[str]:
    """Every id, name, email and date the training cases mention."""
    values: set[str] = set()
    for case in cases:
        db = case.input["db"]
        values |= set(db["customers"]) | set(db["reservations"])
        for customer in db["customers"].values():
            values |= {customer["email"], *customer["name"].split()}
        values |= {r["date"] for r in db["reservations"].values()}
    return values


def learned_experiences(start: ExperienceSet, trained: ExperienceSet) -> list[Experience]:
    before = start.by_name()
    return [p for p in trained.policies if p.name not in before]


def test_accuracy_on_the_held_out_test_split(
    sample: Path, start: ExperienceSet, trained: tuple[ExperienceSet, RunReport]
) -> None:
    cases = read_cases(sample / "datasets" / "support" / "test.jsonl")
    baseline, after = accuracy(evaluate(cases, start)), accuracy(evaluate(cases, trained[0]))
    assert baseline <= 0.4
    assert after >= 0.8, (baseline, after)


def test_it_holds_for_new_cases_from_another_seed(
    start: ExperienceSet, trained: tuple[ExperienceSet, RunReport]
) -> None:
    cases = generate_cases("test", 20, seed=2024)
    assert accuracy(evaluate(cases, start)) <= 0.4
    assert accuracy(evaluate(cases, trained[0])) >= 0.8


def test_training_got_better_epoch_by_epoch(trained: tuple[ExperienceSet, RunReport]) -> None:
    report = trained[1]
    epochs = [s for s in report.stages if s.stage == "train_epoch"]
    assert [s.epoch for s in epochs] == [0, 1, 2]
    assert epochs[0].accuracy < epochs[-1].accuracy and epochs[-1].accuracy >= 0.8, report.summary()
    assert report.history_ids, "nothing was applied"


def test_learned_experiences_read_like_guidance(
    sample: Path, start: ExperienceSet, trained: tuple[ExperienceSet, RunReport]
) -> None:
    learned = learned_experiences(start, trained[0])
    specifics = case_specifics(read_cases(sample / "datasets" / "support" / "train.jsonl"))
    assert sorted(p.name for p in learned) == sorted(i.signature for i in INTENTS)
    for experience in learned:
        headings = [line[3:] for line in experience.content.splitlines() if line.startswith("## ")]
        assert headings == list(SECTIONS), experience.name
        assert not SPECIFIC.search(experience.content), (experience.name, SPECIFIC.search(experience.content))
        assert not {w for w in specifics if w in experience.content}, experience.name
        sections = parse_sections(experience.content)
        # Approach holds the steps; Reflect only lessons the steps do not already carry out.
        assert sections.approach, experience.name
        assert all(re.match(r"- (NEVER|ALWAYS) ", line) for line in sections.reflect), sections.reflect
        assert contradictions([*sections.approach, *sections.reflect]) == [], experience.name
        assert len(experience.content.splitlines()) == len(set(experience.content.splitlines()))
        text = render_memory(
            experience.content, {"experience_name": experience.name, "version": experience.version}
        )
        assert parse_memory(text).content == experience.content
    # The starter experiences about other requests were not touched.
    for name, experience in start.by_name().items():
        assert trained[0].by_name()[name].content == experience.content
