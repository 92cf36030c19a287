"""Generated stores with perturbed real vectors, written in bulk: 1,000,000 memories in minutes. Writes files.

`build(root, n)` makes the store `benchmarks.scale_vectors` measures, row for row the one that
`benchmarks.gen_store.build_store(root, n, seed=1, embed=False)` and a vector pass through
`write_vectors` would make, without a statement (and a B-tree walk in a small page cache) per
memory:

- the memories of `gen_store.generate_memories` (seed 1; a repeated 40-bit id, likely once
  near 1,000,000, is skipped and the stream continues), in the same order, so the same row
  numbers; their rows from the adapters' row codec (`memory_rows.memory_to_row`, centrality already
  computed by `core.graph.centrality` over the active edges, as `refresh_centrality` would
  store it), their journal records as `insert_memory` writes them (`memory_to_dict`, at the
  memory's creation time), inserted `TX` at a time with executemany into the store's own
  tables: its triggers fill the FTS5 index and the file table, its indexes stay in step;
- the edges of `gen_store.plan_edges` and their journal records, as `upsert_edge` writes them;
- vectors: memory i of the live memories in `list_memories` order (newest first) gets
  normalise(real[i mod R] + noise) (`vector_options.perturbed`, seed 1), filed under the local
  model's key; they go through the adapter's `vectors.write_vectors` (vec0 table, binary codes
  and unit vectors of `vector_codes`, `embedded` bookkeeping) in transactions of whole code
  chunks, in row-number order, so each chunk of codes is written once.

The page cache of the building connection is raised to `CACHE_MB` so the indexes stay in
memory. The result is cached by `scale_vectors.cached_store`; `tests/benchmarks` build a small
one both ways and compare every table.

    python -m benchmarks.bulk_store ROOT --n 10000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from benchmarks.gen_store import ACTOR, MODEL_HOME, NOW, generate_memories, load_document_embedder, plan_edges
from benchmarks.hooks import make_project
from cortex.core import graph
from cortex.core.model import Edge, EdgeStatus, Memory, MemoryType, Scope, Status
from cortex.core.serial import dumps, edge_to_dict, format_time, memory_to_dict
from cortex.paths import Paths, ensure_store_dir

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")
TX = 50_000  # memories (or edges) per transaction
VECTOR_TX = 16  # code chunks (of `vector_codes.CHUNK` row numbers) per vector transaction
CACHE_MB = 3_000
LIVE = (Status.ACTIVE, Status.ARCHIVED)


def unique_memories(n: int, seed: int) -> list[tuple[Memory, str]]:
    """The first `n` memories of `generate_memories` with distinct ids (its stream does not
    depend on how many it is asked for, so a few more are asked for in case one repeats)."""
    extra = 64
    while True:
        seen: set[str] = set()
        out: list[tuple[Memory, str]] = []
        for memory, comp in generate_memories(n + extra, seed):
            if memory.id not in seen:
                seen.add(memory.id)
                out.append((memory, comp))
                if len(out) == n:
                    return out
        extra *= 4


def _chunks(rows: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _edge_journal(e: Edge) -> tuple[str, str, str, str, str]:
    at = e.created or NOW
    return (format_time(at) or "", ACTOR, "edge", e.source, dumps(edge_to_dict(replace(e, created=at))))


def build(
    root: Path,
    n: int,
    seed: int = 1,
    *,
    sources: np.ndarray | None = None,
    index: tuple[str, int] | None = None,
    log: bool = False,
) -> float:
    """Make the project at `root` (must not exist) with `n` memories; seconds taken.

    The vectors are noisy copies of the rows of `sources` (default: the real embeddings of the
    benchmark cache), filed under `index` (embedder key, dimension; default: the local model's)."""
    from benchmarks.vector_options import perturbed, real_vectors
    from cortex.app import Cortex
    from cortex.store.memory_rows import COLUMNS, memory_to_row
    from cortex.store.sqlite import vector_codes, vectors
    from cortex.store.sqlite.codec import PLACEHOLDERS
    from cortex.store.sqlite.store import Store

    started = time.perf_counter()

    def say(what: str) -> None:
        if log:
            print(f"{time.perf_counter() - started:7.1f} s  {what}", file=sys.stderr, flush=True)

    make_project(root, 0)
    paths = Paths(root.resolve(), MODEL_HOME)
    ensure_store_dir(paths)
    items = unique_memories(n, seed)
    edges = plan_edges(items, seed)
    active = [m.id for m, _ in items if m.status is Status.ACTIVE]
    linked = sorted(
        (e for e in edges if e.status is EdgeStatus.ACTIVE), key=lambda e: (e.source, e.target, e.type.value)
    )  # in the store's order (`edges`), so the sums of strengths round the same
    scores = graph.centrality(linked, active)
    say(f"generated {len(items):,} memories, {len(edges):,} edges")
    with Cortex(paths, clock=lambda: NOW, actor=ACTOR) as cx:
        store = cx.write_store(Scope.PROJECT)
        assert isinstance(store, Store), type(store)
        conn = store.conn
        conn.execute(f"PRAGMA cache_size = -{CACHE_MB * 1024}")
        insert = f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})"
        journal = "INSERT INTO journal (at, actor, op, memory_id, payload) VALUES (?, ?, ?, ?, ?)"
        for batch in _chunks(items, TX):
            memories = [m for m, _ in batch]
            rows = [memory_to_row(replace(m, centrality=scores.get(m.id, 0.0))) for m in memories]
            records = [
                (format_time(m.created), ACTOR, "insert", m.id, dumps(memory_to_dict(m))) for m in memories
            ]
            with store.transaction():
                conn.executemany(insert, rows)
                conn.executemany(journal, records)
            say(f"memories to {memories[-1].id}")
        upsert = (
            "INSERT INTO edges (source, target, type, strength, status, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        for part in _chunks(edges, TX):
            with store.transaction():
                conn.executemany(
                    upsert,
                    [
                        (
                            e.source,
                            e.target,
                            e.type.value,
                            e.strength,
                            e.status.value,
                            format_time(e.created or NOW),
                            format_time(e.created or NOW),
                        )
                        for e in part
                    ],
                )
                conn.executemany(journal, [_edge_journal(e) for e in part])
        say("edges")
    if index is None:
        embedder, _ = load_document_embedder()
        index = (embedder.key, embedder.dim)
    row_of = {m.id: i + 1 for i, (m, _) in enumerate(items)}
    live = sorted(
        (m for m, _ in items if m.status in LIVE and m.type is not MemoryType.CODE), key=lambda m: m.id
    )
    live.sort(key=lambda m: format_time(m.created) or "", reverse=True)  # list_memories' order
    matrix = perturbed(real_vectors() if sources is None else sources, len(live), seed=1)
    by_row = sorted((row_of[m.id], i) for i, m in enumerate(live))
    del items, live
    say(f"{len(by_row):,} vectors made")
    with Cortex(Paths(root, MODEL_HOME)) as cx:
        store = cx.write_store(Scope.PROJECT)
        assert isinstance(store, Store), type(store)
        conn = store.conn
        conn.execute(f"PRAGMA cache_size = -{CACHE_MB * 1024}")
        span = VECTOR_TX * vector_codes.CHUNK
        start = 0
        while start < len(by_row):
            stop = start
            limit = (by_row[start][0] // span + 1) * span  # the row numbers of whole chunks
            while stop < len(by_row) and by_row[stop][0] < limit:
                stop += 1
            with store.transaction():
                table = store.ensure_vector_index(*index, datetime.now(UTC))
                vectors.write_vectors(conn, table, [(r, matrix[i].tobytes()) for r, i in by_row[start:stop]])
            start = stop
            if start % 100_000 < span:
                say(f"{start:,} vectors written")
    seconds = time.perf_counter() - started
    say("done")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("root", type=Path, help="project root to create (must not exist)")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    seconds = build(args.root, args.n, args.seed, log=True)
    print(f"{args.n:,} memories in {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
