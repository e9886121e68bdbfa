"""The airline database of one episode: copy-on-access records over the shared base data.

The base (7 MB) is loaded once per process; an episode copies only the records it touches, so a
replay costs microseconds instead of a deep copy of everything. Two databases are equal when the
same keys exist and every record either touched has the same JSON form: tau2 compares hashes of
``json.dumps(model_dump(), sort_keys=True, default=str)``, so 2 and 2.0 (or "2") differ wherever
a tool stores a value without coercing it (see ``arguments``).
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Iterator
from typing import Any

from ovtui.environments.tau2_airline.data import base_db

TABLES = ("flights", "users", "reservations")
Record = dict[str, Any]


def fold(key: str) -> str:
    """Case, accents and surrounding space do not matter (ids are ASCII and unique up to case).
    Canonical decomposition only (NFD, as tau2): a full-width "ＨＡＴ００１" is not "HAT001"."""
    decomposed = unicodedata.normalize("NFD", key.strip())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


class AirlineDB:
    def __init__(self, base: dict[str, dict[str, Record]] | None = None) -> None:
        self.base = base if base is not None else base_db()
        self.touched: dict[str, dict[str, Record]] = {t: {} for t in TABLES}

    def resolve(self, table: str, key: str) -> str | None:
        """The stored key for ``key`` (exact first, then folded), or None."""
        if not isinstance(key, str):
            return None
        if key in self.touched[table] or key in self.base[table]:
            return key
        stripped = key.strip()
        if stripped in self.touched[table] or stripped in self.base[table]:
            return stripped
        wanted = fold(stripped)
        return next((k for k in self.keys(table) if fold(k) == wanted), None)

    def get(self, table: str, key: str) -> Record:
        """The record, copied into this episode on first access (callers may change it)."""
        record = self.touched[table].get(key)
        if record is None:
            record = copy.deepcopy(self.base[table][key])
            self.touched[table][key] = record
        return record

    def peek(self, table: str, key: str) -> Record:
        """Read-only view (no copy): for scans that change nothing."""
        record = self.touched[table].get(key)
        return record if record is not None else self.base[table][key]

    def add(self, table: str, key: str, record: Record) -> None:
        self.touched[table][key] = record

    def has(self, table: str, key: str) -> bool:
        return key in self.touched[table] or key in self.base[table]

    def keys(self, table: str) -> Iterator[str]:
        yield from self.base[table]
        yield from (k for k in self.touched[table] if k not in self.base[table])

    def same_as(self, other: AirlineDB) -> bool:
        for table in TABLES:
            for key in set(self.touched[table]) | set(other.touched[table]):
                if not (self.has(table, key) and other.has(table, key)):
                    return False
                if canonical(self.peek(table, key)) != canonical(other.peek(table, key)):
                    return False
        return True


def canonical(record: Record) -> str:
    """The form tau2 hashes: key order does not matter, value types do."""
    return json.dumps(record, sort_keys=True, default=str)
