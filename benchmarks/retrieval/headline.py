"""The headline of `results/retrieval.md`: cortex against BM25 per protocol, from the summaries.

Reads `retrieval-<protocol>.summary.json` (written by `python -m benchmarks.retrieval`) and puts
one table at the top of `retrieval.md`: the acceptance metrics with their intervals, the paired
difference and the time per query; then the configuration, and the ablation and abstention
tables when their files exist. Run it after the protocol runs:

    python -m benchmarks.retrieval --all && python -m benchmarks.retrieval.headline
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.retrieval.ablate import ABLATION_MD
from benchmarks.retrieval.calibrate import OUT_MD as ABSTENTION_MD
from benchmarks.retrieval.report import RESULTS_HEADER

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
RESULTS_MD = "retrieval.md"
MARK = "retrieval:headline"

# Per protocol: (question set, metrics, how cortex must compare with BM25 on the first one).
HEADLINE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "locomo-turn": ("all", ("recall@10", "recall@5", "recall@25", "recall@50"), "beat, CI > 0"),
    "locomo-session": ("all", ("recall_any@5", "recall_any@10", "mrr@10"), "not below"),
    "lme-official-session": (
        "strict",
        ("recall_all@5", "ndcg@5", "recall_all@10", "ndcg@10", "mrr"),
        "beat, CI > 0",
    ),
    "lme-official-turn": (
        "strict",
        ("recall_all@10", "recall_all@5", "ndcg@10", "recall_all@50"),
        "beat, CI > 0",
    ),
    "lme-session-full": ("all", ("recall_any@5", "recall_any@10", "mrr@10"), "not below"),
}


def _cell(values: Sequence[float]) -> str:
    return f"{values[0]:.3f} [{values[1]:.3f}, {values[2]:.3f}]"


def render_headline(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """The headline table: per protocol and metric, cortex, BM25 and the paired difference."""
    header = ["protocol (set, n)", "metric", "cortex", "BM25", "cortex − BM25 [95% CI]", "W/L", "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, (set_name, metrics, target) in HEADLINE.items():
        summary = summaries.get(key)
        if summary is None or not summary["paired"]:
            continue
        cortex, bm25 = summary["systems"]["cortex"], summary["systems"]["bm25"]
        paired = summary["paired"][0]["sets"][set_name]["overall"]
        n = paired["n"]
        for i, m in enumerate(metrics):
            diff = paired["metrics"][m]
            ok = diff["excludes_zero"] and diff["diff"][0] > 0
            verdict = ""
            if i == 0:
                met = ok if target.startswith("beat") else diff["diff"][0] >= 0 or not diff["excludes_zero"]
                verdict = f"{target}: {'met' if met else 'NOT met'}"
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"{key} ({set_name}, {n})" if i == 0 else "",
                        m,
                        _cell(cortex["sets"][set_name]["rows"]["overall"]["metrics"][m]),
                        _cell(bm25["sets"][set_name]["rows"]["overall"]["metrics"][m]),
                        _cell(diff["diff"]) + (" *" if diff["excludes_zero"] else ""),
                        f"{diff['wins']}/{diff['losses']}",
                        verdict,
                    ]
                )
                + " |"
            )
    return lines


def render_costs(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """Per protocol: stores, memories, ingest time and recall time per query for both systems."""
    header = ["protocol", "stores", "memories", "cortex ingest s", "cortex p50 / p95 ms", "BM25 p50 ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, summary in summaries.items():
        cortex, bm25 = summary["systems"]["cortex"], summary["systems"]["bm25"]
        lines.append(
            f"| {key} | {summary['episodes']} | {cortex['memories_ingested']:,} | "
            f"{cortex['ingest_s']:.0f} | {cortex['latency_ms']['median']:.1f} / "
            f"{cortex['latency_ms']['p95']:.1f} | {bm25['latency_ms']['median']:.1f} |"
        )
    return lines


def _tables_of(path: Path) -> list[str]:
    """The body of another results file (its title dropped), to inline under a heading."""
    if not path.is_file():
        return [f"(not run yet: `{path.name}`)"]
    text = path.read_text(encoding="utf-8").splitlines()
    return [line.replace("## ", "#### ", 1) if line.startswith("## ") else line for line in text[1:]]


def render(summaries: dict[str, dict[str, Any]], results: Path, notes: Sequence[str]) -> str:
    """The whole headline section, between its markers."""
    describe = next(iter(summaries.values()))["systems"]["cortex"]["describe"] if summaries else {}
    config = [f"- {k}: {v}" for k, v in describe.items()]
    body = [
        f"<!-- {MARK} -->",
        "## Headline: cortex against BM25 in the same run",
        "",
        "Development slices; the paired difference resamples the same questions for both systems "
        "(2,000 bootstrap resamples); `*` marks an interval that excludes zero. Per-category and "
        "per-type tables are in the protocol sections below.",
        "",
        *render_headline(summaries),
        "",
        "### Configuration",
        "",
        *config,
        *notes,
        "",
        "### Time",
        "",
        *render_costs(summaries),
        "",
        "### Ablations (`retrieval-ablation.md`)",
        "",
        *_tables_of(results / ABLATION_MD),
        "",
        "### Abstention floors (`retrieval-abstention.md`)",
        "",
        *_tables_of(results / ABSTENTION_MD),
        "",
        f"<!-- /{MARK} -->",
        "",
    ]
    return "\n".join(body)


def write_headline(results: Path, notes: Sequence[str] = ()) -> Path:
    """Insert or replace the headline section right after the file's header."""
    summaries = {}
    for key in HEADLINE:
        path = results / f"retrieval-{key}.summary.json"
        if path.is_file():
            summaries[key] = json.loads(path.read_text(encoding="utf-8"))
    target = results / RESULTS_MD
    text = target.read_text(encoding="utf-8") if target.is_file() else RESULTS_HEADER
    section = render(summaries, results, notes)
    pattern = re.compile(rf"<!-- {re.escape(MARK)} -->.*?<!-- /{re.escape(MARK)} -->\n?", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        first = text.find("<!-- retrieval:")
        text = (
            (text.rstrip("\n") + "\n\n" + section)
            if first < 0
            else (text[:first] + section + "\n" + text[first:])
        )
    target.write_text(text, encoding="utf-8")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Write the headline section of `retrieval.md` from the summaries in --out."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.headline")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--note", action="append", default=[], help="a configuration line to add")
    args = parser.parse_args(argv)
    print(write_headline(args.out, [f"- {n}" for n in args.note]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
