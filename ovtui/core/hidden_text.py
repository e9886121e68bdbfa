"""Characters a person cannot see in a text they are asked to approve, and how to show them.

Zero-width characters, bidi controls (which reorder what is displayed, so a line reads differently
from what the agent is given), tag characters and variation selectors (which can carry a whole
hidden sentence), other format and control characters, private-use characters and the Unicode line
and paragraph separators (which split a line where the reviewer sees none). Tab and newline are
ordinary text.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

_ORDINARY = frozenset("\n\t")
_BIDI = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)  # the marks, embeddings, overrides and isolates


@lru_cache(maxsize=4096)
def is_hidden(char: str) -> bool:
    """Whether ``char`` shows as nothing (or as something else) where a reviewer reads it."""
    if char in _ORDINARY:
        return False
    code = ord(char)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:  # variation selectors
        return True
    return unicodedata.category(char) in {"Cf", "Cc", "Co", "Cs", "Zl", "Zp"}


def char_name(char: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE`` (the code alone for a character without a name)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def is_bidi(char: str) -> bool:
    return char in _BIDI


def hidden_characters(text: str) -> list[str]:
    """The hidden characters of ``text``, each once, in the order they first occur."""
    return list(dict.fromkeys(c for c in text if is_hidden(c)))


def reveal(text: str) -> str:
    """``text`` with every hidden character written out as ``⟦U+200B⟧``, so it can be seen."""
    if not any(is_hidden(c) for c in text):
        return text
    return "".join(f"⟦U+{ord(c):04X}⟧" if is_hidden(c) else c for c in text)
