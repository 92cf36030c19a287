"""sqlite-vec's search options at 100,000 and 1,000,000 384-d vectors: latency and recall@10. Writes files.

Which nearest-neighbour search the SQLite adapter should use at scale (issue 19). For each size
it builds (once, cached under `benchmarks/.cache/vectors/`) a store of N vectors and measures,
per query, in one warm process: exact float KNN in vec0 (today's search), int8 and binary
quantised vec0 tables whose top candidates are re-ranked by their float vectors, and a vec0
table partitioned by memory type searched one partition at a time. recall@10 is measured
against exact search (numpy, float64) over the same vectors.

Vectors: embedding 1,000,000 texts with the local model is not affordable on a 2-core machine,
so the corpus is real all-MiniLM-L6-v2 embeddings (the benchmark embedding cache: every text of
the generated stores) perturbed: vector i = normalise(real[i mod R] + noise), noise Gaussian
with norm about `NOISE` (cosine to its source ~0.9), so every vector is distinct yet the corpus
keeps the clusters of real text. Queries are other perturbed real embeddings.

    python -m benchmarks.vector_options [--sizes 100000 1000000] [--queries 100] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.gen_store import CACHE_DIR, CACHE_FILE

OUT = Path(__file__).resolve().parent / "results" / "vector_options.md"
CACHE = CACHE_DIR / "vectors"
DIM = 384
NOISE = 0.5  # norm of the perturbation of each real embedding
TYPES = 8  # partitions in the partitioned table (memory types)
K = 10


def real_vectors() -> np.ndarray:
    """Every all-MiniLM-L6-v2 vector of the benchmark embedding cache, unit length."""
    import sqlean

    conn = sqlean.connect(str(CACHE_DIR / CACHE_FILE))
    rows = conn.execute("SELECT vector FROM embeddings WHERE dim = ? ORDER BY text_sha256", (DIM,)).fetchall()
    conn.close()
    m = np.frombuffer(b"".join(r[0] for r in rows), dtype="<f4").reshape(len(rows), DIM)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def perturbed(real: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        base = real[np.arange(start, stop) % len(real)]
        noisy = base + rng.standard_normal((stop - start, DIM)) * (NOISE / np.sqrt(DIM))
        out[start:stop] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


def connect(path: Path) -> Any:
    import sqlean

    from cortex.store.sqlite.vec import find_vec_extension

    conn = sqlean.connect(str(path))
    conn.enable_load_extension(True)
    vec = find_vec_extension()
    assert vec is not None, "sqlite-vec is not installed"
    conn.load_extension(str(vec.with_suffix("")))
    return conn


def cortex_conn(raw: Any, path: Path) -> Any:
    """The adapter's connection wrapper around a raw connection (for `vector_codes`)."""
    from cortex.store.sqlite.connection import Connection
    from cortex.store.sqlite.vec import choose_driver

    return Connection(raw, path, choose_driver(), True, False)


def build(path: Path, vectors: np.ndarray, all_options: bool) -> None:
    """The float vec0 table of `vectors` (rowid = index + 1) and its binary codes
    (`cortex.store.sqlite.vector_codes`); with `all_options` also int8, bit and partitioned
    vec0 tables (at 1,000,000 these are skipped: slower than float already at 100,000)."""
    from cortex.store.sqlite import vector_codes

    conn = connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(f"CREATE VIRTUAL TABLE f USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    vector_codes.create(cortex_conn(conn, path), "f")
    if all_options:
        conn.execute(f"CREATE VIRTUAL TABLE q8 USING vec0(embedding int8[{DIM}] distance_metric=cosine)")
        conn.execute(f"CREATE VIRTUAL TABLE b USING vec0(embedding bit[{DIM}])")
        conn.execute(
            f"CREATE VIRTUAL TABLE p USING vec0(t integer partition key, embedding float[{DIM}] "
            "distance_metric=cosine)"
        )
    for start in range(0, len(vectors), 10_000):
        rows = [
            (start + i + 1, vectors[start + i].tobytes()) for i in range(min(10_000, len(vectors) - start))
        ]
        conn.executemany("INSERT INTO f(rowid, embedding) VALUES (?, ?)", rows)
        vector_codes.write(cortex_conn(conn, path), "f", rows)
        if all_options:
            conn.executemany(
                "INSERT INTO q8(rowid, embedding) VALUES (?, vec_quantize_int8(?, 'unit'))", rows
            )
            conn.executemany("INSERT INTO b(rowid, embedding) VALUES (?, vec_quantize_binary(?))", rows)
            conn.executemany(
                "INSERT INTO p(rowid, t, embedding) VALUES (?, ? % 8, ?)", [(r, r, v) for r, v in rows]
            )
        conn.commit()
    conn.close()


def exact(vectors: np.ndarray, queries: np.ndarray) -> list[list[int]]:
    """Row ids (1-based) of the K nearest by cosine, float64, for each query."""
    out = []
    for q in queries.astype(np.float64):
        sims = np.zeros(len(vectors))
        for start in range(0, len(vectors), 200_000):
            sims[start : start + 200_000] = vectors[start : start + 200_000].astype(np.float64) @ q
        top = np.argpartition(-sims, K)[:K]
        out.append([int(i) + 1 for i in top[np.argsort(-sims[top])]])
    return out


def rerank(conn: Any, query: bytes, ids: Sequence[int]) -> list[int]:
    """The K of `ids` nearest `query` by their float vectors (read from the float table)."""
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT rowid, vec_distance_cosine(embedding, ?) AS d FROM f WHERE rowid IN ({marks}) "
        "ORDER BY d LIMIT ?",
        (query, *ids, K),
    ).fetchall()
    return [int(r[0]) for r in rows]


def options(conn: Any, path: Path, all_options: bool) -> dict[str, Callable[[bytes], list[int]]]:
    from cortex.store.sqlite import vector_codes

    vector_codes.ANN_MIN = 0  # this benchmark measures the search itself at every size
    wrapped = cortex_conn(conn, path)

    def codes(q: bytes, cold: bool) -> list[int]:
        if cold:
            vector_codes.forget_all()
        found = vector_codes.knn(wrapped, "f", q, K, 0)
        assert found is not None
        return [n for n, _ in found]

    def knn(table: str, k: int, value: str = "?") -> Callable[[bytes], list[int]]:
        sql = f"SELECT rowid FROM {table} WHERE embedding MATCH {value} AND k = ? ORDER BY distance"
        return lambda q: [int(r[0]) for r in conn.execute(sql, (q, k))]

    out: dict[str, Callable[[bytes], list[int]]] = {"float, exact (today)": knn("f", K)}
    out[f"cortex: binary codes, top {vector_codes.CANDIDATES} re-ranked by float, warm"] = lambda q: codes(
        q, False
    )
    out["cortex: the same, codes read from disk per query"] = lambda q: codes(q, True)
    if not all_options:
        return out
    for k in (40, 100):
        q8 = knn("q8", k, "vec_quantize_int8(?, 'unit')")
        out[f"int8, top {k} re-ranked by float"] = lambda q, f=q8: rerank(conn, q, f(q))  # type: ignore[misc]
    for k in (100, 200, 400):
        b = knn("b", k, "vec_quantize_binary(?)")
        out[f"binary, top {k} re-ranked by float"] = lambda q, f=b: rerank(conn, q, f(q))  # type: ignore[misc]
    part = "SELECT rowid FROM p WHERE embedding MATCH ? AND k = ? AND t = 3 ORDER BY distance"
    out["float, one of 8 type partitions"] = lambda q: [int(r[0]) for r in conn.execute(part, (q, K))]
    return out


def measure(n: int, queries: int, real: np.ndarray) -> list[str]:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"vectors-{n}-v2.db"
    vectors = perturbed(real, n, seed=1)
    built = ""
    all_options = n <= 100_000
    if not path.exists():
        started = time.perf_counter()
        path.with_suffix(".tmp").unlink(missing_ok=True)
        build(path.with_suffix(".tmp"), vectors, all_options)
        path.with_suffix(".tmp").rename(path)
        built = f", built in {time.perf_counter() - started:,.0f} s"
    qs = perturbed(real[::-1], queries, seed=2)  # other real texts, other noise
    truth = exact(vectors, qs)
    conn = connect(path)
    size = path.stat().st_size / 1e6
    lines = [f"- {n:,} vectors: store {size:,.0f} MB{built}; load average {os.getloadavg()[0]:.2f}", ""]
    lines += ["| search | p50 ms | p95 ms | recall@10 vs exact |", "|---|---:|---:|---:|"]
    for name, search in options(conn, path, all_options).items():
        search(qs[0].tobytes())  # warm: pages in the OS cache, statements prepared
        ms, hits = [], 0
        slow = n > 100_000 and "exact" in name  # a full scan of 1,000,000 takes seconds
        runs = list(zip(qs, truth, strict=True))[: 10 if slow else len(qs)]
        for q, want in runs:
            started = time.perf_counter()
            got = search(q.tobytes())
            ms.append((time.perf_counter() - started) * 1000)
            hits += len(set(got[:K]) & set(want))
        recall = hits / (K * len(runs))
        p95 = statistics.quantiles(ms, n=20)[-1]
        note = " (searches 1/8 of the vectors)" if "partition" in name else ""
        note += f" ({len(runs)} queries)" if slow else ""
        lines.append(f"| {name}{note} | {statistics.median(ms):,.1f} | {p95:,.1f} | {recall:.3f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    conn.close()
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    real = real_vectors()
    head = [
        "# Vector search options (sqlite-vec) at scale",
        "",
        "Measured by `python -m benchmarks.vector_options` (its docstring says how the vectors are made).",
        "Warm, in one process, one query at a time; recall@10 against exact search.",
        "",
        f"- when: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {os.cpu_count()} cores; "
        f"SQLite {sqlite3.sqlite_version} (stdlib) / sqlean; {len(real):,} real embeddings perturbed",
        "",
    ]
    body = [line for n in args.sizes for line in measure(n, args.queries, real)]
    args.out.write_text("\n".join(head + body), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
