"""Split source files into top-level symbols (functions, classes, types) without a parser. Pure.

This is the fallback splitter: where a real parser is installed, a use case passes its
`Splitter` instead, and `symbols_from_spans` turns that parser's spans into the same
`CodeSymbol`s (signature, doc, code) by the same rules as here.

Python is read by indentation, with a small scanner that knows where strings, comments and
brackets are, so docstrings and multi-line signatures never confuse it. Brace languages are
split at definitions that start in column 0: each runs to the next line that starts in
column 0 (a closing brace stays with the symbol above it). Files with no recognisable
definition become one `module` symbol.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".jsx": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".swift": "swift",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp",
    ".rb": "ruby", ".php": "php", ".scala": "scala", ".sh": "shell", ".bash": "shell",
    ".lua": "lua", ".sql": "sql",
}  # fmt: skip
LINE_COMMENT = {"python": "#", "ruby": "#", "shell": "#", "lua": "--", "sql": "--"}

_PY_DEF = re.compile(r"(?P<async>async\s+)?(?P<kw>def|class)\s+(?P<name>[A-Za-z_]\w*)")
_DEFINITIONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("function", r"(?:export\s+)?(?:default\s+)?(?:async\s+)?function\*?\s+(?P<name>[A-Za-z_$][\w$]*)"),
        ("class", r"(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(?P<name>[A-Za-z_$][\w$]*)"),
        ("function", r"(?:export\s+)?(?:const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*"
                     r"(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"),
        ("type", r"(?:export\s+)?(?:declare\s+)?(?:interface|type|enum)\s+(?P<name>[A-Za-z_$][\w$]*)"),
        ("function", r"func\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)"),
        ("type", r"type\s+(?P<name>[A-Za-z_]\w*)\s+(?:struct|interface)"),
        ("function", r"(?:pub(?:\([\w:]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(?P<name>\w+)"),
        ("type", r"(?:pub(?:\([\w:]+\))?\s+)?(?:struct|enum|trait|union|mod)\s+(?P<name>\w+)"),
        ("impl", r"impl(?:<[^>]*>)?\s+(?P<name>[\w:<>, ]+?)\s*(?:\{|where|$)"),
        ("class", r"(?:(?:public|private|protected|internal|abstract|final|sealed|static|open|data)\s+)*"
                  r"(?:class|interface|enum|record|object|struct)\s+(?P<name>[A-Za-z_]\w*)"),
        ("function", r"(?:def|module|class)\s+(?P<name>[A-Za-z_][\w:.?!]*)"),
        ("function", r"(?:function\s+)?(?P<name>[A-Za-z_][\w-]*)\s*\(\)\s*\{"),
        ("function", r"(?:local\s+)?function\s+(?P<name>[\w.:]+)"),
        ("function", r"(?:CREATE|create)\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|VIEW|TABLE|function|view|table)\s+"
                     r"(?P<name>[\w.]+)"),
        ("function", r"(?:[A-Za-z_][\w:<>,*&\s]*\s+[*&]*)(?P<name>[A-Za-z_]\w*)\s*\([^;]*$"),
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CodeSymbol:
    """One indexable piece of a file; lines are 1-based and inclusive."""

    name: str
    qualname: str  # `Class.method` for methods
    kind: str  # function | class | method | type | impl | module
    language: str
    start_line: int
    end_line: int
    signature: str
    doc: str
    code: str
    children: tuple[str, ...] = ()  # method names of a class


@dataclass(frozen=True, slots=True)
class SymbolSpan:
    """Where a parser found one symbol; lines are 1-based and inclusive."""

    name: str
    qualname: str
    kind: str  # function | class | method | type | impl
    start_line: int  # its first line, decorators and attributes included (not comments above)
    def_line: int  # the line that names it (the signature starts here)
    end_line: int
    owner: str = ""  # the qualname of the class a method belongs to


# (path, text) -> the file's symbols: parse_symbols here, or a real parser chosen by a use case.
Splitter = Callable[[str, str], list["CodeSymbol"]]


def language_for(path: str) -> str | None:
    """The language of a file by its extension, None when cortex does not know it as code."""
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot > path.rfind("/") else None


def _scan_python(lines: list[str]) -> list[bool]:
    """For each line: does it start outside strings and brackets (a real statement start)?"""
    starts: list[bool] = []
    quote: str | None = None
    depth = 0
    for line in lines:
        starts.append(quote is None and depth == 0)
        i = 0
        while i < len(line):
            if quote is not None:
                if line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 1
                continue
            ch = line[i]
            if ch == "#":
                break
            if ch in "\"'":
                quote = ch * 3 if line.startswith(ch * 3, i) else ch
                i += len(quote)
                continue
            depth += (ch in "([{") - (ch in ")]}")
            depth = max(depth, 0)
            i += 1
        if quote is not None and len(quote) == 1:
            quote = None  # an unterminated one-line string ends with its line
    return starts


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_code(line: str, comment: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(comment)


def _python_end(lines: list[str], starts: list[bool], first: int, indent: int, stop: int) -> int:
    """Index of the last line of the block whose header is at `first` (trailing blanks trimmed)."""
    last = first
    for j in range(first + 1, stop):
        line = lines[j]
        if starts[j] and _is_code(line, "#") and _indent(line) <= indent:
            break
        if _is_code(line, "#") or not starts[j]:
            last = j
    return last


def _python_header(lines: list[str], starts: list[bool], first: int, last: int) -> str:
    end = first
    while end + 1 <= last and not starts[end + 1]:
        end += 1
    text = " ".join(lines[k].strip() for k in range(first, end + 1))
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == ":" and depth == 0:
            return text[:k].strip()
    return text.rstrip(":").strip()


def _python_doc(lines: list[str], starts: list[bool], after: int, last: int) -> str:
    body = next((k for k in range(after, last + 1) if starts[k] and lines[k].strip()), None)
    if body is None:
        return ""
    text = "\n".join(lines[body : last + 1]).lstrip()
    m = re.match(r"[rRuUbB]{0,2}(\"\"\"|'''|\"|')", text)
    if not m:
        return ""
    end = text.find(m.group(1), m.end())
    return _clean_doc(text[m.end() : end if end >= 0 else None])


def _clean_doc(doc: str) -> str:
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).strip()


def _decorated_from(lines: list[str], starts: list[bool], k: int, lo: int, indent: int) -> int:
    """The first line of the decorators above the definition at `k` (multi-line ones too)."""
    first = k
    j = k - 1
    while j >= lo:
        s = j
        while s > lo and not starts[s]:
            s -= 1
        if not (lines[s].strip().startswith("@") and _indent(lines[s]) == indent):
            break
        first = s
        j = s - 1
    return first


def _python_symbols(lines: list[str], starts: list[bool], lo: int, hi: int, owner: str) -> list[CodeSymbol]:
    out: list[CodeSymbol] = []
    indent = next((_indent(lines[k]) for k in range(lo, hi) if starts[k] and _is_code(lines[k], "#")), 0)
    k = lo
    while k < hi:
        line = lines[k]
        m = _PY_DEF.match(line.strip())
        if not (starts[k] and m and _indent(line) == indent):
            k += 1
            continue
        first = _decorated_from(lines, starts, k, lo, indent)
        last = _python_end(lines, starts, k, indent, hi)
        header = _python_header(lines, starts, k, last)
        name = m.group("name")
        qual = f"{owner}.{name}" if owner else name
        methods = _python_symbols(lines, starts, k + 1, last + 1, qual) if m.group("kw") == "class" else []
        kind = "class" if m.group("kw") == "class" else ("method" if owner else "function")
        out.append(
            CodeSymbol(
                name, qual, kind, "python", first + 1, last + 1, header,
                _python_doc(lines, starts, k + 1, last), "\n".join(lines[first : last + 1]),
                tuple(s.name for s in methods),
            )
        )  # fmt: skip
        out.extend(methods)
        k = last + 1
    return out


def _doc_comment(lines: list[str], first: int, comment: str) -> tuple[int, str]:
    """A comment block directly above line `first`: (its first line, its text)."""
    k = first
    markers = (comment, "/*", "*", "*/", "///", "//!") if comment == "//" else (comment,)
    while k - 1 >= 0 and lines[k - 1].strip().startswith(markers):
        k -= 1
    text = " ".join(
        re.sub(r"^(?:///?|//!|/\*\*?|\*/?|#+|--)\s?", "", ln.strip()).strip() for ln in lines[k:first]
    )
    return k, text.strip(" /*")


def _generic_symbols(lines: list[str], language: str) -> list[CodeSymbol]:
    comment = LINE_COMMENT.get(language, "//")
    tops = [
        k
        for k, ln in enumerate(lines)
        if ln[:1] not in ("", " ", "\t", "}", ")", "]") and _is_code(ln, comment)
        and not ln.lstrip().startswith(("/*", "*", "#!"))
    ]  # fmt: skip
    out = []
    for n, k in enumerate(tops):
        found = next(((kind, m) for kind, rx in _DEFINITIONS if (m := rx.match(lines[k]))), None)
        if found is None:
            continue
        kind, m = found
        stop = tops[n + 1] if n + 1 < len(tops) else len(lines)
        last = stop - 1
        while last > k and not _is_code(lines[last], comment):
            last -= 1
        first, doc = _doc_comment(lines, k, comment)
        name = m.group("name").strip()
        signature = lines[k].strip().rstrip("{").strip()
        code = "\n".join(lines[first : last + 1])
        out.append(CodeSymbol(name, name, kind, language, first + 1, last + 1, signature, doc, code))
    return out


def _module_symbol(path: str, text: str, language: str, lines: list[str]) -> CodeSymbol:
    doc = ""
    if language == "python":
        doc = _python_doc(lines, _scan_python(lines), 0, len(lines) - 1) if lines else ""
    name = path.rsplit("/", 1)[-1]
    return CodeSymbol(name, name, "module", language, 1, max(len(lines), 1), name, doc, text)


def parse_symbols(path: str, text: str) -> list[CodeSymbol]:
    """The symbols of a file (Python: also methods, after their class); a module if none."""
    language = language_for(path) or "text"
    lines = text.splitlines()
    if language == "python":
        starts = _scan_python(lines)
        found = _python_symbols(lines, starts, 0, len(lines), "")
    else:
        found = _generic_symbols(lines, language)
    return found or [_module_symbol(path, text, language, lines)]


def symbols_from_spans(path: str, text: str, spans: list[SymbolSpan]) -> list[CodeSymbol]:
    """A parser's spans as `CodeSymbol`s, with signature, doc and code taken as `parse_symbols`
    takes them (a doc comment directly above a symbol belongs to it); a module if none."""
    language = language_for(path) or "text"
    lines = text.splitlines()
    comment = LINE_COMMENT.get(language, "//")
    starts = _scan_python(lines) if language == "python" else []
    out: list[CodeSymbol] = []
    for span in spans:
        first, last, head = span.start_line - 1, min(span.end_line, len(lines)) - 1, span.def_line - 1
        if not 0 <= first <= head <= last:
            continue
        if language == "python":
            signature = _python_header(lines, starts, head, last)
            doc = _python_doc(lines, starts, head + 1, last)
        else:
            first, doc = _doc_comment(lines, first, comment)
            signature = lines[head].strip().rstrip("{").strip()
        methods = (s.name for s in spans if s.kind == "method" and s.owner == span.qualname)
        children = tuple(dict.fromkeys(methods))  # a property and its setter: one name
        code = "\n".join(lines[first : last + 1])
        out.append(
            CodeSymbol(
                span.name, span.qualname, span.kind, language, first + 1, last + 1, signature, doc, code,
                children if span.kind != "method" else (),
            )
        )  # fmt: skip
    return out or [_module_symbol(path, text, language, lines)]


def top_level(symbols: list[CodeSymbol]) -> list[CodeSymbol]:
    """The symbols a whole-file index stores (methods travel inside their class)."""
    return [s for s in symbols if s.kind != "method"]


def find_symbol(symbols: list[CodeSymbol], wanted: str) -> list[CodeSymbol]:
    """Symbols named `wanted`: an exact qualified name first, else every plain-name match."""
    exact = [s for s in symbols if s.qualname == wanted]
    return exact or [s for s in symbols if s.name == wanted]
