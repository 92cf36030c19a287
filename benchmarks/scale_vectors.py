"""Scale rows up to 1,000,000 memories: briefing render, recall, disk and memory per memory. Writes files.

`benchmarks.scale` measures stores whose vectors are real embeddings of their texts; embedding
100,000 texts takes the better part of an hour on 2 cores and 1,000,000 is out of reach. This
measures the rows that depend on the store's size (the briefing render, recall in process and
in a new process) on stores of 10,000, 100,000 and 1,000,000 generated memories
(`benchmarks.gen_store`, the same seed and texts as `benchmarks.scale`) whose vectors are
perturbed real embeddings: memory i gets normalise(real[i mod R] + noise), real being the R
all-MiniLM-L6-v2 vectors of the benchmark embedding cache, filed under the local model's key
so recall embeds its queries with the real model and searches them. Vectors do not match their
texts, so this says nothing of retrieval quality (`benchmarks/results/vector_options.md` has
recall@10 against exact search); latency and size are what it measures. Each store is built
once and cached under `benchmarks/.cache/scale/`, then copied for measuring.

    python -m benchmarks.scale_vectors [--sizes 10000 100000 1000000] [--runs 30] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.hooks import make_project
from benchmarks.latency import Series, _environment, _home_with_model, publish
from benchmarks.scale import (
    SCALE_CACHE,
    measure_briefing,
    measure_first_briefing,
    measure_recall,
    render,
    store_bytes,
)

OUT = Path(__file__).resolve().parent / "results" / "scale_vectors.md"
WRITE_BATCH = 10_000


def cached_store(n: int) -> tuple[Path, float]:
    """The cached project of `n` memories with perturbed real vectors; (root, seconds to build)."""
    from benchmarks.gen_store import MODEL_HOME, build_store, load_document_embedder
    from benchmarks.vector_options import perturbed, real_vectors
    from cortex.app import Cortex
    from cortex.core.model import MemoryType, Scope, Status
    from cortex.paths import Paths

    root = SCALE_CACHE / f"vectors-{n}"
    record = SCALE_CACHE / f"vectors-{n}.build.json"
    if (root / ".memory" / "cortex.db").exists() and record.exists():
        return root, float(json.loads(record.read_text(encoding="utf-8"))["seconds"])
    shutil.rmtree(root, ignore_errors=True)  # a build that died half-way
    started = time.perf_counter()
    make_project(root, 0)
    build_store(root, n, seed=1, embed=False)
    embedder, _ = load_document_embedder()
    with Cortex(Paths(root, MODEL_HOME)) as cx:
        store = cx.write_store(Scope.PROJECT)
        live = [
            m
            for m in store.list_memories(statuses=(Status.ACTIVE.value, Status.ARCHIVED.value))
            if m.type is not MemoryType.CODE
        ]
        vectors = perturbed(real_vectors(), len(live), seed=1)
        for start in range(0, len(live), WRITE_BATCH):
            batch = live[start : start + WRITE_BATCH]
            with store.transaction():
                table = store.ensure_vector_index(embedder.key, embedder.dim, cx.now())
                store.write_vectors(
                    table, [(m.id, vectors[start + i].tobytes()) for i, m in enumerate(batch)]
                )
    seconds = time.perf_counter() - started
    record.write_text(json.dumps({"seconds": seconds}), encoding="utf-8")
    return root, seconds


def measure(n: int, work: Path, home: Path, args: argparse.Namespace) -> tuple[list[Series], str]:
    cached, built_s = cached_store(n)
    root = work / f"size-{n}" / cached.name
    shutil.copytree(cached, root, symlinks=True)
    size = store_bytes(root)
    rows = measure_recall(root, home, n, args.runs, args.process_runs)
    rows.append(measure_briefing(root, home, n, max(args.runs // 6, 3)))
    rows.append(measure_first_briefing(root, home, n, 3))
    cold = next(s for s in rows if s.name.startswith("recall, new process"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    line = (
        f"- {n:,} memories: store {size / 1e6:,.0f} MB on disk ({size / n / 1024:.1f} KiB per memory), "
        f"peak RSS of a recall process {max(cold.rss_mb):.0f} MB ({max(cold.rss_mb) * 1e6 / n:,.0f} bytes "
        f"per memory); built once in {built_s:,.0f} s, then cached; load average after: {load}"
    )
    shutil.rmtree(work / f"size-{n}")
    return rows, line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--process-runs", type=int, default=8)
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
