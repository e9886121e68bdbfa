"""The history's hash chain: every record names the one before it, as git's commits do.

Each record written from now on carries ``chain`` (``ChainLink``): its position ``seq``, its own
id, the previous record's id and digest, and its ``digest``: SHA-256 of the record's canonical JSON
(keys sorted, no spaces) without the digest itself. ``history/chain.json`` holds the position and
digest of the newest record, written in the same journaled transaction as the record, so a record
removed from the end is noticed too. Editing a record changes its digest; removing one leaves a
gap; renaming or swapping folders breaks the ids; reordering breaks the links.

A history that predates the chain (records without ``chain``) is not rewritten: the first chained
record counts those records and digests their bytes (``earlier``, ``earlier_digest``), so an
edit to them from then on is noticed, while what happened to them before cannot be known — the
report says so. Without signatures the chain detects tampering by anyone who does not also
recompute every later digest and the head; it does not prove who wrote a record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ovtui.core.bounds import MAX_RECORD_BYTES
from ovtui.core.errors import OvtuiError
from ovtui.memory.history import HistoryStore
from ovtui.memory.memory_diff import ChainLink, MemoryDiff
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import record_target_problem
from ovtui.storage.journal import FileOp, sha256_bytes, sha256_text
from ovtui.storage.paths import HISTORY_CHAIN_FILE
from ovtui.storage.reading import read_bounded

CHAIN_FORMAT = "ovtui-chain/1"


def canonical_digest(data: dict[str, Any]) -> str:
    """The digest of a record's JSON data, its ``chain.digest`` left out."""
    body = dict(data)
    chain = body.get("chain")
    if isinstance(chain, dict):
        body["chain"] = {k: v for k, v in chain.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return sha256_text(text)


@dataclass(frozen=True)
class Head:
    seq: int
    id: str
    digest: str

    def render(self) -> str:
        head = {"format": CHAIN_FORMAT, "seq": self.seq, "id": self.id, "digest": self.digest}
        return json.dumps(head, indent=2) + "\n"


def _raw_record(history: HistoryStore, record_id: str) -> tuple[bytes | None, str]:
    """A record's bytes (None: unreadable) and why not."""
    path = history.record_path(record_id)
    try:
        return read_bounded(
            path, MAX_RECORD_BYTES, what="the record", shown=history.record_relpath(record_id)
        ), ""
    except (OSError, OvtuiError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _parse(data: bytes) -> dict[str, Any] | None:
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def earlier_digest(pairs: list[tuple[str, bytes]]) -> str:
    """The digest of the records that predate the chain: their ids and bytes, in id order."""
    lines = "".join(f"{record_id} {sha256_bytes(data)}\n" for record_id, data in sorted(pairs))
    return sha256_text(lines)


def read_head(history: HistoryStore) -> tuple[Head | None, str | None]:
    """The chain's head, and the text it was read from (None: no head file)."""
    path = history.paths.root / HISTORY_CHAIN_FILE
    try:
        text = read_bounded(path, 4096, what="the history chain head", shown=HISTORY_CHAIN_FILE).decode(
            "utf-8"
        )
    except FileNotFoundError:
        return None, None
    except (OSError, OvtuiError, UnicodeDecodeError):
        return None, ""
    data = _parse(text.encode("utf-8"))
    try:
        assert data is not None and data.get("format") == CHAIN_FORMAT
        return Head(int(data["seq"]), str(data["id"]), str(data["digest"])), text
    except (AssertionError, KeyError, TypeError, ValueError):
        return None, text


def _scan(history: HistoryStore) -> tuple[Head | None, list[tuple[str, bytes]]]:
    """The newest chained record on disk (a head to continue from), and the unchained records."""
    newest: Head | None = None
    unchained: list[tuple[str, bytes]] = []
    for record_id in sorted(history.ids_on_disk()):
        data, _why = _raw_record(history, record_id)
        if data is None:
            continue
        parsed = _parse(data)
        chain = parsed.get("chain") if parsed else None
        if not isinstance(chain, dict):
            unchained.append((record_id, data))
        elif isinstance(chain.get("seq"), int) and (newest is None or chain["seq"] > newest.seq):
            newest = Head(chain["seq"], record_id, str(chain.get("digest", "")))
    return newest, unchained


def seal(history: HistoryStore, record: MemoryDiff, record_id: str) -> list[FileOp]:
    """Link ``record`` into the chain (the caller holds the workspace lock) and return the writes
    of the record and the new head, to commit in the same transaction as its files."""
    head, head_text = read_head(history)
    if head is None:
        # No head: the first chained record, or the head file was lost (then continue from the
        # newest chained record; `history verify` reports the missing head until this write).
        head, unchained = _scan(history)
        earlier = None if head is not None else (len(unchained), earlier_digest(unchained))
    else:
        earlier = None
    link = ChainLink(
        seq=head.seq + 1 if head else 1,
        id=record_id,
        previous=head.id if head else None,
        previous_digest=head.digest if head else None,
        earlier=earlier[0] if earlier else None,
        earlier_digest=earlier[1] if earlier else None,
    )
    linked = record.model_copy(update={"chain": link})
    # Over what the file will hold (OpenViking's shape: bodies, a null trace_id), as verify reads it.
    link.digest = canonical_digest(json.loads(linked.render()))
    old_head = sha256_text(head_text) if head_text is not None else None
    new_head = Head(link.seq, record_id, link.digest)
    return [
        FileOp(history.record_relpath(record_id), "write", linked.render()),
        FileOp(HISTORY_CHAIN_FILE, "write", new_head.render(), old_head),
    ]


@dataclass
class _Read:
    """One record as verification sees it."""

    id: str
    data: dict[str, Any] | None
    raw: bytes | None
    why: str = ""

    @property
    def chain(self) -> dict[str, Any] | None:
        chain = self.data.get("chain") if self.data else None
        return chain if isinstance(chain, dict) else None


@dataclass
class ChainReport:
    """What ``verify`` found: one line per problem, each naming the record file."""

    chained: int = 0
    earlier: int = 0  # records that predate the chain
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        parts = [f"{self.chained} chained record(s)"]
        if self.earlier:
            parts.append(
                f"{self.earlier} earlier record(s) predate the chain "
                "(checked for changes since it began, not before)"
            )
        return "; ".join(parts)


def _operations(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The (uri, memory_type) of every operation in a record's JSON data, however malformed."""
    ops = data.get("operations")
    found: list[tuple[str, str]] = []
    for key in ("adds", "updates", "deletes"):
        listed = ops.get(key) if isinstance(ops, dict) else None
        for op in listed if isinstance(listed, list) else []:
            if isinstance(op, dict):
                found.append((str(op.get("uri", "")), str(op.get("memory_type", ""))))
    return found


class ChainVerifier:
    """Checks the chain of one history folder and the targets of every record in it."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.history = HistoryStore(store.paths)
        self.records = [self._read(i) for i in sorted(self.history.ids_on_disk())]

    def _read(self, record_id: str) -> _Read:
        raw, why = _raw_record(self.history, record_id)
        data = _parse(raw) if raw is not None else None
        if raw is not None and data is None:
            why = "not valid JSON"
        return _Read(record_id, data, raw, why)

    def where(self, record_id: str) -> str:
        return self.history.record_relpath(record_id)

    def record_problems(self, read: _Read) -> list[str]:
        """What is wrong with one chained record on its own: its digest and its id."""
        chain = read.chain
        assert chain is not None and read.data is not None
        problems = []
        if chain.get("digest") != canonical_digest(read.data):
            problems.append(f"{self.where(read.id)}: edited after it was written (its digest does not match)")
        if chain.get("id") != read.id:
            problems.append(
                f"{self.where(read.id)}: written as record {chain.get('id')!r}, "
                "found in another folder (renamed or swapped)"
            )
        return problems

    def verify(self) -> ChainReport:
        report = ChainReport()
        chained: dict[int, _Read] = {}
        unchained: list[_Read] = []
        for read in self.records:
            if read.data is None:
                report.problems.append(f"{self.where(read.id)}: unreadable ({read.why})")
            elif read.chain is None:
                unchained.append(read)
            elif not isinstance(read.chain.get("seq"), int):
                report.problems.append(
                    f"{self.where(read.id)}: its chain position is missing or not a number"
                )
            elif read.chain["seq"] in chained:
                other = chained[read.chain["seq"]]
                report.problems.append(
                    f"{self.where(read.id)}: claims chain position {read.chain['seq']}, as {other.id} does "
                    "(copied or reordered)"
                )
            else:
                chained[read.chain["seq"]] = read
                report.problems += self.record_problems(read)
            if read.data is not None:
                report.problems += self.target_problems(read.id, read.data)
        report.chained = len(chained)
        self._links(chained, report)
        self._earlier(chained.get(1), unchained, report)
        self._head(chained, report)
        return report

    def target_problems(self, record_id: str, data: dict[str, Any]) -> list[str]:
        """A line for each target the write rule refuses (a revert would write it)."""
        problems = []
        for uri, memory_type in _operations(data):
            why = record_target_problem(self.store, uri, memory_type)
            if why is not None:
                problems.append(f"{self.where(record_id)}: targets {uri}, which no record may write: {why}")
        return problems

    def _links(self, chained: dict[int, _Read], report: ChainReport) -> None:
        for seq in range(1, max(chained, default=0) + 1):
            read = chained.get(seq)
            if read is None:
                after = chained.get(seq - 1)
                report.problems.append(
                    f"history: the record at chain position {seq} "
                    f"{f'(after {self.where(after.id)}) ' if after else ''}is missing: removed"
                )
                continue
            chain = read.chain
            assert chain is not None
            before = chained.get(seq - 1)
            if seq == 1 or before is None:
                continue
            before_chain = before.chain
            assert before_chain is not None
            if chain.get("previous") != before.id or chain.get("previous_digest") != before_chain.get(
                "digest"
            ):
                report.problems.append(
                    f"{self.where(read.id)}: its previous record is not {before.id}, "
                    "the one before it in the chain (reordered or replaced)"
                )

    def _earlier(self, first: _Read | None, unchained: list[_Read], report: ChainReport) -> None:
        if first is None:
            report.earlier = len(unchained)  # no chain yet: every record predates it
            return
        chain = first.chain
        assert chain is not None
        count = chain.get("earlier")
        if not isinstance(count, int):
            report.problems.append(
                f"{self.where(first.id)}: the first chained record does not count earlier ones"
            )
            return
        older = [r for r in unchained if r.id < first.id]
        for read in unchained:
            if read.id > first.id:
                report.problems.append(
                    f"{self.where(read.id)}: has no chain fields but is newer than the chain's start "
                    f"({first.id}): written outside ovtui or its chain fields removed"
                )
        report.earlier = len(older)
        pairs = [(r.id, r.raw) for r in older if r.raw is not None]
        if len(older) != count or earlier_digest(pairs) != chain.get("earlier_digest"):
            report.problems.append(
                f"history: the {count} record(s) that predate the chain (before {self.where(first.id)}) "
                f"were changed since it began: {len(older)} found, edited, removed or added"
            )

    def _head(self, chained: dict[int, _Read], report: ChainReport) -> None:
        head, text = read_head(self.history)
        last = max(chained, default=0)
        if head is None:
            if text is not None:
                report.problems.append(f"{HISTORY_CHAIN_FILE}: unreadable or not an ovtui chain head")
            elif chained:
                report.problems.append(f"{HISTORY_CHAIN_FILE}: missing, though {last} record(s) are chained")
            return
        if head.seq > last:
            report.problems.append(
                f"{HISTORY_CHAIN_FILE}: the chain ends at {head.id} (position {head.seq}), "
                f"but only {last} record(s) are there: the newest removed"
            )
        elif chained[head.seq].id != head.id or (chained[head.seq].chain or {}).get("digest") != head.digest:
            report.problems.append(f"{HISTORY_CHAIN_FILE}: does not match record {chained[head.seq].id}")
        elif head.seq < last:
            report.problems.append(
                f"{self.where(chained[last].id)}: chained after the head ({head.id}): added by hand"
            )

    def check_record(self, record_id: str) -> list[str]:
        """Why ``record_id`` cannot be trusted (empty: it can): the problems verification reports
        about the record itself, its link to the one before it, or the earlier records it is one of."""
        report = self.verify()
        where = self.where(record_id)
        mine = [p for p in report.problems if p.startswith(where)]
        read = next((r for r in self.records if r.id == record_id), None)
        if read is not None and read.chain is None:
            mine += [p for p in report.problems if "predate the chain" in p]
        return mine
