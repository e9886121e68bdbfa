"""Text helpers of the offline backend."""

from __future__ import annotations

from ovtui.memory.search import LexicalIndex
from ovtui.plugins.wording.sections import (
    MAX_APPROACH_LINES,
    MAX_EXAMPLES,
    PLACEHOLDERS,
    ExperienceSections,
    parse_sections,
)
from ovtui.plugins.wording.text import intent_name, jaccard, name_tokens, scrub_specifics, tokenize


def test_scrub_specifics_removes_what_belongs_to_one_customer() -> None:
    text = "Hi, Maria Lopez (C4821): move K4P7Q2 to 2026-05-09, mail maria.l@example.com, 4 bags."
    assert scrub_specifics(text) == "Hi, <name> (<id>): move <id> to <date>, mail <email>, <n> bags."
    assert scrub_specifics("call get_reservation before cancel_reservation") == (
        "call get_reservation before cancel_reservation"
    )


def test_tokenize_stems_and_drops_stopwords() -> None:
    assert tokenize("I'd like my booking refunded") == ["book", "refund"]
    assert tokenize("Cancelled") == tokenize("cancel")


def test_intent_name_never_keeps_ids() -> None:
    assert intent_name("booking_cancellation") == "booking_cancellation"
    assert intent_name("refund_request_train_006") == "refund_request_train"
    assert intent_name("Cancel K4P7Q2 for C4821!") == "cancel_for"
    assert intent_name("1234") == "general_request"


def test_name_similarity() -> None:
    assert jaccard(name_tokens("refund_request"), name_tokens("request-refund")) == 1.0
    assert jaccard(name_tokens("refund_request"), name_tokens("seat_selection")) == 0.0


def test_bm25_ranks_even_a_one_document_corpus() -> None:
    assert LexicalIndex([tokenize("refund a booking")]).scores(tokenize("refund please"))[0] > 0
    scores = LexicalIndex([tokenize("cancel a booking"), tokenize("refund a booking")]).scores(
        tokenize("refund")
    )
    assert scores[1] > scores[0] == 0


def test_sections_round_trip_and_placeholders() -> None:
    sections = parse_sections(
        "## Situation\n- a\n## Approach\n1. step one\n## Reflect\n- NEVER x\n## Notes\n- keep me"
    )
    assert (sections.situation, sections.approach, sections.reflect) == (
        ["- a"],
        ["1. step one"],
        ["- NEVER x"],
    )
    assert parse_sections(sections.render()) == sections
    empty = ExperienceSections().render()
    assert all(PLACEHOLDERS[s] in empty for s in PLACEHOLDERS)
    assert parse_sections(empty) == ExperienceSections()


def test_lines_before_a_heading_count_as_situation() -> None:
    assert parse_sections("loose note\n## Reflect\n- NEVER y").situation == ["loose note"]


def test_add_deduplicates_and_caps() -> None:
    sections = ExperienceSections()
    assert sections.add("Reflect", "NEVER call x")
    assert not sections.add("Reflect", "- never  call X.")
    for i in range(MAX_EXAMPLES + 2):
        sections.add("Situation", f'Example request: "number {"i" * (i + 1)}"')
    assert len(sections.situation) == MAX_EXAMPLES
    for i in range(MAX_APPROACH_LINES + 2):
        sections.add("Approach", f"step {'a' * (i + 1)}")
    assert len(sections.approach) == MAX_APPROACH_LINES


def test_absorb_is_a_union() -> None:
    mine = parse_sections("## Situation\n- s\n## Approach\n- a\n## Reflect\n- NEVER r")
    theirs = parse_sections("## Situation\n- s\n## Approach\n- b\n## Reflect\n- NEVER r\n- ALWAYS q")
    assert mine.absorb(theirs) == 2
    assert (mine.approach, mine.reflect) == (["- a", "- b"], ["- NEVER r", "- ALWAYS q"])
