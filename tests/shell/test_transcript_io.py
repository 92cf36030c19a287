"""Cursor reads of real transcript files: appends, partial lines, rewrites, bad paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cortex.core.extract.transcript import parse_chunk
from cortex.shell import transcript_io
from cortex.shell.transcript_io import Cursor, ReadResult, read_new_records
from tests.support.transcript_builders import FIXTURES, line, user_record

needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"shared transcript fixtures not found at {FIXTURES}"
)
LONG_SESSION = FIXTURES / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def read_all(path: Path, cursor: Cursor, max_bytes: int) -> tuple[list[ReadResult], Cursor]:
    results = []
    while True:
        result = read_new_records(path, cursor, max_bytes)
        assert result.error is None
        results.append(result)
        cursor = result.cursor
        if not result.more:
            return results, cursor


@needs_fixtures
def test_reads_the_long_session_to_eof_in_one_call(tmp_path: Path) -> None:
    result = read_new_records(LONG_SESSION, Cursor())
    data = LONG_SESSION.read_bytes()
    assert result.error is None and not result.more and not result.restarted
    assert result.cursor.offset == len(data)
    assert result.chunk == parse_chunk(data, 0)
    again = read_new_records(LONG_SESSION, result.cursor)
    assert again.chunk.lines == 0 and again.cursor == result.cursor and not again.restarted


@needs_fixtures
def test_bounded_reads_cover_the_file_exactly_once() -> None:
    whole = parse_chunk(LONG_SESSION.read_bytes(), 0)
    results, cursor = read_all(LONG_SESSION, Cursor(), max_bytes=64 * 1024)
    assert len(results) > 20
    assert cursor.offset == LONG_SESSION.stat().st_size
    assert sum(r.chunk.lines for r in results) == whole.lines
    assert sum(r.chunk.malformed for r in results) == 0
    uuids = [u for r in results for m in r.chunk.messages for u in m.uuids]
    assert sorted(uuids) == sorted(u for m in whole.messages for u in m.uuids)


def test_appended_lines_are_read_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(user_record("first", uuid="u1")))
    first = read_new_records(path, Cursor())
    assert [m.texts for m in first.chunk.messages] == [("first",)]
    with path.open("ab") as handle:
        handle.write(line(user_record("second", uuid="u2")))
    second = read_new_records(path, first.cursor)
    assert [m.texts for m in second.chunk.messages] == [("second",)]
    assert second.cursor == Cursor(path.stat().st_size, "u2")


def test_half_written_last_line_waits_for_its_end(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    full = line(user_record("complete later", uuid="u2"))
    path.write_bytes(line(user_record("done", uuid="u1")) + full[:20])
    first = read_new_records(path, Cursor())
    assert [m.texts for m in first.chunk.messages] == [("done",)]
    with path.open("ab") as handle:
        handle.write(full[20:])
    second = read_new_records(path, first.cursor)
    assert [m.texts for m in second.chunk.messages] == [("complete later",)]
    assert second.chunk.malformed == 0


def test_file_rewritten_under_the_cursor_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(user_record("old one", uuid="u1")) + line(user_record("old two", uuid="u2")))
    cursor = read_new_records(path, Cursor()).cursor
    # Same length, different content: only the uuid check can tell.
    path.write_bytes(line(user_record("new one", uuid="v1")) + line(user_record("new two", uuid="v2")))
    result = read_new_records(path, cursor)
    assert result.restarted and result.reason is not None
    assert [m.texts for m in result.chunk.messages] == [("new one",), ("new two",)]
    assert result.cursor.last_uuid == "v2"


def test_file_truncated_below_the_cursor_restarts(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(user_record("a" * 200, uuid="u1")))
    cursor = read_new_records(path, Cursor()).cursor
    path.write_bytes(line(user_record("b", uuid="u9")))
    result = read_new_records(path, cursor)
    assert result.restarted and "shorter" in (result.reason or "")
    assert [m.texts for m in result.chunk.messages] == [("b",)]


def test_cursor_off_a_line_boundary_restarts(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(user_record("hello", uuid="u1")) * 2)
    result = read_new_records(path, Cursor(5, None))
    assert result.restarted and len(result.chunk.messages) == 2


def test_line_longer_than_a_read_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    huge = line(user_record("x" * 50_000, uuid="big"))
    path.write_bytes(huge + line(user_record("after", uuid="u2")))
    results, cursor = read_all(path, Cursor(), max_bytes=4096)
    assert sum(r.chunk.malformed for r in results) == 0
    texts = [m.texts for r in results for m in r.chunk.messages]
    assert texts == [("x" * 50_000,), ("after",)]
    assert cursor.offset == path.stat().st_size


def test_line_longer_than_the_line_limit_is_skipped_as_malformed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript_io, "MAX_LINE_BYTES", 20_000)
    path = tmp_path / "s.jsonl"
    huge = line(user_record("x" * 50_000, uuid="big"))
    path.write_bytes(huge + line(user_record("after", uuid="u2")))
    results, cursor = read_all(path, Cursor(), max_bytes=4096)
    assert sum(r.chunk.malformed for r in results) == 1
    texts = [m.texts for r in results for m in r.chunk.messages]
    assert texts == [("after",)]
    assert cursor.offset == path.stat().st_size


def test_empty_file_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    result = read_new_records(path, Cursor())
    assert result.error is None and result.chunk.lines == 0 and result.cursor == Cursor()


@pytest.mark.parametrize("kind", ["missing", "directory", "binary", "fifo", "under_a_file"])
def test_unreadable_paths_report_an_error_and_keep_the_cursor(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "t.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "under_a_file":
        path.write_text("x")
        path = path / "child.jsonl"
    cursor = Cursor(10, "u1")
    result = read_new_records(path, cursor)
    assert result.error, kind
    assert result.cursor == cursor and result.chunk.messages == ()


@needs_fixtures
def test_fixture_copied_then_extended_reads_only_the_new_part(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "spotter" / "short.jsonl", path)
    cursor = read_new_records(path, Cursor()).cursor
    with path.open("ab") as handle:
        handle.write(line(user_record("one more prompt", uuid="extra")))
    result = read_new_records(path, cursor)
    assert not result.restarted
    assert [m.texts for m in result.chunk.messages] == [("one more prompt",)]
