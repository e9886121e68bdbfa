"""The one token estimate a session's pending tokens and its context budget share: OpenViking's
quarter-token rule, pinned on the scripts where a guessed rule goes wrong."""

from __future__ import annotations

import pytest

from ovtui.core.domain import TextPart, ToolPart
from ovtui.protocols.sessions import ContextPart, SessionMessage, estimate_tokens, message_tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello there", 3),  # ASCII: four characters a token, rounded up
        ("éééé", 1),  # accented Latin is an ordinary BMP character: a quarter token
        ("αβγδ", 1),  # so is Greek
        ("ㄅㄆㄇㄈ", 1),  # and bopomofo, though it sits among the CJK blocks
        ("中文", 3),  # CJK ideographs: 1.5 tokens each
        ("한국어", 5),  # Hangul syllables
        ("ᄀᄀ", 3),  # Hangul jamo
        ("ｆｕｌｌ", 6),  # full-width forms count as wide
        ("𠀀𠀀", 3),  # an astral ideograph is wide (1.5), not astral (2)
        ("🙂🙂🙂", 6),  # other astral characters, emoji: 2 tokens each
        ("日本語のテキスト", 12),  # kanji and kana together
    ],
)
def test_the_estimate_follows_openvikings_quarter_token_rule(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_a_message_is_estimated_once_over_its_joined_pieces() -> None:
    # 26 characters: "hi", "t1", "lookup", '{"q": "x"}', "result" (7 tokens once; 9 piece by piece)
    tool = ToolPart(tool_id="t1", tool_name="lookup", tool_input={"q": "x"}, tool_output="result")
    message = SessionMessage(id="msg_1", role="assistant", parts=[TextPart(text="hi"), tool])
    assert message_tokens(message) == 7


def test_a_context_part_counts_its_abstract() -> None:
    message = SessionMessage(
        id="msg_2", role="assistant", parts=[ContextPart(uri="viking://x", abstract="ｆｕｌｌ")]
    )
    assert message_tokens(message) == 6
