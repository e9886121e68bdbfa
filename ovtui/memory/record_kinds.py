"""The kinds of memory_diff record, apart from the records' models: the CLI offers them as choices
without loading pydantic."""

from typing import Literal, get_args

RecordKind = Literal["apply", "dry_run", "revert", "session_commit", "migrate", "edit", "write"]
RECORD_KINDS: tuple[str, ...] = get_args(RecordKind)
