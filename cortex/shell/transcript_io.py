"""Cursor-based, bounded reads of a transcript file into parsed chunks. Shell: file reads only."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cortex.core.extract.tasks import task_calls
from cortex.core.extract.transcript import Message, ParsedChunk, Role, line_identity, parse_chunk

MAX_READ_BYTES = 8 * 1024 * 1024
# A single line longer than a read (a tool result of megabytes) is read whole up to this; a
# longer one is skipped as malformed. Memory stays bounded by it.
MAX_LINE_BYTES = 64 * 1024 * 1024
# Lines are a few KB in practice (28 KB is the longest in the fixtures); the backward search
# for the line before the cursor stops here and then trusts the offset.
MAX_VERIFY_BYTES = 1024 * 1024
_WINDOW_BYTES = 64 * 1024
_SNIFF_BYTES = 8 * 1024


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the next read starts: a byte offset and the identity of the line ending there."""

    offset: int = 0
    last_uuid: str | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One bounded read: the parsed chunk, the cursor to store after it, and what happened."""

    chunk: ParsedChunk
    cursor: Cursor  # the cursor to store once the chunk has been processed
    more: bool = False  # stopped at max_bytes; call again from `cursor`
    restarted: bool = False  # the file no longer matched the old cursor; read from 0
    reason: str | None = None  # why it restarted or skipped
    error: str | None = None  # the file could not be read; cursor unchanged


def read_new_records(
    path: Path,
    cursor: Cursor,
    max_bytes: int = MAX_READ_BYTES,
    *,
    include_sidechains: bool = False,
    hold_unanswered: bool = False,
) -> ReadResult:
    """Parse the lines appended since `cursor`, at most `max_bytes` per call; never raises.
    `hold_unanswered` (a session still running): a tool call at the end of the file whose
    result is not written yet is left, with what follows it, for the next read."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return _failed(cursor, f"transcript not found: {path}")
    except OSError as exc:
        return _failed(cursor, f"cannot stat transcript {path}: {exc.strerror or exc}")
    if stat.S_ISDIR(info.st_mode):
        return _failed(cursor, f"transcript path is a directory: {path}")
    if not stat.S_ISREG(info.st_mode):
        return _failed(cursor, f"transcript path is not a regular file: {path}")
    try:
        with path.open("rb") as handle:
            return _read(handle, cursor, max(1, max_bytes), include_sidechains, hold_unanswered)
    except OSError as exc:
        return _failed(cursor, f"cannot read transcript {path}: {exc.strerror or exc}")


def _read(handle: BinaryIO, cursor: Cursor, max_bytes: int, sidechains: bool, hold: bool) -> ReadResult:
    size = os.fstat(handle.fileno()).st_size
    if b"\x00" in _pread(handle, 0, min(size, _SNIFF_BYTES)):
        return _failed(cursor, "not a transcript: the file starts with binary data")
    reason = _mismatch(handle, cursor, size)
    start = 0 if reason else cursor.offset
    data = _pread(handle, start, min(size - start, max_bytes))
    chunk = parse_chunk(data, start, include_sidechains=sidechains)
    more = len(data) == max_bytes and start + len(data) < size
    # Never end a read between a tool call and its result: the two would be parsed apart.
    cut = _turn_boundary(chunk, start) if more else _unfinished_tail(chunk, start) if hold else None
    if more and cut is None and (chunk.lines == 0 or _waiting(chunk)):
        # The next line (a result of megabytes) is longer than the read: take it whole, up to
        # MAX_LINE_BYTES, rather than part a call from its result or skip the line.
        end = _next_line_start(handle, start + len(data), size)
        if end is not None and end - start <= MAX_LINE_BYTES:
            data = _pread(handle, start, end - start)
            chunk = parse_chunk(data, start, include_sidechains=sidechains)
            more = end < size
    if cut is not None:
        data = data[: cut - start]
        chunk = parse_chunk(data, start, include_sidechains=sidechains)
    last = chunk.last_uuid if chunk.lines else (None if reason else cursor.last_uuid)
    if chunk.lines == 0 and more:
        # One line longer than a whole read: skip it as malformed instead of stalling here.
        skip_to = _next_line_start(handle, start + len(data), size)
        if skip_to is not None:
            chunk = ParsedChunk((), skip_to, None, 1, 0, 1)
            return ReadResult(chunk, Cursor(skip_to, None), True, bool(reason), "line too long")
        more = False
    return ReadResult(
        chunk=chunk,
        cursor=Cursor(chunk.next_offset, last),
        more=more,
        restarted=bool(reason),
        reason=reason,
    )


def read_task_history(path: Path, end: int) -> tuple[Message, ...]:
    """The task tools' calls and results in the transcript's first `end` bytes (the lines before
    a chunk), parsed; empty when the file cannot be read. Only those lines are parsed, however
    long the transcript."""
    if end <= 0:
        return ()
    try:
        with path.open("rb") as handle:
            kept = task_calls(_lines_before(handle, end))
    except OSError:
        return ()
    return parse_chunk(b"".join(kept), 0).messages


def _lines_before(handle: BinaryIO, end: int) -> Iterator[bytes]:
    """The complete lines of the file's first `end` bytes, each with its newline."""
    read = 0
    for line in handle:
        read += len(line)
        if read > end or not line.endswith(b"\n"):
            return
        yield line


def _waiting(chunk: ParsedChunk) -> bool:
    return any(u.result is None for m in chunk.messages for u in m.tool_uses)


def _turn_boundary(chunk: ParsedChunk, start: int) -> int | None:
    """Where a read that stopped at its byte limit should end: before the last prompt of the
    chunk (a turn's calls and results then stay together), else before the first call whose
    result is not in the chunk; None when neither leaves anything to read."""
    messages = chunk.messages
    prompts = [i for i, m in enumerate(messages) if _is_prompt(m)]
    unanswered = [i for i, m in enumerate(messages) if any(u.result is None for u in m.tool_uses)]
    for index in (prompts[-1] if prompts else None, unanswered[0] if unanswered else None):
        if index:  # 0 or None: nothing would be left before it
            cut = max(m.end_offset for m in messages[:index])
            if cut > start:
                return cut
    return None


def _unfinished_tail(chunk: ParsedChunk, start: int) -> int | None:
    """Where the finished part of a read ends when its last turn has a call still waiting for
    its result (the client writes the result when the tool returns): before that turn's
    prompt, so the turn is read whole later; None when nothing waits."""
    messages = chunk.messages
    prompts = [i for i, m in enumerate(messages) if _is_prompt(m)]
    waiting = [i for i, m in enumerate(messages) if any(u.result is None for u in m.tool_uses)]
    if not waiting or (prompts and prompts[-1] > waiting[-1]):
        return None  # nothing waits, or a later prompt: the call was abandoned
    first = next(i for i in waiting if not any(p > i for p in prompts))
    turn_start = max((p for p in prompts if p <= first), default=first)
    return max((m.end_offset for m in messages[:turn_start]), default=start)


def _is_prompt(message: Message) -> bool:
    return message.role is Role.USER and bool(message.texts or message.command)


def _mismatch(handle: BinaryIO, cursor: Cursor, size: int) -> str | None:
    """Why the file no longer continues from `cursor` (rewritten or truncated), or None."""
    if cursor.offset <= 0:
        return None
    if cursor.offset > size:
        return f"file is shorter ({size} bytes) than the cursor ({cursor.offset})"
    if _pread(handle, cursor.offset - 1, 1) != b"\n":
        return "the cursor is not at a line boundary any more"
    if cursor.last_uuid is None:
        return None
    line = _line_before(handle, cursor.offset - 1)
    if line is None:
        return None
    if line_identity(line) != cursor.last_uuid:
        return "the line before the cursor changed (file rewritten)"
    return None


def _line_before(handle: BinaryIO, newline_at: int) -> bytes | None:
    """The line that ends at byte `newline_at`, read backwards in windows; None if too long."""
    parts: list[bytes] = []
    pos = newline_at
    while pos > 0 and newline_at - pos < MAX_VERIFY_BYTES:
        begin = max(0, pos - _WINDOW_BYTES)
        window = _pread(handle, begin, pos - begin)
        cut = window.rfind(b"\n")
        if cut >= 0:
            parts.append(window[cut + 1 :])
            return b"".join(reversed(parts))
        parts.append(window)
        pos = begin
    return b"".join(reversed(parts)) if pos == 0 else None


def _next_line_start(handle: BinaryIO, pos: int, size: int) -> int | None:
    while pos < size:
        window = _pread(handle, pos, min(_WINDOW_BYTES, size - pos))
        cut = window.find(b"\n")
        if cut >= 0:
            return pos + cut + 1
        pos += len(window)
    return None


def _pread(handle: BinaryIO, offset: int, length: int) -> bytes:
    if length <= 0:
        return b""
    handle.seek(offset)
    return handle.read(length)


def _failed(cursor: Cursor, error: str) -> ReadResult:
    empty = ParsedChunk((), cursor.offset, cursor.last_uuid, 0, 0, 0)
    return ReadResult(empty, cursor, error=error)
