"""The token counter: a real tokenizer (tiktoken over a rank file) where one loads, and where none
does the estimate, labelled as one, with the reason."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizer_support import no_tiktoken_download, write_rank_file

from ovtui.core.config import TokensConfig
from ovtui.llm import tokens
from ovtui.llm.budget import estimate_tokens
from ovtui.llm.tokens import ESTIMATED_TOKENS, figure, rank_file_problem, token_counter

TEXT = "abab ab"


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in no_tiktoken_download(tmp_path / "tiktoken-cache").items():
        monkeypatch.setenv(name, value)


def test_a_rank_file_counts_with_tiktoken_and_says_so(tmp_path: Path) -> None:
    sha = write_rank_file(tmp_path / "ranks.tiktoken", merges=(b"ab", b"abab"))
    counter = token_counter(TokensConfig(rank_file="ranks.tiktoken", rank_file_sha256=sha), tmp_path)
    # cl100k's split gives "abab" and " ab": one merged token, then " " and "ab".
    assert counter(TEXT) == 3 != estimate_tokens(TEXT)
    assert counter.exact and counter.tokenizer == "cl100k_base (tiktoken)" and counter.problem is None
    assert counter.said() == "tokens counted with cl100k_base (tiktoken)"
    assert figure(3, counter.tokenizer) == "3"


def test_o200k_splits_its_own_way(tmp_path: Path) -> None:
    write_rank_file(tmp_path / "ranks.tiktoken")
    counter = token_counter(TokensConfig(encoding="o200k_base", rank_file="ranks.tiktoken"), tmp_path)
    assert counter.tokenizer == "o200k_base (tiktoken)"
    assert counter("héllo") == len("héllo".encode())  # no merges: one token a byte


@pytest.mark.usefixtures("offline")
def test_without_a_tokenizer_the_estimate_counts_and_every_figure_says_so(tmp_path: Path) -> None:
    counter = token_counter(TokensConfig(), tmp_path)
    assert not counter.exact and counter.tokenizer == ESTIMATED_TOKENS
    assert counter(TEXT) == estimate_tokens(TEXT)
    assert counter.problem is not None and counter.problem.startswith(
        "cl100k_base is not in tiktoken's cache and its download failed"
    )
    assert counter.said().startswith("tokens estimated, not counted: ≈ figures are the estimate")
    assert figure(2, counter.tokenizer) == "≈2"


@pytest.fixture
def silent_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A proxy that takes the connection and never answers (a network that drops the packets)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        proxy = f"http://127.0.0.1:{server.getsockname()[1]}"
        for name, value in no_tiktoken_download(tmp_path / "tiktoken-cache").items():
            monkeypatch.setenv(name, proxy if name.lower() == "https_proxy" else value)
        yield
    # closing the server resets the connection: the download gives up and its thread ends


@pytest.mark.usefixtures("silent_proxy")
def test_a_download_that_never_answers_is_waited_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "DOWNLOAD_WAIT_S", 0.2)
    counter = token_counter(TokensConfig(), tmp_path)
    assert not counter.exact and counter(TEXT) == estimate_tokens(TEXT)
    assert counter.problem == (
        "cl100k_base is not in tiktoken's cache and its download failed: no answer in 0.2 s"
    )


def test_without_tiktoken_the_estimate_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_rank_file(tmp_path / "ranks.tiktoken")
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # `import tiktoken` fails as if not installed
    counter = token_counter(TokensConfig(rank_file="ranks.tiktoken"), tmp_path)
    assert not counter.exact
    assert counter.problem == "tiktoken is not installed: pip install 'ovtui[tokens]'"


def test_a_missing_rank_file_or_a_wrong_hash_is_one_line_and_the_estimate(tmp_path: Path) -> None:
    missing = TokensConfig(rank_file="missing.tiktoken")
    problem = rank_file_problem(missing, tmp_path)
    assert problem is not None and (problem.key, problem.message) == (
        "rank_file",
        "missing.tiktoken not found",
    )
    assert token_counter(missing, tmp_path).problem == "[tokens] rank_file: missing.tiktoken not found"
    sha = write_rank_file(tmp_path / "ranks.tiktoken")
    wrong = TokensConfig(rank_file="ranks.tiktoken", rank_file_sha256="0" * 64)
    problem = rank_file_problem(wrong, tmp_path)
    assert problem is not None and problem.key == "rank_file_sha256"
    assert problem.message == f"ranks.tiktoken has SHA-256 {sha}, not {'0' * 64}"
    counter = token_counter(wrong, tmp_path)
    assert not counter.exact and counter(TEXT) == estimate_tokens(TEXT)
    assert rank_file_problem(TokensConfig(rank_file="ranks.tiktoken", rank_file_sha256=sha), tmp_path) is None


def test_a_file_that_is_not_ranks_names_its_line(tmp_path: Path) -> None:
    write_rank_file(tmp_path / "ranks.tiktoken")
    with (tmp_path / "ranks.tiktoken").open("a", encoding="utf-8") as handle:
        handle.write("not-base64! x\n")
    problem = rank_file_problem(TokensConfig(rank_file="ranks.tiktoken"), tmp_path)
    assert problem is not None
    assert problem.message == "ranks.tiktoken:257: not a base64 token and its rank"


def test_a_rank_file_without_every_byte_is_refused_before_it_could_fail_to_encode(tmp_path: Path) -> None:
    write_rank_file(tmp_path / "ranks.tiktoken")
    lines = (tmp_path / "ranks.tiktoken").read_bytes().splitlines(keepends=True)
    (tmp_path / "ranks.tiktoken").write_bytes(b"".join(lines[:65] + lines[66:]))  # no "A" (0x41)
    config = TokensConfig(rank_file="ranks.tiktoken")
    problem = rank_file_problem(config, tmp_path)
    assert problem is not None
    assert problem.message == "ranks.tiktoken: not a BPE rank file (no token for the byte 0x41)"
    counter = token_counter(config, tmp_path)
    assert not counter.exact and counter("A") == estimate_tokens("A")


def test_two_tokens_of_one_rank_are_refused_by_name(tmp_path: Path) -> None:
    write_rank_file(tmp_path / "ranks.tiktoken")
    with (tmp_path / "ranks.tiktoken").open("ab") as handle:
        handle.write(b"YWI= 255\n")  # "ab" given the rank of the byte 0xff
    config = TokensConfig(rank_file="ranks.tiktoken")
    problem = rank_file_problem(config, tmp_path)
    assert problem is not None
    assert problem.message == "ranks.tiktoken: not a BPE rank file (two tokens of rank 255)"
    assert not token_counter(config, tmp_path).exact
