"""Command line of the retrieval harness: pick protocols and systems, run, write results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.retrieval.datasets import DEFAULT_DATA, read_dataset, read_sha256
from benchmarks.retrieval.protocols import CLI_PROTOCOLS, PROTOCOLS, Protocol, resolve_protocol
from benchmarks.retrieval.report import (
    render_markdown,
    write_jsonl,
    write_section,
    write_summary_json,
)
from benchmarks.retrieval.runner import Progress, SystemRun, run_system
from benchmarks.retrieval.stats import RESAMPLES, SEED
from benchmarks.retrieval.summary import summarise
from benchmarks.retrieval.system import (
    BASELINE,
    SYSTEMS,
    SystemUnavailable,
    load_system,
    system_class,
)

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
RESULTS_MD = "retrieval.md"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept separate so the README can be checked against it)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.retrieval",
        description="Retrieval benchmarks (LoCoMo, LongMemEval) under the protocols of "
        "PROTOCOLS.md. The BM25 baseline always runs alongside, on the same units.",
    )
    parser.add_argument("--dataset", choices=sorted(DEFAULT_DATA), help="inferred from --protocol")
    parser.add_argument("--protocol", choices=CLI_PROTOCOLS)
    parser.add_argument("--level", choices=("session", "turn"), help="lme-official only (default session)")
    parser.add_argument("--all", action="store_true", help="run every protocol (of --dataset, if given)")
    parser.add_argument(
        "--system",
        choices=(*SYSTEMS, "both"),
        default="both",
        help="system under test; bm25 runs in any case (default: both = cortex and bm25)",
    )
    parser.add_argument("--limit", type=int, help="only the first N episodes (quick runs)")
    parser.add_argument("--data", type=Path, help="dataset file (default: the shared dev slice)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--seed", type=int, default=SEED, help="bootstrap seed")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples")
    return parser


def plan_protocols(args: argparse.Namespace) -> list[Protocol]:
    """The protocols this invocation runs, checked against --dataset and --level."""
    if args.all:
        if args.protocol or args.level:
            raise ValueError("--all runs every protocol: drop --protocol and --level")
        if args.data and not args.dataset:
            raise ValueError("--all with --data needs --dataset to say which format the file is")
        return [p for p in PROTOCOLS.values() if args.dataset in (None, p.dataset)]
    if not args.protocol:
        raise ValueError("give --protocol (or --all)")
    protocol = resolve_protocol(args.protocol, args.level)
    if args.dataset and args.dataset != protocol.dataset:
        raise ValueError(f"{args.protocol} runs on {protocol.dataset}, not {args.dataset}")
    return [protocol]


def plan_systems(choice: str) -> list[str]:
    """System names to run, the baseline last (it is always included)."""
    names = ["cortex"] if choice == "both" else [choice]
    return [n for n in names if n != BASELINE] + [BASELINE]


def _run_protocol(
    protocol: Protocol, raw: Any, path: Path, args: argparse.Namespace, systems: list[str]
) -> dict[str, Any]:
    episodes = protocol.plan(raw)
    if args.limit is not None:
        episodes = episodes[: args.limit]
    total = sum(len(e.questions) for e in episodes)
    runs: list[SystemRun] = []
    for name in systems:
        system = load_system(name)
        progress = Progress(f"{protocol.key} {name}", total, len(episodes))
        try:
            runs.append(run_system(protocol, episodes, system, progress.advance, progress.next_episode))
        finally:
            progress.finish()
            system.close()
    summary = summarise(
        protocol,
        runs,
        data_name=path.name,
        sha256=read_sha256(path),
        episodes=len(episodes),
        limit=args.limit,
        seed=args.seed,
        resamples=args.resamples,
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    out: Path = args.out
    write_jsonl(out / f"retrieval-{protocol.key}.jsonl", protocol, runs)
    write_summary_json(out / f"retrieval-{protocol.key}.summary.json", summary)
    write_section(out / RESULTS_MD, protocol.key, render_markdown(summary))
    return summary


def _result_lines(summary: dict[str, Any]) -> list[str]:
    lines = []
    for name, sysum in summary["systems"].items():
        set_name = next(iter(sysum["sets"]))
        overall = sysum["sets"][set_name]["rows"].get("overall")
        if overall is None:
            continue
        figures = ", ".join(f"{m} {overall['metrics'][m][0]:.3f}" for m in summary["headline"])
        n = overall["n"]
        lines.append(f"{summary['protocol']} {name} ({set_name}, n={n}): {figures}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 when a run fails, 2 on a usage error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        protocols = plan_protocols(args)
        systems = plan_systems(args.system)
        for name in systems:
            system_class(name)  # fail before any work when an adapter is missing
    except (ValueError, SystemUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    raw_by_path: dict[Path, Any] = {}
    try:
        for protocol in protocols:
            path = args.data or DEFAULT_DATA[protocol.dataset]
            if path not in raw_by_path:
                raw_by_path[path] = read_dataset(path)
            summary = _run_protocol(protocol, raw_by_path[path], path, args, systems)
            for line in _result_lines(summary):
                print(line)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"results: {args.out / RESULTS_MD}")
    return 0
