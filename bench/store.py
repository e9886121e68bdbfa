"""Store benchmark: load 10,000 experiences, 1,000 fsynced single-item applies, list 5,000 records.

Run: ``.venv/bin/python bench/store.py [--experiences N] [--applies N] [--records N] [--reps N]``.
Prints medians over the repetitions and the targets (load ≤ 1.5 s, ≥ 200 applies/s, listing ≤ 0.3 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.fileformat import FIELDS_OPEN, render_memory
from ovtui.memory.history import HistoryEntry, HistoryStore, new_history_id
from ovtui.memory.memory_diff import FileChange, build_memory_diff
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater

BODY = (
    "## Situation\n- Customer asks about topic {i}: the intent and the signals that identify it\n"
    "## Approach\n- Look the account up first\n- IF the order is refundable THEN state the refund path\n"
    "- Call lookup_order, then get_refund_status, then reply with the expected date\n"
    "## Reflect\n- NEVER promise a date the tool did not return\n- ALWAYS confirm before cancelling"
)


def median_of(reps: int, run: Callable[[], float]) -> tuple[float, list[float]]:
    samples = [run() for _ in range(reps)]
    return statistics.median(samples), samples


def generate(root: Path, count: int) -> MemoryStore:
    folder = root / "memories" / "experiences"
    folder.mkdir(parents=True)
    for i in range(count):
        name = f"experience_{i:05d}"
        fields = {
            "experience_name": name,
            "memory_type": "experiences",
            "status": "production",
            "version": 1,
            "tags": ["support", f"topic{i % 50}"],
        }
        (folder / f"{name}.md").write_text(render_memory(BODY.format(i=i), fields), encoding="utf-8")
    return MemoryStore.open(root)


def baseline_load(folder: Path) -> float:
    """Read every file and json.loads its MEMORY_FIELDS: the floor for any loader."""
    started = time.perf_counter()
    out = []
    with os.scandir(folder) as entries:
        for entry in entries:
            with open(entry.path, "rb") as handle:
                text = handle.read().decode("utf-8")
            at = text.rindex(FIELDS_OPEN)
            out.append(json.loads(text[at + len(FIELDS_OPEN) : text.rindex("-->")]))
    return time.perf_counter() - started


def bench_load(store: MemoryStore, reps: int) -> dict[str, float]:
    loader = ExperienceSetLoader(store)

    def run() -> float:
        started = time.perf_counter()
        loaded = loader.load_sync()
        elapsed = time.perf_counter() - started
        assert not loaded.metadata.get("problems"), loaded.metadata
        return elapsed

    run()  # warm the page cache so both sides read from memory
    load, samples = median_of(reps, run)
    base, _ = median_of(reps, lambda: baseline_load(store.type_dir("experiences")))
    count = len(store.list_paths("experiences"))
    print(
        f"load {count} experiences: median {load:.3f} s (target ≤ 1.5 s) "
        f"samples {[round(s, 3) for s in samples]}"
    )
    print(f"  baseline read+json.loads: {base:.3f} s → loader/baseline ratio {load / base:.1f}x")
    return {"load_s": load, "load_baseline_s": base, "load_over_baseline": load / base, "experiences": count}


def bench_applies(store: MemoryStore, applies: int, reps: int) -> dict[str, float]:
    floor = filesystem_floor(store.paths.root / ".bench-floor", 300)
    print(
        f"file-system floor of one apply (the same 7 fsyncs, 3 renames, mkdir, unlink; no Python "
        f"work): {floor * 1000:.2f} ms → at most {1 / floor:.0f} applies/s on this disk"
    )
    updater = MemoryFilePolicyUpdater(store)
    policy_set: ExperienceSet = ExperienceSetLoader(store).load_sync()
    rng = random.Random(7)
    state = {"set": policy_set}

    cpu: list[float] = []

    async def apply_all() -> None:
        # The product's path: the async apply (its lock waits and file work in worker threads).
        for n in range(applies):
            target = rng.choice(state["set"].policies)
            item = PolicyPlanItem(
                kind="upsert",
                target_name=target.name,
                target_uri=target.uri,
                before_content=target.content,
                base_version=target.version,
                after_content=f"{target.content}\n- learned {n}",
            )
            result = await updater.apply(PolicyUpdatePlan(items=[item]), state["set"])
            assert not result.errors, result.errors
            state["set"] = result.updated_policy_set

    def run() -> float:
        started, times = time.perf_counter(), os.times()
        asyncio.run(apply_all())
        after = os.times()
        cpu.append((after.user - times.user + after.system - times.system) / applies)
        return applies / (time.perf_counter() - started)

    rate, samples = median_of(reps, run)
    print(
        f"{applies} single-item applies with fsync: median {rate:.0f} applies/s (target ≥ 200/s) "
        f"samples {[round(s) for s in samples]}, CPU (user+sys) {statistics.median(cpu) * 1000:.2f} ms/apply"
    )
    print(f"  share of the file-system floor: {rate * floor:.2f} (goal >= 0.5)")
    return {
        "applies_per_s": rate,
        "floor_applies_per_s": 1 / floor,
        "share_of_floor": rate * floor,
        "cpu_ms_per_apply": statistics.median(cpu) * 1000,
    }


def filesystem_floor(folder: Path, count: int) -> float:
    """Seconds per apply of the bare system calls an apply must make to be durable."""
    journal, experiences, history = folder / "journal", folder / "experiences", folder / "history"
    for d in (journal, experiences, history):
        d.mkdir(parents=True)
    data = BODY.encode() * 2

    def durable_temp(path: Path) -> Path:
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        return tmp

    def sync_dir(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    started = time.perf_counter()
    for n in range(count):
        manifest = journal / f"{n}.json"
        os.replace(durable_temp(manifest), manifest)
        sync_dir(journal)
        target, record_dir = experiences / f"e{n % 100}.md", history / f"r{n}"
        record_dir.mkdir()
        os.replace(durable_temp(target), target)
        os.replace(durable_temp(record_dir / "memory_diff.json"), record_dir / "memory_diff.json")
        for d in (experiences, record_dir, history):
            sync_dir(d)
        manifest.unlink()
    return (time.perf_counter() - started) / count


def fill_history(store: MemoryStore, records: int) -> None:
    """Records written directly (no fsync), as many applies would have left them."""
    history = HistoryStore(store.paths)
    entries = []
    for n in range(records):
        uri = f"{store.paths.uri_prefix}memories/experiences/experience_{n % 1000:05d}.md"
        before = render_memory(f"text {n}", {"version": 1})
        after = render_memory(f"text {n}\n- more", {"version": 2})
        record = build_memory_diff([FileChange(uri, "experiences", before, after)], trace_id=f"t{n}")
        record_id = new_history_id()
        path = history.record_path(record_id)
        path.parent.mkdir(parents=True)
        path.write_text(record.render(), encoding="utf-8")
        entries.append(HistoryEntry.from_record(record_id, record))
    history.append_index(*entries)


def bench_history(root: Path, records: int, reps: int) -> dict[str, float]:
    store = MemoryStore.open(root)
    fill_history(store, records)

    def run(**filters: str) -> float:
        started = time.perf_counter()
        listed = HistoryStore(store.paths).list(**filters)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - started
        assert listed
        return elapsed

    full, samples = median_of(reps, run)
    print(
        f"list {records} history records: median {full:.3f} s (target ≤ 0.3 s) "
        f"samples {[round(s, 3) for s in samples]}"
    )
    by_uri, _ = median_of(reps, lambda: run(uri="experiences/experience_00042.md"))
    print(f"  filtered by uri: {by_uri:.3f} s")
    # Drop one index line: the next listing finds the gap by scandir and restores it.
    lines = store.paths.history.joinpath("index.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    store.paths.history.joinpath("index.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    repaired = run()
    print(f"  with one index line missing (repaired): {repaired:.3f} s")
    return {"list_s": full, "list_by_uri_s": by_uri, "list_repaired_s": repaired, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--experiences", type=int, default=10_000)
    parser.add_argument("--applies", type=int, default=1_000)
    parser.add_argument("--records", type=int, default=5_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ovtui-bench-", dir=os.environ.get("BENCH_DIR")) as tmp:
        started = time.perf_counter()
        store = generate(Path(tmp) / "ws", args.experiences)
        # The files were written without fsync: flushed now, so neither the floor's first fsyncs
        # nor the applies' pay for writing the generated data out.
        os.sync()
        print(f"generated {args.experiences} experiences in {time.perf_counter() - started:.1f} s ({tmp})")
        figures = {
            "load": bench_load(store, args.reps),
            "applies": bench_applies(store, args.applies, args.reps),
            "history": bench_history(Path(tmp) / "hist", args.records, max(args.reps, 5)),
        }
    summary = {
        "bench": "store",
        "figures": figures,
        "floor": {
            "load_read_json_s": figures["load"]["load_baseline_s"],
            "apply_filesystem_per_s": figures["applies"]["floor_applies_per_s"],
        },
        "goals": {"load_s": 1.5, "applies_share_of_floor": 0.5, "list_s": 0.3},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
