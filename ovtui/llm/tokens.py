"""The token counter behind the token figures ovtui shows (utility's cost per case, its prompt-cost
bound): a real tokenizer where one loads, else the context budget's estimate, labelled as one.

The tokenizer is OpenAI's BPE encoding named by ``[tokens] encoding`` (``cl100k_base`` or
``o200k_base``), counted by ``tiktoken`` (the optional extra ``ovtui[tokens]``). Its ranks come from
``[tokens] rank_file`` when one is configured (its SHA-256 checked against ``rank_file_sha256`` when
that is given), else from tiktoken itself: its cache (``TIKTOKEN_CACHE_DIR``) or a download. When
none loads, the figures are the estimate's, and say so: every figure is written ``≈N`` and the
counter's ``tokenizer`` names the estimate (and ``problem`` why a configured one did not load).

The context budget's fitting stays on its estimate: a prompt must fit before the request, so it
counts on the high side for whatever model serves it, which no one encoding does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import queue
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.core.config import TokensConfig
from ovtui.core.errors import OvtuiError
from ovtui.llm.budget import estimate_tokens
from ovtui.storage.reading import read_bounded

if TYPE_CHECKING:
    import tiktoken

ESTIMATED_TOKENS = "estimate (the context budget's: 4 characters a token, on the high side)"
MAX_RANK_FILE_BYTES = 64 * 1024 * 1024  # o200k_base's is 3.6 MB
TOKENS_EXTRA = "pip install 'ovtui[tokens]'"
DOWNLOAD_WAIT_S = 20.0  # for tiktoken's cache or download of an encoding (a cached one takes < 1 s)

# How each encoding splits text before its ranks merge bytes, and its special tokens (counted as
# ordinary text here): what tiktoken's own constructors give, needed to build one from a rank file.
_PATTERNS = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
        r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
_SPECIAL_TOKENS = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


class TokenizerError(OvtuiError):
    """A configured rank file that cannot be used; ``key``: the ``[tokens]`` key to fix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"[tokens] {key}: {message}")
        self.key = key
        self.message = message


@dataclass(frozen=True)
class TokenCounter:
    """Counts a text's tokens; ``tokenizer`` names what counts, ``exact`` whether it is a real
    tokenizer, ``problem`` why a configured one did not load (None: nothing went wrong)."""

    count: Callable[[str], int]
    tokenizer: str
    exact: bool
    problem: str | None = None

    def __call__(self, text: str) -> int:
        return self.count(text)

    def said(self) -> str:
        """One line naming what counts the token figures."""
        if self.exact:
            return f"tokens counted with {self.tokenizer}"
        why = f"; {self.problem}" if self.problem else ""
        return f"tokens estimated, not counted: ≈ figures are the {self.tokenizer}{why}"


def is_estimate(tokenizer: str) -> bool:
    """Whether a recorded tokenizer label is the estimate's (an older record's empty one too)."""
    return not tokenizer or tokenizer.startswith("estimate")


def counted_by(tokenizer: str) -> str:
    """How a recorded figure was counted, in words."""
    return "estimated, not counted" if is_estimate(tokenizer) else f"counted with {tokenizer}"


def figure(tokens: int, tokenizer: str) -> str:
    """A token figure as shown: ``≈N`` when the estimate counted it."""
    return f"≈{tokens}" if is_estimate(tokenizer) else str(tokens)


def estimated(problem: str | None = None) -> TokenCounter:
    return TokenCounter(estimate_tokens, ESTIMATED_TOKENS, exact=False, problem=problem)


def rank_file_path(config: TokensConfig, root: Path) -> Path | None:
    """The configured rank file (a relative path is the workspace's), None when none is."""
    if config.rank_file is None:
        return None
    path = Path(config.rank_file).expanduser()
    return path if path.is_absolute() else root / path


def rank_file_problem(config: TokensConfig, root: Path) -> TokenizerError | None:
    """What is wrong with the configured rank file (None: nothing, or none is configured)."""
    path = rank_file_path(config, root)
    if path is None:
        return None
    try:
        load_ranks(path, config.rank_file or "", config.rank_file_sha256)
    except TokenizerError as exc:
        return exc
    return None


def load_ranks(path: Path, shown: str, sha256: str | None) -> dict[bytes, int]:
    """A rank file's ranks, its hash checked when one is given (``shown``: the path as configured).
    The file is read here, not by tiktoken's loader, which keeps a copy of every file it reads in
    its cache folder."""
    try:
        data = read_bounded(path, MAX_RANK_FILE_BYTES, what="the rank file", shown=shown)
    except FileNotFoundError:
        raise TokenizerError("rank_file", f"{shown} not found") from None
    except (OSError, OvtuiError) as exc:
        raise TokenizerError("rank_file", f"{shown} cannot be read: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise TokenizerError("rank_file_sha256", f"{shown} has SHA-256 {digest}, not {sha256}")
    ranks = _parse_ranks(data, shown)
    _check_ranks(ranks, shown)
    return ranks


def _parse_ranks(data: bytes, shown: str) -> dict[bytes, int]:
    """tiktoken's rank file: one ``<base64 token> <rank>`` a line."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise TokenizerError("rank_file", f"{shown}:{number}: not a base64 token and its rank") from None
    return ranks


def _check_ranks(ranks: dict[bytes, int], shown: str) -> None:
    # tiktoken's encoder aborts the process (a Rust panic, no exception) on two tokens of one rank
    # and on a byte with no token of its own: refused here, by name.
    if len(set(ranks.values())) < len(ranks):
        shared = Counter(ranks.values()).most_common(1)[0][0]
        raise TokenizerError("rank_file", f"{shown}: not a BPE rank file (two tokens of rank {shared})")
    lacking = next((byte for byte in range(256) if bytes([byte]) not in ranks), None)
    if lacking is not None:
        raise TokenizerError(
            "rank_file", f"{shown}: not a BPE rank file (no token for the byte {lacking:#04x})"
        )


def _from_tiktoken(encoding: str) -> tiktoken.Encoding | str:
    """The encoding from tiktoken's cache or its download, else why not. tiktoken downloads with
    no timeout (a network that drops packets holds it for minutes), so it is waited for only
    ``DOWNLOAD_WAIT_S``, in a daemon thread that cannot hold the process open after that."""
    import tiktoken

    answer: queue.Queue[tiktoken.Encoding | str] = queue.Queue(maxsize=1)

    def load() -> None:
        try:
            answer.put(tiktoken.get_encoding(encoding))
        except Exception as exc:  # a download fails in many ways: each one is the estimate, said why
            answer.put(type(exc).__name__)

    threading.Thread(target=load, name=f"tiktoken {encoding}", daemon=True).start()
    try:
        return answer.get(timeout=DOWNLOAD_WAIT_S)
    except queue.Empty:
        return f"no answer in {DOWNLOAD_WAIT_S:g} s"


def token_counter(config: TokensConfig, root: Path) -> TokenCounter:
    """The counter ``config`` names (blocking: it may read a rank file or download one)."""
    encoding, path = config.encoding, rank_file_path(config, root)
    try:
        import tiktoken
    except ImportError:
        return estimated(f"tiktoken is not installed: {TOKENS_EXTRA}")
    if path is not None:
        try:
            ranks = load_ranks(path, config.rank_file or "", config.rank_file_sha256)
        except TokenizerError as exc:
            return estimated(str(exc))
        built = tiktoken.Encoding(
            name=encoding,
            pat_str=_PATTERNS[encoding],
            mergeable_ranks=ranks,
            special_tokens=_SPECIAL_TOKENS[encoding],
        )
    else:
        loaded = _from_tiktoken(encoding)
        if isinstance(loaded, str):
            return estimated(f"{encoding} is not in tiktoken's cache and its download failed: {loaded}")
        built = loaded

    def count(text: str) -> int:
        return len(built.encode(text, disallowed_special=()))

    return TokenCounter(count, f"{encoding} (tiktoken)", exact=True)
