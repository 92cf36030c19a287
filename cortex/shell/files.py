"""Atomic file writes and inter-process file locks (stdlib only: the hook path uses them)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None, sync: bool = True) -> None:
    """Write via a temp file in the same directory + rename, so readers never see half a file.
    Without `sync` the data is not forced to disk first: for a cache that is written again often
    and whose loss (an empty file after a power cut) its readers treat as absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    import tempfile  # a write: the hooks that only read never pay for its import

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_text(path: Path, max_bytes: int = 4_000_000) -> str | None:
    """A small text file's content, or None when absent/unreadable; never raises."""
    try:
        with path.open("rb") as fh:
            return fh.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return None


class LockBusy(Exception):
    """The lock is held by another process (non-blocking acquire)."""


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int, blocking: bool) -> None:
        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK
        try:
            msvcrt.locking(fd, mode, 1)
        except OSError as exc:
            raise LockBusy(str(exc)) from exc

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int, blocking: bool) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError as exc:
            raise LockBusy(str(exc)) from exc

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def file_lock(path: Path, *, blocking: bool = True, timeout_s: float | None = None) -> Iterator[None]:
    """An exclusive advisory lock on `path` (created if needed); released even if the holder dies.

    Non-blocking: raises LockBusy at once. With `timeout_s`: polls, then raises LockBusy.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if timeout_s is None:
            _lock(fd, blocking)
        else:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    _lock(fd, False)
                    break
                except LockBusy:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.02)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
