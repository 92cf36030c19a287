"""Symbols from tree-sitter for each grammar the `code` extra installs, and the fallback to the
regex splitter when a grammar is missing, fails to load, or the file does not parse."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

from cortex.backends import treesitter
from cortex.backends.treesitter import (
    MODULES,
    ParseError,
    choose_splitter,
    installed_grammars,
    splitter_by_language,
    tree_sitter_symbols,
)
from cortex.core.code.parse import parse_symbols, top_level


def shape(path: str, text: str) -> list[tuple[str, str, int, int]]:
    return [(s.kind, s.qualname, s.start_line, s.end_line) for s in tree_sitter_symbols(path, text)]


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_the_code_extra_installs_every_grammar_the_splitter_knows() -> None:
    # dev installs `code`: a missing grammar here means pyproject.toml and MODULES disagree.
    assert set(installed_grammars()) == set(MODULES)
    assert splitter_by_language()["python"].startswith("tree-sitter (tree-sitter-python ")
    assert splitter_by_language()["kotlin"] == "regex"


CASES: dict[str, tuple[str, list[tuple[str, str, int, int]]]] = {
    "pkg/cache.py": (
        '''
        """Caching."""
        import functools

        if TYPE_CHECKING:
            def typed(x: int) -> int: ...


        @functools.cache
        def load(
            path: str,
        ) -> bytes:
            """Read a file once."""
            return b""


        class Store:
            class Error(Exception):
                pass

            def get(self, key):
                return None
        ''',
        [
            ("function", "typed", 5, 5), ("function", "load", 8, 13), ("class", "Store", 16, 21),
            ("class", "Store.Error", 17, 18), ("method", "Store.get", 20, 21),
        ],
    ),
    "web/api.js": (
        """
        // Fetches a user.
        export async function fetchUser(id) {
          return fetch(`/u/${id}`);
        }

        const toJson = (r) => r.json();

        export default class Client {
          constructor(base) { this.base = base; }
          get(path) {
            return fetch(this.base + path);
          }
        }

        const chunks = async function* (blob) {
          yield blob;
        };
        """,
        [
            ("function", "fetchUser", 1, 4), ("function", "toJson", 6, 6), ("class", "Client", 8, 13),
            ("method", "Client.constructor", 9, 9), ("method", "Client.get", 10, 12),
            ("function", "chunks", 15, 17),
        ],
    ),
    "src/view.tsx": (
        """
        interface Props { title: string }

        export type Mode = "a" | "b";

        @observer
        export class Panel extends React.Component<Props> {
          render(): JSX.Element {
            return <div>{this.props.title}</div>;
          }
        }

        export const Row = ({ label }: { label: string }): JSX.Element => <span>{label}</span>;
        """,
        [
            ("type", "Props", 1, 1), ("type", "Mode", 3, 3), ("class", "Panel", 5, 10),
            ("method", "Panel.render", 7, 9), ("function", "Row", 12, 12),
        ],
    ),
    "cmd/server.go": (
        """
        package main

        // Server serves.
        type Server struct {
        \taddr string
        }

        func (s *Server) Start() error {
        \treturn nil
        }

        func main() {
        \t_ = (&Server{}).Start()
        }
        """,
        [("type", "Server", 3, 6), ("function", "Server.Start", 8, 10), ("function", "main", 12, 14)],
    ),
    "src/lib.rs": (
        """
        /// A point.
        #[derive(Debug, Clone)]
        pub struct Point {
            x: i32,
        }

        impl fmt::Display for Point {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{}", self.x)
            }
        }

        pub fn origin() -> Point {
            Point { x: 0 }
        }
        """,
        [("type", "Point", 1, 5), ("impl", "fmt::Display for Point", 7, 11), ("function", "origin", 13, 15)],
    ),
    "src/App.java": (
        """
        package app;

        /** The app. */
        @Service
        public class App {
            private final int port;

            public App(int port) { this.port = port; }

            @Override
            public String toString() {
                return "App";
            }
        }
        """,
        [("class", "App", 3, 14), ("method", "App.App", 8, 8), ("method", "App.toString", 10, 13)],
    ),
    "src/buf.h": (
        """
        #ifndef BUF_H
        #define BUF_H

        typedef struct {
            char *data;
        } Buffer;

        /* Grows the buffer. */
        static int
        buf_grow(Buffer *b, size_t n)
        {
            return 0;
        }

        #endif
        """,
        [("type", "Buffer", 4, 6), ("function", "buf_grow", 8, 13)],
    ),
    "src/shape.cpp": (
        """
        namespace geo {

        template <typename T>
        class Shape {
         public:
          T area() const { return 0; }
        };

        double circle_area(double r) {
          return 3.14 * r * r;
        }

        }  // namespace geo
        """,
        [
            ("class", "geo::Shape", 3, 7), ("method", "geo::Shape.area", 6, 6),
            ("function", "geo::circle_area", 9, 11),
        ],
    ),
    "lib/billing.rb": (
        """
        module Billing
          # An invoice.
          class Invoice
            def total
              0
            end

            def self.build
              new
            end
          end
        end
        """,
        [
            ("class", "Billing", 1, 12), ("class", "Billing::Invoice", 2, 11),
            ("method", "Billing::Invoice.total", 4, 6), ("method", "Billing::Invoice.build", 8, 10),
        ],
    ),
}  # fmt: skip


@pytest.mark.parametrize("path", sorted(CASES))
def test_tree_sitter_splits_real_shaped_code(path: str) -> None:
    text, expected = CASES[path]
    assert shape(path, dedent(text)) == expected


def test_tree_sitter_symbols_carry_signature_doc_code_and_methods() -> None:
    text = dedent(CASES["pkg/cache.py"][0])
    syms = {s.qualname: s for s in tree_sitter_symbols("pkg/cache.py", text)}
    assert syms["load"].signature == "def load( path: str, ) -> bytes"
    assert syms["load"].doc == "Read a file once."
    assert syms["load"].code.startswith("@functools.cache\ndef load(")
    assert syms["Store"].children == ("get",)
    java = {s.qualname: s for s in tree_sitter_symbols("src/App.java", dedent(CASES["src/App.java"][0]))}
    assert java["App"].doc == "The app."
    assert java["App"].signature == "public class App"
    assert java["App.toString"].signature == "public String toString()"
    go = {s.qualname: s for s in tree_sitter_symbols("cmd/server.go", dedent(CASES["cmd/server.go"][0]))}
    assert go["Server"].doc == "Server serves." and go["Server"].code.startswith("// Server serves.")


def test_lines_follow_splitlines_past_form_feeds_and_lone_carriage_returns() -> None:
    text = "import os\n\x0c\ndef a():\r\n    pass\r\n\ndef b():\n    return 1\n"
    assert [(s.name, s.start_line, s.end_line) for s in tree_sitter_symbols("m.py", text)] == [
        (s.name, s.start_line, s.end_line) for s in parse_symbols("m.py", text)
    ]
    assert [s.start_line for s in tree_sitter_symbols("m.py", text)] == [4, 7]
    js = "/* one\rtwo */\nfunction f() {\n  return 1;\n}\n"
    (f,) = tree_sitter_symbols("a.js", js)  # the lone CR is a line of its own to splitlines
    assert (f.name, f.start_line, f.end_line) == ("f", 3, 5) and f.code.startswith("function f() {")
    assert f == parse_symbols("a.js", js)[0]


def test_a_file_with_no_definition_is_one_module_symbol() -> None:
    (mod,) = tree_sitter_symbols("scripts/run.py", '"""Run everything."""\nimport sys\nprint(sys.argv)\n')
    assert (mod.kind, mod.name, mod.doc) == ("module", "run.py", "Run everything.")


def test_a_language_without_a_grammar_uses_the_regex_splitter() -> None:
    text = dedent(CASES["web/api.js"][0])
    split = choose_splitter(grammars={"python"})  # as if tree-sitter-javascript were not installed
    assert split("web/api.js", text) == parse_symbols("web/api.js", text)
    assert split("pkg/cache.py", dedent(CASES["pkg/cache.py"][0]))[0].qualname == "typed"  # parsed
    assert split.used == {("javascript", "regex"): 1, ("python", "tree-sitter"): 1}
    # The regex splitter finds no methods in JavaScript: the parser's answer really differs.
    assert "Client.get" not in {s.qualname for s in split("web/api.js", text)}
    assert "Client.get" in {s.qualname for s in choose_splitter()("web/api.js", text)}


def test_a_syntax_error_falls_back_to_the_regex_splitter() -> None:
    text = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    with pytest.raises(ParseError):
        tree_sitter_symbols("m.py", text)
    split = choose_splitter()
    assert split("m.py", text) == parse_symbols("m.py", text)
    assert split.used == {("python", "regex fallback"): 1}
    assert [s.name for s in split("m.py", text)] == ["ok", "broken"]  # nothing lost


def test_a_grammar_that_fails_to_load_or_a_parser_crash_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dedent(CASES["src/lib.rs"][0])
    monkeypatch.setitem(MODULES, "rust", ("tree_sitter_no_such_grammar", "language"))
    assert "rust" not in installed_grammars()
    split = choose_splitter(grammars={"rust"})  # told it is there: the import fails, the file is kept
    assert split("src/lib.rs", text) == parse_symbols("src/lib.rs", text)
    assert split.used == {("rust", "regex fallback"): 1}

    def crash(path: str, language: str) -> object:
        raise RuntimeError("parser crashed")

    monkeypatch.setattr(treesitter, "_parser", crash)
    py = dedent(CASES["pkg/cache.py"][0])
    assert choose_splitter()("pkg/cache.py", py) == parse_symbols("pkg/cache.py", py)


def test_the_whole_file_index_keeps_the_regex_splitters_shape_for_python() -> None:
    text = dedent(CASES["pkg/cache.py"][0]).replace("if TYPE_CHECKING:\n    def typed", "def typed")
    parsed = [(s.kind, s.qualname, s.start_line, s.end_line, s.signature, s.doc) for s in top_level(
        tree_sitter_symbols("pkg/cache.py", text))]  # fmt: skip
    regex = [(s.kind, s.qualname, s.start_line, s.end_line, s.signature, s.doc) for s in top_level(
        parse_symbols("pkg/cache.py", text))]  # fmt: skip
    assert parsed == regex


def test_a_cpp_header_named_dot_h_is_read_as_cpp() -> None:
    text = "namespace dc {\nclass Bignum {\n public:\n  void Clamp() {}\n};\n}  // namespace dc\n"
    assert [(s.kind, s.qualname, s.language) for s in tree_sitter_symbols("src/bignum.h", text)] == [
        ("class", "dc::Bignum", "c"),
        ("method", "dc::Bignum.Clamp", "c"),
    ]


def test_no_parser_is_imported_until_a_file_is_split() -> None:
    code = (
        "import sys, cortex.capture.codeindex, cortex.recall.search, cortex.plugin.hooks\n"
        "from cortex.backends.treesitter import choose_splitter, splitter_by_language\n"
        "splitter_by_language(); split = choose_splitter()\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
        "split('a.go', 'package a\\n')\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = out.splitlines()
    assert before == "[]"
    loaded = {m.split(".")[0] for m in ast.literal_eval(after)}
    assert loaded == {"tree_sitter", "tree_sitter_go"}  # the bindings and the one grammar needed
