"""Calibrate recall's abstention floors: how weak is the best evidence for questions memory
can answer, and for questions it cannot?

For each protocol's stores, every question is asked of its own store (answerable, except
LongMemEval's `_abs` questions) and of another episode's store (a question about someone
else's life: nothing there should answer it). For each question the best cosine and the best
keyword coverage that recall's floors look at are recorded; the table shows, per candidate
pair of floors, the share of answerable questions that would wrongly get "nothing relevant"
and the share of foreign/abstention questions that would rightly get it.

    python -m benchmarks.retrieval.calibrate            # writes results/retrieval-abstention.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.retrieval.cortex_system import CortexSystem
from benchmarks.retrieval.datasets import DEFAULT_DATA, read_dataset
from benchmarks.retrieval.protocols import PROTOCOLS
from benchmarks.retrieval.system import IngestItem
from cortex.core.recall.decide import DEFAULT_LEXICAL_FLOOR, DEFAULT_VECTOR_FLOOR, RecallParams

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
OUT_MD = "retrieval-abstention.md"
OUT_JSON = "retrieval-abstention.json"
PROTOCOL_KEYS = ("locomo-turn", "lme-session-full")
VECTOR_FLOORS = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45)
LEXICAL_FLOORS = (0.25, 0.34, 0.5, 0.67, 0.75, 1.01)  # 1.01: keyword coverage never suffices
MAX_FALSE_ABSTENTION = 0.02  # the budget: at most 2% of answerable questions turned away


def _kind(qid: str) -> str:
    # LongMemEval marks questions whose answer is not in the haystack with `_abs` in the id.
    return "abstention" if "_abs" in qid else "answerable"


def collect(key: str, limit: int | None) -> list[dict[str, Any]]:
    """Best evidence per (question, store): own store and the next episode's store."""
    protocol = PROTOCOLS[key]
    episodes = protocol.plan(read_dataset(DEFAULT_DATA[protocol.dataset]))[:limit]
    system = CortexSystem(RecallParams(abstain=False))
    rows: list[dict[str, Any]] = []
    try:
        for i, episode in enumerate(episodes):
            system.reset()
            system.ingest([IngestItem(d.key, d.text, d.time) for d in episode.docs])
            foreign = episodes[(i + 1) % len(episodes)]
            asked = [(q, _kind(q.qid)) for q in episode.questions]
            asked += [(q, "foreign") for q in foreign.questions if foreign is not episode]
            for question, kind in asked:
                evidence = system.evidence(question.text, question.now)
                rows.append({"protocol": key, "qid": question.qid, "kind": kind, **evidence})
            if sys.stderr.isatty():
                sys.stderr.write(f"\r{key}: {i + 1}/{len(episodes)} stores")
    finally:
        system.close()
    return rows


def abstains(row: dict[str, Any], vector_floor: float, lexical_floor: float) -> bool:
    """Would recall abstain on this evidence with these floors (the rule in core.recall)?"""
    cosine = row["best_cosine"]
    return bool((cosine is None or cosine < vector_floor) and row["best_coverage"] < lexical_floor)


def render(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per protocol, a grid of floors: false abstention on answerable, abstention elsewhere."""
    lines: list[str] = []
    for key in dict.fromkeys(r["protocol"] for r in rows):
        mine = [r for r in rows if r["protocol"] == key]
        kinds = {k: [r for r in mine if r["kind"] == k] for k in ("answerable", "abstention", "foreign")}
        counts = ", ".join(f"{k} n = {len(v)}" for k, v in kinds.items() if v)
        lines += [f"## {PROTOCOLS[key].title}", "", counts, ""]
        # Columns in the order of `kinds`, the order the shares below are computed in.
        header = ["vector floor", "keyword floor", "answerable turned away"]
        if kinds["abstention"]:
            header.append("`_abs` turned away")
        header.append("foreign turned away")
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for vf in VECTOR_FLOORS:
            for lf in LEXICAL_FLOORS:
                shares = [
                    sum(abstains(r, vf, lf) for r in group) / len(group)
                    for name, group in kinds.items()
                    if group and (name != "abstention" or kinds["abstention"])
                ]
                mark = " **(default)**" if (vf, lf) == (DEFAULT_VECTOR_FLOOR, DEFAULT_LEXICAL_FLOOR) else ""
                lines.append(
                    f"| {vf:.2f}{mark} | {lf:.2f} | " + " | ".join(f"{s:.3f}" for s in shares) + " |"
                )
        lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Collect evidence, write the JSON rows and the markdown grid."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.calibrate")
    parser.add_argument("--protocol", action="append", choices=PROTOCOL_KEYS)
    parser.add_argument("--limit", type=int, help="first N episodes only")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    rows = [row for key in args.protocol or PROTOCOL_KEYS for row in collect(key, args.limit)]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / OUT_JSON).write_text(json.dumps(rows) + "\n", encoding="utf-8")
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m benchmarks.retrieval.calibrate", *given])
    head = [
        "# Abstention floors",
        "",
        f"Written by `{command}` on {date}. Recall answers "
        '"nothing relevant in memory" when the best cosine AND the best keyword coverage are '
        "both below their floors. Budget: at most "
        f"{MAX_FALSE_ABSTENTION:.0%} of answerable questions turned away.",
        "",
    ]
    (args.out / OUT_MD).write_text("\n".join(head + render(rows)), encoding="utf-8")
    print("\n".join(render(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
