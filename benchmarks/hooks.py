"""Hook and worker latency (SPEC §8), measured the way Claude Code runs them.

- SessionStart end to end: `python3 hooks/launch.py SessionStart` with a payload on stdin, from
  process start to exit, on a project with 10,000 memories (target: p95 < 100 ms), both when the
  rules file carries the stable part (moment part only) and when it does not (full briefing);
- Stop, PreCompact and SessionEnd returns, with a worker running (queue only) and when the hook
  starts the detached worker itself (target: p95 < 150 ms);
- UserPromptSubmit (keyword lookup enabled) on the same store;
- peak RSS of every hook process (target: < 60 MB);
- the worker's time per turn, heuristic layers and embedding included: warm (in process, model
  loaded; target < 2 s) and cold (a new worker process per turn; target < 10 s), on a small
  project and on the 10,000-memory one.

The 10,000-memory store comes from `benchmarks.gen_store` with vectors from its embedding cache;
with `--scale-store` it is instead a copy of `benchmarks.scale_vectors`' cached store of that size
(perturbed real vectors, built once in bulk: the way to measure the hooks at 1,000,000
memories). Writes a markdown report (default `benchmarks/results/hooks.md`).

    python -m benchmarks.hooks [--runs 40] [--turns 12] [--memories 10000] [--scale-store]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.gen_store import build_store
from benchmarks.latency import Series, _environment, _home_with_model, publish
from cortex.paths import STORE_DIR, WORKER_LOCK

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "hooks.md"
DEMO = REPO / "cortex" / "data" / "demo_transcript.jsonl"
SESSION = "b3c4d5e6-0000-4000-8000-00000000beef"
TARGET_MS = {"SessionStart": 100.0, "Stop": 150.0, "worker warm": 2000.0, "worker cold": 10000.0}
RSS_TARGET_MB = 60.0
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@cortex.invalid"]


def _git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, timeout=60)


def hook_command(event: str, python: str) -> list[str]:
    """The command hooks/hooks.json runs for `event`, with `python3` resolved and the root filled in."""
    import shlex

    config = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    [group] = config["hooks"][event]
    [handler] = group["hooks"]
    words = shlex.split(handler["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(REPO)))
    assert words[0] == "python3", words
    return [python, *words[1:]]


def _describe(python: str) -> str:
    """`python3` in words, without its path."""
    done = subprocess.run(
        [
            python,
            "-c",
            "import platform, sys; print(platform.python_implementation(), platform.python_version(), "
            "'(virtual env)' if sys.prefix != sys.base_prefix else '')",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"`python3` = {done.stdout.strip() or 'unknown'} (the one on PATH)"


def _python3() -> str:
    """The interpreter `python3` on PATH really is (a pyenv shim would add its own start-up)."""
    found = shutil.which("python3") or sys.executable
    done = subprocess.run(
        [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=False
    )
    real = done.stdout.strip()
    return real if done.returncode == 0 and real else sys.executable


# Children are started by a small, fresh process: Linux counts the parent's pages in a forked
# child's peak RSS, so starting them from this (model-loaded) process would overstate every hook.
RSS_DRIVER = """
import json, os, subprocess, sys, tempfile, time
job = json.load(sys.stdin)
scale = 1024 * 1024 if sys.platform == "darwin" else 1024
rows = []
for _ in range(job["runs"]):
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(job["cmd"], stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.DEVNULL, env=job["env"])
        proc.stdin.write(job["stdin"].encode("utf-8"))
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = (time.perf_counter() - start) * 1000
        out.seek(0)
        rows.append({"wall": wall, "code": os.waitstatus_to_exitcode(status),
                     "rss": usage.ru_maxrss / scale, "cpu": (usage.ru_utime + usage.ru_stime) * 1000,
                     "out": out.read().decode("utf-8", "replace")})
json.dump(rows, sys.stdout)
"""


def run_children(cmd: list[str], stdin: str, env: dict[str, str], runs: int) -> list[dict[str, Any]]:
    """Wall ms, CPU ms, peak RSS MB and stdout of `runs` child processes started by a small driver."""
    job = {"cmd": cmd, "stdin": stdin, "env": env, "runs": runs}
    driver = subprocess.run(
        [sys.executable, "-S", "-c", RSS_DRIVER],
        input=json.dumps(job).encode("utf-8"),
        capture_output=True,
        check=False,
    )
    if driver.returncode != 0:
        raise RuntimeError(f"benchmark driver failed: {driver.stderr.decode(errors='replace')[-2000:]}")
    rows: list[dict[str, Any]] = json.loads(driver.stdout)
    if any(row["code"] != 0 for row in rows):
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return rows


def measured(name: str, size: int, rows: list[dict[str, Any]], note: str = "") -> Series:
    """A row of the report from child-process measurements."""
    s = Series(name, size, note=note)
    for row in rows:
        s.ms.append(row["wall"])
        s.cpu_ms.append(row["cpu"])
        s.rss_mb.append(row["rss"])
    return s


def make_project(root: Path, memories: int, *, embed: bool = False) -> Path:
    """A git repository whose store holds `memories` generated memories (vectors when `embed`)."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# bench\n", encoding="utf-8")
    _git(root, "add", "README.md")
    _git(root, "commit", "-q", "-m", "init")
    if memories:
        build_store(root, memories, seed=1, embed=embed)
    return root


def refresh(root: Path, home: Path) -> float:
    """Render the briefing once (what the worker does after each batch); seconds taken."""
    from cortex.app import Cortex
    from cortex.briefing.deliver import refresh_briefing
    from cortex.paths import Paths

    started = time.perf_counter()
    with Cortex(Paths(root, home)) as cx:
        result = refresh_briefing(cx)
    assert result.cache_file is not None, result.errors
    return time.perf_counter() - started


def measure_hooks(
    root: Path, home: Path, python: str, runs: int, size: int, pycache: Path, spawns: int | None = None
) -> list[Series]:
    """Every hook, as a new process, `runs` times each after a warm-up; the Stop that starts the
    worker `spawns` times (default half of `runs`, at least 5; 0: not measured), each after
    the last worker finished."""
    from cortex.shell.files import file_lock

    env = {**os.environ, "CORTEX_HOME": str(home), "CORTEX_EMBEDDER": "none", "CLAUDE_PROJECT_DIR": str(root)}
    env.pop("CLAUDE_PLUGIN_DATA", None)
    # Bytecode cached as after any normal install (this shell may say PYTHONDONTWRITEBYTECODE).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    transcript = root.parent / "transcripts" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    base = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(root)}
    start = {**base, "hook_event_name": "SessionStart", "source": "startup"}
    stop = {**base, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Done."}
    end = {**base, "hook_event_name": "SessionEnd", "reason": "other"}
    question = "why did we choose Postgres for the job queue"
    prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": question}
    rules = root / ".claude" / "rules" / "cortex-memory.md"

    def hook(name: str, event: str, payload: Mapping[str, object], **extra: str) -> Series:
        rows = run_children(hook_command(event, python), json.dumps(payload), {**env, **extra}, runs + 3)[3:]
        added = ""
        if event == "SessionStart":
            context = json.loads(rows[-1]["out"])["hookSpecificOutput"]["additionalContext"]
            added = f"{len(context):,} chars added"
        return measured(name, size, rows, added)

    stdlib = "import json, logging, pathlib, dataclasses, contextlib, tempfile, hashlib"
    out = [
        measured(
            "python3 -c pass",
            -1,
            run_children([python, "-c", "pass"], "", env, runs + 3)[3:],
            "the interpreter alone",
        ),
        measured(
            "python3 -S -c pass",
            -1,
            run_children([python, "-S", "-c", "pass"], "", env, runs + 3)[3:],
            "the same without site-packages",
        ),
        measured(
            "python3 -S, the stdlib modules the hooks use",
            -1,
            run_children([python, "-S", "-c", stdlib], "", env, runs + 3)[3:],
            stdlib.removeprefix("import "),
        ),
        hook("SessionStart, rules file current (moment part)", "SessionStart", start),
    ]
    saved = rules.read_bytes()
    rules.unlink()
    out.append(hook("SessionStart, no rules file (full briefing)", "SessionStart", start))
    rules.write_bytes(saved)
    out.append(
        hook("UserPromptSubmit, keyword lookup on", "UserPromptSubmit", prompt, CORTEX_USER_PROMPT_SUBMIT="1")
    )
    with file_lock(root / STORE_DIR / WORKER_LOCK, blocking=False):  # a worker "runs": hooks only queue
        out.append(hook("Stop, worker running (queue only)", "Stop", stop))
        out.append(hook("SessionEnd, worker running (queue only)", "SessionEnd", end))
    for path in (root / ".memory" / "queue").iterdir():
        path.unlink()
    if spawns == 0:
        return out
    spawned: list[dict[str, Any]] = []
    first, idle = Series("worker started by Stop, the sample session", size), Series("", size)
    for i in range((max(runs // 2, 5) if spawns is None else spawns) + 1):
        started = time.perf_counter()
        rows = run_children(hook_command("Stop", python), json.dumps(stop), env, 1)
        if i:
            spawned += rows
        _wait_idle(root)  # the worker's own time per turn is measured below; here only until idle
        (idle if i else first).ms.append((time.perf_counter() - started) * 1000)
    out.append(measured("Stop, starts the detached worker", size, spawned, "hook return; the worker runs on"))
    first.note = "wall from the hook's start until the worker it started exits: a new process, its turns"
    idle.name = "worker started by Stop, nothing new"
    idle.note = "the same, when the transcript holds nothing new (the rows above)"
    return [*out, first, idle]


def _wait_idle(root: Path, timeout_s: float = 300.0) -> None:
    from cortex.capture.queue import list_files
    from cortex.plugin.hooks import worker_running

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not list_files(root / ".memory") and not worker_running(root):
            return
        time.sleep(0.05)
    raise TimeoutError("the worker did not finish")


# -- the worker, one turn at a time -------------------------------------------------------------
def demo_turns(root: Path) -> list[list[str]]:
    """The sample session's turns, with its project path set to `root`."""
    from cortex.plugin.demo import TRANSCRIPT_ROOT, fake_key, turn_ends

    lines = DEMO.read_text(encoding="utf-8").replace(TRANSCRIPT_ROOT, str(root))
    lines = lines.replace("<<FAKE_ANTHROPIC_KEY>>", fake_key())
    split = lines.splitlines(keepends=True)
    turns, done = [], 0
    for end, _ in turn_ends(split):
        turns.append(split[done : end + 1])
        done = end + 1
    return turns


def turn_lines(turns: list[list[str]], n: int) -> str:
    """Turn `n`: one of the sample's turns with fresh ids and words, so it yields new memories."""
    text = "".join(turns[n % len(turns)])
    for old in {w for w in text.split('"') if len(w) == 36 and w.count("-") == 4}:
        text = text.replace(old, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{old}/{n}")))
    text = text.replace("msg_01Dem0", f"msg_{n:04d}Dem0").replace("toolu_01Dem0", f"toolu_{n:04d}Dem0")
    for word in ("token bucket", "token-bucket", "Redis", "ProxyFix", "monotonic", "test_ratelimit", ".env"):
        text = text.replace(word, f"{word}{n}")
    text = text.replace("3f2a9c1", f"{n + 0xA000000:07x}")
    return text


def measure_worker(root: Path, home: Path, turns: int, size: int) -> list[Series]:
    """Per-turn worker time: warm (in process, embedder loaded) and cold (a new process per turn)."""
    from cortex.app import Cortex
    from cortex.config import load_settings
    from cortex.paths import Paths
    from cortex.plugin import hooks, worker

    env = {**os.environ, "CORTEX_HOME": str(home)}
    env.pop("CORTEX_EMBEDDER", None)
    transcript = root.parent / "worker-transcripts" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("", encoding="utf-8")
    samples = demo_turns(root)
    payload = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": "Stop",
    }
    paths = Paths(root, home)
    warm = Series(f"worker, one turn, warm ({_size(size)})", size)
    cold = Series(f"worker, one turn, cold process ({_size(size)})", size)
    n = 0

    def next_turn() -> None:
        nonlocal n
        with transcript.open("a", encoding="utf-8") as fh:
            fh.write(turn_lines(samples, n))
        n += 1
        with hooks_lock(root):
            hooks.main("Stop", io.BytesIO(json.dumps(payload).encode()), io.StringIO(), env)

    old_home = os.environ.get("CORTEX_HOME")
    os.environ["CORTEX_HOME"] = str(home)
    try:
        with Cortex(paths, load_settings(paths, env), actor="worker") as cx:
            note = cx.query_embedder().note  # loaded once: the warm worker has its model
            for i in range(turns + 1):
                next_turn()
                started = time.perf_counter()
                report = worker.run(root, cx=cx, lag_wait_s=0.0)
                if i:
                    warm.ms.append((time.perf_counter() - started) * 1000)
                assert report.sessions and not report.failed, report
            warm.note = note.split(" (export at")[0]  # no machine paths in the report
        for _ in range(max(turns // 2, 3)):
            next_turn()
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "cortex.plugin.worker", "--root", str(root), "--once"],
                env={**env, "PYTHONPATH": str(REPO)},
                capture_output=True,
                check=False,
            )
            cold.ms.append((time.perf_counter() - started) * 1000)
            assert done.returncode == 0, done.stderr
        cold.note = (
            "python start, imports, ONNX model load, extraction, write, embedding, lifecycle, briefing"
        )
    finally:
        if old_home is None:
            os.environ.pop("CORTEX_HOME", None)
        else:
            os.environ["CORTEX_HOME"] = old_home
    return [warm, cold]


def hooks_lock(root: Path):  # type: ignore[no-untyped-def]
    """Hold the worker lock while queueing, so the hook does not start its own worker."""
    from cortex.shell.files import file_lock

    return file_lock(root / STORE_DIR / WORKER_LOCK, blocking=False)


def _size(n: int) -> str:
    if n < 0:
        return "-"
    return f"{n:,} memories" if n else "new project"


# -- report -----------------------------------------------------------------------------------
def _target(name: str) -> float | None:
    if name.startswith("SessionStart"):
        return TARGET_MS["SessionStart"]
    if name.startswith(("Stop", "SessionEnd", "PreCompact")):
        return TARGET_MS["Stop"]
    if "warm" in name:
        return TARGET_MS["worker warm"]
    if "cold" in name:
        return TARGET_MS["worker cold"]
    return None


def render(series: Sequence[Series], env_lines: Sequence[str], python: str, setup: Sequence[str]) -> str:
    lines = [
        "# Hook and worker latency",
        "",
        "Measured by `python -m benchmarks.hooks` (see its docstring for what each row runs).",
        "",
        *env_lines,
        "- hooks run exactly as hooks/hooks.json says: "
        '`python3 -S "${CLAUDE_PLUGIN_ROOT}/hooks/launch.py" <event>`, with ' + _describe(python),
        *setup,
        "",
        "| what | store | runs | p50 ms | p95 ms | target | CPU p50 ms | peak RSS MB (max) | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in series:
        target = _target(s.name)
        verdict = "" if target is None else f"p95 < {target:,.0f} ms: {'yes' if s.p(0.95) < target else 'NO'}"
        rss = ""
        if s.rss_mb:
            rss = f"{max(s.rss_mb):.1f}" + ("" if max(s.rss_mb) < RSS_TARGET_MB else " (over 60)")
        cpu = f"{statistics.median(s.cpu_ms):,.0f}" if s.cpu_ms else ""
        cells = [s.name, _size(s.size), str(len(s.ms)), f"{s.p(0.5):,.0f}", f"{s.p(0.95):,.0f}", verdict, cpu]
        lines.append("| " + " | ".join([*cells, rss, s.note]) + " |")
    lines += [
        "",
        "Notes:",
        "- Wall times from spawn to exit. The machine is shared with other jobs (see the load "
        "average): wall time then stretches several-fold while CPU time (user + system of the "
        "process) stays close to what the work costs, so read both, and the interpreter rows "
        "above the hooks, before comparing with the targets.",
        "- Hook RSS target: < 60 MB. The worker is not a hook: it runs detached, after the hook "
        "returned, and may load the embedding model.",
    ]
    return "\n".join(lines) + "\n"


def scale_store(n: int, work: Path) -> tuple[Path, float, str]:
    """A copy of the cached scale store of `n` memories under `work`: (root, seconds the cached
    store took to build, how it was made)."""
    from benchmarks.scale_vectors import cached_store

    cached, built_s = cached_store(n)
    root = work / cached.name
    shutil.copytree(cached, root, symlinks=True)
    in_use(root)
    return (
        root,
        built_s,
        (
            "`benchmarks.scale_vectors`' cached store, perturbed real vectors; its copy marked as a store "
            "in use (ticked this hour, consolidated up to its last journal record): a turn here is a "
            "turn of a store kept up to date, not the first tick and whole-store consolidation of a store "
            "built in bulk"
        ),
    )


def in_use(root: Path) -> None:
    """Mark the project's store as the worker leaves a store in use: ticked now and consolidated
    up to its newest journal record, after as many extractions as it has counted. A store built
    in bulk was never ticked (its first tick decays months of memories at once) nor consolidated
    (its first automatic run compares every memory): neither is the cost of a turn."""
    from cortex.app import Cortex
    from cortex.core.model import Scope
    from cortex.core.serial import format_time
    from cortex.lifecycle import upkeep
    from cortex.paths import Paths

    with Cortex(Paths(root, root.parent / "in-use-home")) as cx:
        store = cx.store(Scope.PROJECT, create=False)
        assert store is not None
        with store.transaction():
            store.set_meta(upkeep.META_TICKED_AT, format_time(cx.now()) or "")
            store.set_meta(upkeep.META_CONSOLIDATED_SEQ, str(store.journal_seq()))
            store.set_meta(upkeep.META_CONSOLIDATED_ACTIVE, str(store.count_active()))
            store.set_meta(upkeep.META_CONSOLIDATED_AT, store.get_meta(upkeep.META_EXTRACTIONS, "0") or "0")


def _with_remote(root: Path) -> None:
    """Make the project a git clone with an origin, so a configured team store has its key."""
    for cmd in (["init", "-q"], ["remote", "add", "origin", "https://example.invalid/acme/bench.git"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, capture_output=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=40, help="hook runs per row (default 40)")
    parser.add_argument("--turns", type=int, default=12, help="worker turns per warm row (default 12)")
    parser.add_argument("--memories", type=int, default=10_000, help="store size (default 10,000)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--team-dsn", help="configure a team store (CORTEX_TEAM_DSN); the projects get a git remote to key it"
    )
    parser.add_argument("--hooks-only", action="store_true", help="skip the worker rows")
    parser.add_argument(
        "--spawn-runs", type=int, help="runs of the Stop that starts the worker (0: skip that row)"
    )
    parser.add_argument(
        "--scale-store", action="store_true", help="copy benchmarks.scale_vectors' cached store of this size"
    )
    args = parser.parse_args(argv)
    if args.team_dsn:
        os.environ["CORTEX_TEAM_DSN"] = args.team_dsn
    python = _python3()
    with tempfile.TemporaryDirectory(prefix="cortex-bench-hooks-") as tmp:
        work = Path(tmp)
        env_lines = _environment(work)
        home = _home_with_model(work)
        started = time.perf_counter()
        if args.scale_store:
            big, built_s, made = scale_store(args.memories, work / "big")
        else:
            # Named like benchmarks.latency's store, so gen_store's embedding cache supplies the
            # vectors: a store without them would have the worker backfill old memories each turn.
            big = make_project(work / "big" / f"latency-{args.memories}", args.memories, embed=True)
            built_s = time.perf_counter() - started
            made = "`benchmarks.gen_store`, vectors from its cache"
        if args.team_dsn:
            _with_remote(big)
        render_s = refresh(big, home)
        setup = [
            f"- store: {args.memories:,} generated memories ({made}) "
            f"built in {built_s:.1f} s; one briefing render took {render_s * 1000:,.0f} ms",
        ]
        if args.team_dsn:
            setup.append(
                "- a team store is configured (CORTEX_TEAM_DSN, PostgreSQL); the project has a git remote"
            )
        series = measure_hooks(big, home, python, args.runs, args.memories, work / "pycache", args.spawn_runs)
        if not args.hooks_only:
            small = make_project(work / "small" / "project", 0)
            if args.team_dsn:
                _with_remote(small)
            series += measure_worker(small, home, args.turns, 0)
            series += measure_worker(big, home, max(args.turns // 2, 4), args.memories)
    report = render(series, env_lines, python, setup)
    publish(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
