"""The sample agent's vocabulary: the words it knows, and typo tolerance for everything it reads.

A word the agent does not know is replaced by the closest known word when they are close enough
("chnage" → "change", "reservaton" → "reservation"), using rapidfuzz's normalised Indel similarity.
Short words and ordinary English words are never corrected, so "plans" does not become "plan".
"""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz import fuzz, process

SIMILARITY = 80.0
MIN_LENGTH = 5

# Words the agent's patterns are built from (tools, situations, intents, connectors).
DOMAIN_WORDS = frozenset(
    """
    account address after agent always approval before booking cabin call cancel cancellation cancelled
    change changed check colleague compensated compensation complaint confirm confirmation confirms
    credit customer declines delay delayed economy email escalate fare flight first human identity
    instead lookup money never otherwise payment refund refundable refunded refuses reimburse
    reschedule reservation reservations ticket transfer travel update verify voucher whether switch
    unchanged untouched
    """.split()
)
# Ordinary words that look like domain words but mean something else; never "corrected".
COMMON_WORDS = frozenset(
    """
    about above again agree agreed allow allows anything around asked asking because being below
    bring charge charged choose could customers details doesn't email's every first flights going
    happen having hello helps human's later leave leaving makes maybe minds month never other please
    plans point quite reply right saying second shall should since still tells thank thanks their
    there these thing things think those today tomorrow under until using wants where which while
    whole without would write wrote yours
    """.split()
)
_WORD = re.compile(r"[A-Za-z]+")  # "non-refundable", "reservation's": the parts are corrected alone
_KNOWN = sorted(DOMAIN_WORDS)


@lru_cache(maxsize=4096)
def correct_word(word: str) -> str:
    lowered = word.lower()
    if len(lowered) < MIN_LENGTH or lowered in DOMAIN_WORDS or lowered in COMMON_WORDS:
        return word
    match = process.extractOne(lowered, _KNOWN, scorer=fuzz.ratio, score_cutoff=SIMILARITY)
    return match[0] if match is not None else word


def correct(text: str) -> str:
    """``text`` with every misspelt vocabulary word replaced by the word meant."""
    return _WORD.sub(lambda m: correct_word(m.group(0)), text)
