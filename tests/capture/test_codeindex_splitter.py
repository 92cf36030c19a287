"""`index-code` splits with tree-sitter where a grammar is installed and the regex splitter where
not: the stored pairs keep their shape, and what only the parser finds becomes addressable."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.treesitter import TreeSitterSplitter, choose_splitter
from cortex.capture import codeindex
from cortex.core.model import MemoryType, Scope
from cortex.errors import NotFound

PANEL = textwrap.dedent(
    """
    /** A panel that shows a title. */
    export class Panel {
      render(): string {
        return "<div/>";
      }

      close(): void {}
    }

    export function mount(panel: Panel): void {
      panel.render();
    }
    """
).lstrip()

RETRY = textwrap.dedent(
    '''
    import time


    def retry(call, attempts=3):
        """Call until it succeeds."""
        for n in range(attempts):
            try:
                return call()
            except OSError:
                time.sleep(2**n)


    class Backoff:
        def delay(self, n):
            return 2**n
    '''
).lstrip()


def write(project: Path, rel: str, text: str) -> None:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def contents(cx: Cortex, key: str) -> dict[MemoryType, str]:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    return {m.type: m.content for m in store.tagged(key, ("code", "code_description"))}


def with_splitter(monkeypatch: pytest.MonkeyPatch, grammars: set[str] | None) -> list[TreeSitterSplitter]:
    chosen: list[TreeSitterSplitter] = []

    def choose() -> TreeSitterSplitter:
        chosen.append(choose_splitter(grammars))
        return chosen[-1]

    monkeypatch.setattr(codeindex, "choose_splitter", choose)
    return chosen


def test_both_splitters_store_the_same_pairs_for_python(
    fcx: Cortex, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, "app/retry.py", RETRY)
    chosen = with_splitter(monkeypatch, set())  # no grammar: the regex splitter
    regex = codeindex.index_code(fcx, "app/retry.py")
    stored = {key: contents(fcx, key) for key in regex.stored}
    assert chosen[0].used == {("python", "regex"): 1}
    chosen = with_splitter(monkeypatch, None)  # every installed grammar
    parsed = codeindex.index_code(fcx, "app/retry.py")
    assert chosen[0].used == {("python", "tree-sitter"): 1}
    assert regex.stored == ["app/retry.py:retry", "app/retry.py:Backoff"]
    assert parsed.unchanged == regex.stored and not parsed.updated and not parsed.removed
    assert {key: contents(fcx, key) for key in parsed.unchanged} == stored


def test_tree_sitter_finds_typescript_methods_the_regex_splitter_cannot(
    fcx: Cortex, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, "src/panel.ts", PANEL)
    report = codeindex.index_code(fcx, "src/panel.ts")
    assert report.stored == ["src/panel.ts:Panel", "src/panel.ts:mount"]  # methods stay in their class
    assert "Methods: render, close." in contents(fcx, "src/panel.ts:Panel")[MemoryType.CODE_DESCRIPTION]
    one = codeindex.index_code(fcx, "src/panel.ts:Panel.render")
    assert one.stored == ["src/panel.ts:Panel.render"]
    assert 'return "<div/>";' in contents(fcx, "src/panel.ts:Panel.render")[MemoryType.CODE]
    with_splitter(monkeypatch, set())
    with pytest.raises(NotFound, match=r"no symbol 'Panel\.render'"):
        codeindex.index_code(fcx, "src/panel.ts:Panel.render")


def test_a_file_tree_sitter_cannot_parse_is_still_indexed(fcx: Cortex, project: Path) -> None:
    # A stray brace: a syntax error for the grammar, still two functions for the regex splitter.
    write(project, "src/half.js", "function a() {\n  return 1;\n}\n}\nfunction b() {\n  return 2;\n}\n")
    report = codeindex.index_code(fcx, "src/half.js")
    assert report.stored == ["src/half.js:a", "src/half.js:b"]


def test_overloads_are_one_symbol_so_reindexing_is_a_no_op(fcx: Cortex, project: Path) -> None:
    write(
        project,
        "src/of.ts",
        "export function of(a: number): number;\nexport function of(a: string): string;\n"
        "export function of(a: any): any {\n  return a;\n}\n",
    )
    first = codeindex.index_code(fcx, "src/of.ts")
    assert first.stored == ["src/of.ts:of"] and not first.updated
    assert "a: string" in contents(fcx, "src/of.ts:of")[MemoryType.CODE]
    again = codeindex.index_code(fcx, "src/of.ts")
    assert again.unchanged == ["src/of.ts:of"] and not again.updated
