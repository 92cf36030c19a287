"""Splitting source files into symbols and describing them in prose (pure)."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from cortex.core.code.pairing import (
    MAX_CODE_CHARS,
    plan_pairs,
    render_code,
    render_description,
    split_identifier,
    split_target,
    symbol_key,
    unique_symbols,
)
from cortex.core.code.parse import language_for, parse_symbols

PY = textwrap.dedent(
    '''
    """Settings loader."""

    import os

    TIMEOUT_S = 3


    def load_settings(path: str,
                      env: dict[str, str] | None = None) -> dict[str, str]:
        """Merge the config file with CORTEX_* variables.

        Later paragraphs are not part of the summary.
        """
        text = read_toml(path)
        return merge_env(text, env or os.environ)


    HELP = """
    def not_a_function():
        pass
    """


    # A comment about the next function, not the previous one.
    @cache
    @click.option(
        "--name",
        default="x",
    )
    async def fetchUserProfile(user_id, *, retries=3):
        return await client.get(user_id, retries=retries)


    class Store(Base):
        """All SQL for one store."""

        def open(self, path):
            """Open and migrate."""
            return connect(path)

        @property
        def size(self):
            return 3
    '''
)


def names(text: str, path: str = "pkg/mod.py") -> list[tuple[str, str]]:
    return [(s.kind, s.qualname) for s in parse_symbols(path, text)]


def test_python_symbols_with_methods_decorators_and_strings() -> None:
    assert names(PY) == [
        ("function", "load_settings"),
        ("function", "fetchUserProfile"),
        ("class", "Store"),
        ("method", "Store.open"),
        ("method", "Store.size"),
    ]
    syms = {s.qualname: s for s in parse_symbols("pkg/mod.py", PY)}
    load = syms["load_settings"]
    assert (
        load.signature == "def load_settings(path: str, env: dict[str, str] | None = None) -> dict[str, str]"
    )
    assert load.doc == "Merge the config file with CORTEX_* variables."
    assert load.code.splitlines()[-1].strip() == "return merge_env(text, env or os.environ)"
    fetch = syms["fetchUserProfile"]
    assert fetch.code.startswith("@cache\n@click.option(")  # decorators belong to it
    assert "A comment about" not in fetch.code and "HELP" not in load.code
    assert syms["Store"].children == ("open", "size")
    assert syms["Store"].doc == "All SQL for one store."
    assert syms["Store.size"].code.lstrip().startswith("@property")
    lines = PY.splitlines()
    for s in syms.values():
        assert s.code == "\n".join(lines[s.start_line - 1 : s.end_line])


def test_brace_languages_split_at_top_level_definitions() -> None:
    ts = textwrap.dedent(
        """
        import { x } from "y";

        /** Add two numbers. */
        export function add(a: number, b: number): number {
          return a + b;
        }

        export const greet = (name: string) => {
          return `hi ${name}`;
        };

        export interface User {
          id: string;
        }

        const LIMIT = 3;
        """
    )
    syms = parse_symbols("src/util.ts", ts)
    assert [(s.kind, s.name) for s in syms] == [("function", "add"), ("function", "greet"), ("type", "User")]
    assert syms[0].doc == "Add two numbers."
    assert syms[0].code.endswith("}") and "greet" not in syms[0].code
    go = (
        "package main\n\n// Serve runs the server.\n"
        "func (s *Server) Serve(addr string) error {\n\treturn nil\n}\n"
    )
    (serve,) = parse_symbols("cmd/main.go", go)
    assert (serve.name, serve.doc, serve.start_line) == ("Serve", "Serve runs the server.", 3)
    rs = (
        "use std::io;\n\npub struct Point { x: i32 }\n\n"
        "impl Point {\n    fn new() -> Self { Point { x: 0 } }\n}\n\npub fn main() {}\n"
    )
    assert [(s.kind, s.name) for s in parse_symbols("src/lib.rs", rs)] == [
        ("type", "Point"),
        ("impl", "Point"),
        ("function", "main"),
    ]


def test_files_without_definitions_are_one_module_symbol() -> None:
    (mod,) = parse_symbols("scripts/run.py", '"""Run everything."""\nimport sys\nprint(sys.argv)\n')
    assert (mod.kind, mod.name, mod.doc) == ("module", "run.py", "Run everything.")
    (txt,) = parse_symbols("notes.unknownext", "just text\n")
    assert txt.language == "text"
    assert language_for("a/b.c/Makefile") is None and language_for("x.TSX") == "typescript"


def test_description_says_what_the_code_says_in_words() -> None:
    sym = {s.qualname: s for s in parse_symbols("pkg/mod.py", PY)}["fetchUserProfile"]
    text = render_description(sym, "pkg/mod.py")
    assert text.startswith("Python function `fetchUserProfile` in pkg/mod.py.")
    assert "Name in words: fetch user profile." in text
    assert "Takes user_id, retries." in text
    assert "Calls get." in text
    assert "lines" not in text  # moving code does not change its description
    store = {s.qualname: s for s in parse_symbols("pkg/mod.py", PY)}["Store"]
    assert "Methods: open, size." in render_description(store, "pkg/mod.py")


def test_code_memory_is_raw_code_under_a_locating_comment() -> None:
    sym = parse_symbols("pkg/mod.py", PY)[0]
    code = render_code(sym, "pkg/mod.py")
    assert code.splitlines()[0] == "# pkg/mod.py:load_settings"
    assert code.split("\n", 1)[1] == sym.code.rstrip()
    huge = "def big():\n" + "    x = 1\n" * 5000
    (big,) = parse_symbols("big.py", huge)
    cut = render_code(big, "big.py")
    assert len(cut) < MAX_CODE_CHARS + 200 and "cut: see big.py lines" in cut.splitlines()[-1]


def test_plan_pairs_whole_file_or_one_symbol() -> None:
    whole = plan_pairs("pkg/mod.py", PY)
    assert [p.key for p in whole] == [
        "pkg/mod.py:load_settings",
        "pkg/mod.py:fetchUserProfile",
        "pkg/mod.py:Store",
    ]
    (one,) = plan_pairs("pkg/mod.py", PY, "Store.open")
    assert one.key == symbol_key("pkg/mod.py", "Store.open") and one.symbol.kind == "method"
    assert plan_pairs("pkg/mod.py", PY, "open")[0].key == "pkg/mod.py:Store.open"
    assert plan_pairs("pkg/mod.py", PY, "missing") == []


def test_targets_and_identifiers() -> None:
    assert split_target("src/app.py:main") == ("src/app.py", "main")
    assert split_target("src/app.py:Store.open") == ("src/app.py", "Store.open")
    assert split_target("src/app.py") == ("src/app.py", None)
    assert split_target("C:/code/app.py") == ("C:/code/app.py", None)
    assert split_identifier("load_settingsFromEnv") == ["load", "settings", "from", "env"]
    assert split_identifier("HTTPServer2") == ["http", "server", "2"]


idents = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@given(
    st.lists(
        st.tuples(idents, st.booleans(), st.integers(0, 3)), min_size=1, max_size=8, unique_by=lambda t: t[0]
    )
)
def test_generated_python_files_split_into_exactly_their_functions(
    spec: list[tuple[str, bool, int]],
) -> None:
    chunks = []
    for name, documented, body in spec:
        lines = [f"def {name}(a, b=1):"]
        if documented:
            lines.append(f'    """Doc of {name}."""')
        lines += [f"    x{i} = a + {i}" for i in range(body)] + ["    return b"]
        chunks.append("\n".join(lines))
    text = "import os\n\n\n" + "\n\n\n".join(chunks) + "\n"
    syms = parse_symbols("gen.py", text)
    assert [s.name for s in syms] == [name for name, _, _ in spec]
    lines = text.splitlines()
    ends = [0]
    for s, (name, documented, _) in zip(syms, spec, strict=True):
        assert s.start_line > ends[-1]
        assert s.code == "\n".join(lines[s.start_line - 1 : s.end_line])
        assert s.code.endswith("return b")
        assert s.doc == (f"Doc of {name}." if documented else "")
        ends.append(s.end_line)


def test_one_key_per_symbol_overloads_merge_and_later_redefinitions_are_numbered() -> None:
    ts = (
        "export function of(a: number): number;\nexport function of(a: string): string;\n"
        "export function of(a: any): any {\n  return a;\n}\n"
    )
    (of,) = unique_symbols(parse_symbols("a.ts", ts), ts)
    assert (of.qualname, of.start_line, of.end_line) == ("of", 1, 5) and of.code == ts.rstrip("\n")
    py = (
        "if sys.platform == 'win32':\n    pass\n\n\ndef lock(fd):\n    return 1\n\n\ndef unlock(fd):\n"
        "    pass\n\n\ndef lock(fd):\n    return 2\n"
    )
    keys = [p.key for p in plan_pairs("m.py", py)]
    assert keys == ["m.py:lock", "m.py:unlock", "m.py:lock~2"]
    assert "return 2" in plan_pairs("m.py", py, "lock~2")[0].code
