"""Scale up to 1,000,000 memories: recall, vector search, briefing, disk and memory per memory. Writes files.

`benchmarks.scale` measures stores whose vectors are real embeddings of their texts; embedding
100,000 texts takes the better part of an hour on 2 cores and 1,000,000 is out of reach. This
measures the rows that depend on the store's size (the briefing render, recall in process and
in a new process, the vector search alone) on stores of 10,000, 100,000 and 1,000,000 generated
memories (`benchmarks.gen_store`, the same seed and texts as `benchmarks.scale`) whose vectors
are perturbed real embeddings: memory i gets normalise(real[i mod R] + noise), real being the R
all-MiniLM-L6-v2 vectors of the benchmark embedding cache, filed under the local model's key
so recall embeds its queries with the real model and searches them. Vectors do not match their
texts, so this says nothing of retrieval quality; latency and size are what it measures, and
the vector search rows give recall@10 of the store's search (binary codes and a float re-rank
from 20,000 vectors up) against exact search, on real embeddings of query texts. Each store is
built once in bulk (`benchmarks.bulk_store`: the same tables as one write at a time, in big
transactions) and cached under `benchmarks/.cache/scale/`,
then copied for measuring.

    python -m benchmarks.scale_vectors [--sizes 10000 100000 1000000] [--runs 30] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.latency import QUERIES, Series, _environment, _home_with_model, _timed, publish
from benchmarks.scale import (
    SCALE_CACHE,
    measure_briefing,
    measure_first_briefing,
    measure_recall,
    render,
    store_bytes,
)

OUT = Path(__file__).resolve().parent / "results" / "scale_vectors.md"
K = 10


def cached_store(n: int) -> tuple[Path, float]:
    """The cached project of `n` memories with perturbed real vectors; (root, seconds to build).

    Built by `benchmarks.bulk_store` (the same store as the generator and the store API make
    one write at a time, in a fraction of the time)."""
    from benchmarks.bulk_store import build

    root = SCALE_CACHE / f"vectors-{n}"
    record = SCALE_CACHE / f"vectors-{n}.build.json"
    if (root / ".memory" / "cortex.db").exists() and record.exists():
        return root, float(json.loads(record.read_text(encoding="utf-8"))["seconds"])
    shutil.rmtree(root, ignore_errors=True)  # a build that died half-way
    seconds = build(root, n, seed=1, log=True)
    record.write_text(json.dumps({"seconds": seconds, "by": "benchmarks.bulk_store"}), encoding="utf-8")
    return root, seconds


def query_texts(count: int) -> list[str]:
    """Queries for the vector search rows: the latency queries, then notes of another seed."""
    from benchmarks.gen_store import generate_memories

    texts = list(QUERIES[:count])
    texts += [m.content for m, _ in generate_memories(max(count - len(texts), 0), seed=2)]
    return texts


def measure_ann(root: Path, home: Path, n: int, count: int) -> tuple[list[Series], str]:
    """The store's nearest-neighbour search alone, warm (`vectors.nearest`: binary codes and a
    float re-rank from 20,000 vectors up) for k=10 and for the k recall asks for
    (`CANDIDATES_PER_LIST`), and exact search (vec0's scan), on real embeddings of `count` query
    texts; recall@10 (and @k) of the first two against the third."""
    import numpy as np

    from cortex.app import Cortex
    from cortex.core.model import Scope
    from cortex.paths import Paths
    from cortex.recall.gather import CANDIDATES_PER_LIST as WIDE
    from cortex.store.sqlite import vectors
    from cortex.store.sqlite.store import Store

    ann = Series("vector search alone, warm, k=10", n, note="vectors.nearest")
    wide = Series(f"vector search alone, warm, k={WIDE} (as recall asks)", n, note="vectors.nearest")
    exact = Series(f"vector search alone, exact, k={WIDE}", n, note="vec0 scan")
    shared: dict[str, list[float]] = {"k10": [], "wide10": [], "wide": []}
    nearest_cos: list[float] = []
    with Cortex(Paths(root, home)) as cx:
        embedder = cx.query_embedder().backend
        assert embedder is not None, cx.query_embedder().note
        queries = np.stack([embedder.embed_query(t) for t in query_texts(count)]).astype("<f4")
        store = cx.write_store(Scope.PROJECT)
        assert isinstance(store, Store)
        found = vectors.existing_index(store.conn, embedder.key)
        assert found is not None, "no vector index"
        table = found[0]
        vectors.nearest(store.conn, table, queries[0].tobytes(), K)  # codes read once
        for q in queries:
            blob = q.tobytes()
            got: dict[str, list[int]] = {}
            for series, k, name in ((ann, K, "k10"), (wide, WIDE, "wide"), (exact, WIDE, "exact")):
                search = vectors.knn if name == "exact" else vectors.nearest
                found_rows: list[tuple[int, float]] = []
                wall, cpu = _timed(
                    lambda search=search, k=k, out=found_rows, blob=blob: out.extend(  # type: ignore[misc]
                        search(store.conn, table, blob, k)
                    )
                )
                series.ms.append(wall)
                series.cpu_ms.append(cpu)
                got[name] = [r for r, _ in found_rows]
                if name == "exact":
                    nearest_cos.append(1.0 - found_rows[0][1])
            truth = got["exact"]
            shared["k10"].append(len(set(got["k10"]) & set(truth[:K])) / K)
            shared["wide10"].append(len(set(got["wide"][:K]) & set(truth[:K])) / K)
            shared["wide"].append(len(set(got["wide"]) & set(truth)) / len(truth))
    mean = {name: float(np.mean(v)) for name, v in shared.items()}
    ann.note += f"; recall@10 against exact {mean['k10']:.3f}"
    wide.note += f"; recall@10 {mean['wide10']:.3f}, recall@{WIDE} {mean['wide']:.3f}"
    line = (
        f"- vector search at {n:,}, {len(queries)} queries (real embeddings of the "
        f"{min(count, len(QUERIES))} latency queries and of {len(queries) - min(count, len(QUERIES))} "
        f"notes generated with another seed; cosine to the nearest stored vector: median "
        f"{float(np.median(nearest_cos)):.2f}, highest {max(nearest_cos):.2f}): recall@10 against "
        f"exact search {mean['k10']:.3f} asking k=10 (lowest {min(shared['k10']):.1f}), "
        f"{mean['wide10']:.3f} asking k={WIDE} as recall does (lowest {min(shared['wide10']):.1f}); "
        f"recall@{WIDE} {mean['wide']:.3f}"
    )
    return [ann, wide, exact], line


def measure(n: int, work: Path, home: Path, args: argparse.Namespace) -> tuple[list[Series], str]:
    cached, built_s = cached_store(n)
    root = work / f"size-{n}" / cached.name
    shutil.copytree(cached, root, symlinks=True)
    size = store_bytes(root)
    rows = measure_recall(root, home, n, args.runs, args.process_runs)
    rows.append(measure_briefing(root, home, n, max(args.runs // 6, 3)))
    rows.append(measure_first_briefing(root, home, n, 3))
    ann, ann_line = measure_ann(root, home, n, args.ann_queries)
    rows += ann
    cold = next(s for s in rows if s.name.startswith("recall, new process"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    line = (
        f"- {n:,} memories: store {size / 1e6:,.0f} MB on disk ({size / n / 1024:.1f} KiB per memory), "
        f"peak RSS of a recall process {max(cold.rss_mb):.0f} MB ({max(cold.rss_mb) * 1e6 / n:,.0f} bytes "
        f"per memory); built once in {built_s:,.0f} s, then cached; load average after: {load}"
    )
    shutil.rmtree(work / f"size-{n}")
    return rows, line + "\n" + ann_line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--process-runs", type=int, default=8)
    parser.add_argument("--ann-queries", type=int, default=40, help="queries of the vector search rows")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args(argv)
    SCALE_CACHE.mkdir(parents=True, exist_ok=True)
    if args.build_only:
        for n in args.sizes:
            print(f"{n}: {cached_store(n)}", file=sys.stderr)
        return 0
    rows: list[Series] = []
    store_lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cortex-scale-vectors-") as tmp:
        work = Path(tmp)
        home = _home_with_model(work)
        env_lines = _environment(home)
        for n in args.sizes:
            print(f"measuring {n:,} memories", file=sys.stderr, flush=True)
            got, line = measure(n, work, home, args)
            rows += got
            store_lines.append(line)
    end_load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    report = render(rows, env_lines, store_lines, end_load)
    report = report.replace(
        "# Scale: cortex at 1,000, 10,000 and 100,000 memories",
        "# Scale up to 1,000,000 memories (perturbed real vectors)",
    ).replace("`python -m benchmarks.scale`", "`python -m benchmarks.scale_vectors`")
    publish(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
