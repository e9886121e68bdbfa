"""Hybrid retrieval through ``[embedding]``: a real ``ovtui serve`` subprocess asks a fake
OpenAI-compatible ``/v1/embeddings`` endpoint (in this process, on 127.0.0.1) for vectors, in
base64 and in float encoding; a paraphrase sharing no word with the memory is found; vectors are
cached per content hash (a restart sends nothing again, a changed memory only itself); an endpoint
that goes away leaves retrieval lexical."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from retrieval_support import compact_ok, served
from workspace_support import build_workspace

from ovtui.core.config import EmbeddingConfig
from ovtui.core.fileformat import render_memory
from ovtui.llm.embeddings import EmbeddingError, OpenAIEmbedder, decode_vector
from ovtui.testing.embeddings import concept_vector
from ovtui.testing.openai_server import FakeOpenAIServer

# The fake model's "meaning": each of these words stands for its concept.
SYNONYMS = {
    "scrap": "cancel",
    "drop": "cancel",
    "call": "cancel",
    "off": "cancel",
    "cancel": "cancel",
    "trip": "booking",
    "journey": "booking",
    "booking": "booking",
    "reservation": "booking",
}
PARAPHRASE = "scrap my journey"  # not one word of it is in the memory


def embedded_config(root: Path, base_url: str, encoding: str) -> None:
    (root / "ovtui.toml").write_text(
        f'[embedding]\nbase_url = "{base_url}"\nmodel = "fake-embedder"\nencoding_format = "{encoding}"\n'
        'api_key_env = "OVTUI_TEST_EMBEDDING_KEY"\nbatch = 2\nweight = 0.6\nmax_retries = 0\n'
    )


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_a_paraphrase_is_found_through_the_vectors(tmp_path: Path, encoding: str) -> None:
    root = build_workspace(tmp_path / "ws")
    query = {"query": PARAPHRASE, "target_uri": "viking://user/default/memories/experiences", "limit": 3}
    with FakeOpenAIServer(embed=concept_vector(SYNONYMS)) as fake:
        embedded_config(root, fake.base_url, encoding)
        env = {"OVTUI_TEST_EMBEDDING_KEY": "sk-embed-secret"}
        with served(root, env=env) as client:
            hits = compact_ok(client.post("/api/v1/search/find", json=query))["memories"]
            assert hits[0]["uri"].endswith("/reservation_cancellation.md"), hits
            requests = fake.embedding_requests
            assert requests and all(r.body["encoding_format"] == encoding for r in requests)
            assert all(r.body["model"] == "fake-embedder" and len(r.body["input"]) <= 2 for r in requests)
            assert requests[0].headers["authorization"] == "Bearer sk-embed-secret"
            sent = fake.embedded_texts
            assert PARAPHRASE in sent and sum("reservation cancellation" in t for t in sent) == 1
            # Asked again: the memories' vectors are held, the query's remembered.
            compact_ok(client.post("/api/v1/search/find", json=query))
            assert fake.embedded_texts == sent
            # keywords search is lexical only: the paraphrase matches nothing.
            lexical = {**query, "search_type": "keywords"}
            assert compact_ok(client.post("/api/v1/search/search", json=lexical))["memories"] == []
        if encoding == "float":
            return
        # A restart reads the vectors from .ovtui/embeddings/: only the query is sent again.
        folder = root / "memories" / "experiences"
        changed = folder / ".address_change.tmp"
        moved = render_memory("## Situation\n- Customer moved house", {"experience_name": "address_change"})
        changed.write_text(moved)
        os.replace(changed, folder / "address_change.md")
        before = len(fake.embedded_texts)
        with served(root, env=env) as client:
            hits = compact_ok(client.post("/api/v1/search/find", json=query))["memories"]
            assert hits[0]["uri"].endswith("/reservation_cancellation.md")
        again = fake.embedded_texts[before:]
        assert sorted(again) == sorted([PARAPHRASE, "address change\n## Situation\n- Customer moved house"])
        assert list((root / ".ovtui" / "embeddings").glob("*.bin"))
        written = "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())
        assert "sk-embed-secret" not in written


def test_an_endpoint_that_fails_leaves_retrieval_lexical(tmp_path: Path) -> None:
    root = build_workspace(tmp_path / "ws")
    with FakeOpenAIServer(embed=concept_vector(SYNONYMS)) as fake:
        fake.embeddings_down = True
        embedded_config(root, fake.base_url, "base64")
        with served(root) as client:

            def find(text: str) -> list[dict[str, str]]:
                hits: list[dict[str, str]] = compact_ok(
                    client.post("/api/v1/search/find", json={"query": text, "limit": 2})
                )["memories"]
                return hits

            assert find("cancel the booking")[0]["uri"].endswith("/reservation_cancellation.md")
            assert find(PARAPHRASE) == []
            fake.embeddings_down = False  # back: the next query is hybrid again
            hits = find(PARAPHRASE)
            assert hits and hits[0]["uri"].endswith("/reservation_cancellation.md")


async def test_the_embedder_names_what_went_wrong() -> None:
    with FakeOpenAIServer(embed=lambda text: [1.0, 0.0]) as fake:
        config = EmbeddingConfig(base_url=fake.base_url, model="m", max_retries=0, dimensions=2)
        embedder = OpenAIEmbedder(config)
        assert await embedder.embed(["a", "b", "c"]) == [[1.0, 0.0]] * 3
        assert fake.embedding_requests[0].body["dimensions"] == 2
        fake.embeddings_down = True
        with pytest.raises(EmbeddingError, match=r"\[embedding\] .* \(m\): HTTP 503"):
            await embedder.embed(["a"])
        await embedder.aclose()
    assert decode_vector("AACAPwAAAEA=") == [1.0, 2.0]
    with pytest.raises(ValueError):
        decode_vector([True, "x"])


def test_the_embedder_serves_one_event_loop_after_another() -> None:
    """Kept by a workspace across ``asyncio.run`` calls: each loop gets its own connections."""
    with FakeOpenAIServer(embed=lambda text: [1.0, 0.0]) as fake:
        embedder = OpenAIEmbedder(EmbeddingConfig(base_url=fake.base_url, model="m", max_retries=0))

        async def embed(close: bool) -> list[list[float]]:
            vectors = await embedder.embed(["a"])
            if close:
                await embedder.aclose()
            return vectors

        assert [asyncio.run(embed(close)) for close in (False, False, True, True)] == [[[1.0, 0.0]]] * 4
        assert len(fake.embedding_requests) == 4
