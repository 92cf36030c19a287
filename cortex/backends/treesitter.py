"""Symbols from tree-sitter where a grammar is installed, the regex splitter everywhere else.

The `code` extra installs the bindings (`tree-sitter`) and one grammar package per language.
Nothing here imports them until a file of that language is split, so the hooks and recall never
load a parser. A file falls back to `cortex.core.code.parse.parse_symbols` when its language has
no grammar, when the grammar fails to load, when the parse has a syntax error (a newer syntax
than the grammar knows, a file that is not really that language) or on any other exception: a
file always gets the symbols one of the two splitters finds.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from cortex.backends.treesitter_nodes import GRAMMARS, spans_of
from cortex.core.code.parse import LANGUAGES, CodeSymbol, language_for, parse_symbols, symbols_from_spans

log = logging.getLogger("cortex.backends.treesitter")

BINDINGS = "tree_sitter"
# language -> (grammar module, its language function); TSX has a function of its own.
MODULES: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
}
INSTALL_HINT = "pip install 'cortex-memory[code]'"
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_parsers: dict[tuple[str, str], Any] = {}  # (module, function) -> tree_sitter.Parser, loaded once


class ParseError(Exception):
    """The parser could not read the file cleanly: the regex splitter takes it."""


def _distribution(module: str) -> str:
    return module.replace("_", "-")


def _version(module: str) -> str:
    try:
        return importlib.metadata.version(_distribution(module))
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def installed_grammars() -> dict[str, str]:
    """language -> `tree-sitter-<lang> <version>` for each grammar installed with the bindings;
    imports nothing."""
    if not _installed(BINDINGS):
        return {}
    return {
        language: f"{_distribution(module)} {_version(module)}"
        for language, (module, _) in MODULES.items()
        if _installed(module)
    }


def splitter_by_language() -> dict[str, str]:
    """Every code language cortex knows -> which splitter reads it, for `cortex doctor`."""
    grammars = installed_grammars()
    return {
        language: f"tree-sitter ({grammars[language]})" if language in grammars else "regex"
        for language in sorted(set(LANGUAGES.values()))
    }


def _parser(path: str, language: str) -> Any:
    module, function = MODULES[language]
    if language == "typescript" and path.lower().endswith(".tsx"):
        function = "language_tsx"
    key = (module, function)
    if key not in _parsers:
        ts = importlib.import_module(BINDINGS)
        grammar = getattr(importlib.import_module(module), function)()
        _parsers[key] = ts.Parser(ts.Language(grammar))
    return _parsers[key]


def _line_map(text: str) -> list[int] | None:
    """tree-sitter row -> `str.splitlines` index, where they differ (form feeds, lone CRs)."""
    if not any(ch in text for ch in _OTHER_BREAKS):
        return None
    out, line = [], 0
    for row in text.split("\n"):
        out.append(line)
        line += max(1, len((row + "\n").splitlines()))
    return out


def tree_sitter_symbols(path: str, text: str) -> list[CodeSymbol]:
    """The symbols tree-sitter finds in a file; raises when it cannot (the caller falls back)."""
    language = language_for(path)
    if language not in MODULES:
        raise ParseError(f"no grammar for {language or 'this file'}")
    data = text.encode("utf-8")
    tree = _parser(path, language).parse(data)
    if tree.root_node.has_error and language == "c" and path.lower().endswith(".h"):
        language = "cpp"  # a `.h` file is as often C++: read it as C++ before giving up
        tree = _parser(path, language).parse(data)
    if tree.root_node.has_error:
        raise ParseError("syntax error")
    spans = spans_of(language, tree.root_node)
    rows = _line_map(text)
    if rows is not None:

        def at(line: int) -> int:
            return rows[line - 1] + 1

        spans = [
            replace(s, start_line=at(s.start_line), def_line=at(s.def_line), end_line=at(s.end_line))
            for s in spans
        ]
    return symbols_from_spans(path, text, spans)


@dataclass(slots=True)
class TreeSitterSplitter:
    """A `Splitter`: tree-sitter for the languages in `languages`, the regex splitter for the rest
    and for any file tree-sitter cannot read. `used` counts files by (language, splitter)."""

    languages: frozenset[str]
    used: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __call__(self, path: str, text: str) -> list[CodeSymbol]:
        language = language_for(path) or "text"
        if language in self.languages:
            try:
                found = tree_sitter_symbols(path, text)
            except Exception as exc:  # any parser failure: the fallback splitter reads the file
                log.debug("tree-sitter could not split %s (%s): regex splitter used", path, exc)
                self.used[(language, "regex fallback")] += 1
            else:
                self.used[(language, "tree-sitter")] += 1
                return found
        else:
            self.used[(language, "regex")] += 1
        return parse_symbols(path, text)


def choose_splitter(grammars: Collection[str] | None = None) -> TreeSitterSplitter:
    """The splitter for index-code and anchors: tree-sitter for each language in `grammars`
    (default: those installed), the regex splitter for every other."""
    languages = installed_grammars().keys() if grammars is None else grammars
    return TreeSitterSplitter(frozenset(language for language in languages if language in GRAMMARS))
