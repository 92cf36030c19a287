"""Architecture guards: the core stays pure, the layers and packages stay acyclic and in their
places (SQL in the SQLite store, FTS5 in its one module), modules stay small, string import
targets resolve, and the hook and recall paths stay light to start.

The static rules live in tests/support/architecture.py as functions over a source tree, so each
is also run here on small planted trees to show it really fails on the code it forbids.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.support.architecture import (
    ADAPTER_PACKAGES,
    COMPOSITION_ROOT,
    FTS_HOME,
    MAX_MEDIAN_MODULE_LINES,
    MAX_MODULE_LINES,
    SQL_HOME,
    USE_CASE_PACKAGES,
    SourceTree,
    collect_string_targets,
    forbidden_imports,
    fts5_outside_home,
    import_refs,
    load_tree,
    median_module_lines,
    module_cycles,
    non_empty_inits,
    oversized_modules,
    package_cycles,
    plant,
    sql_outside_store,
    string_targets,
    unresolved_targets,
)

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
        "fnmatch",  # fnmatchcase only: a glob matched as a string (fnmatch() asks the OS for its case rule)
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
# What the hook entry imports lazily, per event: SessionStart's briefing, Stop's queue entry,
# UserPromptSubmit's keyword lookup.
HOOK_HANDLERS = ("cortex.briefing.session_start", "cortex.capture.queue", "cortex.recall.prompt_lookup")
RECALL_MODULES = (
    "cortex.recall.search",
    "cortex.cli.main",
    "cortex.cli.memory",
    "cortex.capture.write",
    "cortex.capture.manual",
)

# Where string import targets ("module:attr", monkeypatch paths, `-m module`) are collected, and
# the packages whose targets must resolve.
TARGET_FOLDERS = ("cortex", "hooks", "benchmarks", "tests")
TARGET_PACKAGES = ("cortex", "benchmarks", "tests")
# Named on purpose though they do not exist: a test of the error for a missing adapter.
DELIBERATELY_MISSING_TARGETS = frozenset({"benchmarks.retrieval.ghost_system:GhostSystem"})


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def core_id(path: Path) -> str:
    return path.relative_to(CORE).as_posix()


def core_package(path: Path) -> str:
    """The dotted package a core file lives in (where its relative imports start)."""
    return ".".join(path.relative_to(REPO).parent.parts)


def imported_modules(tree: ast.AST, package: str = "cortex.core") -> Iterator[tuple[int, str]]:
    """(line, module) for every import statement anywhere in the tree (lazy imports too);
    relative imports resolved against `package`."""
    for ref in import_refs(tree, package):
        yield ref.line, ref.base


def core_import_allowed(module: str) -> bool:
    return module in CORE_ALLOWED_STDLIB or module == "cortex.core" or module.startswith("cortex.core.")


def test_core_has_modules_to_check() -> None:
    names = {p.stem for p in core_files()}
    # (core/recall.py moved to core/recall/decide.py in the capability-package move)
    assert {"model", "text", "query", "ranking", "decide", "render", "serial"} <= names
    # The guard reaches into every sub-package, not just the top folder.
    assert {p.parent.name for p in core_files()} >= {"core", "extract", "redact", "write", "recall"}


@pytest.mark.parametrize("path", core_files(), ids=core_id)
def test_core_imports_only_pure_stdlib_and_core(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = [
        f"{core_id(path)}:{line} imports {mod}"
        for line, mod in imported_modules(tree, core_package(path))
        if not core_import_allowed(mod)
    ]
    assert not bad, "cortex/core must stay pure:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", core_files(), ids=core_id)
def test_core_calls_no_io_or_clock(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in CORE_FORBIDDEN_NAMES:
            bad.append(f"{core_id(path)}:{node.lineno} calls {func.id}()")
        if isinstance(func, ast.Attribute) and func.attr in CORE_FORBIDDEN_METHODS:
            bad.append(f"{core_id(path)}:{node.lineno} calls .{func.attr}() (time comes in as a parameter)")
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


@pytest.mark.parametrize(
    ("package", "source", "allowed"),
    [
        ("cortex.core.recall", "from .. import text\nfrom ..model import Memory", True),
        ("cortex.core.recall", "from . import query", True),
        ("cortex.core.recall", "from ... import paths", False),  # cortex.paths: out of the core
        ("cortex.core.recall", "from ...shell import git", False),
    ],
)
def test_the_import_guard_resolves_relative_imports_in_sub_packages(
    package: str, source: str, allowed: bool
) -> None:
    modules = [mod for _, mod in imported_modules(ast.parse(source), package)]
    assert all(core_import_allowed(m) for m in modules) is allowed


# -- the layout rules, on the real tree -----------------------------------------------------------


@functools.cache
def cortex_tree() -> SourceTree:
    return load_tree(REPO)


def report(title: str, problems: list[str]) -> str:
    return f"{title} ({len(problems)}):\n" + "\n".join(problems)


def test_the_layout_rules_have_the_packages_they_name() -> None:
    """A renamed package must not leave a rule checking nothing."""
    tree = cortex_tree()
    assert len(tree.modules) > 50
    for package in (*ADAPTER_PACKAGES, *USE_CASE_PACKAGES, COMPOSITION_ROOT, SQL_HOME, "cortex.core"):
        assert package in tree, f"{package} is gone: update the architecture rules"
    assert tree.under(*USE_CASE_PACKAGES) and tree.under(*ADAPTER_PACKAGES)


def test_no_import_cycles_between_modules() -> None:
    problems = module_cycles(cortex_tree())
    assert not problems, report("import cycles between modules (lazy imports count)", problems)


def test_no_import_cycles_between_packages() -> None:
    problems = package_cycles(cortex_tree())
    assert not problems, report("import cycles between packages (lazy imports count)", problems)


def test_adapters_never_import_the_app_or_a_use_case() -> None:
    problems = forbidden_imports(cortex_tree())
    assert not problems, report(
        f"{', '.join(ADAPTER_PACKAGES)} must not import {COMPOSITION_ROOT} or a use-case package", problems
    )


def test_no_sql_outside_the_sqlite_store() -> None:
    problems = sql_outside_store(cortex_tree())
    assert not problems, report(f"SQL outside {SQL_HOME}", problems)


def test_no_fts5_syntax_outside_the_fts_module() -> None:
    problems = fts5_outside_home(cortex_tree())
    assert not problems, report(f"FTS5 syntax outside {FTS_HOME}", problems)


def test_package_inits_are_empty() -> None:
    problems = non_empty_inits(cortex_tree())
    assert not problems, report("statements in package __init__.py files (keep them empty)", problems)


def test_no_module_over_the_size_limit() -> None:
    problems = oversized_modules(cortex_tree())
    assert not problems, report(f"modules over {MAX_MODULE_LINES} lines", problems)


def test_the_median_module_stays_small() -> None:
    median = median_module_lines(cortex_tree())
    assert median < MAX_MEDIAN_MODULE_LINES, f"the median module has {median} lines"


def test_string_import_targets_resolve() -> None:
    """Targets named in strings ("module:attr", monkeypatch paths, `python -m module`) are
    invisible to the import graph: each must still import and have its attribute."""
    targets = collect_string_targets(REPO, TARGET_FOLDERS, TARGET_PACKAGES)
    texts = {t.text for t in targets}
    assert {"cortex.plugin.worker"} <= texts  # the collector sees the worker's `-m` launch
    assert texts >= DELIBERATELY_MISSING_TARGETS, "a deliberately missing target is gone: drop it here"
    checked = [t for t in targets if t.text not in DELIBERATELY_MISSING_TARGETS]
    problems = unresolved_targets(checked, REPO)
    assert not problems, report("string import targets that do not resolve", problems)


# -- the rules themselves, on planted trees ---------------------------------------------------------

# A small tree that keeps every rule: the composition root imports a use case, which imports
# the core, the store port and a root-level leaf; SQL and FTS5 stay in their homes.
CLEAN_TREE = {
    "cortex/app.py": "from cortex.capture import write\nfrom cortex.store.sqlite import store\n",
    "cortex/config.py": "LIMIT = 3\n",
    "cortex/capture/write.py": (
        "from cortex.config import LIMIT\nfrom cortex.core import text\nfrom cortex.store import port\n\n"
        "def save(store: port.Store, body: str) -> None:\n"
        '    """Insert the memory: SELECT nothing FROM here; docstrings are prose."""\n'
        "    store.add(text.clean(body)[:LIMIT])\n"
    ),
    "cortex/core/text.py": "def clean(s: str) -> str:\n    return s.strip()\n",
    "cortex/store/port.py": "class Store:\n    def add(self, body: str) -> None: ...\n",
    "cortex/store/sqlite/store.py": (
        "from cortex.store.sqlite import fts\n\n"
        "def add(conn, body):\n"
        '    conn.execute("INSERT INTO memories(body) VALUES (?)", (body,))\n'
        "    conn.execute(fts.INDEX)\n"
        'WHERE = " AND ".join(["a = ?", "b = ?"])\n'
        'KNN = "SELECT rowid FROM vec_x WHERE embedding MATCH ? AND k = ?"\n'
    ),
    "cortex/store/sqlite/fts.py": (
        "INDEX = \"INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')\"\n"
        'SEARCH = "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?"\n'
        'JOIN = " OR "\n'
    ),
    "cortex/shell/files.py": "def read(p):\n    return p.read_text()\n",
    "cortex/cli/main.py": '"""Select a memory from the store and print it (prose)."""\nimport cortex.app\n',
}


def planted(tmp_path: Path, changes: Mapping[str, str | None] | None = None) -> SourceTree:
    """The clean tree with `changes` (path -> new source, or None to leave the file out)."""
    files = {**CLEAN_TREE, **(changes or {})}
    return load_tree(plant(tmp_path, {path: src for path, src in files.items() if src is not None}))


def all_problems(tree: SourceTree) -> list[str]:
    return [
        *module_cycles(tree),
        *package_cycles(tree),
        *forbidden_imports(tree),
        *sql_outside_store(tree),
        *fts5_outside_home(tree),
        *non_empty_inits(tree),
        *oversized_modules(tree),
    ]


def test_the_rules_pass_a_clean_planted_tree(tmp_path: Path) -> None:
    tree = planted(tmp_path)
    assert "cortex.store.sqlite.fts" in tree and tree["cortex.capture"].is_package  # __init__ added
    assert all_problems(tree) == []
    assert median_module_lines(tree) < MAX_MEDIAN_MODULE_LINES


@pytest.mark.parametrize(
    "b_source",
    [
        "from cortex.capture import a\n",  # `from package import submodule`
        "import cortex.capture.a\n",
        "def later():\n    from cortex.capture.a import X\n",  # a lazy, function-level import
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cortex.capture.a import X\n",
    ],
)
def test_the_cycle_rule_catches_a_planted_module_cycle(tmp_path: Path, b_source: str) -> None:
    tree = planted(
        tmp_path,
        {"cortex/capture/a.py": "from cortex.capture.b import Y\nX = 1\n", "cortex/capture/b.py": b_source},
    )
    (problem,) = module_cycles(tree)
    assert "module cycle cortex.capture.a -> cortex.capture.b -> cortex.capture.a" in problem
    assert "cortex/capture/a.py:1" in problem and "cortex/capture/b.py:" in problem
    assert package_cycles(tree) == []  # both modules live in one package


def test_the_cycle_rule_catches_a_planted_package_cycle(tmp_path: Path) -> None:
    tree = planted(
        tmp_path,
        {
            "cortex/recall/search.py": "from cortex.briefing.compose import render\n",
            "cortex/briefing/compose.py": "def render():\n    from cortex.recall import gather\n",
            "cortex/recall/gather.py": "ROWS = []\n",
        },
    )
    assert module_cycles(tree) == []  # no module imports itself back ...
    (problem,) = package_cycles(tree)  # ... but the two packages import each other
    assert "package cycle cortex.briefing -> cortex.recall -> cortex.briefing" in problem
    assert "cortex/briefing/compose.py:2 imports cortex.recall.gather" in problem
    assert "cortex/recall/search.py:1 imports cortex.briefing.compose" in problem


def test_a_long_cycle_is_reported_with_its_whole_path(tmp_path: Path) -> None:
    tree = planted(
        tmp_path,
        {
            "cortex/lifecycle/a.py": "import cortex.lifecycle.b\n",
            "cortex/lifecycle/b.py": "import cortex.lifecycle.c\n",
            "cortex/lifecycle/c.py": "import cortex.lifecycle.a\n",
        },
    )
    (problem,) = module_cycles(tree)
    assert problem.startswith(
        "module cycle cortex.lifecycle.a -> cortex.lifecycle.b -> cortex.lifecycle.c -> cortex.lifecycle.a"
    )


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("cortex/store/sqlite/store.py", "import cortex.app\n", "store.py:1 imports cortex.app"),
        ("cortex/store/port.py", "from cortex import app\n", "port.py:1 imports cortex.app"),
        (
            "cortex/backends/local.py",
            "def load():\n    from cortex.app import Cortex\n",
            "local.py:2 imports cortex.app",
        ),
        ("cortex/shell/files.py", "from cortex.capture.write import save\n", "imports cortex.capture.write"),
        ("cortex/shell/files.py", "from ..plugin import hooks\n", "imports cortex.plugin"),
    ],
)
def test_the_layer_rule_catches_an_adapter_importing_an_outer_layer(
    tmp_path: Path, path: str, source: str, expected: str
) -> None:
    (problem,) = forbidden_imports(planted(tmp_path, {path: source}))
    assert problem.startswith(path.rsplit("/", 1)[0]) and expected in problem


@pytest.mark.parametrize(
    "source",
    [
        'ROWS = "SELECT id FROM memories WHERE status = ?"\n',
        'def n(table):\n    return f"SELECT count(*) FROM {table}"\n',
        'SQL = (\n    "SELECT id\\n"\n    "  FROM memories"\n)\n',
        'def add(db):\n    return db.conn.execute("x")\n',
        "def add(db):\n    run = db.executemany\n    return run\n",
        'V = "PRAGMA user_version"\n',
        'Q = "INSERT OR IGNORE INTO edges VALUES (?, ?)"\n',
        'Q = "UPDATE memories SET status = ?"\n',
        'Q = "DELETE FROM memories"\n',
        'Q = "CREATE INDEX IF NOT EXISTS i ON memories(id)"\n',
    ],
)
def test_the_sql_rule_catches_planted_sql_in_a_use_case(tmp_path: Path, source: str) -> None:
    problems = sql_outside_store(planted(tmp_path, {"cortex/recall/gather.py": source}))
    assert problems and all(p.startswith("cortex/recall/gather.py:") for p in problems)


@pytest.mark.parametrize(
    "source",
    [
        '"""SELECT the memories FROM the store: a docstring is prose."""\n',
        'HELP = "select a memory from the list, then update it"\n',
        'HELP = "Insert or update memories; delete from the store with `forget`"\n',
    ],
)
def test_the_sql_rule_ignores_prose(tmp_path: Path, source: str) -> None:
    assert sql_outside_store(planted(tmp_path, {"cortex/recall/gather.py": source})) == []


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("cortex/recall/lookup.py", 'Q = "WHERE memories_fts MATCH ?"\n'),
        ("cortex/recall/lookup.py", 'ORDER = "ORDER BY bm25(t, 1.0)"\n'),
        ("cortex/recall/lookup.py", "S = \"snippet(t, 0, '[', ']', '…', 8)\"\n"),
        ("cortex/recall/lookup.py", "S = \"highlight(t, 0, '[', ']')\"\n"),
        ("cortex/recall/lookup.py", 'def near(a, b):\n    return f"NEAR({a} {b})"\n'),
        ("cortex/core/recall/query.py", 'def match(terms):\n    return " OR ".join(terms)\n'),
        ("cortex/store/sqlite/store.py", 'Q = "SELECT rowid FROM memories_fts"\n'),  # the store, not fts.py
        ("cortex/store/sqlite/migrations.py", 'DDL = "CREATE VIRTUAL TABLE t USING fts5(content)"\n'),
    ],
)
def test_the_fts5_rule_catches_planted_fts5_syntax_outside_its_module(
    tmp_path: Path, path: str, source: str
) -> None:
    (problem,) = fts5_outside_home(planted(tmp_path, {path: source}))
    assert problem.startswith(f"{path}:")


@pytest.mark.parametrize(
    "source",
    ['"""Lexical candidates from FTS5 MATCH, ranked by bm25()."""\n', 'WHY = "no FTS5 in this SQLite"\n'],
)
def test_the_fts5_rule_ignores_prose(tmp_path: Path, source: str) -> None:
    assert fts5_outside_home(planted(tmp_path, {"cortex/recall/lookup.py": source})) == []


@pytest.mark.parametrize(
    "source",
    ['"""The capture use case."""\n', '__version__ = "0.1.0"\n', "from cortex.capture.write import save\n"],
)
def test_the_init_rule_catches_a_non_empty_init(tmp_path: Path, source: str) -> None:
    (problem,) = non_empty_inits(planted(tmp_path, {"cortex/capture/__init__.py": source}))
    assert problem.startswith("cortex/capture/__init__.py:1 ")


def test_the_init_rule_allows_comments_only(tmp_path: Path) -> None:
    assert non_empty_inits(planted(tmp_path, {"cortex/capture/__init__.py": "# nothing here\n"})) == []


def test_the_size_rules_catch_a_long_module(tmp_path: Path) -> None:
    lines = [f"X{i} = {i}\n" for i in range(MAX_MODULE_LINES + 1)]
    tree = planted(
        tmp_path, {"cortex/capture/at_limit.py": "".join(lines[:-1]), "cortex/capture/big.py": "".join(lines)}
    )
    assert oversized_modules(tree) == [f"cortex/capture/big.py has {MAX_MODULE_LINES + 1} lines (limit 400)"]
    assert median_module_lines(tree) < MAX_MEDIAN_MODULE_LINES  # two long modules among many short
    long_tree = planted(
        tmp_path / "long",
        {f"cortex/recall/m{i}.py": "".join(lines[:250]) for i in range(2 * len(CLEAN_TREE))},
    )
    assert median_module_lines(long_tree) >= MAX_MEDIAN_MODULE_LINES


def test_the_string_target_collector_finds_every_form(tmp_path: Path) -> None:
    source = (
        "import importlib\nimport sys\nfrom unittest import mock\n\n"
        'LOADERS = {"x": "plantpkg.mod:load", "gone": "plantpkg.mod:missing", "mark": "plantpkg:briefing"}\n'
        'CMD = [sys.executable, "-m", "plantpkg.worker"]\n'
        'OTHER = "elsewhere.mod:thing"\n\n'
        "def test_it(monkeypatch):\n"
        '    monkeypatch.setattr("plantpkg.mod.LIMIT", 3)\n'
        '    importlib.import_module("plantpkg.nothere")\n'
        '    mock.patch("plantpkg.mod.Cls.method")\n'
    )
    root = plant(
        tmp_path,
        {
            "plantpkg/mod.py": "LIMIT = 1\n\ndef load(): ...\n\nclass Cls:\n    def method(self): ...\n",
            "plantpkg/worker.py": "",
            "plantpkg/uses.py": source,
        },
    )
    (uses,) = [m for m in load_tree(root, "plantpkg") if m.name == "plantpkg.uses"]
    targets = list(string_targets(uses, ["plantpkg"]))
    assert sorted(t.text for t in targets) == [
        "plantpkg.mod.Cls.method",
        "plantpkg.mod.LIMIT",
        "plantpkg.mod:load",
        "plantpkg.mod:missing",
        "plantpkg.nothere",
        "plantpkg.worker",
    ]
    problems = unresolved_targets(targets, root)
    assert len(problems) == 2
    assert any("plantpkg.mod:missing" in p and "AttributeError" in p for p in problems)
    assert any("plantpkg.nothere" in p and "ModuleNotFoundError" in p for p in problems)


# -- the hook and recall paths stay light -------------------------------------------------------------


def test_the_light_path_modules_exist() -> None:
    """Stale names here would check nothing: every module the start-up tests import is real."""
    for module in (HOOK_ENTRY, *HOOK_HANDLERS, *RECALL_MODULES):
        assert importlib.util.find_spec(module) is not None, f"{module} is gone: update these tests"


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
    """The hook entry and the handlers it imports lazily: each must stay light on its own."""
    return [HOOK_ENTRY, *HOOK_HANDLERS]


def test_there_is_a_hook_entry_module_to_check() -> None:
    assert importlib.util.find_spec(HOOK_ENTRY) is not None, f"{HOOK_ENTRY} does not exist"


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
