"""Shapes of values that belong to one case rather than to a rule: e-mail addresses and ISO dates.
The offline learner masks them out of what it writes; the leakage lint flags an item that carries them."""

from __future__ import annotations

import re

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
