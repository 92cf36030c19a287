"""What checking code anchors costs per briefing render, at 10,000 memories.

A git repository of generated Python files (`--files`, 12 functions each) holds a store of
`--memories` generated memories (`benchmarks.gen_store`, no vectors); `--anchored` of them get
one to three anchors on those files (symbols, and a whole file for one in four), recorded from
the files as the real recorder does. Then a commit edits one function in 5% of the files and
deletes and renames a few more, so some anchors are changed, deleted and renamed.

Measured, each `--runs` times (median and p95, wall and CPU time of this process plus its git
children):

- `check, cold`: `anchor_checks` over every active memory with no cache (a new HEAD the first
  time: one `git cat-file --batch-check`, then a blob read and a `git log` per changed file);
- `check, warm`: the same at the same HEAD, from the cache (what a second render pays);
- `check, next commit`: after one more commit that touches one file (blob ids asked again,
  symbol hashes reused by blob id);
- `render, warm`: the worker's whole briefing render (`render_current`), check included, and
  the same render with the check left out.

SessionStart never runs the check: it reads the briefing cache the worker wrote
(`benchmarks.hooks` measures it). Writes `benchmarks/results/staleness.md` by default.

    python -m benchmarks.staleness [--memories 10000] [--anchored 5000] [--files 400] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.gen_store import build_store
from cortex.app import Cortex
from cortex.briefing import deliver
from cortex.briefing.anchors import anchor_checks, cache_path
from cortex.briefing.deliver import render_current
from cortex.core.code.anchors import Anchor, blob_id, symbol_hash
from cortex.core.code.parse import parse_symbols
from cortex.core.model import Scope
from cortex.paths import Paths

RESULTS = Path(__file__).resolve().parent / "results" / "staleness.md"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@cortex.invalid"]
FUNCTIONS = 12


def _git(root: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, text=True, timeout=120)
    return done.stdout.strip()


def source(i: int, version: int = 0) -> str:
    body = [f'"""Module {i} of the benchmark project."""\n']
    for f in range(FUNCTIONS):
        body.append(f"\n\ndef handler_{i}_{f}(request, retries={3 + version if f == 0 else 3}):\n")
        body.append(f'    """Handle request kind {f} of module {i}."""\n')
        body.append(f"    return request.get('{i}-{f}', retries)\n")
    return "".join(body)


def make_repo(root: Path, memories: int, files: int) -> None:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    for i in range(files):
        path = root / "pkg" / f"mod_{i:04d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source(i), encoding="utf-8")
    _git(root, "add", "pkg")
    _git(root, "commit", "-q", "-m", "the project")
    build_store(root, memories, seed=1, embed=False)


def anchor_memories(cx: Cortex, anchored: int, files: int, rng: random.Random) -> int:
    """Anchors on `anchored` active memories, as the recorder would write them; returns rows."""
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    head = _git(cx.paths.root, "rev-parse", "HEAD")
    now = cx.now()
    texts = {i: source(i) for i in range(files)}
    symbols = {
        i: {s.qualname: symbol_hash(s.code) for s in parse_symbols(f"m{i}.py", t)} for i, t in texts.items()
    }
    ids = sorted(m.id for m in store.list_memories(types=None))[:anchored]
    rows = 0
    with store.transaction():
        for mid in ids:
            found = []
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(files)
                rel = f"pkg/mod_{i:04d}.py"
                blob = blob_id(texts[i].encode())
                if rng.random() < 0.25:
                    found.append(Anchor(rel, "", blob, head, now, blob=blob))
                else:
                    name = f"handler_{i}_{rng.randrange(FUNCTIONS)}"
                    found.append(Anchor(rel, name, symbols[i][name], head, now, blob=blob))
            unique = list({(a.path, a.symbol): a for a in found}.values())
            store.write_anchors(mid, unique)
            rows += len(unique)
    return rows


def change_code(root: Path, files: int, rng: random.Random) -> dict[str, int]:
    """One commit: 5% of the files get an edited function, 1% are deleted, 1% renamed."""
    picked = rng.sample(range(files), max(3, files * 7 // 100))
    n_edit, n_del = max(1, files * 5 // 100), max(1, files // 100)
    edited, deleted, renamed = picked[:n_edit], picked[n_edit : n_edit + n_del], picked[n_edit + n_del :]
    for i in edited:
        (root / "pkg" / f"mod_{i:04d}.py").write_text(source(i, version=1), encoding="utf-8")
    for i in deleted:
        _git(root, "rm", "-q", f"pkg/mod_{i:04d}.py")
    for i in renamed:
        _git(root, "mv", f"pkg/mod_{i:04d}.py", f"pkg/moved_{i:04d}.py")
    _git(root, "commit", "-q", "-am", "edits, deletions, renames")
    return {"edited": len(edited), "deleted": len(deleted), "renamed": len(renamed)}


def cpu() -> float:
    mine = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine + kids.ru_utime + kids.ru_stime


def timed(
    fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        if before is not None:
            before()
        w, c = time.perf_counter(), cpu()
        fn()
        walls.append((time.perf_counter() - w) * 1000)
        cpus.append((cpu() - c) * 1000)
    return walls, cpus


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def row(name: str, walls: Sequence[float], cpus: Sequence[float]) -> str:
    return (
        f"| {name} | {statistics.median(walls):.1f} | {p95(walls):.1f} | "
        f"{statistics.median(cpus):.1f} | {p95(cpus):.1f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--anchored", type=int, default=5_000)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="cortex-staleness-") as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        home.mkdir()
        os.environ["CORTEX_HOME"] = str(home)
        make_repo(root, args.memories, args.files)
        with Cortex(Paths(root, home)) as cx:
            rows = anchor_memories(cx, args.anchored, args.files, rng)
            changes = change_code(root, args.files, rng)
            store = cx.store(Scope.PROJECT, create=False)
            assert store is not None
            cache = cache_path(cx.paths.briefing_dir)

            def check() -> object:
                return anchor_checks(root, [store], None, cache)

            def forget() -> None:
                cache.unlink(missing_ok=True)

            marked = check()
            states: dict[str, int] = {}
            for found in marked.values():
                for c in found:
                    states[c.state.value] = states.get(c.state.value, 0) + 1
            cold = timed(check, args.runs, forget)
            warm = timed(check, args.runs)
            bump = iter(range(10**6))

            def next_commit() -> None:
                k = next(bump) % args.files
                path = root / "pkg" / f"mod_{k:04d}.py"
                if path.exists():
                    path.write_text(source(k, version=2 + next(bump)), encoding="utf-8")
                _git(root, "commit", "-q", "--allow-empty", "-am", "one more")

            after = timed(check, args.runs, next_commit)
            render_current(cx)
            render = timed(lambda: render_current(cx), args.runs)
            checked = deliver._code_notes
            deliver._code_notes = lambda _cx, memories: ({}, memories)  # the same render, no check
            try:
                bare = timed(lambda: render_current(cx), args.runs)
            finally:
                deliver._code_notes = checked
            commit = _git(Path(__file__).resolve().parents[1], "rev-parse", "--short", "HEAD")
    load = os.getloadavg()
    lines = [
        "# Code-anchor staleness check: cost per briefing",
        "",
        f"Measured with `python -m benchmarks.staleness --memories {args.memories} "
        f"--anchored {args.anchored} --files {args.files} --runs {args.runs}` at commit `{commit}`, "
        f"on {os.cpu_count()} cores shared "
        f"with other work: load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the end of the run. "
        "Wall times are inflated by that load; CPU is this process plus its git children.",
        "",
        f"Store: {args.memories:,} memories, {args.anchored:,} of them anchored ({rows:,} anchors) on "
        f"{args.files} files of {FUNCTIONS} functions. One commit then edited {changes['edited']} files, "
        f"deleted {changes['deleted']} and renamed {changes['renamed']}: {len(marked):,} memories marked "
        f"({', '.join(f'{n:,} anchors {s}' for s, n in sorted(states.items()))}).",
        "",
        "| step | wall median ms | wall p95 ms | CPU median ms | CPU p95 ms |",
        "|---|---|---|---|---|",
        row("check, cold (new HEAD, no cache)", *cold),
        row("check, warm (same HEAD, cached)", *warm),
        row("check, next commit (1 file changed)", *after),
        row("whole briefing render, warm (check included)", *render),
        row("whole briefing render without the check", *bare),
        "",
        "The check runs in the worker's render (after each turn) and in `cortex recall` (for its hits "
        "only); the SessionStart hook reads the rendered briefing and starts no git process "
        "(see `hooks.md` for its p95).",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
