"""Ablations: the same stores, recall run once per `RecallParams` variant, paired against cortex.

Each episode's store is filled once; every variant then answers every question on it, so a
variant differs from the full configuration only in the switch it turns. The table gives, per
protocol and primary metric, each variant's mean and its paired difference from the full
configuration (95% bootstrap interval, wins/losses), next to BM25 on the same questions.

    python -m benchmarks.retrieval.ablate                      # every protocol, every variant
    python -m benchmarks.retrieval.ablate --protocol locomo-turn --limit 2
    python -m benchmarks.retrieval.ablate --variant "k30=rrf_k:30"   # extra ad-hoc variant
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.retrieval.bm25 import BM25System
from benchmarks.retrieval.cortex_system import CortexSystem
from benchmarks.retrieval.datasets import DEFAULT_DATA, Episode, read_dataset
from benchmarks.retrieval.protocols import PROTOCOLS, Protocol
from benchmarks.retrieval.runner import (
    QuestionResult,
    SystemRun,
    score_question,
    search_ranking,
)
from benchmarks.retrieval.stats import RESAMPLES, SEED
from benchmarks.retrieval.summary import summarise_paired
from benchmarks.retrieval.system import IngestItem, RetrievalSystem
from cortex.core.recall.decide import RecallParams

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
ABLATION_MD = "retrieval-ablation.md"
FULL = "cortex (full)"

# Leave-one-out switches of the recall path: each row turns one feature off (or changes it).
VARIANTS: dict[str, dict[str, Any]] = {
    "- vector search (keyword only)": {"use_vector": False},
    "- keyword search (vector only)": {"use_lexical": False},
    "- chunk vectors (first window only)": {"use_chunks": False},
    "+ query prefix `[project:x]` (off by default)": {"query_prefix": True},
    "+ intent weights (off by default)": {"use_intent": True},
    "- time signal (recency / named period)": {"use_recency": False},
    "+ MMR diversity, lambda 0.7 (off by default)": {"use_mmr": True},
    "+ MMR, near-duplicates only (threshold 0.9)": {"use_mmr": True, "mmr_threshold": 0.9},
    "- session context": {"use_session": False},
    "+ graph expansion, PPR (off by default)": {"use_graph": True},
    "+ query expansion, vector PRF (off by default)": {"use_prf": True},
    "- priority/confidence signal": {"use_priority": False},
    "+ centrality signal (off by default)": {"use_centrality": True},
}

# Per protocol: (question set, metrics) that the acceptance criteria name.
PRIMARY: dict[str, tuple[str, tuple[str, ...]]] = {
    "locomo-turn": ("all", ("recall@10", "recall@25")),
    "locomo-session": ("all", ("recall_any@5", "mrr@10")),
    "lme-official-session": ("strict", ("recall_all@5", "ndcg@5")),
    "lme-official-turn": ("strict", ("recall_all@10", "ndcg@10")),
    "lme-session-full": ("all", ("recall_any@5", "mrr@10")),
}


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """`name=field:value,field:value` -> (name, RecallParams changes), values typed by field."""
    name, _, spec = text.partition("=")
    kinds = {f.name: type(getattr(RecallParams(), f.name)) for f in fields(RecallParams)}
    changes: dict[str, Any] = {}
    for part in filter(None, spec.split(",")):
        key, _, raw = part.partition(":")
        if key not in kinds:
            raise ValueError(f"unknown RecallParams field {key!r}")
        kind = kinds[key]
        changes[key] = raw.lower() in ("1", "true", "yes") if kind is bool else kind(raw)
    return name.strip(), changes


def _answer(system: RetrievalSystem, protocol: Protocol, episode: Episode, run: SystemRun) -> None:
    provenance = {doc.key: doc.units for doc in episode.docs}
    for question in episode.questions:
        ranking, calls, ms = search_ranking(system, question, provenance, protocol.depth)
        gold_ranks, metrics, needed = score_question(question, ranking, protocol)
        run.results.append(
            QuestionResult(
                run.system, question.qid, episode.eid, question.groups, question.sets,
                gold_ranks, metrics, needed, ranking.n_memories, calls, ms,
            )
        )  # fmt: skip


def run_ablation(
    protocol: Protocol,
    episodes: Sequence[Episode],
    variants: dict[str, dict[str, Any]],
    base: RecallParams,
) -> dict[str, SystemRun]:
    """One ingest per episode; the full configuration, each variant and BM25 answer on it."""
    cortex = CortexSystem(base, remember_queries=True)  # the full row runs first and pays
    bm25 = BM25System()
    runs = {name: SystemRun(name, {}) for name in [FULL, *variants, "bm25"]}
    done = 0
    try:
        for episode in episodes:
            items = [IngestItem(d.key, d.text, d.time) for d in episode.docs]
            cortex.reset()
            t0 = time.perf_counter()
            cortex.ingest(items)
            runs[FULL].ingest_s += time.perf_counter() - t0
            for name in [FULL, *variants]:
                cortex.params = replace(base, **variants.get(name, {}))
                _answer(cortex, protocol, episode, runs[name])
            bm25.reset()
            bm25.ingest(items)
            _answer(bm25, protocol, episode, runs["bm25"])
            done += 1
            if sys.stderr.isatty():
                sys.stderr.write(f"\r{protocol.key}: {done}/{len(episodes)} stores")
    finally:
        cortex.close()
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    return runs


def render_table(protocol: Protocol, runs: dict[str, SystemRun], resamples: int) -> list[str]:
    """Markdown rows: variant, then per primary metric the mean and the paired diff vs full."""
    set_name, metrics = PRIMARY[protocol.key]
    full = runs[FULL]
    header = ["configuration"]
    for m in metrics:
        header += [m, f"Δ {m} vs full [95% CI]", "W/L"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, run in runs.items():
        paired = summarise_paired(protocol, run, full, SEED, resamples)["sets"][set_name]
        cells = [name]
        for m in metrics:
            cell = paired["overall"]["metrics"][m]
            low, high = cell["diff"][1], cell["diff"][2]
            mark = " *" if cell["excludes_zero"] else ""
            cells.append(f"{cell['system']:.3f}")
            if name == FULL:
                cells += ["–", "–"]
            else:
                diff = cell["diff"][0]
                cells += [f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]{mark}", f"{cell['wins']}/{cell['losses']}"]
        lines.append("| " + " | ".join(cells) + " |")
    n = sum(1 for r in full.results if set_name in r.sets)
    latencies = [r.latency_ms for r in full.results]
    lines += [
        "",
        f"n = {n} ({set_name}); full configuration: recall p50 {median(latencies):.1f} ms per "
        f"query, ingest {full.ingest_s:.0f} s. `*`: the interval excludes zero.",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ablations and write `retrieval-ablation.md` (sections per protocol)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.ablate")
    parser.add_argument("--protocol", action="append", choices=sorted(PRIMARY))
    parser.add_argument("--limit", type=int, help="first N episodes only")
    parser.add_argument("--variant", action="append", default=[], help="name=field:value,...")
    parser.add_argument("--only", action="store_true", help="run only the --variant rows")
    parser.add_argument("--base", default="", help="field:value,... applied to every row")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    args = parser.parse_args(argv)
    variants = {} if args.only else dict(VARIANTS)
    variants.update(parse_variant(v) for v in args.variant)
    base = replace(RecallParams(abstain=False), **parse_variant("base=" + args.base)[1])
    raw: dict[str, Any] = {}
    sections: list[str] = []
    for key in args.protocol or list(PRIMARY):
        protocol = PROTOCOLS[key]
        if protocol.dataset not in raw:
            raw[protocol.dataset] = read_dataset(DEFAULT_DATA[protocol.dataset])
        episodes = protocol.plan(raw[protocol.dataset])[: args.limit]
        started = time.perf_counter()
        runs = run_ablation(protocol, episodes, variants, base)
        table = render_table(protocol, runs, args.resamples)
        partial = f", first {args.limit} episodes" if args.limit else ""
        sections += [f"## {protocol.title}{partial}", "", *table, ""]
        print("\n".join(sections[-len(table) - 3 :]))
        print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    head = [
        "# Retrieval ablations",
        "",
        f"Written by `python -m benchmarks.retrieval.ablate` on {date}. Base: `{args.base or 'defaults'}`.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / ABLATION_MD).write_text("\n".join(head + sections), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
