"""The case generator: deterministic, held-out test split, ids only where they belong."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.core.domain import Case
from ovtui.environments.sample.generate import generate_cases, generate_dataset, main, read_cases, write_cases
from ovtui.environments.sample.intents import INTENTS

ID = re.compile(r"\bC\d{4}\b|\b(?=[A-Z0-9]{6}\b)(?=[A-Z0-9]*\d)[A-Z][A-Z0-9]{5}\b")


def dump(cases: list[Case]) -> list[str]:
    return [c.model_dump_json() for c in cases]


def ids_of(case: Case) -> set[str]:
    db = case.input["db"]
    return set(db["customers"]) | set(db["reservations"])


def test_same_seed_same_cases_other_seed_other_cases() -> None:
    assert dump(generate_cases("train", 12, 5)) == dump(generate_cases("train", 12, 5))
    assert dump(generate_cases("train", 12, 5)) != dump(generate_cases("train", 12, 6))


def test_the_sample_workspace_dataset_is_what_the_generator_writes(tmp_path: Path) -> None:
    main([str(tmp_path / "generated")])
    shipped = build_sample_workspace(tmp_path / "ws") / "datasets" / "support"
    for split in ("train", "test"):
        assert (tmp_path / "generated" / f"{split}.jsonl").read_text() == (
            shipped / f"{split}.jsonl"
        ).read_text()


def test_split_sizes_cover_every_intent_and_variant() -> None:
    train, test = generate_dataset()
    assert (len(train), len(test)) == (30, 15)
    for cases in (train, test):
        assert Counter(c.task_signature for c in cases) == {
            i.signature: len(cases) // len(INTENTS) for i in INTENTS
        }
        assert {(c.task_signature, c.metadata["variant"]) for c in cases} == {
            (i.signature, v) for i in INTENTS for v in i.variants
        }


def test_test_split_is_held_out() -> None:
    train, test = generate_dataset()
    assert not set().union(*map(ids_of, train)) & set().union(*map(ids_of, test))
    names = {
        c.input["db"]["customers"][next(iter(c.input["db"]["customers"]))]["name"].split()[0] for c in train
    }
    test_names = {
        c.input["db"]["customers"][next(iter(c.input["db"]["customers"]))]["name"].split()[0] for c in test
    }
    assert not names & test_names
    for intent in INTENTS:
        assert not set(intent.train_wordings) & set(intent.test_wordings)


def test_queries_carry_the_ids_and_rubric_text_never_does() -> None:
    for case in generate_cases("test", 20, 11):
        assert set(ID.findall(case.input["user_query"])) <= ids_of(case)
        assert ID.findall(case.input["user_query"]), case.input["user_query"]
        texts = [case.rubric.description, *case.rubric.metadata.get("conditions", [])]
        texts += [c.description for c in case.rubric.criteria]
        assert not any(ID.search(t) or "@" in t for t in texts), texts


def test_cases_round_trip_through_jsonl(tmp_path: Path) -> None:
    cases = generate_cases("train", 7, 2)
    write_cases(tmp_path / "x.jsonl", cases)
    assert read_cases(tmp_path / "x.jsonl") == cases
    assert len((tmp_path / "x.jsonl").read_text().splitlines()) == 7


def test_declining_users_say_no() -> None:
    for case in generate_cases("train", 20, 4):
        simulated = case.input["simulated_user"]
        assert simulated["confirms"] == (case.metadata["variant"] != "user_declines")
        assert simulated["reply"].startswith("No") != simulated["confirms"]
