"""Benchmark of retrieval: quality on the sample environment, speed on a big workspace.

Quality: recall@1 and @3 of the right experience (``find`` over experiences, three hits) for the
held-out requests of the sample environment (its test split, after one offline ``ovtui train``
learns an experience per graded request kind) and for paraphrases written for this bench
(``bench/fixtures/retrieval_paraphrases.json``: the starter and learned experiences, asked for in
other words), lexical alone against hybrid (weighted and reciprocal-rank fusion). The vectors come
from the endpoint ``OVTUI_BENCH_EMBEDDING_URL`` names (model ``OVTUI_BENCH_EMBEDDING_MODEL``, key in
``OVTUI_BENCH_EMBEDDING_KEY``) when set; otherwise from a deterministic local hashing embedder,
which is no semantic model, and the output says so.

Speed: a workspace of ``--experiences`` experiences and ``--trajectories`` trajectories: the
index's build from cold against the floor of reading every file once, a refresh with nothing
changed, one after a single write, a sweep; ``find`` in process (p50/p95, lexical and hybrid)
against the floor of BM25 alone over one index of the same documents (no refresh, no filters);
the memory the index takes (RSS). Then served (``bench/retrieval_served.py``): ``find`` over
loopback through a real ``ovtui serve`` of the same workspace against the same search in process
(``--rounds`` rounds of each taken in turn, each figure the median of the rounds'), where a served
find's time goes (inside the route by the server's ``Server-Timing``, outside it, CPU per find of
server and client), a find after a write, the server's memory; ``--agents`` agents at once doing
find → messages → commit, and the use ledger counted against what each was served. Run from the
repository root::

    .venv/bin/python bench/retrieval.py [--experiences 10000] [--trajectories 50000] [--queries 200]
        [--agents 50] [--rounds 3]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from retrieval_served import find_times, ms, percentile, report, rss_mib_of, served_figures

from ovtui.cli.init import init_workspace
from ovtui.core.config import EmbeddingConfig
from ovtui.core.fileformat import render_memory
from ovtui.core.interfaces import Embedder
from ovtui.memory.retrieval.access import Visibility
from ovtui.memory.retrieval.index import MemoryIndex
from ovtui.memory.retrieval.ranking import Fusion
from ovtui.memory.retrieval.service import FindQuery, Retrieval
from ovtui.memory.search import LexicalIndex, stemmed_tokens
from ovtui.memory.store import MemoryStore
from ovtui.testing.big_workspace import write_experiences, write_trajectories
from ovtui.testing.embeddings import LocalEmbedder
from ovtui.wiring.workspace import TrainOptions, Workspace

PARAPHRASES = Path(__file__).with_name("fixtures") / "retrieval_paraphrases.json"
# Written after the first set and never used to tune retrieval (issue #34): the held-out measure.
HELD_OUT_PARAPHRASES = Path(__file__).with_name("fixtures") / "retrieval_paraphrases_held_out.json"
MRR_DEPTH = 10
EXPERIENCES = frozenset({"experiences"})
OWNER = Visibility.owner("default")


def embedder_named() -> tuple[Embedder, str]:
    url = os.environ.get("OVTUI_BENCH_EMBEDDING_URL")
    if url:
        from ovtui.llm.embeddings import OpenAIEmbedder

        model = os.environ.get("OVTUI_BENCH_EMBEDDING_MODEL", "text-embedding-3-small")
        config = EmbeddingConfig(base_url=url, model=model, api_key_env="OVTUI_BENCH_EMBEDDING_KEY")
        return OpenAIEmbedder(config), f"{model} at {url}"
    return LocalEmbedder(), (
        "local-hashing: deterministic word and character-trigram hashing, NOT a semantic model (no real "
        "embedding model was reachable: set OVTUI_BENCH_EMBEDDING_URL to measure one)"
    )


# --- quality ---------------------------------------------------------------------------------------
async def trained_sample(root: Path) -> list[tuple[str, str]]:
    """A sample workspace after one offline training run; its held-out requests with the name of
    the experience each is about."""
    init_workspace(root, sample=True)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    with contextlib.redirect_stdout(io.StringIO()):
        await Workspace(root).runs.train(TrainOptions())
    held_out = []
    for line in (root / "datasets" / "support" / "test.jsonl").read_text().splitlines():
        case = json.loads(line)
        held_out.append((case["input"]["user_query"], case["task_signature"]))
    return held_out


def requests_of(path: Path) -> list[tuple[str, str]]:
    return [(r["request"], r["experience"]) for r in json.loads(path.read_text())["requests"]]


async def recall(retrieval: Retrieval, requests: list[tuple[str, str]]) -> dict[str, float]:
    """Recall @1 and @3 of the right experience, and its mean reciprocal rank in the first
    ``MRR_DEPTH`` (0 for a request it is not among them)."""
    at1 = at3 = 0
    reciprocal = 0.0
    for text, expected in requests:
        found = await retrieval.find(FindQuery(text, limit=MRR_DEPTH, memory_types=EXPERIENCES), OWNER)
        names = [f.doc.name for f in found]
        at1 += names[:1] == [expected]
        at3 += expected in names[:3]
        reciprocal += 1 / (names.index(expected) + 1) if expected in names else 0.0
    count = len(requests)
    return {
        "recall@1": round(at1 / count, 3),
        "recall@3": round(at3 / count, 3),
        f"mrr@{MRR_DEPTH}": round(reciprocal / count, 3),
    }


async def quality(root: Path, embedder: Embedder) -> dict[str, Any]:
    held_out = await trained_sample(root)
    paraphrases = requests_of(PARAPHRASES)
    held_out_paraphrases = requests_of(HELD_OUT_PARAPHRASES)
    store = MemoryStore.open(root)
    modes = {
        "lexical": Retrieval(store),
        "hybrid": Retrieval(store, embedder=embedder, fusion=Fusion(0.5, "weighted")),
        "hybrid_rrf": Retrieval(store, embedder=embedder, fusion=Fusion(method="rrf")),
    }
    figures: dict[str, Any] = {
        "held_out_requests": len(held_out),
        "paraphrased_requests": len(paraphrases),
        "held_out_paraphrased_requests": len(held_out_paraphrases),
    }
    for mode, retrieval in modes.items():
        figures[mode] = {
            "held_out": await recall(retrieval, held_out),
            "paraphrased": await recall(retrieval, paraphrases),
            "held_out_paraphrased": await recall(retrieval, held_out_paraphrases),
        }
    return figures


# --- speed -----------------------------------------------------------------------------------------
def read_floor_s(root: Path) -> float:
    """Reading every memory file once, bytes only: what any index of them pays at least."""
    started = time.perf_counter()
    for folder in ("experiences", "trajectories"):
        with os.scandir(root / "memories" / folder) as entries:
            for entry in entries:
                with open(entry.path, "rb") as handle:
                    handle.read()
    return time.perf_counter() - started


def queries(count: int) -> list[str]:
    return [f"customer request of kind {i % 97} look up the account {i * 37 % 10_000}" for i in range(count)]


def bm25_floor(root: Path, texts: list[str]) -> list[float]:
    """BM25 alone over one index of the same documents: no refresh, no filters, no shards."""
    documents, keys = [], []
    for folder in ("experiences", "trajectories"):
        for path in sorted((root / "memories" / folder).iterdir()):
            documents.append(stemmed_tokens(path.read_text()))
            keys.append(path.name)
    index = LexicalIndex(documents, keys)
    times = []
    for text in texts:
        started = time.perf_counter()
        index.top(stemmed_tokens(text), 10)
        times.append(time.perf_counter() - started)
    return times


def big_workspace(root: Path, experiences: int, trajectories: int) -> None:
    """A workspace ``ovtui serve`` serves, approving every plan, with that many memories."""
    init_workspace(root, sample=True)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    write_experiences(root, experiences)
    write_trajectories(root, trajectories)


async def speed(root: Path, args: argparse.Namespace, embedder: Embedder) -> dict[str, Any]:
    big_workspace(root, args.experiences, args.trajectories)
    floor_s = read_floor_s(root)
    store = MemoryStore.open(root)
    before = rss_mib_of()
    index = MemoryIndex(store)
    started, cpu = time.perf_counter(), time.process_time()
    index.refresh()
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    index_mib = rss_mib_of() - before
    noop = []
    for _ in range(20):
        started = time.perf_counter()
        index.refresh()
        noop.append(time.perf_counter() - started)
    updates = []
    folder = root / "memories" / "experiences"
    for i in range(10):
        path = folder / f"generated_{i:05d}.md"
        temp = folder / f".generated_{i:05d}.tmp"
        temp.write_text(
            render_memory(f"## Situation\n- changed {i} for the bench", {"experience_name": path.stem})
        )
        started = time.perf_counter()
        os.replace(temp, path)
        index.refresh()
        updates.append(time.perf_counter() - started)
    started = time.perf_counter()
    index.sweep()
    sweep_s = time.perf_counter() - started
    texts = queries(args.queries)
    lexical = Retrieval(store)
    lexical.index = index  # the index built above, warm
    lexical_times = await find_times(lambda query: lexical.find(query, OWNER), texts)
    floor_times = bm25_floor(root, texts)
    hybrid = Retrieval(store, embedder=embedder)
    started = time.perf_counter()
    await hybrid.find(FindQuery(texts[0], limit=10), OWNER)  # embeds every memory (or reads the cache)
    embed_s = time.perf_counter() - started
    hybrid_times = await find_times(lambda query: hybrid.find(query, OWNER), texts[1:])
    total_rss = rss_mib_of()
    served = await asyncio.to_thread(served_figures, root, texts, args.agents, args.rounds)
    return {
        "experiences": args.experiences,
        "trajectories": args.trajectories,
        "build_s": round(build_s, 2),
        "build_cpu_s": round(build_cpu_s, 2),
        "read_floor_s": round(floor_s, 2),
        "build_to_read_floor": round(build_s / floor_s, 2),
        "index_rss_mib": round(index_mib, 1),
        "refresh_unchanged_ms": ms(statistics.median(noop)),
        "refresh_after_one_write_ms": ms(statistics.median(updates)),
        "sweep_ms": ms(sweep_s),
        "find_lexical_p50_ms": ms(percentile(lexical_times, 0.5)),
        "find_lexical_p95_ms": ms(percentile(lexical_times, 0.95)),
        "bm25_floor_p50_ms": ms(percentile(floor_times, 0.5)),
        "bm25_floor_p95_ms": ms(percentile(floor_times, 0.95)),
        "find_lexical_p95_to_floor": round(
            percentile(lexical_times, 0.95) / percentile(floor_times, 0.95), 2
        ),
        "first_hybrid_find_s": round(embed_s, 2),
        "find_hybrid_p50_ms": ms(percentile(hybrid_times, 0.5)),
        "find_hybrid_p95_ms": ms(percentile(hybrid_times, 0.95)),
        "total_rss_mib": round(total_rss, 1),
        **served,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiences", type=int, default=10_000)
    parser.add_argument("--trajectories", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="served finds: rounds, median reported")
    parser.add_argument("--quality-only", action="store_true", help="recall only, no speed figures")
    args = parser.parse_args()
    embedder, named = embedder_named()
    with tempfile.TemporaryDirectory() as folder:
        quality_figures = asyncio.run(quality(Path(folder, "sample"), embedder))
        speed_figures = {} if args.quality_only else asyncio.run(speed(Path(folder, "big"), args, embedder))
    figures = {
        "bench": "retrieval",
        "embedder": named,
        **quality_figures,
        **speed_figures,
        # Wall times on a shared machine stretch with its load; the floors were measured beside them.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    for mode in ("lexical", "hybrid", "hybrid_rrf"):
        held, para = quality_figures[mode]["held_out"], quality_figures[mode]["paraphrased"]
        unseen = quality_figures[mode]["held_out_paraphrased"]
        print(
            f"{mode:>10}: held-out recall@1 {held['recall@1']:.2f} @3 {held['recall@3']:.2f}"
            f" · paraphrased recall@1 {para['recall@1']:.2f} @3 {para['recall@3']:.2f}"
            f" · held-out paraphrased recall@1 {unseen['recall@1']:.2f} @3 {unseen['recall@3']:.2f}"
            f" MRR {unseen[f'mrr@{MRR_DEPTH}']:.2f}"
        )
    print(f"embedder: {named}")
    if args.quality_only:
        print(json.dumps(figures))
        return
    s = speed_figures
    print(
        f"{s['experiences']} experiences + {s['trajectories']} trajectories: build {s['build_s']} s "
        f"({s['build_to_read_floor']}x reading them), {s['index_rss_mib']} MiB; refresh "
        f"{s['refresh_unchanged_ms']} ms unchanged, {s['refresh_after_one_write_ms']} ms after a write; "
        f"sweep {s['sweep_ms']} ms"
    )
    print(
        f"find lexical p50 {s['find_lexical_p50_ms']} ms p95 {s['find_lexical_p95_ms']} ms "
        f"(BM25 floor p95 {s['bm25_floor_p95_ms']} ms); hybrid p50 {s['find_hybrid_p50_ms']} ms "
        f"p95 {s['find_hybrid_p95_ms']} ms after {s['first_hybrid_find_s']} s embedding every memory"
    )
    print(report(speed_figures))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
