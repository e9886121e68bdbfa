"""The experiences as last parsed, kept between processes: opening a workspace of 10,000
experiences reads one file and re-parses only the memory files changed since.

The cache is a copy, never the truth. An entry is used only for a file whose signature (inode,
mtime, size, ctime) is the one it was parsed at, and only by the parser it was parsed with (the
parsing modules' own bytes are part of the header); anything it cannot vouch for — another format,
a damaged line, a file it does not list — is read from the memory file. It is written whole and
atomically, and a failure to write (a full disk, a read-only workspace) only costs the next
process the full parse.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import stat
from collections.abc import Iterable
from contextlib import suppress
from functools import cache
from pathlib import Path

import pydantic
from pydantic import TypeAdapter, ValidationError

from ovtui.core.domain import Experience, Model
from ovtui.core.errors import OvtuiError
from ovtui.storage.fsio import atomic_write_bytes
from ovtui.storage.reading import read_bounded

log = logging.getLogger(__name__)

FORMAT = 1
MAX_CACHE_BYTES = 1 << 30  # a bigger cache is not read (the files are): 200,000 experiences fit
Signature = tuple[int, int, int, int]  # inode, mtime_ns, size, ctime_ns: unchanged bytes
# Whose code decides what a file parses to: an entry parsed by other code is not used.
PARSER_MODULES = ("ovtui.core.fileformat", "ovtui.core.experience_files", "ovtui.core.domain")


class CachedExperience(Model):
    file: str  # the file's name in the experiences folder
    signature: Signature
    experience: Experience
    mismatch: str | None = None  # the file's experience_name problem, reported at each load


# Entries decoded together (not one call over the whole file: a reader thread must not hold the
# interpreter for the whole decode while a screen waits to draw a key; 256 take about 3 ms).
DECODE_CHUNK = 256
_ENTRIES = TypeAdapter(list[CachedExperience])


class CacheHeader(Model):
    format: int
    parser: str
    root_uri: str


@cache
def parser_fingerprint() -> str:
    """The parsing code's identity: its modules' bytes and the pydantic version."""
    digest = hashlib.sha256(pydantic.VERSION.encode())
    for name in PARSER_MODULES:
        source = getattr(importlib.import_module(name), "__file__", None)
        digest.update(name.encode())
        if source:
            try:
                digest.update(Path(source).read_bytes())
            except OSError:
                digest.update(b"unreadable")
    return digest.hexdigest()[:32]


def read_cache(path: Path, root_uri: str) -> dict[str, CachedExperience]:
    """The entries of the cache at ``path`` by file name; none when it is missing, of another
    format or parser, or for another folder. A damaged entry is left out (its file is read)."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):  # a link is not followed, wherever it leads
            return {}
        lines = read_bounded(path, MAX_CACHE_BYTES, what="the experiences cache").splitlines()
    except (OSError, OvtuiError):
        return {}
    if not lines:
        return {}
    try:
        header = CacheHeader.model_validate_json(lines[0])
    except ValidationError:
        return {}
    if header.format != FORMAT or header.parser != parser_fingerprint() or header.root_uri != root_uri:
        return {}
    entries: dict[str, CachedExperience] = {}
    prefix = root_uri + "/"
    body = lines[1:]
    for start in range(0, len(body), DECODE_CHUNK):
        for entry in _decoded(body[start : start + DECODE_CHUNK]):
            if entry.experience.uri == prefix + entry.file:  # an entry is about the file it names
                entries[entry.file] = entry
    return entries


def _decoded(lines: list[bytes]) -> list[CachedExperience]:
    """The entries of some lines: decoded together (one call each was a third of the time), and
    where one is damaged, line by line without it."""
    try:
        return _ENTRIES.validate_json(b"[" + b",".join(lines) + b"]")
    except ValidationError:
        decoded = []
        for line in lines:
            with suppress(ValidationError):
                decoded.append(CachedExperience.model_validate_json(line))
        return decoded


def write_cache(
    path: Path, root: Path, root_uri: str, entries: Iterable[tuple[str, Signature, Experience, str | None]]
) -> None:
    """The cache replaced by ``entries`` (file name, signature, experience, mismatch), atomically;
    a failure is logged and nothing else."""
    header = CacheHeader(format=FORMAT, parser=parser_fingerprint(), root_uri=root_uri)
    lines = [header.model_dump_json()]
    for name, signature, experience, mismatch in entries:
        # The line of a CachedExperience, composed here: building a model per entry to dump it
        # was most of the time of writing 10,000.
        lines.append(
            f'{{"file":{json.dumps(name)},"signature":{json.dumps(signature)},'
            f'"experience":{experience.model_dump_json()},"mismatch":{json.dumps(mismatch)}}}'
        )
    try:
        atomic_write_bytes(path, "\n".join(lines).encode() + b"\n", root=root, sync_dir=False)
    except (OSError, OvtuiError) as exc:  # a full disk, a read-only folder, a link leading out
        log.info("the experiences cache %s was not written: %s", path, exc)
