"""Tokenizer rank files made in a test, and an environment in which tiktoken finds none to load."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path


def write_rank_file(path: Path, merges: tuple[bytes, ...] = ()) -> str:
    """A valid tiktoken rank file: every single byte (so any text encodes: without merges each
    UTF-8 byte is one token), then ``merges`` in order; its SHA-256."""
    tokens = [bytes([b]) for b in range(256)] + list(merges)
    data = b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in enumerate(tokens))
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def no_tiktoken_download(cache: Path) -> dict[str, str]:
    """Variables under which tiktoken has nothing cached (``cache``: an empty folder) and its
    download fails at once (through a proxy on a port nothing listens on), on any machine."""
    cache.mkdir(parents=True, exist_ok=True)
    dead = "http://127.0.0.1:9"
    return {
        "TIKTOKEN_CACHE_DIR": str(cache),
        **{name: dead for name in ("HTTPS_PROXY", "https_proxy")},
        **{name: "" for name in ("NO_PROXY", "no_proxy")},
    }
