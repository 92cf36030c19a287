"""Static rules over a source tree, for the architecture tests.

Each checker takes a `SourceTree` (loaded from the real checkout, or from a tree planted in a
temporary folder) and returns human-readable violations, `path:line what`, so a test can assert
the real tree has none and that each rule really fails on planted bad code.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

ROOT_PACKAGE = "cortex"

# The use-case packages and the composition root: outer layers the adapters never reach into.
USE_CASE_PACKAGES = (
    "cortex.capture",
    "cortex.recall",
    "cortex.briefing",
    "cortex.lifecycle",
    "cortex.admin",
    "cortex.plugin",
    "cortex.cli",
)
COMPOSITION_ROOT = "cortex.app"
# The adapters: storage, model/LLM backends and plain I/O.
ADAPTER_PACKAGES = ("cortex.store", "cortex.backends", "cortex.shell")

SQL_HOME = "cortex.store.sqlite"  # the SQLite adapter: SQL and its one FTS5 module
SQL_HOMES = (SQL_HOME, "cortex.store.postgres")  # the storage adapters: the only packages with SQL
FTS_HOME = "cortex.store.sqlite.fts"  # the only module that may hold FTS5 syntax

MAX_MODULE_LINES = 400
MAX_MEDIAN_MODULE_LINES = 200  # the median must stay below this

# SQL statements: upper-case keywords only, so prose ("select a file from ...") never matches.
SQL_STATEMENT = re.compile(
    r"\b(?:"
    r"SELECT\s[\s\S]+?\sFROM"
    r"|INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO"
    r"|REPLACE\s+INTO"
    r"|UPDATE\s+\w+\s+SET"
    r"|DELETE\s+FROM"
    r"|CREATE\s+(?:UNIQUE\s+|TEMP\s+|TEMPORARY\s+)?(?:TABLE|INDEX|VIEW|TRIGGER|VIRTUAL\s+TABLE)"
    r"|ALTER\s+TABLE"
    r"|DROP\s+(?:TABLE|INDEX|VIEW|TRIGGER)"
    r"|PRAGMA\s+\w+"
    r"|BEGIN\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED)"
    r"|ATTACH\s+DATABASE"
    r"|SAVEPOINT\s+\w+"
    r")"
)
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})

# FTS5 syntax: the MATCH operator, its auxiliary functions, the module name, and the FTS tables.
FTS5_SYNTAX = re.compile(
    r"\sMATCH\s|\bbm25\(|\bsnippet\(|\bhighlight\(|\bNEAR\(|\bfts5(?:vocab)?\b|\b\w+_fts\b"
)
# sqlite-vec's KNN query (`WHERE embedding MATCH ?` on a vec0 table) is vector search, not FTS5.
VEC0_KNN = re.compile(r"\bembedding\s+MATCH\b")
# A bare boolean operator joining query terms (`" OR ".join(map(phrase, terms))`): FTS5 query
# syntax outside the SQL package (inside it, the same join builds SQL WHERE clauses).
FTS5_OPERATORS = frozenset({" OR ", " AND ", " NOT "})

# "module:attr" (an entry-point style import target named in a string).
# The module must be dotted: "cortex:briefing" is a marker and "cortex:recall" a skill name.
ENTRY_POINT = re.compile(
    r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$"
)
MODULE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# Calls whose first argument is a dotted "module.attr" path, and calls whose argument is a module.
ATTR_PATH_CALLS = frozenset({"setattr", "delattr", "patch"})  # monkeypatch.setattr("m.attr", v), patch
MODULE_CALLS = frozenset({"import_module", "find_spec"})


@dataclass(frozen=True)
class Module:
    """One source file: its dotted name, its path relative to the tree's root, its text."""

    name: str  # "cortex.capture.write"; a package's __init__.py is named after the package
    path: str  # "cortex/capture/write.py"
    source: str
    is_package: bool

    @cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.source, filename=self.path)

    @property
    def package(self) -> str:
        """The package this module lives in: the directory holding the file."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def component(self) -> str:
        """Its node in the package graph: its package, except that each module directly in the
        root package (cortex.app, cortex.config, cortex.paths, ...) is a node of its own. The root
        directory is no capability package: were it one node, the composition root (cortex.app,
        importing every use case) and the shared leaves every use case imports (cortex.paths,
        cortex.errors) would make one package cycle of everything."""
        return self.name if self.package == self.name.split(".")[0] and not self.is_package else self.package

    @property
    def lines(self) -> int:
        return len(self.source.splitlines())

    def at(self, line: int) -> str:
        return f"{self.path}:{line}"


@dataclass
class SourceTree:
    """The modules of one package tree, by dotted name."""

    modules: dict[str, Module] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Module]:
        return iter(sorted(self.modules.values(), key=lambda m: m.name))

    def __contains__(self, name: object) -> bool:
        return name in self.modules

    def __getitem__(self, name: str) -> Module:
        return self.modules[name]

    def under(self, *prefixes: str) -> list[Module]:
        return [m for m in self if any(within(m.name, p) for p in prefixes)]


def within(name: str, prefix: str) -> bool:
    """`name` is `prefix` itself or a module below it (dotted components, not string prefixes)."""
    return name == prefix or name.startswith(prefix + ".")


def module_name(relative: Path) -> tuple[str, bool]:
    parts = list(relative.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def load_tree(root: Path, package: str = ROOT_PACKAGE) -> SourceTree:
    """Every .py file under root/package (recursively), named relative to root."""
    tree = SourceTree()
    for path in sorted((root / package).rglob("*.py")):
        relative = path.relative_to(root)
        name, is_package = module_name(relative)
        tree.modules[name] = Module(name, relative.as_posix(), path.read_text(encoding="utf-8"), is_package)
    return tree


def plant(root: Path, files: Mapping[str, str]) -> Path:
    """Write `files` (relative path -> source) under root, adding an empty __init__.py to every
    package directory that lacks one; returns root."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    for relative in files:
        parent = (root / relative).parent
        while parent != root:
            init = parent / "__init__.py"
            if not init.exists():
                init.write_text("", encoding="utf-8")
            parent = parent.parent
    return root


# -- imports ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportRef:
    """One imported name: `base` is the module named by the statement; `member` is base.name for
    `from base import name` (a submodule when the tree has one by that name)."""

    line: int
    base: str
    member: str | None = None

    @property
    def candidates(self) -> tuple[str, ...]:
        return (self.base,) if self.member is None else (self.base, self.member)


def resolve_relative(package: str, level: int, module: str | None) -> str:
    """The absolute name of `from .<level dots><module> import ...` written inside `package`."""
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    if module:
        parts.append(module)
    return ".".join(parts)


def import_refs(tree: ast.AST, package: str) -> Iterator[ImportRef]:
    """Every import anywhere in the tree (lazy function-level ones and TYPE_CHECKING ones too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield ImportRef(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(package, node.level, node.module) if node.level else node.module or ""
            for alias in node.names:
                member = None if alias.name == "*" else f"{base}.{alias.name}"
                yield ImportRef(node.lineno, base, member)


def imported_module(ref: ImportRef, tree: SourceTree) -> str | None:
    """The module of `tree` an import loads: `from X import name` loads X.name when that is a
    module, else X; `import a.b.c` loads the deepest of a.b.c, a.b, a that the tree has."""
    if ref.member is not None and ref.member in tree:
        return ref.member
    name = ref.base
    while name:
        if name in tree:
            return name
        name = name.rpartition(".")[0]
    return None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # "cortex/a.py:3"


def module_edges(tree: SourceTree) -> dict[str, dict[str, Edge]]:
    """module -> {imported module of the tree -> first import line}; self-imports dropped."""
    graph: dict[str, dict[str, Edge]] = {m.name: {} for m in tree}
    for module in tree:
        for ref in sorted(import_refs(module.tree, module.package), key=lambda r: r.line):
            target = imported_module(ref, tree)
            if target is not None and target != module.name:
                graph[module.name].setdefault(target, Edge(module.name, target, module.at(ref.line)))
    return graph


def package_edges(tree: SourceTree) -> dict[str, dict[str, Edge]]:
    """package -> {imported package -> every import making that edge}; imports within a package
    dropped. Packages are `Module.component`s (a root-level module counts as its own package)."""
    witnesses: dict[str, dict[str, list[str]]] = {m.component: {} for m in tree}
    for source, targets in module_edges(tree).items():
        src_pkg = tree[source].component
        for target, edge in sorted(targets.items()):
            dst_pkg = tree[target].component
            if dst_pkg != src_pkg:
                witnesses[src_pkg].setdefault(dst_pkg, []).append(f"{edge.where} imports {target}")
    return {
        src: {dst: Edge(src, dst, "; ".join(sorted(found, key=_by_place))) for dst, found in targets.items()}
        for src, targets in witnesses.items()
    }


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def shortest_cycle(graph: Mapping[str, Iterable[str]], start: str, members: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside `members` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start]


def cycles(graph: Mapping[str, Mapping[str, Edge]], kind: str) -> list[str]:
    """One message per import cycle (strongly connected component): a shortest cycle through its
    first member, each step with the import that makes it; for a larger tangle, its members and
    every import between them (any of which may be the one to cut)."""
    problems = []
    for component in strongly_connected(graph):
        if len(component) < 2:
            continue
        path = shortest_cycle(graph, component[0], set(component))
        steps = "\n".join(f"    {a} -> {b}  ({graph[a][b].where})" for a, b in itertools.pairwise(path))
        tangle = ""
        if len(component) > len(path) - 1:
            inside = [
                f"    {a} -> {b}  ({edge.where})"
                for a in component
                for b, edge in sorted(graph[a].items())
                if b in component
            ]
            tangle = (
                f"\n  all {len(component)} {kind}s in this tangle: {', '.join(component)}; "
                f"the imports between them:\n" + "\n".join(inside)
            )
        problems.append(f"{kind} cycle {' -> '.join(path)}:\n{steps}{tangle}")
    return problems


def module_cycles(tree: SourceTree) -> list[str]:
    return cycles(module_edges(tree), "module")


def package_cycles(tree: SourceTree) -> list[str]:
    return cycles(package_edges(tree), "package")


def forbidden_imports(
    tree: SourceTree,
    importers: Iterable[str] = ADAPTER_PACKAGES,
    forbidden: Iterable[str] = (COMPOSITION_ROOT, *USE_CASE_PACKAGES),
) -> list[str]:
    """Imports (anywhere in the file) from modules under `importers` of anything under `forbidden`;
    `from cortex import app` counts as importing cortex.app."""
    forbidden = tuple(forbidden)
    problems = []
    for module in tree.under(*importers):
        for ref in import_refs(module.tree, module.package):
            resolved = imported_module(ref, tree)
            names = [resolved, *ref.candidates] if resolved else ref.candidates
            hit = next((n for n in names for f in forbidden if within(n, f)), None)
            if hit is not None:
                problems.append(f"{module.at(ref.line)} imports {hit}")
    return sorted(set(problems), key=_by_place)


# -- string constants -----------------------------------------------------------------------------


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _render_fstring(node: ast.JoinedStr) -> str:
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        else:
            parts.append("{}")
    return "".join(parts)


def string_constants(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal except docstrings; an f-string is one text with `{}`
    where its replacement fields are."""
    skip = _docstring_nodes(tree)
    for node in ast.walk(tree):  # breadth first: an f-string comes before its parts
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in ast.walk(node) if isinstance(part, ast.Constant))
            yield node.lineno, _render_fstring(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _excerpt(text: str, match: re.Match[str]) -> str:
    start = max(match.start() - 20, 0)
    end = min(match.end(), match.start() + 40) + 20
    return repr(" ".join(text[start:end].split()))


def _by_place(problem: str) -> tuple[str, int]:
    place = problem.split(" ", 1)[0]
    path, _, line = place.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def within_any(name: str, homes: str | tuple[str, ...]) -> bool:
    """`name` is within one of `homes`."""
    return any(within(name, home) for home in ((homes,) if isinstance(homes, str) else homes))


def sql_outside_store(tree: SourceTree, home: str | tuple[str, ...] = SQL_HOMES) -> list[str]:
    """SQL statements in string literals, and .execute*() on a connection, outside `home`."""
    problems = []
    for module in tree:
        if within_any(module.name, home):
            continue
        for line, text in string_constants(module.tree):
            match = SQL_STATEMENT.search(text)
            if match:
                problems.append(f"{module.at(line)} SQL {match.group(0).split()[0]}: {_excerpt(text, match)}")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and node.attr in SQL_CALLS:
                problems.append(f"{module.at(node.lineno)} uses .{node.attr}()")
    return sorted(problems, key=_by_place)


def fts5_outside_home(
    tree: SourceTree, home: str = FTS_HOME, sql_home: str | tuple[str, ...] = SQL_HOMES
) -> list[str]:
    """FTS5 syntax (MATCH, bm25(), snippet(), highlight(), NEAR(), fts5, *_fts tables) in string
    literals outside the one FTS module, and, outside the SQL package, a bare boolean operator
    joining query terms."""
    problems = []
    for module in tree:
        if module.name == home:
            continue
        for line, text in string_constants(module.tree):
            match = FTS5_SYNTAX.search(VEC0_KNN.sub("embedding", text))
            if match:
                found = match.group(0).strip()
                problems.append(f"{module.at(line)} FTS5 {found!r}: {_excerpt(text, match)}")
            elif text in FTS5_OPERATORS and not within_any(module.name, sql_home):
                problems.append(f"{module.at(line)} FTS5 query operator {text!r}")
    return sorted(problems, key=_by_place)


# -- packages and sizes ---------------------------------------------------------------------------


def non_empty_inits(tree: SourceTree) -> list[str]:
    """Every statement in a package __init__.py (a docstring or `__version__` included)."""
    return [
        f"{m.at(node.lineno)} {(ast.get_source_segment(m.source, node) or '').splitlines()[0]}"
        for m in tree
        if m.is_package
        for node in m.tree.body
    ]


def oversized_modules(tree: SourceTree, limit: int = MAX_MODULE_LINES) -> list[str]:
    return [f"{m.path} has {m.lines} lines (limit {limit})" for m in tree if m.lines > limit]


def median_module_lines(tree: SourceTree) -> float:
    """The median length of the modules that hold code (package __init__ files must be empty)."""
    sizes = [m.lines for m in tree if not m.is_package]
    return statistics.median(sizes) if sizes else 0.0


# -- string import targets ------------------------------------------------------------------------


@dataclass(frozen=True)
class StringTarget:
    """An import target named in a string: `module` to import, then `attr` (dotted) to look up;
    `attr` None means the module itself must exist. `module` None: the longest importable prefix
    of the dotted `attr` path is the module (monkeypatch.setattr("pkg.mod.name", ...))."""

    where: str
    text: str
    module: str | None
    attr: str | None


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def string_targets(module: Module, packages: Iterable[str]) -> Iterator[StringTarget]:
    """Import targets in `module` naming a module of `packages`: every "module:attr" literal,
    the dotted path given to monkeypatch.setattr/delattr or patch(), the module given to
    import_module()/find_spec(), and the module after "-m" in a command list or call."""
    packages = tuple(packages)

    def ours(name: str | None) -> bool:
        return name is not None and MODULE.match(name) is not None and any(within(name, p) for p in packages)

    for node in ast.walk(module.tree):
        text = _const_str(node)
        if text is not None:
            match = ENTRY_POINT.match(text)
            if match and ours(match["module"]):
                yield StringTarget(module.at(node.lineno), text, match["module"], match["attr"])
            continue
        if isinstance(node, ast.Call) and node.args:
            name, first = _call_name(node), _const_str(node.args[0])
            if first is not None and ours(first) and DOTTED.match(first) and name in ATTR_PATH_CALLS:
                yield StringTarget(module.at(node.lineno), first, None, first)
            elif first is not None and ours(first) and name in MODULE_CALLS:
                yield StringTarget(module.at(node.lineno), first, first, None)
        items = node.elts if isinstance(node, ast.List | ast.Tuple) else getattr(node, "args", None)
        if isinstance(node, ast.List | ast.Tuple | ast.Call) and items:
            for flag, value in itertools.pairwise([_const_str(e) for e in items]):
                if flag == "-m" and value is not None and ours(value):
                    yield StringTarget(module.at(node.lineno), value, value, None)


def collect_string_targets(root: Path, folders: Iterable[str], packages: Iterable[str]) -> list[StringTarget]:
    """The string import targets naming a module of `packages`, in every .py file under `folders`."""
    packages = tuple(packages)
    found = []
    for folder in folders:
        for module in load_tree(root, folder):
            found.extend(string_targets(module, packages))
    return sorted(found, key=lambda t: _by_place(t.where + " "))


# Run in a fresh interpreter: reads [[where, text, module, attr], ...] as JSON on stdin and prints
# one `UNRESOLVED [where, text, why]` line per target that does not resolve.
RESOLVE_SCRIPT = """
import importlib, json, sys

def resolve(module, attr):
    if module is None:  # a dotted path: the longest importable prefix is the module
        parts = attr.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            attr = ".".join(parts[cut:])
            break
        else:
            raise ModuleNotFoundError(f"no module in {attr!r}")
    else:
        obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)

for where, text, module, attr in json.load(sys.stdin):
    try:
        resolve(module, attr)
    except Exception as exc:
        print("UNRESOLVED " + json.dumps([where, text, f"{type(exc).__name__}: {exc}"]), flush=True)
"""


def unresolved_targets(targets: Iterable[StringTarget], root: Path) -> list[str]:
    """The targets that do not import (or lack the attribute), checked in a fresh interpreter
    with `root` first on the path so this process's modules stay as they are."""
    payload = json.dumps([[t.where, t.text, t.module, t.attr] for t in targets])
    proc = subprocess.run(
        [sys.executable, "-c", RESOLVE_SCRIPT],
        input=payload,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the target resolver failed:\n{proc.stderr[-4000:]}")
    problems = []
    for line in proc.stdout.splitlines():
        if line.startswith("UNRESOLVED "):
            where, text, why = json.loads(line.removeprefix("UNRESOLVED "))
            problems.append(f"{where} {text!r} does not resolve: {why}")
    return problems
