"""Deterministic, seeded generation of sample-environment case sets.

The same (split, count, seed) always gives the same cases. Train and test draw customer names and
wordings from disjoint pools, and ``generate_splits`` keeps ids unique across the splits, so the
test split really is held out. The validation split (what training's gate and its before/after
figures score; the test split stays sealed) is drawn like train, from train's wordings but its own
customers: held-out cases of the distribution trained on, which leak nothing of the test's
wordings. Run ``python -m ovtui.environments.sample.generate DIR`` to (re)write
``DIR/{train,validation,test}.jsonl``.
"""

from __future__ import annotations

import argparse
import random
import string
from collections.abc import Callable, Iterable
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Literal

from ovtui.environments.sample.intents import INTENTS, CaseFacts, Intent
from ovtui.plugins import Case, DatasetError, Rubric
from ovtui.plugins import read_cases as read_case_lines

Split = Literal["train", "validation", "test"]

DEFAULT_SEED = 7
DEFAULT_TRAIN_COUNT = 30
DEFAULT_TEST_COUNT = 15
DEFAULT_VALIDATION_COUNT = 10

_FIRST_NAMES: dict[str, tuple[str, ...]] = {
    "train": ("Maria", "Jonas", "Aiko", "Samuel", "Leila", "Pedro", "Hannah", "Omar", "Greta", "Ravi"),
    "test": ("Ingrid", "Tomasz", "Nadia", "Felix", "Yuki", "Carmen", "Kwame", "Elif", "Bruno", "Saoirse"),
    "validation": ("Astrid", "Mateo", "Priya", "Lars", "Zainab", "Diego", "Mei", "Tobias", "Amara", "Niko"),
}
_LAST_NAMES = ("Lopez", "Berg", "Tanaka", "Okafor", "Haddad", "Silva", "Novak", "Reyes", "Kowalski", "Moreau")
_AIRPORTS = ("LIS", "DEN", "AMS", "BOS", "NRT", "CPH", "MAD", "YYZ", "DUB", "SIN")
_CHANGEABLE_CABINS = ("economy", "premium_economy", "business")
_EMAIL_DOMAINS = ("example.com", "mail.example", "post.example")
_CONFIRM_REPLIES = ("Yes, please go ahead.", "Yes, that's right.", "Sure, do it.")
_DECLINE_REPLIES = (
    "No, leave it as it is.",
    "No, on second thought keep the booking.",
    "No, don't change anything.",
)
_CODE_LETTERS = "".join(c for c in string.ascii_uppercase if c not in "IO")


def _unique(rng: random.Random, used: set[str], make: Callable[[random.Random], str]) -> str:
    while True:
        value = make(rng)
        if value not in used:
            used.add(value)
            return value


def _reservation_code(rng: random.Random) -> str:
    letters = [rng.choice(_CODE_LETTERS) for _ in range(3)]
    digits = [rng.choice(string.digits) for _ in range(3)]
    tail = letters[1:] + digits
    rng.shuffle(tail)
    return letters[0] + "".join(tail)


def _facts(rng: random.Random, split: str, variant: str, used_ids: set[str]) -> CaseFacts:
    first, last = rng.choice(_FIRST_NAMES.get(split, _FIRST_NAMES["train"])), rng.choice(_LAST_NAMES)
    origin, destination = rng.sample(_AIRPORTS, 2)
    travel_day = date(2026, 3, 1) + timedelta(days=rng.randrange(0, 200))
    cabin = rng.choice((*_CHANGEABLE_CABINS, "basic_economy"))
    if variant == "basic_economy":
        cabin = "basic_economy"
    elif variant == "changeable":
        cabin = rng.choice(_CHANGEABLE_CABINS)
    refundable = {"refundable": True, "non_refundable": False}.get(variant, rng.random() < 0.5)
    return CaseFacts(
        customer_id=_unique(rng, used_ids, lambda r: f"C{r.randrange(1000, 10000)}"),
        name=f"{first} {last}",
        email=f"{first.lower()}.{last.lower()}@{rng.choice(_EMAIL_DOMAINS)}",
        reservation_id=_unique(rng, used_ids, _reservation_code),
        origin=origin,
        destination=destination,
        date=travel_day.isoformat(),
        cabin=cabin,
        refundable=refundable,
        price=rng.randrange(89, 900),
        new_date=(travel_day + timedelta(days=rng.randrange(2, 40))).isoformat(),
        new_email=f"{first.lower()}{rng.randrange(10, 100)}@{rng.choice(_EMAIL_DOMAINS)}",
        delay_hours=rng.randrange(3, 13),
        user_confirms=variant != "user_declines",
    )


def _seed_database(f: CaseFacts) -> dict[str, Any]:
    customer = {"name": f.name, "email": f.email, "travel_credit": 0, "membership": "silver"}
    reservation = {
        "customer_id": f.customer_id,
        "origin": f.origin,
        "destination": f.destination,
        "date": f.date,
        "cabin": f.cabin,
        "refundable": f.refundable,
        "price": f.price,
        "payment_method": "credit_card",
        "status": "active",
    }
    return {"customers": {f.customer_id: customer}, "reservations": {f.reservation_id: reservation}}


def build_case(
    intent: Intent, facts: CaseFacts, variant: str, wording: str, name: str, metadata: dict[str, Any]
) -> Case:
    query = wording.format(
        name=facts.name,
        customer_id=facts.customer_id,
        code=facts.reservation_id,
        new_date=facts.new_date,
        new_email=facts.new_email,
        hours=facts.delay_hours,
    )
    criteria, conditions = intent.build_rubric(facts, variant)
    replies = _CONFIRM_REPLIES if facts.user_confirms else _DECLINE_REPLIES
    reply = replies[sum(map(ord, name)) % len(replies)]
    return Case(
        name=name,
        task_signature=intent.signature,
        input={
            "user_query": query,
            "db": _seed_database(facts),
            "simulated_user": {"confirms": facts.user_confirms, "reply": reply},
        },
        rubric=Rubric(
            name=intent.signature,
            description=intent.description,
            criteria=criteria,
            metadata={"conditions": conditions} if conditions else {},
        ),
        metadata={"variant": variant, **metadata},
    )


def generate_cases(
    split: Split,
    count: int,
    seed: int = DEFAULT_SEED,
    *,
    intents: Iterable[Intent] = INTENTS,
    used_ids: set[str] | None = None,
) -> list[Case]:
    """``count`` cases spread evenly over the intents, cycling through each intent's variants."""
    pool = tuple(intents)
    rng = random.Random(f"ovtui-sample:{split}:{seed}")
    used = used_ids if used_ids is not None else set()
    # A per-intent starting wording, so different seeds open with different phrasings.
    offsets = {i.signature: rng.randrange(len(i.wordings(split))) for i in pool}
    cases: list[Case] = []
    for index in range(count):
        intent = pool[index % len(pool)]
        round_ = index // len(pool)
        variant = intent.variants[round_ % len(intent.variants)]
        wordings = intent.wordings(split)
        wording = wordings[(offsets[intent.signature] + round_) % len(wordings)]
        facts = _facts(rng, split, variant, used)
        name = f"{intent.signature}_{split}_{index:03d}"
        cases.append(
            build_case(intent, facts, variant, wording, name, {"split": split, "generator_seed": seed})
        )
    return cases


def generate_splits(
    seed: int = DEFAULT_SEED,
    train: int = DEFAULT_TRAIN_COUNT,
    test: int = DEFAULT_TEST_COUNT,
    validation: int = DEFAULT_VALIDATION_COUNT,
) -> dict[Split, list[Case]]:
    """Every split, ids unique across them. Validation is drawn last, so train and test are the
    same cases whether or not a validation split is asked for."""
    used: set[str] = set()
    splits: dict[Split, list[Case]] = {
        "train": generate_cases("train", train, seed, used_ids=used),
        "test": generate_cases("test", test, seed, used_ids=used),
    }
    splits["validation"] = generate_cases("validation", validation, seed, used_ids=used)
    return splits


def generate_dataset(
    seed: int = DEFAULT_SEED, train: int = DEFAULT_TRAIN_COUNT, test: int = DEFAULT_TEST_COUNT
) -> tuple[list[Case], list[Case]]:
    splits = generate_splits(seed, train, test, validation=0)
    return splits["train"], splits["test"]


def write_cases(path: Path, cases: Iterable[Case]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(case.model_dump_json() + "\n" for case in cases), encoding="utf-8")


def read_cases(path: Path) -> list[Case]:
    """The cases of a JSONL file; a bad line is an error naming the file and line."""
    cases, problems = read_case_lines(path)
    if problems:
        raise DatasetError(problems)
    return cases


def write_dataset(
    folder: Path,
    seed: int = DEFAULT_SEED,
    train: int = DEFAULT_TRAIN_COUNT,
    test: int = DEFAULT_TEST_COUNT,
    validation: int = DEFAULT_VALIDATION_COUNT,
) -> None:
    for split, cases in generate_splits(seed, train, test, validation).items():
        write_cases(folder / f"{split}.jsonl", cases)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Write a sample-environment dataset (train.jsonl, validation.jsonl, test.jsonl)."
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--train", type=int, default=DEFAULT_TRAIN_COUNT)
    parser.add_argument("--validation", type=int, default=DEFAULT_VALIDATION_COUNT)
    parser.add_argument("--test", type=int, default=DEFAULT_TEST_COUNT)
    args = parser.parse_args(argv)
    write_dataset(args.folder, args.seed, args.train, args.test, args.validation)


if __name__ == "__main__":
    main()
