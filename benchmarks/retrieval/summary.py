"""Summaries of runs: per-row means with bootstrap intervals, paired differences, costs. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean, median
from typing import Any

from benchmarks.retrieval.protocols import Protocol
from benchmarks.retrieval.runner import QuestionResult, SystemRun
from benchmarks.retrieval.stats import (
    Interval,
    bootstrap_ci,
    paired_difference_ci,
    percentile,
    sign_test,
)
from benchmarks.retrieval.system import BASELINE


def _row_order(label: str) -> tuple[int, str]:
    return (0 if label == "overall" else 1 if label.startswith("overall") else 2, label)


def _rows(results: Sequence[QuestionResult], set_name: str) -> dict[str, list[QuestionResult]]:
    rows: dict[str, list[QuestionResult]] = {}
    for result in results:
        if set_name in result.sets:
            for group in result.groups:
                rows.setdefault(group, []).append(result)
    return {label: rows[label] for label in sorted(rows, key=_row_order)}


def _interval(iv: Interval) -> list[float]:
    return [iv.mean, iv.low, iv.high]


def summarise_run(protocol: Protocol, run: SystemRun, seed: int, resamples: int) -> dict[str, Any]:
    """Per set and row: n and every metric's mean with its bootstrap interval; plus costs."""
    sets = {}
    for set_name in protocol.sets:
        rows = {
            label: {
                "n": len(members),
                "metrics": {
                    m: _interval(bootstrap_ci([r.metrics[m] for r in members], resamples, seed))
                    for m in protocol.metrics
                },
            }
            for label, members in _rows(run.results, set_name).items()
        }
        sets[set_name] = {"n": rows.get("overall", {}).get("n", 0), "rows": rows}
    latencies = [r.latency_ms for r in run.results]
    return {
        "describe": run.describe,
        "questions": len(run.results),
        "memories_ingested": run.memories_ingested,
        "ingest_s": run.ingest_s,
        "wall_s": run.wall_s,
        "latency_ms": {
            "median": median(latencies) if latencies else math.nan,
            "p95": percentile(latencies, 95),
        },
        "mean_memories_for_k": {
            k: fmean(r.memories_for_k[k] for r in run.results) if run.results else math.nan
            for k in protocol.ks
        },
        "mean_search_calls": fmean(r.search_calls for r in run.results) if run.results else 0.0,
        "sets": sets,
    }


def summarise_paired(
    protocol: Protocol, system: SystemRun, baseline: SystemRun, seed: int, resamples: int
) -> dict[str, Any]:
    """system - baseline per set, row and metric, resampling the same questions for both."""
    base = {r.qid: r for r in baseline.results}
    if set(base) != {r.qid for r in system.results}:
        raise ValueError(f"{system.system} and {baseline.system} were scored on different questions")
    out: dict[str, Any] = {}
    for set_name in protocol.sets:
        out[set_name] = {}
        for label, members in _rows(system.results, set_name).items():
            cells = {}
            for m in protocol.metrics:
                a = [r.metrics[m] for r in members]
                b = [base[r.qid].metrics[m] for r in members]
                test = sign_test(a, b)
                diff = paired_difference_ci(a, b, resamples, seed)
                cells[m] = {
                    "system": fmean(a),
                    "baseline": fmean(b),
                    "diff": _interval(diff),
                    "excludes_zero": diff.excludes_zero(),
                    "wins": test.wins,
                    "losses": test.losses,
                    "sign_p": test.p_value,
                }
            out[set_name][label] = {"n": len(members), "metrics": cells}
    return {"system": system.system, "baseline": baseline.system, "sets": out}


def summarise(
    protocol: Protocol,
    runs: Sequence[SystemRun],
    *,
    data_name: str,
    sha256: str,
    episodes: int,
    limit: int | None,
    seed: int,
    resamples: int,
    date: str,
) -> dict[str, Any]:
    """The whole summary of one protocol run (JSON-ready)."""
    by_name = {run.system: run for run in runs}
    paired = [
        summarise_paired(protocol, run, by_name[BASELINE], seed, resamples)
        for run in runs
        if run.system != BASELINE and BASELINE in by_name
    ]
    return {
        "protocol": protocol.key,
        "title": protocol.title,
        "data": data_name,
        "sha256": sha256,
        "episodes": episodes,
        "limit": limit,
        "depth": protocol.depth,
        "seed": seed,
        "resamples": resamples,
        "date": date,
        "reference": protocol.reference,
        "headline": list(protocol.headline),
        "systems": {run.system: summarise_run(protocol, run, seed, resamples) for run in runs},
        "paired": paired,
    }
