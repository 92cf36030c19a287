"""Markdown for one protocol's summary, and the result files (JSONL, summary JSON, retrieval.md).

`render_markdown` is pure; the `write_*` functions write files.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.retrieval.protocols import Protocol
from benchmarks.retrieval.runner import SystemRun

RESULTS_HEADER = (
    "# Retrieval benchmark results\n\n"
    "Written by `python -m benchmarks.retrieval` (see `benchmarks/README.md`); one section per "
    "protocol, replaced on each run. Protocols: `../shared/benchmarks/PROTOCOLS.md`. Intervals "
    "are 95% percentile-bootstrap intervals over questions. Never set numbers from different "
    "protocols side by side.\n"
)
# Above this many metrics a row table is split into one table per metric family.
MAX_TABLE_METRICS = 6


def _fmt(cell: Sequence[float]) -> str:
    mean, low, high = cell
    return "–" if math.isnan(mean) else f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _families(metrics: Sequence[str]) -> list[list[str]]:
    if len(metrics) <= MAX_TABLE_METRICS:
        return [list(metrics)]
    families: dict[str, list[str]] = {}
    for m in metrics:
        families.setdefault(m.split("@")[0], []).append(m)
    groups = list(families.values())
    # A lone metric (MRR) rides along with the previous family rather than get its own table.
    if len(groups) > 1 and len(groups[-1]) == 1:
        groups[-2].extend(groups.pop())
    return groups


_COMPONENTS = ("embedder", "reranker", "llm")


def _components(describe: dict[str, str]) -> str:
    return ", ".join(f"{k} {describe.get(k, 'none')}" for k in _COMPONENTS)


def _details(describe: dict[str, str]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in describe.items() if k not in _COMPONENTS)


def _render_header(summary: dict[str, Any], sets: list[str]) -> list[str]:
    first = next(iter(summary["systems"].values()))
    ns = ", ".join(f"{s} n = {first['sets'][s]['n']:,}" for s in sets)
    partial = f", **partial: first {summary['limit']} episodes**" if summary["limit"] else ""
    lines = [
        f"<!-- retrieval:{summary['protocol']} -->",
        f"## {summary['title']}",
        "",
        f"Data `{summary['data']}` (sha256 `{summary['sha256'][:12]}…`), {summary['episodes']} "
        f"fresh stores{partial}; {ns}. Units ranked per question: {summary['depth']}. "
        f"Bootstrap: {summary['resamples']} resamples, seed {summary['seed']}. "
        f"Run {summary['date']}.",
        "",
        f"Reference ({summary['reference']}).",
        "",
    ]
    for name, sysum in summary["systems"].items():
        top = sysum["sets"][sets[0]]["rows"].get("overall", {"metrics": {}})["metrics"]
        figures = " · ".join(f"{m} {_fmt(top[m])}" for m in summary["headline"] if m in top)
        lines.append(f"- **{name}** ({_components(sysum['describe'])}), {sets[0]}: {figures}")
    return lines


def _render_costs(summary: dict[str, Any]) -> list[str]:
    first = next(iter(summary["systems"].values()))
    ks = "/".join(str(k) for k in first["mean_memories_for_k"])
    header = ["system", "details", "memories", "ingest s", "search p50 ms", "search p95 ms"]
    rows = [
        [
            name,
            _details(sysum["describe"]),
            f"{sysum['memories_ingested']:,}",
            f"{sysum['ingest_s']:.1f}",
            f"{sysum['latency_ms']['median']:.1f}",
            f"{sysum['latency_ms']['p95']:.1f}",
            " / ".join(f"{v:.1f}" for v in sysum["mean_memories_for_k"].values()),
        ]
        for name, sysum in summary["systems"].items()
    ]
    return _table([*header, f"memories for k = {ks}"], rows)


def _render_rows(name: str, set_name: str, set_summary: dict[str, Any]) -> list[str]:
    rows = set_summary["rows"]
    metrics = list(next(iter(rows.values()))["metrics"]) if rows else []
    lines = ["", f"### {name}: {set_name} (n = {set_summary['n']:,})"]
    for family in _families(metrics):
        lines.append("")
        lines += _table(
            ["row", "n", *family],
            [[label, str(r["n"]), *(_fmt(r["metrics"][m]) for m in family)] for label, r in rows.items()],
        )
    return lines


def _render_paired(
    paired: dict[str, Any], set_name: str, headline: Sequence[str], every_metric: bool
) -> list[str]:
    a, b = paired["system"], paired["baseline"]
    body = []
    for label, row in paired["sets"][set_name].items():
        full = every_metric and label == "overall"
        shown = [m for m in row["metrics"] if full or m in headline]
        for m in shown:
            c = row["metrics"][m]
            body.append(
                [
                    label,
                    m,
                    str(row["n"]),
                    f"{c['system']:.3f}",
                    f"{c['baseline']:.3f}",
                    _fmt(c["diff"]),
                    f"{c['wins']}/{c['losses']}",
                    f"{c['sign_p']:.3g}",
                    "yes" if c["excludes_zero"] else "no",
                ]
            )
    header = ["row", "metric", "n", a, b, "difference [95% CI]", "wins/losses", "sign p"]
    return [
        "",
        f"### {a} − {b}, paired by question: {set_name}",
        "",
        *_table([*header, "CI excludes 0"], body),
    ]


def render_markdown(summary: dict[str, Any]) -> str:
    """One protocol's section of `retrieval.md`: result lines, costs, row tables, paired diffs."""
    sets = list(next(iter(summary["systems"].values()))["sets"])
    lines = [*_render_header(summary, sets), "", *_render_costs(summary)]
    # Every metric on the overall row of the headline set; the headline metrics elsewhere.
    for paired in summary["paired"]:
        for s in sets:
            lines += _render_paired(paired, s, summary["headline"], s == sets[0])
    for name, sysum in summary["systems"].items():
        for s in sets:
            lines += _render_rows(name, s, sysum["sets"][s])
    lines += ["", f"<!-- /retrieval:{summary['protocol']} -->", ""]
    return "\n".join(lines)


def write_jsonl(path: Path, protocol: Protocol, runs: Sequence[SystemRun]) -> None:
    """One JSON line per (system, question): gold ranks, metrics, memories per k, latency."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for run in runs:
            for result in run.results:
                handle.write(json.dumps({"protocol": protocol.key, **asdict(result)}) + "\n")


def write_summary_json(path: Path, summary: dict[str, Any]) -> None:
    """The summary as JSON, for tools and for comparing runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


def write_section(path: Path, key: str, section: str) -> None:
    """Replace this protocol's section of the results markdown (or append it)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else RESULTS_HEADER
    pattern = re.compile(
        rf"<!-- retrieval:{re.escape(key)} -->.*?<!-- /retrieval:{re.escape(key)} -->\n?", re.S
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
