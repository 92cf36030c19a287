"""The latency rows of the first hour: where a cold recall's time goes, recall through the MCP
server, and SessionStart with no cached briefing. Used by `benchmarks.latency`.

- cold recall split: a new process per run that times each stage in order (interpreter start,
  importing the CLI, numpy, onnxruntime and tokenizers, creating the ONNX session with the
  tokenizer, the first query's embedding, then search and render), so the stages add up to one
  cold `cortex recall`;
- MCP recall, warm: `cortex mcp` started once over stdio by the official SDK's client, then its
  `recall` tool called repeatedly (what the model's own recalls cost within a session);
- the floor: a new process that only embeds one query with the same model files (no cortex
  code), so the cold recall's own share can be read off;
- SessionStart with no cached briefing: the real hook (`python3 -S hooks/launch.py
  SessionStart`) on a project whose cached briefing is removed before every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.hooks import _python3

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "hooks" / "launch.py"

# Runs in a fresh interpreter: prints {stage: [wall ms, cpu ms]} for one cold recall.
_SPLIT = r"""
import json, resource, sys, time
def now():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), (r.ru_utime + r.ru_stime) * 1000
started = float(sys.argv[1])
marks = [("interpreter", (time.time() - started) * 1000, now()[1])]
last = now()
def mark(name):
    global last
    t = now()
    marks.append((name, (t[0] - last[0]) * 1000, t[1] - last[1]))
    last = t
import cortex.cli.main; mark("import the CLI")
import numpy; mark("import numpy")
import onnxruntime, tokenizers; mark("import onnxruntime + tokenizers")
from pathlib import Path
from cortex.app import Cortex
from cortex.config import load_settings
from cortex.paths import resolve_paths
paths = resolve_paths(Path(sys.argv[2]))
cx = Cortex(paths, load_settings(paths))
embedder = cx.query_embedder().backend; mark("ONNX session + tokenizer")
embedder.embed_query(sys.argv[3]); mark("first query embedding")
from cortex.core.recall.decide import RecallRequest
from cortex.core.render import render_recall
from cortex.recall.search import recall
request = RecallRequest(sys.argv[3], cx.settings.recall_limit, cx.settings.recall_budget_tokens)
r = recall(cx, request, record=False)
render_recall(r.query, r.hits, mode=r.mode, notes=r.notes, abstained=r.abstained, reason=r.reason)
mark("search + render (" + r.mode.value + ")")
print(json.dumps(marks))
"""


# Runs in a fresh interpreter: the model alone, no cortex code. Python, numpy, onnxruntime and
# tokenizers, the session (with cortex's options) and one query: what any new process that embeds
# a query with this model pays before it can search.
_FLOOR = r"""
import os
import sys
from pathlib import Path
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `cortex recall` sets it before numpy
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
model = Path(sys.argv[1])
options = ort.SessionOptions()
options.intra_op_num_threads = 2
options.inter_op_num_threads = 1
options.log_severity_level = 3
options.add_session_config_entry("session.intra_op.allow_spinning", "0")
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
session = ort.InferenceSession(str(model / "model.onnx"), options, providers=["CPUExecutionProvider"])
tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
tokenizer.no_padding()  # as cortex's embedder: one query is its own tokens, not padded to 128
tokenizer.enable_truncation(256)
enc = tokenizer.encode(sys.argv[2])
ids = np.array([enc.ids], dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
names = {i.name for i in session.get_inputs()}
session.run(None, {k: v for k, v in feeds.items() if k in names})
sys.stdout.flush()
os._exit(0)  # as `cortex recall` ends: no interpreter teardown
"""


def embed_floor(model_dir: Path, env: dict[str, str], queries: Sequence[str], runs: int) -> list[float]:
    """Wall ms, spawn to exit, of a new process that only embeds one query with the model."""
    timings: list[float] = []
    for i in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _FLOOR, str(model_dir), queries[i % len(queries)]],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise RuntimeError(f"embedding one query in a new process failed:\n{done.stderr[-2000:]}")
        if i:  # the first run warms the OS file cache
            timings.append(wall)
    return timings


def cold_split(root: Path, env: dict[str, str], queries: Sequence[str], runs: int) -> dict[str, list[float]]:
    """Stage -> wall ms per run, for `runs` cold recalls in new processes."""
    stages: dict[str, list[float]] = {}
    for i in range(runs + 1):
        done = subprocess.run(
            [sys.executable, "-c", _SPLIT, repr(time.time()), str(root), queries[i % len(queries)]],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the cold recall split failed:\n{done.stderr[-2000:]}")
        if i == 0:
            continue  # the OS file cache warms up on the first run
        for name, wall, _cpu in json.loads(done.stdout):
            stages.setdefault(name, []).append(wall)
    return stages


def mcp_recall(root: Path, env: dict[str, str], queries: Sequence[str], runs: int) -> tuple[list[float], str]:
    """Round-trip ms of the MCP server's `recall` tool, warm (after one unrecorded call)."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortex", "mcp"],
        env={**env, "CLAUDE_PROJECT_DIR": str(root)},
        cwd=str(root),
    )
    timings: list[float] = []
    first: list[str] = []

    async def main() -> None:
        async with Client(params, read_timeout_seconds=300) as client:
            warm = await client.call_tool("recall", {"query": queries[0]})
            first.append("\n".join(getattr(b, "text", "") for b in warm.content)[:300])
            for i in range(runs):
                start = time.perf_counter()
                await client.call_tool("recall", {"query": queries[i % len(queries)]})
                timings.append((time.perf_counter() - start) * 1000)

    anyio.run(main)
    return timings, first[0]


def session_start_without_cache(
    root: Path, env: dict[str, str], runs: int, remove_cache: Callable[[], None]
) -> tuple[list[float], list[int]]:
    """Wall ms of the real SessionStart hook with the cached briefing removed before each run, and
    how many characters of context each run delivered."""
    timings: list[float] = []
    sizes: list[int] = []
    payload = {
        "session_id": "bench-no-cache",
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    python3 = _python3()  # the interpreter `python3` on PATH really is, as benchmarks.hooks runs it
    for i in range(runs + 1):
        _wait_for_worker(root)  # the render the previous run queued: a session starts once
        remove_cache()
        start = time.perf_counter()
        done = subprocess.run(
            [python3, "-S", str(LAUNCH), "SessionStart"],
            input=json.dumps(payload),
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise RuntimeError(f"SessionStart failed: {done.stderr[-2000:]}")
        if i == 0:
            continue
        timings.append(wall)
        context: Any = (
            json.loads(done.stdout or "{}").get("hookSpecificOutput", {}).get("additionalContext", "")
        )
        sizes.append(len(context))
    return timings, sizes


def _wait_for_worker(root: Path, timeout_s: float = 120.0) -> None:
    """Until the render a SessionStart started (and any worker) is done: a session starts once,
    so the next run must not share the cores with the previous run's render."""
    from cortex.plugin.hooks import worker_running

    deadline = time.monotonic() + timeout_s
    while (worker_running(root) or _rendering(root)) and time.monotonic() < deadline:
        time.sleep(0.1)


def _rendering(root: Path) -> bool:
    """A `cortex.briefing.refresh` process for this project is running (Linux: /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    for entry in proc.iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"cortex.briefing.refresh" in cmdline and str(root).encode() in cmdline:
            return True
    return False


def briefing_cache(root: Path) -> list[Path]:
    """The cached briefing files of a project (what SessionStart reads when they exist)."""
    folder = root / ".memory" / "briefing"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def remove_briefing_cache(root: Path) -> Callable[[], None]:
    """A callable that deletes the project's cached briefing and the rules file."""

    def remove() -> None:
        for path in briefing_cache(root):
            if path.is_file():
                path.unlink()
            else:
                shutil.rmtree(path, ignore_errors=True)
        rules = root / ".claude" / "rules" / "cortex-memory.md"
        if rules.exists():
            os.unlink(rules)

    return remove
