"""Prose-code pairing: the raw code memory and the prose description of one symbol. Pure.

The description is built from what the code says about itself (kind, signature, docstring or
doc comment, parameters, the functions it calls, its identifiers split into words) so that a
question in plain words finds it; the raw code is stored beside it, never embedded, and comes
back with the description through a `source_of` link.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

from cortex.core.code.parse import (
    LINE_COMMENT,
    CodeSymbol,
    Splitter,
    find_symbol,
    parse_symbols,
    top_level,
)

MAX_CODE_CHARS = 20_000  # a symbol longer than this is stored cut, with a pointer to the file
MAX_DESCRIPTION_CHARS = 1_200
MAX_CALLS = 10
MAX_TERMS = 16
SYMBOL_TAG_SEPARATOR = ":"

_CALL = re.compile(r"\b([A-Za-z_][\w]*)\s*\(")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_NOT_CALLS = frozenset(
    {
        "if", "for", "while", "return", "elif", "else", "switch", "catch", "with", "print",
        "assert", "not", "and", "or", "in", "is", "lambda", "yield", "await", "async", "def",
        "class", "function", "func", "fn", "new", "typeof", "sizeof", "super", "self", "this",
        "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "isinstance",
        "range", "enumerate", "zip", "map", "filter", "sorted", "min", "max", "sum", "any", "all",
        "repr", "type", "getattr", "setattr", "hasattr",
    }
)  # fmt: skip
_STOP = frozenset(
    {
        "the", "and", "for", "with", "from", "that", "this", "none", "true", "false", "self",
        "cls", "return", "def", "class", "import", "str", "int", "float", "bool", "list", "dict",
        "set", "tuple", "not", "any", "all", "get", "new", "var", "let", "const",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CodePair:
    """What index-code stores for one symbol: the key tag, the raw code, the description."""

    key: str  # `path:qualname`, carried as a tag by both memories
    symbol: CodeSymbol
    code: str
    code_summary: str
    description: str
    description_summary: str


@dataclass(slots=True)
class IndexReport:
    """What `cortex index-code` did, by symbol key (`path:qualname`)."""

    files: int = 0
    stored: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    embedded: int = 0
    note: str = ""


def symbol_key(path: str, qualname: str) -> str:
    """The tag that identifies one indexed symbol across re-indexing."""
    return f"{path}{SYMBOL_TAG_SEPARATOR}{qualname}"


def split_identifier(name: str) -> list[str]:
    """`load_settingsFromEnv` -> ["load", "settings", "from", "env"]."""
    return [p.lower() for chunk in name.split("_") for p in _CAMEL.findall(chunk) if p]


def _calls(sym: CodeSymbol) -> list[str]:
    lines = sym.code.splitlines()
    # The body starts after the line that names the symbol: decorator calls are not calls.
    head = next((k for k, line in enumerate(lines) if sym.name in line), 0)
    body = "\n".join(lines[head + 1 :])
    seen = dict.fromkeys(
        c for c in _CALL.findall(body) if c not in _NOT_CALLS and c != sym.name and not c.isupper()
    )
    return list(seen)[:MAX_CALLS]


def _parameters(signature: str) -> list[str]:
    start, end = signature.find("("), signature.rfind(")")
    if start < 0 or end <= start:
        return []
    inner, depth, parts, cur = signature[start + 1 : end], 0, [], ""
    for ch in inner:
        depth += (ch in "([{<") - (ch in ")]}>")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = []
    for part in parts:
        m = re.search(r"[A-Za-z_$][\w$]*", part.split("=")[0].split(":")[0].strip().lstrip("*&"))
        if m and m.group(0) not in ("self", "cls", "this", "mut", "const"):
            names.append(m.group(0))
    return names


def _terms(sym: CodeSymbol) -> list[str]:
    words: dict[str, None] = {}
    for ident in _IDENT.findall(sym.code):
        for w in split_identifier(ident):
            if len(w) > 2 and w not in _STOP:
                words[w] = None
    return list(words)[:MAX_TERMS]


def render_description(sym: CodeSymbol, path: str) -> str:
    """Plain-words description of a symbol for keyword and vector recall."""
    label = {"function": "function", "method": "method", "class": "class", "module": "file"}.get(
        sym.kind, sym.kind
    )
    # No line numbers here: code that only moved keeps its description (and its vector).
    parts = [f"{sym.language.capitalize()} {label} `{sym.qualname}` in {path}."]
    if sym.doc:
        parts.append(sym.doc.rstrip(".") + ".")
    words = " ".join(split_identifier(sym.name))
    if words and words != sym.name.lower():
        parts.append(f"Name in words: {words}.")
    if sym.kind != "module" and sym.signature:
        parts.append(f"Signature: {sym.signature}.")
    params = _parameters(sym.signature) if sym.kind in ("function", "method") else []
    if params:
        parts.append("Takes " + ", ".join(params) + ".")
    if sym.children:
        parts.append("Methods: " + ", ".join(sym.children[:20]) + ".")
    calls = _calls(sym)
    if calls:
        parts.append("Calls " + ", ".join(calls) + ".")
    terms = _terms(sym)
    if terms:
        parts.append("Terms: " + ", ".join(terms) + ".")
    text = " ".join(parts)
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 1] + "…"


def render_code(sym: CodeSymbol, path: str) -> str:
    """The raw code under a one-line comment naming where it lives; cut when very long."""
    comment = LINE_COMMENT.get(sym.language, "//")
    header = f"{comment} {symbol_key(path, sym.qualname)}"
    code = sym.code.rstrip()
    if len(code) > MAX_CODE_CHARS:
        kept = code[:MAX_CODE_CHARS].rsplit("\n", 1)[0]
        shown = kept.count("\n") + 1
        code = f"{kept}\n{comment} … cut: see {path} lines {sym.start_line + shown}-{sym.end_line}"
    return f"{header}\n{code}"


def unique_symbols(symbols: list[CodeSymbol], text: str) -> list[CodeSymbol]:
    """One symbol per key: consecutive definitions of one name (overloads, a property and its
    setter) become one symbol spanning them; a name defined again further on (a variant per
    platform, functions a macro makes) is numbered `name~2`, `name~3`, so each keeps its own key
    and re-indexing an unchanged file changes nothing."""
    lines = text.splitlines()
    merged: list[CodeSymbol] = []
    for sym in symbols:
        prev = merged[-1] if merged else None
        if prev is not None and (prev.qualname, prev.kind) == (sym.qualname, sym.kind):
            end = max(prev.end_line, sym.end_line)
            merged[-1] = replace(prev, end_line=end, code="\n".join(lines[prev.start_line - 1 : end]))
        else:
            merged.append(sym)
    seen: Counter[str] = Counter()
    out = []
    for sym in merged:
        seen[sym.qualname] += 1
        n = seen[sym.qualname]
        out.append(sym if n == 1 else replace(sym, qualname=f"{sym.qualname}~{n}"))
    return out


def plan_pairs(
    path: str, text: str, wanted: str | None = None, split: Splitter = parse_symbols
) -> list[CodePair]:
    """The code/description pairs for a file, or for one symbol of it (`wanted`), split by `split`."""
    symbols = unique_symbols(split(path, text), text)
    chosen = find_symbol(symbols, wanted) if wanted else top_level(symbols)
    pairs = []
    for sym in chosen:
        description = render_description(sym, path)
        pairs.append(
            CodePair(
                key=symbol_key(path, sym.qualname),
                symbol=sym,
                code=render_code(sym, path),
                code_summary=f"{symbol_key(path, sym.qualname)} (lines {sym.start_line}-{sym.end_line})",
                description=description,
                description_summary=f"{sym.kind} {sym.qualname} in {path}"
                + (f": {sym.doc[:80]}" if sym.doc else ""),
            )
        )
    return pairs


def split_target(target: str) -> tuple[str, str | None]:
    """`PATH:SYMBOL` -> (path, symbol); (target, None) when there is no symbol part."""
    path, sep, symbol = target.rpartition(":")
    if sep and path and re.fullmatch(r"[A-Za-z_][\w.]*", symbol):
        return path, symbol
    return target, None
