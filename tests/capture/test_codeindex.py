"""`cortex index-code` on real stores: pairing, no-op re-index, in-place updates, recall of code."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import codeindex
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.model import EdgeType, MemoryType, Scope, Status
from cortex.core.recall.decide import RecallRequest
from cortex.errors import InputError, NotFound
from cortex.paths import resolve_paths
from cortex.recall.search import recall
from cortex.store.port import StoreAdmin
from tests.support.fakes import FakeEmbedder

SOURCE = textwrap.dedent(
    '''
    """Retry helpers."""

    import time


    def retry_with_backoff(call, attempts=3, base_delay_s=0.5):
        """Call `call` until it succeeds, sleeping exponentially longer between attempts."""
        for n in range(attempts):
            try:
                return call()
            except OSError:
                time.sleep(base_delay_s * 2**n)
        raise TimeoutError("gave up")


    def parse_port(text):
        """Read a TCP port number from text."""
        return int(text.strip())
    '''
)


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def ccx(project: Path, embedder: FakeEmbedder) -> Iterator[Cortex]:
    cx = Cortex(
        resolve_paths(project),
        Settings(embedder="local"),
        query_embedder=Choice(embedder, "fake embedder"),
        bulk_embedder=Choice(embedder, "fake embedder"),
    )
    yield cx
    cx.close()


def write(project: Path, rel: str, text: str) -> Path:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def store(cx: Cortex) -> StoreAdmin:
    s = cx.store(Scope.PROJECT, create=False)
    assert s is not None
    return s


def pair(cx: Cortex, key: str) -> dict[MemoryType, object]:
    found = store(cx).tagged(key, ("code", "code_description"))
    return {m.type: m for m in found}


def test_each_symbol_becomes_raw_code_plus_an_embedded_description(
    ccx: Cortex, project: Path, embedder: FakeEmbedder
) -> None:
    write(project, "app/retry.py", SOURCE)
    report = codeindex.index_code(ccx, str(project / "app/retry.py"))
    assert report.stored == ["app/retry.py:retry_with_backoff", "app/retry.py:parse_port"]
    assert report.embedded == 2
    got = pair(ccx, "app/retry.py:retry_with_backoff")
    code, desc = got[MemoryType.CODE], got[MemoryType.CODE_DESCRIPTION]
    assert code.content.startswith("# app/retry.py:retry_with_backoff\ndef retry_with_backoff(")  # type: ignore[attr-defined]
    assert "exponentially" in desc.content and code.source.files == ("app/retry.py",)  # type: ignore[attr-defined]
    edges = store(ccx).edges([desc.id])  # type: ignore[attr-defined]
    assert [(e.source, e.target, e.type) for e in edges] == [(desc.id, code.id, EdgeType.SOURCE_OF)]  # type: ignore[attr-defined]
    # only the two descriptions reached the embedder, never the code itself
    embedded = [t for call in embedder.calls for t in call]
    assert len(embedded) == 2 and all(t.startswith("[code_description]") for t in embedded)
    assert not any("time.sleep(" in t or "raise TimeoutError" in t for t in embedded)
    table = store(ccx).vector_index(embedder.key)
    assert table is not None
    have = store(ccx).read_vectors(table.name, [code.id, desc.id])  # type: ignore[attr-defined]
    assert set(have) == {desc.id}  # type: ignore[attr-defined]


def test_recall_of_the_prose_returns_the_code(ccx: Cortex, project: Path) -> None:
    write(project, "app/retry.py", SOURCE)
    codeindex.index_code(ccx, "app/retry.py")
    hits = recall(ccx, RecallRequest(text="how do we retry a call with exponential backoff", limit=3)).hits
    assert hits and hits[0].memory.type is MemoryType.CODE_DESCRIPTION
    assert "retry_with_backoff" in hits[0].memory.content
    assert [c.type for c in hits[0].code] == [MemoryType.CODE]
    assert "time.sleep(base_delay_s * 2**n)" in hits[0].code[0].content


def test_reindexing_an_unchanged_file_is_a_no_op(ccx: Cortex, project: Path, embedder: FakeEmbedder) -> None:
    write(project, "app/retry.py", SOURCE)
    codeindex.index_code(ccx, "app/retry.py")
    journal = len(store(ccx).journal_rows())
    digest = store(ccx).state_digest().digest
    calls = len(embedder.calls)
    again = codeindex.index_code(ccx, "app/retry.py")
    assert again.unchanged == ["app/retry.py:retry_with_backoff", "app/retry.py:parse_port"]
    assert not again.stored and not again.updated
    assert len(store(ccx).journal_rows()) == journal
    assert store(ccx).state_digest().digest == digest
    assert len(embedder.calls) == calls


def test_a_changed_symbol_is_updated_in_place_and_a_deleted_one_archived(ccx: Cortex, project: Path) -> None:
    write(project, "app/retry.py", SOURCE)
    codeindex.index_code(ccx, "app/retry.py")
    before = pair(ccx, "app/retry.py:retry_with_backoff")
    changed = SOURCE.replace("attempts=3", "attempts=5").replace(
        'def parse_port(text):\n    """Read a TCP port number from text."""\n    return int(text.strip())\n',
        "",
    )
    write(project, "app/retry.py", changed)
    report = codeindex.index_code(ccx, "app/retry.py")
    assert report.updated == ["app/retry.py:retry_with_backoff"]
    assert report.removed == ["app/retry.py:parse_port"]
    after = pair(ccx, "app/retry.py:retry_with_backoff")
    assert {t: m.id for t, m in after.items()} == {t: m.id for t, m in before.items()}  # type: ignore[attr-defined]
    assert "attempts=5" in after[MemoryType.CODE].content  # type: ignore[attr-defined]
    gone = pair(ccx, "app/retry.py:parse_port")
    assert {m.status for m in gone.values()} == {Status.ARCHIVED}  # type: ignore[attr-defined]
    # the symbol coming back revives the same pair
    write(project, "app/retry.py", SOURCE)
    assert codeindex.index_code(ccx, "app/retry.py").updated == [
        "app/retry.py:retry_with_backoff",
        "app/retry.py:parse_port",
    ]
    assert {m.status for m in pair(ccx, "app/retry.py:parse_port").values()} == {Status.ACTIVE}  # type: ignore[attr-defined]


def test_one_symbol_and_helpful_errors(ccx: Cortex, project: Path) -> None:
    write(project, "app/retry.py", SOURCE)
    report = codeindex.index_code(ccx, "app/retry.py:parse_port")
    assert report.stored == ["app/retry.py:parse_port"] and not report.removed
    with pytest.raises(NotFound, match="retry_with_backoff"):
        codeindex.index_code(ccx, "app/retry.py:nope")
    write(
        project,
        "app/two.py",
        "class A:\n    def open(self):\n        pass\n\n\nclass B:\n    def open(self):\n        pass\n",
    )
    with pytest.raises(InputError, match="ambiguous"):
        codeindex.index_code(ccx, "app/two.py:open")
    assert codeindex.index_code(ccx, "app/two.py:B.open").stored == ["app/two.py:B.open"]
    with pytest.raises(InputError, match="no such file"):
        codeindex.index_code(ccx, "app/missing.py")


def test_directories_skip_environments_binaries_and_secrets_are_redacted(ccx: Cortex, project: Path) -> None:
    write(project, "src/a.py", "def a():\n    return 1\n")
    write(project, "src/b.ts", "export function b(): number {\n  return 2;\n}\n")
    write(project, "src/notes.txt", "not code")
    write(project, ".venv/lib/x.py", "def vendored():\n    pass\n")
    write(project, "node_modules/y/index.js", "function dep() {}\n")
    (project / "src" / "blob.py").write_bytes(b"\x00\x01binary")
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4
    write(project, "src/c.py", f'def client():\n    return Client(api_key="{key}")\n')
    report = codeindex.index_code(ccx, "src")
    assert sorted(report.stored) == ["src/a.py:a", "src/b.ts:b", "src/c.py:client"]
    assert report.skipped == [("src/blob.py", "binary")]
    code = pair(ccx, "src/c.py:client")[MemoryType.CODE]
    assert key not in code.content  # type: ignore[attr-defined]


def test_cli_index_code(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    write(project, "app/retry.py", SOURCE)
    run = CliRunner().invoke
    out = run(cli, ["-C", str(project), "index-code", str(project / "app/retry.py")])
    assert out.exit_code == 0, out.output
    assert "2 new" in out.output and "backfill" in out.output
    out = run(cli, ["-C", str(project), "index-code", str(project / "app/retry.py")])
    assert "2 unchanged" in out.output
    out = run(cli, ["-C", str(project), "index-code", str(project / "app/retry.py") + ":nope"])
    assert out.exit_code == 1 and "parse_port" in out.output
