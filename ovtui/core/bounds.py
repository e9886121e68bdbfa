"""Size limits for everything that flows from outside into a workspace file, in one place.

ovtui refuses to read a memory file larger than ``MAX_MEMORY_FILE_BYTES``, so nothing it writes may
be larger: what flows into a memory file is bounded at each stage, by field, with a visible marker
where something was cut (a rollout's messages, tool names and texts at intake; a memory's text
fields when it is written). Inputs (inbox files, dataset lines, the config) are refused above
their own limits before they are read whole.

The limits nest: a rollout cut to its limits renders to a trajectory far below the file limit, and
the file limit leaves room for the MEMORY_FIELDS block around a text cut to ``MAX_MEMORY_TEXT_BYTES``.
"""

from __future__ import annotations

from typing import Any

KIB = 1024
MIB = 1024 * KIB

# --- files ovtui reads --------------------------------------------------------------------------
MAX_MEMORY_FILE_BYTES = 4 * MIB  # a memory file (prose, not a data dump)
MAX_ROLLOUT_BYTES = 16 * MIB  # one inbox rollout file
MAX_DATASET_LINE_BYTES = 1 * MIB  # one case (a JSONL line)
MAX_CONFIG_BYTES = 256 * KIB  # ovtui.toml
# The use ledger's log is folded into its summary once it passes this size; neither is read whole
# above its read limit (a log that big means compaction keeps failing: it is reported, not read).
LEDGER_COMPACT_BYTES = 1 * MIB
MAX_LEDGER_LOG_BYTES = 16 * MIB
MAX_LEDGER_SUMMARY_BYTES = 128 * MIB
# What the summary keeps, so it stays bounded however long a workspace is used: per memory the
# newest results it fed and its newest versions; the consumers (sessions, rollouts) whose uses wait
# for an outcome or may come again, the least recently active forgotten first, each with at most
# so many memories and commit keys.
LEDGER_FED_PER_MEMORY = 50
LEDGER_VERSIONS_PER_MEMORY = 4
LEDGER_CONSUMERS = 2048
LEDGER_MEMORIES_PER_CONSUMER = 128
LEDGER_KEYS_PER_CONSUMER = 16
# A history record or a plan waiting for review holds the texts (before and after) of every file
# one apply touches: far above any real one, a bound only against a file that is not one.
MAX_RECORD_BYTES = 256 * MIB
MAX_CACHE_ENTRY_BYTES = 64 * MIB  # one answer of the model, cached
# JSON nests at most ``core.bounded_json.MAX_JSON_DEPTH`` levels, in any file (its parser's limit).

# --- what flows into a memory file --------------------------------------------------------------
MAX_MEMORY_TEXT_BYTES = 1 * MIB  # one text field of a memory (its body included), UTF-8
MAX_ROLLOUT_MESSAGES = 400  # messages kept of a rollout (first and last halves, a marker between)
MAX_PART_TEXT_CHARS = 16_000  # one text part, tool input or tool output of a message
MAX_TOOL_NAME_CHARS = 128
MAX_MESSAGE_PARTS = 32
MAX_QUERY_CHARS = 16_000  # a case's user query as it reaches a trajectory
MAX_FIELD_CHARS = 1_000  # a short field of a memory (a name, an anchor, a case name)

# --- what the servers take (`ovtui serve`, `ovtui env serve`) -----------------------------------
MAX_BATCH_MESSAGES = 100  # messages in one batch request of the session API
MAX_TEXT_CHARS = 200_000  # one message's content; bigger is refused, not cut (it is the user's)
# JSON carries a character in at most 6 bytes (``\uXXXX``: how Python's json and ``requests`` send
# any non-ASCII text by default).
JSON_BYTES_PER_CHAR = 6
# One request body. The largest legitimate one is a full batch of the longest messages: 100 × 200,000
# characters × 6 bytes = 114.4 MiB; the rest is room for keys and tool parts. An execute request of
# the benchmark service (a case, ≤ 1 MiB as a dataset line, and the experiences of a policy set,
# ≤ 4 MiB each as memory files) stays far below it for any set that is trained on.
MAX_REQUEST_BODY_BYTES = 128 * MIB

# --- what ovtui reads from a benchmark service (the remote case source) -------------------------
# One answer, read up to here and refused past it (never read whole first). An execution carries one
# rollout, bounded as an inbox rollout file is, plus its few fields around it; a page of cases fits
# too (a case is at most a dataset line: 16 of the largest, a hundred of a few KiB).
MAX_SERVICE_ANSWER_BYTES = MAX_ROLLOUT_BYTES + 64 * KIB
MAX_ERROR_DETAIL_BYTES = 64 * KIB  # of an error answer: only its reason is shown

CUT_MARKER = "[… cut by ovtui: {n} more {unit} …]"


def marker(n: int, unit: str) -> str:
    return CUT_MARKER.format(n=n, unit=unit)


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and a marker saying how much
    was cut (the result has at most ``limit`` characters plus the marker)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{marker(len(text) - limit, 'characters')}"


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut so that its UTF-8 encoding, marker included, fits in ``limit`` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    tail = marker(len(data), "bytes")  # an upper bound of the cut: the marker never grows
    kept = data[: max(0, limit - len(tail.encode("utf-8")))].decode("utf-8", "ignore")
    return kept + marker(len(data) - len(kept.encode("utf-8")), "bytes")


def cut_value(value: Any, limit: int) -> Any:
    """A JSON-like value with every string in it cut to ``limit`` characters (the same object when
    nothing needed cutting: most values fit, and copying every rollout would cost)."""
    if isinstance(value, str):
        return cut_text(value, limit)
    if isinstance(value, list):
        items = [cut_value(v, limit) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(cut_text(str(k), limit), cut_value(v, limit)) for k, v in value.items()]
        same = all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value


def unreadable_memory(rel: str, text: str | None) -> str | None:
    """Why a memory file's text may not be written: ovtui could not read it back (it could never be
    read, applied to or reverted again): larger than the file limit, or holding a NUL character (a
    read takes that for a binary file; a tool argument a conversation passed may carry one); None
    when it can be written."""
    if text is not None and "\x00" in text:
        return f"{rel} would contain a NUL character, which ovtui reads as a binary file, never a memory"
    size = 0 if text is None else len(text.encode("utf-8"))
    if size <= MAX_MEMORY_FILE_BYTES:
        return None
    return f"{rel} would be {size} bytes, larger than the {MAX_MEMORY_FILE_BYTES} byte limit of a memory file"


def line_too_long(limit: int = MAX_DATASET_LINE_BYTES) -> str:
    return f"line is longer than the {limit} byte limit"
