"""A parser's spans become the same `CodeSymbol`s the regex splitter makes, and plan_pairs takes
whichever splitter the use case chose."""

from __future__ import annotations

from cortex.core.code.pairing import plan_pairs
from cortex.core.code.parse import CodeSymbol, SymbolSpan, parse_symbols, symbols_from_spans

PY = '''import os

@cached
def load(
    path,
):
    """Read it.

    More text."""
    return os.path


class Box:
    def size(self):
        return 1
'''

TS = """/**
 * Adds two numbers.
 */
export function add(a: number, b: number): number {
  return a + b;
}
"""


def test_python_spans_take_signature_and_docstring_like_the_regex_splitter() -> None:
    spans = [
        SymbolSpan("load", "load", "function", 3, 4, 10),
        SymbolSpan("Box", "Box", "class", 13, 13, 15),
        SymbolSpan("size", "Box.size", "method", 14, 14, 15, owner="Box"),
    ]
    assert symbols_from_spans("m.py", PY, spans) == parse_symbols("m.py", PY)


def test_brace_spans_take_the_doc_comment_above_and_the_first_line_as_signature() -> None:
    (sym,) = symbols_from_spans("a.ts", TS, [SymbolSpan("add", "add", "function", 4, 4, 6)])
    assert (sym.start_line, sym.end_line, sym.doc) == (1, 6, "Adds two numbers.")
    assert sym.signature == "export function add(a: number, b: number): number"
    assert sym.code == TS.rstrip("\n")


def test_spans_outside_the_file_are_dropped_and_none_left_is_a_module() -> None:
    bad = [
        SymbolSpan("ghost", "ghost", "function", 40, 41, 45),
        SymbolSpan("inv", "inv", "function", 5, 3, 6),
    ]
    (mod,) = symbols_from_spans("a.ts", TS, bad)
    assert (mod.kind, mod.name, mod.start_line, mod.end_line) == ("module", "a.ts", 1, 6)


def test_plan_pairs_uses_the_splitter_it_is_given() -> None:
    def one_symbol(path: str, text: str) -> list[CodeSymbol]:
        return [CodeSymbol("only", "only", "function", "python", 1, 1, "def only()", "", "def only(): ...")]

    assert [p.key for p in plan_pairs("m.py", PY)] == ["m.py:load", "m.py:Box"]
    assert [p.key for p in plan_pairs("m.py", PY, split=one_symbol)] == ["m.py:only"]
