"""Symbol boundaries: the regex splitter against tree-sitter on real packages, per language.

    python -m benchmarks.symbols [--out benchmarks/results/symbols.md]

Sources are pinned releases fetched with the ordinary clients (`pip download` of an sdist,
`npm pack` of a tarball) into .cache/symbols/ (git-ignored; fetched once, never
committed). For every file whose language has a grammar, tree-sitter's symbols are the
reference: a symbol is its (name, the line that names it). Precision = regex symbols that
tree-sitter also finds / regex symbols; recall = tree-sitter symbols the regex splitter also
finds / tree-sitter symbols. Files tree-sitter cannot parse (the splitter's fallback) are
counted and left out of agreement. "Stored" rows compare what index-code stores (methods ride
inside their class); "all" rows add methods. Time is CPU time (time.process_time) per 1,000
lines, best of three passes, parsers loaded before timing.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from cortex.backends.treesitter import ParseError, choose_splitter, installed_grammars, tree_sitter_symbols
from cortex.core.code.parse import CodeSymbol, language_for, parse_symbols, top_level

ROOT = Path(__file__).resolve().parent
CACHE = ROOT.parent / ".cache" / "symbols"  # outside benchmarks/: the fetched .py files are not ours
OUT = ROOT / "results" / "symbols.md"


@dataclass(frozen=True)
class Source:
    registry: str  # pypi | npm
    name: str
    version: str
    under: str = ""  # only files below this folder of the archive


SOURCES = (
    Source("pypi", "requests", "2.32.3"),
    Source("pypi", "flask", "3.0.3"),
    Source("npm", "express", "4.21.2"),
    Source("npm", "axios", "1.7.9", under="package/lib"),
    Source("npm", "rxjs", "7.8.1", under="package/src"),
    Source("pypi", "ujson", "5.10.0"),
)
_COMMENT = ("#", "//", "/*", "*", "@", "--")


def fetch(src: Source) -> Path:
    """The unpacked release, fetched once into the cache."""
    folder = CACHE / f"{src.name}-{src.version}"
    if folder.is_dir():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    before = set(CACHE.glob("*.t*gz"))
    if src.registry == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", src.name,
               f"{src.name}=={src.version}", "-d", str(CACHE)]  # fmt: skip
    else:
        cmd = ["npm", "pack", "--silent", f"{src.name}@{src.version}", "--pack-destination", str(CACHE)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (archive,) = set(CACHE.glob("*.t*gz")) - before
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    archive.unlink()
    return folder


def files_of(folder: Path, src: Source) -> list[tuple[str, str]]:
    """(path inside the release, text) of every UTF-8 source file with a known language."""
    base = next(folder.iterdir()) if not src.under else folder / src.under
    out = []
    for path in sorted(p for p in base.rglob("*") if p.is_file() and language_for(p.name)):
        try:
            out.append((path.relative_to(folder).as_posix(), path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def name_line(sym: CodeSymbol) -> int:
    """The line that names a symbol (past its doc comment, decorators and attributes)."""
    word = re.findall(r"[A-Za-z_$][\w$]*", sym.name)[-1]
    pattern = re.compile(rf"(?<![\w$]){re.escape(word)}(?![\w$])")
    for k, line in enumerate(sym.code.splitlines()):
        if pattern.search(line) and not line.strip().startswith(_COMMENT):
            return sym.start_line + k
    return sym.start_line


def keys(symbols: list[CodeSymbol]) -> dict[tuple[str, int], CodeSymbol]:
    return {(s.name, name_line(s)): s for s in symbols if s.kind != "module"}


@dataclass
class Tally:
    files: int = 0
    lines: int = 0
    fallback: int = 0
    sources: set[str] = field(default_factory=set)
    counts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0, 0]))
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    texts: list[tuple[str, str]] = field(default_factory=list)

    def compare(self, scope: str, path: str, regex: list[CodeSymbol], parsed: list[CodeSymbol]) -> None:
        r, t = keys(regex), keys(parsed)
        both = r.keys() & t.keys()
        row = self.counts[scope]  # regex, tree-sitter, both, same start, same end
        row[0] += len(r)
        row[1] += len(t)
        row[2] += len(both)
        row[3] += sum(r[k].start_line == t[k].start_line for k in both)
        row[4] += sum(r[k].end_line == t[k].end_line for k in both)
        if scope == "stored":
            for label, only in (("missed", t.keys() - r.keys()), ("extra", r.keys() - t.keys())):
                for name, line in sorted(only, key=lambda x: x[1])[:1]:
                    if len(self.examples[label]) < 3:
                        self.examples[label].append(f"`{path}:{line}` {name}")


def cpu_per_kloc(texts: list[tuple[str, str]], lines: int, split: object) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for path, text in texts:
            split(path, text)  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return 1000 * best / max(lines, 1) * 1000  # ms per 1,000 lines


def measure() -> tuple[dict[str, Tally], dict[str, float], dict[str, float]]:
    grammars = installed_grammars()
    tallies: dict[str, Tally] = defaultdict(Tally)
    for src in SOURCES:
        for path, text in files_of(fetch(src), src):
            language = language_for(path) or ""
            if language not in grammars:
                continue
            tally = tallies[language]
            tally.files += 1
            tally.lines += len(text.splitlines())
            tally.sources.add(f"{src.name} {src.version}")
            tally.texts.append((path, text))
            try:
                parsed = tree_sitter_symbols(path, text)
            except ParseError:
                tally.fallback += 1
                continue
            regex = parse_symbols(path, text)
            tally.compare("stored", path, top_level(regex), top_level(parsed))
            tally.compare("all", path, regex, parsed)
    split = choose_splitter()
    for tally in tallies.values():  # load every parser before timing
        for path, text in tally.texts[:1]:
            split(path, text)
    regex_ms = {lang: cpu_per_kloc(t.texts, t.lines, parse_symbols) for lang, t in tallies.items()}
    parsed_ms = {lang: cpu_per_kloc(t.texts, t.lines, split) for lang, t in tallies.items()}
    return tallies, regex_ms, parsed_ms


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}" if d else "-"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def report(tallies: dict[str, Tally], regex_ms: dict[str, float], parsed_ms: dict[str, float]) -> str:
    import tree_sitter

    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    lines = [
        "# Symbol boundaries: regex splitter vs tree-sitter",
        "",
        f"Commit `{_git('rev-parse', '--short', 'HEAD')}`, load average {' '.join(load)} "
        f"(2 cores, shared), Python {platform.python_version()}, tree-sitter "
        f"{getattr(tree_sitter, '__version__', '?')}; grammars: "
        + ", ".join(sorted(installed_grammars().values()))
        + ".",
        "",
        "Sources (pinned, fetched into .cache/symbols/, never committed): "
        + ", ".join(
            f"{s.registry} {s.name} {s.version}" + (f" ({s.under}/)" if s.under else "") for s in SOURCES
        )
        + ".",
        "",
        "Reference: tree-sitter. A symbol is (name, the line that names it). P = share of the regex",
        "splitter's symbols tree-sitter also finds; R = share of tree-sitter's the regex splitter finds.",
        "Start/end = share of the matched symbols whose first/last line is the same. Fallback = files",
        "tree-sitter could not parse (the regex splitter reads them; left out of P/R). CPU ms per",
        "1,000 lines, best of 3 (tree-sitter column: the chooser, fallbacks included).",
        "",
        "| language | sources | files | lines | fallback | symbols | regex / ts | P % | R % | start % "
        "| end % | regex ms/kloc | tree-sitter ms/kloc |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lang in sorted(tallies):
        t = tallies[lang]
        for scope in ("stored", "all"):
            r, ts, both, start, end = t.counts[scope]
            first = scope == "stored"
            lines.append(
                f"| {lang if first else ''} | {', '.join(sorted(t.sources)) if first else ''} "
                f"| {t.files if first else ''} | {t.lines if first else ''} | {t.fallback if first else ''} "
                f"| {scope} | {r} / {ts} | {_pct(both, r)} | {_pct(both, ts)} | {_pct(start, both)} "
                f"| {_pct(end, both)} | {f'{regex_ms[lang]:.1f}' if first else ''} "
                f"| {f'{parsed_ms[lang]:.1f}' if first else ''} |"
            )
    lines += [
        "",
        "Reading: the regex splitter ends a brace-language symbol just before the next line that",
        "starts in column 0, so a block comment above the next definition is counted in both; the",
        "parser ends it at its closing brace. The regex splitter finds only column-0 definitions: C++",
        "inside namespaces, methods outside Python, definitions under preprocessor blocks or",
        "module-level `if`/`try` are what it misses (R). Its extras (P) are multi-line prototypes",
        "and constants bound to an immediately called function, which are not definitions.",
        "",
        "Examples (first per file, up to three per language):",
        "",
    ]
    for lang in sorted(tallies):
        ex = tallies[lang].examples
        lines.append(f"- {lang}: missed by regex: {'; '.join(ex['missed']) or 'none'}. "
                     f"Regex only: {'; '.join(ex['extra']) or 'none'}.")  # fmt: skip
    lines += ["", "Rerun: `python -m benchmarks.symbols` (needs the `code` extra, pip and npm).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = report(*measure())
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
