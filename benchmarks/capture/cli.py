"""`python -m benchmarks.capture`: capture quality of a cortex checkout on real recorded sessions.

    python -m benchmarks.capture [--sessions DIR] [--repo PATH] [--out FILE] [--only NAME]
                                 [--keep] [--work DIR] [--baseline SUMMARY.json] [--reuse]

Each session is replayed through the checkout's real hooks into a throwaway project
(replay.py), then measured from outside (measure.py). Writes FILE (markdown, default
benchmarks/results/capture.md), FILE's .summary.json (every number) and .jsonl (raw results per
fact and memory, git-ignored). `--baseline` puts an earlier run's numbers (its .summary.json)
next to this run's. `--reuse --work DIR` measures the projects a `--keep` run left in DIR again
without replaying them: only the briefing is rendered anew, by the checkout under test, from
the stores as the replay left them (a `--keep` run copies them before its recalls count their
accesses, which the briefing's rank reads).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.capture.dataset import SESSIONS_DIR, list_sessions
from benchmarks.capture.definitions import DEFINITIONS
from benchmarks.capture.measure import Measured, measure, raw_lines
from benchmarks.capture.probe import code_location, embedder_from_log, logger_names, status
from benchmarks.capture.replay import Plugin, Replay, keep_stores, reopen_session, replay_session
from benchmarks.capture.report import render
from benchmarks.capture.score import summarize

HERE = Path(__file__).resolve().parents[2]
RESULTS = HERE / "benchmarks" / "results" / "capture.md"
MODELS_CACHE = HERE / "benchmarks" / ".cache" / "capture-home"


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def code_label(repo: Path) -> str:
    """`abc1234`, with `+ uncommitted changes` when the checkout's code differs from HEAD."""
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--", "cortex", "hooks"],
        capture_output=True,
        text=True,
    )
    label = sha.stdout.strip() or "unknown commit"
    return f"{label} + uncommitted changes" if dirty.stdout.strip() else label


def prepare_models(plugin: Plugin, cache: Path) -> Path | None:
    """A CORTEX_HOME/models with the local model's ONNX export, shared by every session's home
    (as an installed user has it after `cortex backfill`); made once through the CLI."""
    models = cache / "models"
    if models.is_dir() and any(models.iterdir()):
        return models
    cache.mkdir(parents=True, exist_ok=True)
    progress(f"exporting the embedding model once into {cache} (`cortex backfill`)")
    with tempfile.TemporaryDirectory(prefix="cortex-capture-export-") as scratch:
        env = {**plugin.env(cache, Path(scratch)), "PYTHONPATH": str(plugin.repo)}
        done = subprocess.run(
            [plugin.python, "-m", "cortex", "backfill"],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    if not (models.is_dir() and any(models.iterdir())):
        progress(f"no model export ({done.stderr.strip()[-300:]}); the worker picks its own embedder")
        return None
    return models


def embedder_note(plugin: Plugin, replays: list[Replay]) -> str:
    """Which embedder the workers used (their log) and what `cortex status --json` says is left."""
    used = sorted({e for r in replays if (e := embedder_from_log(r))})
    pending = 0
    for replay in replays[:1]:
        stores = status(plugin, replay).get("stores") or {}
        pending = sum(int(v.get("pending_embeddings") or 0) for v in stores.values() if isinstance(v, dict))
    where = "; ".join(used) if used else "none logged"
    return f"{where} (memories left without a vector in the first session: {pending})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capture", description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=Path, default=SESSIONS_DIR, help="the session folders")
    parser.add_argument(
        "--repo", type=Path, default=HERE, help="the cortex checkout (plugin root) to measure"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="the markdown report")
    parser.add_argument("--only", default=None, help="one session (its folder name)")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway projects")
    parser.add_argument("--work", type=Path, default=None, help="where the throwaway projects go")
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier run's .summary.json")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure the projects an earlier --keep run left under --work again, without "
        "replaying: the briefing is re-rendered by this checkout (for briefing changes)",
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    repo = args.repo.resolve()
    if not (repo / "hooks" / "hooks.json").is_file() or not (repo / "cortex" / "__init__.py").is_file():
        raise SystemExit(f"{repo} is not a cortex checkout (no hooks/hooks.json or cortex/)")
    sessions_dir = args.sessions.resolve()
    if not sessions_dir.is_dir():
        raise SystemExit(f"no session folder at {sessions_dir}")
    sessions = list_sessions(sessions_dir, args.only)
    if args.reuse and args.work is None:
        raise SystemExit("--reuse measures the projects of an earlier --keep run: name them with --work")
    plugin = Plugin(repo)
    work = (args.work or Path(tempfile.mkdtemp(prefix="cortex-capture-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    models = prepare_models(plugin, MODELS_CACHE)
    measured: list[tuple[Replay, Measured]] = []
    raw: list[dict[str, Any]] = []
    try:
        for session in sessions:
            if args.reuse:
                progress(f"{session.name}: re-rendering the briefing of the kept replay")
                replay = reopen_session(session, plugin, work / session.name)
            else:
                progress(f"{session.name}: replaying {session.meta.get('records', '?')} records")
                replay = replay_session(session, plugin, work / session.name, models, progress)
                if args.keep:
                    keep_stores(work / session.name)
            progress(f"{session.name}: replayed in {replay.seconds:.0f} s; measuring")
            result = measure(session, plugin, replay, progress)
            measured.append((replay, result))
            raw += raw_lines(session, result)
            row = result.score
            captured = sum(f.captured for f in row.facts)
            progress(f"{session.name}: {row.memories} memories, captured {captured}/{len(row.facts)}")
        first = measured[0][0]
        meta = {
            "code": code_label(repo),
            "code_path": code_location(plugin, first),
            "worker_loggers": sorted({n for r, _ in measured for n in logger_names(r) if "worker" in n}),
            "embedder": embedder_note(plugin, [r for r, _ in measured]),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "minutes": (time.monotonic() - started) / 60,
            "sessions_label": _sessions_label(sessions_dir),
            "only": args.only,
            "reused": bool(args.reuse),
            "problems": [p for _, m in measured for p in m.score.problems],
        }
    finally:
        if args.keep or args.reuse:
            progress(f"throwaway projects kept under {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    summary = summarize([m.score for _, m in measured])
    return {"meta": meta, "summary": summary, "raw": raw}


def _sessions_label(folder: Path) -> str:
    default = SESSIONS_DIR.resolve()
    return "../shared/benchmarks/sessions" if folder == default else str(folder)


def write(result: dict[str, Any], out: Path, baseline: Path | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    base = json.loads(baseline.read_text(encoding="utf-8")) if baseline else None
    document = {"meta": result["meta"], "summary": result["summary"]}
    out.with_suffix(".summary.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    with out.with_suffix(".jsonl").open("w", encoding="utf-8") as fh:
        for line in result["raw"]:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    out.write_text(render(document, base, DEFINITIONS), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    result = run(args)
    write(result, args.out, args.baseline)
    overall = result["summary"]["overall"]
    progress(
        f"done in {result['meta']['minutes']:.1f} min: captured {overall['captured']:.2f}, "
        f"recalled@3 {overall['recalled@3']:.2f}, briefed {overall['briefed'] or 0:.2f}, "
        f"wrong {overall['wrong']}; report {args.out}"
    )
    return 0
