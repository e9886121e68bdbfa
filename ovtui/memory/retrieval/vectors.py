"""Dense vectors of documents, by key, for cosine similarity against a query in one matrix product.

Rows are unit vectors in one float32 matrix that grows by doubling; a discarded key's row is
zeroed and reused, so changing one memory never copies the others. numpy is imported only where
embeddings are configured.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

_FIRST_ROWS = 64


def unit(vector: Sequence[float] | bytes) -> np.ndarray:
    """``vector`` (floats, or float32 bytes as cached) scaled to length 1 (a zero vector stays zero)."""
    array = (
        np.frombuffer(vector, dtype="<f4").astype(np.float32)
        if isinstance(vector, bytes)
        else np.asarray(vector, dtype=np.float32)
    )
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def to_bytes(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


class VectorTable:
    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, dimensions: int | None) -> None:
        self._matrix = None if dimensions is None else np.zeros((_FIRST_ROWS, dimensions), dtype=np.float32)
        self._rows: dict[Hashable, int] = {}
        self._keys: list[Hashable | None] = []
        self._free: list[int] = []

    @property
    def dimensions(self) -> int | None:
        return None if self._matrix is None else int(self._matrix.shape[1])

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, key: Hashable, vector: np.ndarray) -> None:
        """Store a unit vector; one of another length than the table's replaces the whole table
        (the model changed: old vectors are not comparable)."""
        if self._matrix is None or self._matrix.shape[1] != vector.shape[0]:
            self._reset(int(vector.shape[0]))
        assert self._matrix is not None
        row = self._rows.get(key)
        if row is None:
            row = self._free.pop() if self._free else self._grow()
            self._rows[key] = row
            self._keys[row] = key
        self._matrix[row] = vector

    def _grow(self) -> int:
        assert self._matrix is not None
        row = len(self._keys)
        if row >= self._matrix.shape[0]:
            bigger = np.zeros((self._matrix.shape[0] * 2, self._matrix.shape[1]), dtype=np.float32)
            bigger[:row] = self._matrix[:row]
            self._matrix = bigger
        self._keys.append(None)
        return row

    def discard(self, key: Hashable) -> None:
        row = self._rows.pop(key, None)
        if row is not None and self._matrix is not None:
            self._matrix[row] = 0.0
            self._keys[row] = None
            self._free.append(row)

    def query(self, query: np.ndarray) -> DenseScores:
        """The cosine of every stored vector with ``query`` (a unit vector), in one product."""
        if self._matrix is None or query.shape[0] != self._matrix.shape[1]:
            return DenseScores(np.zeros(0, dtype=np.float32), [], {})
        used = len(self._keys)
        return DenseScores(self._matrix[:used] @ query, self._keys, self._rows)


@dataclass(frozen=True, slots=True)
class DenseScores:
    sims: np.ndarray
    keys: list[Hashable | None]  # by row; None: a free row
    rows: dict[Hashable, int]

    def best(self, count: int) -> list[tuple[Hashable, float]]:
        """The ``count`` most similar keys (positive cosine only), best first."""
        if not len(self.sims):
            return []
        count = min(count, len(self.sims))
        top = np.argpartition(-self.sims, count - 1)[:count]
        ranked = sorted(((self.keys[i], float(self.sims[i])) for i in top), key=lambda pair: -pair[1])
        return [(key, score) for key, score in ranked if key is not None and score > 0]

    def of(self, key: Hashable) -> float:
        row = self.rows.get(key)
        return 0.0 if row is None else float(self.sims[row])
