"""One grammar of review policies: the configuration and the review accept exactly the same words."""

from __future__ import annotations

import pytest

from ovtui.core.config import ReviewConfig
from ovtui.core.errors import OvtuiError
from ovtui.core.review_grammar import ReviewPolicySpec, parse_review_policy
from ovtui.train.review.policy import ReviewPolicy

GOOD = ["all", "none", "ask", "gate", "confidence>=0", "confidence>=0.75", "confidence>=1"]
BAD = [
    "sometimes",
    "",
    "confidence>=",
    "confidence>=high",
    "confidence>=1.01",
    "confidence>=-0.1",
    "confidence>=nan",
]


def test_the_named_policies_and_a_threshold_parse() -> None:
    assert parse_review_policy("gate") == ReviewPolicySpec("gate")
    assert parse_review_policy(" confidence>=0.5 ") == ReviewPolicySpec("confidence", 0.5)


@pytest.mark.parametrize("spec", GOOD)
def test_what_the_configuration_accepts_the_review_accepts(spec: str) -> None:
    assert ReviewConfig(policy=spec).policy == spec
    assert ReviewPolicy(spec).spec == spec


@pytest.mark.parametrize("spec", BAD)
def test_what_the_configuration_refuses_the_review_refuses(spec: str) -> None:
    with pytest.raises(ValueError, match="review policy"):
        ReviewConfig(policy=spec)
    with pytest.raises(OvtuiError, match="review policy"):
        ReviewPolicy(spec)


def test_a_bad_threshold_says_what_it_needs() -> None:
    with pytest.raises(ValueError, match=r"needs a number X from 0 to 1 \('high' is not a number\)"):
        parse_review_policy("confidence>=high")
    with pytest.raises(ValueError, match=r"needs a number X from 0 to 1$"):
        parse_review_policy("confidence>=2")
