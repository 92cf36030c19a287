"""Architecture guards: the core stays pure, and the hook and recall paths stay light to start."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "cortex" / "core"

# The stdlib modules the functional core may use: pure computation only (no I/O, clock, env,
# randomness, processes or network). `datetime` is allowed as a type and for arithmetic.
CORE_ALLOWED_STDLIB = frozenset(
    {
        "__future__",
        "re",
        "dataclasses",
        "enum",
        "math",
        "hashlib",
        "json",
        "unicodedata",
        "itertools",
        "collections",
        "collections.abc",
        "functools",
        "typing",
        "datetime",
        "heapq",
        "bisect",
        "statistics",
        "string",
        "textwrap",
        "base64",
    }
)
# Builtins and calls that reach outside the process or read the clock.
CORE_FORBIDDEN_NAMES = frozenset(
    {"open", "print", "input", "exec", "eval", "compile", "__import__", "breakpoint"}
)
CORE_FORBIDDEN_METHODS = frozenset({"now", "utcnow", "today"})

# Never at module import time on the recall path (SPEC §1): seconds of start-up each.
HEAVY = ("torch", "sentence_transformers", "anthropic", "voyageai")
# The hook path must also stay off numpy and click (SPEC §1).
HOOK_FORBIDDEN = (*HEAVY, "numpy", "click", "transformers", "onnxruntime")
HOOK_ENTRY = "cortex.plugin.hooks"
# Checked while the hook entry module does not exist yet: what SessionStart runs today.
HOOK_FALLBACKS = ("cortex.briefing.session_start",)
RECALL_MODULES = ("cortex.recall.search", "cortex.cli.main", "cortex.cli.memory", "cortex.capture.write")


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every import statement anywhere in the tree (lazy imports too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import inside the package
                yield node.lineno, "cortex.core." + (node.module or "")
            else:
                yield node.lineno, node.module or ""


def core_import_allowed(module: str) -> bool:
    return module in CORE_ALLOWED_STDLIB or module == "cortex.core" or module.startswith("cortex.core.")


def test_core_has_modules_to_check() -> None:
    names = {p.stem for p in core_files()}
    assert {"model", "text", "query", "ranking", "recall", "render", "serial"} <= names


@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.name)
def test_core_imports_only_pure_stdlib_and_core(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = [
        f"{path.name}:{line} imports {mod}"
        for line, mod in imported_modules(tree)
        if not core_import_allowed(mod)
    ]
    assert not bad, "cortex/core must stay pure:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.name)
def test_core_calls_no_io_or_clock(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in CORE_FORBIDDEN_NAMES:
            bad.append(f"{path.name}:{node.lineno} calls {func.id}()")
        if isinstance(func, ast.Attribute) and func.attr in CORE_FORBIDDEN_METHODS:
            bad.append(f"{path.name}:{node.lineno} calls .{func.attr}() (time comes in as a parameter)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("source", "allowed"),
    [
        ("import re\nfrom collections.abc import Sequence\nfrom cortex.core.model import Memory", True),
        ("from . import text", True),
        ("def f():\n    import os\n", False),
        ("import sqlite3", False),
        ("from datetime import datetime\nimport time", False),
        ("from cortex.shell import store", False),
        ("import random", False),
        ("import numpy as np", False),
    ],
)
def test_the_import_guard_itself_catches_impurity(source: str, allowed: bool) -> None:
    modules = [mod for _, mod in imported_modules(ast.parse(source))]
    assert all(core_import_allowed(m) for m in modules) is allowed


def run_python(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with this checkout first on the path."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def modules_after_import(module: str) -> set[str]:
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    proc = run_python("-c", code)
    assert proc.returncode == 0, proc.stderr
    loaded: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return set(loaded)


def top_level(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def hook_modules() -> list[str]:
    if importlib.util.find_spec(HOOK_ENTRY) is not None:
        return [HOOK_ENTRY]
    return [m for m in HOOK_FALLBACKS if importlib.util.find_spec(m) is not None]


def test_there_is_a_hook_entry_module_to_check() -> None:
    assert hook_modules(), f"neither {HOOK_ENTRY} nor any of {HOOK_FALLBACKS} exists"


@pytest.mark.parametrize("module", hook_modules())
def test_hook_entry_imports_no_heavy_library(module: str) -> None:
    loaded = modules_after_import(module)
    assert module in loaded
    assert not top_level(loaded) & set(HOOK_FORBIDDEN), sorted(top_level(loaded) & set(HOOK_FORBIDDEN))


# Not heavy, but slow to import for a hook with a 100 ms budget (dataclasses pulls in inspect,
# ast and dis: ~15 ms of SessionStart's p95 on a 2-core machine).
SESSION_START_FORBIDDEN = ("dataclasses", "inspect")


def test_the_session_start_path_skips_slow_stdlib_modules() -> None:
    loaded = modules_after_import("cortex.plugin.hooks") | modules_after_import(
        "cortex.briefing.session_start"
    )
    assert not loaded & set(SESSION_START_FORBIDDEN), sorted(loaded & set(SESSION_START_FORBIDDEN))


@pytest.mark.parametrize("module", RECALL_MODULES)
def test_recall_modules_import_no_heavy_library(module: str) -> None:
    loaded = modules_after_import(module)
    assert module in loaded
    assert not top_level(loaded) & set(HEAVY), sorted(top_level(loaded) & set(HEAVY))


def parse_importtime(stderr: str) -> set[str]:
    """Module names from `python -X importtime` output (`import time: self | cumulative | name`)."""
    out = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                out.add(name)
    return out


def test_parse_importtime_reads_nested_names() -> None:
    sample = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:        90 |         90 |   _io\n"
        "import time:       300 |        700 |     cortex.recall.search\n"
        "unrelated line\n"
    )
    assert parse_importtime(sample) == {"_io", "cortex.recall.search"}


def cortex_cli_importtime(project: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `cortex ARGS` as a new process with -X importtime; return it and what it imported."""
    proc = run_python("-X", "importtime", "-m", "cortex", "-C", str(project), *args, cwd=project)
    return proc, parse_importtime(proc.stderr)


def test_keyword_only_recall_process_imports_no_heavy_library(project: Path) -> None:
    remember, _ = cortex_cli_importtime(
        project, "remember", "We chose Postgres advisory locks for the job queue"
    )
    assert remember.returncode == 0, remember.stderr[-2000:]
    proc, loaded = cortex_cli_importtime(project, "recall", "advisory locks")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "advisory locks for the job queue" in proc.stdout
    assert {"cortex.recall.search", "cortex.cli.memory"} <= loaded  # the parse saw the recall path
    assert not top_level(loaded) & set(HEAVY), sorted(top_level(loaded) & set(HEAVY))


@pytest.mark.slow
@pytest.mark.usefixtures("real_model")
def test_hybrid_recall_process_uses_onnx_and_never_torch(project: Path) -> None:
    remember, loaded = cortex_cli_importtime(
        project, "remember", "We chose Postgres advisory locks for the job queue", "--type", "decision"
    )
    assert remember.returncode == 0, remember.stderr[-2000:]
    assert "not embedded" not in remember.stdout  # the ONNX export embedded it right away
    assert not top_level(loaded) & set(HEAVY), sorted(top_level(loaded) & set(HEAVY))
    proc, loaded = cortex_cli_importtime(project, "recall", "advisory locks for queued jobs")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hybrid" in proc.stdout and "advisory locks" in proc.stdout
    assert "onnxruntime" in top_level(loaded)  # the vector path really ran
    assert not top_level(loaded) & set(HEAVY), sorted(top_level(loaded) & set(HEAVY))
