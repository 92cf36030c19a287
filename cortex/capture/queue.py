"""The capture queue: one small JSON file per hook trigger under `.memory/queue/`. Stdlib only.

Hooks write entries (atomically, named so they sort by time); the worker reads them, keeps
the last entry per session, and deletes files only after their work has committed. A file
that cannot be parsed is set aside as `*.bad` so it is neither lost nor retried forever.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cortex.core.text import as_text
from cortex.shell.files import atomic_write

log = logging.getLogger("cortex.capture.queue")

QUEUE_DIR = "queue"
SUFFIX = ".json"
BAD_SUFFIX = ".bad"
MAX_ENTRY_BYTES = 1_000_000
QUEUE_FILE_MODE = 0o600  # readable by its owner only
# The Stop payload's last message is never written down (it is not redacted yet): only a digest
# of its head, which tells the worker whether the transcript holds the turn's end yet.
PROBE_CHARS = 160
_WS = re.compile(r"\s+")
_COUNTER = itertools.count()


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One trigger: which transcript to read and what the hook knew at that moment."""

    event: str
    session_id: str
    transcript_path: str
    cwd: str = ""
    last_message_probe: str = ""  # `message_probe` of the Stop payload's last message
    closed: bool = False
    at: str = ""


@dataclass(frozen=True, slots=True)
class SessionWork:
    """The work for one session: its latest entry and every queue file it stands for."""

    entry: QueueEntry
    files: tuple[Path, ...]
    closed: bool  # any entry of the session said it ended


def message_probe(text: str) -> str:
    """A digest of a message's head (whitespace collapsed): enough to recognise the message in
    the transcript, nothing to read it back from. "" for an empty message."""
    head = _WS.sub(" ", text).strip()[:PROBE_CHARS]
    return hashlib.sha256(head.encode("utf-8", "surrogatepass")).hexdigest()[:32] if head else ""


def queue_dir(store_dir: Path) -> Path:
    """Where the queue files of a project live."""
    return store_dir / QUEUE_DIR


def write_entry(store_dir: Path, entry: QueueEntry) -> Path:
    """Add an entry; the name sorts by time, then by process and a per-process counter."""
    name = f"{time.time_ns():020d}-{os.getpid():07d}-{next(_COUNTER):04d}{SUFFIX}"
    path = queue_dir(store_dir) / name
    data = asdict(entry)
    atomic_write(path, json.dumps(data, ensure_ascii=False), mode=QUEUE_FILE_MODE)
    return path


def list_files(store_dir: Path) -> list[Path]:
    """Queue files, oldest first (temp files of writes in progress are not listed)."""
    try:
        names = sorted(n for n in os.listdir(queue_dir(store_dir)) if n.endswith(SUFFIX) and n[0] != ".")
    except OSError:
        return []
    return [queue_dir(store_dir) / n for n in names]


def parse_entry(raw: bytes) -> QueueEntry | None:
    """An entry from a queue file's bytes; None when it is not one."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    session = data.get("session_id")
    path = data.get("transcript_path")
    if not isinstance(session, str) or not session or not isinstance(path, str) or not path:
        return None

    def text(key: str) -> str:
        return as_text(data.get(key))

    return QueueEntry(
        event=text("event"),
        session_id=session,
        transcript_path=path,
        cwd=text("cwd"),
        # A queue file an older version wrote may still hold the message itself.
        last_message_probe=text("last_message_probe") or message_probe(text("last_assistant_message")),
        closed=data.get("closed") is True,
        at=text("at"),
    )


def read_work(store_dir: Path, skip: frozenset[Path] = frozenset()) -> list[SessionWork]:
    """The queue grouped by session, oldest session first; the last entry of each session wins."""
    grouped: dict[str, list[tuple[Path, QueueEntry]]] = {}
    for path in list_files(store_dir):
        if path in skip:
            continue
        try:
            with path.open("rb") as fh:
                raw = fh.read(MAX_ENTRY_BYTES + 1)
        except FileNotFoundError:
            continue  # taken by a worker that finished meanwhile
        except OSError as exc:
            log.warning("queue file %s unreadable (%s); left in place", path.name, exc)
            continue
        entry = parse_entry(raw) if len(raw) <= MAX_ENTRY_BYTES else None
        if entry is None:
            set_aside(path)
            continue
        grouped.setdefault(entry.session_id, []).append((path, entry))
    return [
        SessionWork(
            entry=items[-1][1],
            files=tuple(p for p, _ in items),
            closed=any(e.closed for _, e in items),
        )
        for items in grouped.values()
    ]


def set_aside(path: Path) -> None:
    """Rename a queue file that is not an entry to `*.bad`, out of the worker's way."""
    log.warning("queue file %s is not a cortex queue entry; set aside as %s", path.name, BAD_SUFFIX)
    with contextlib.suppress(OSError):
        path.replace(path.with_name(path.name + BAD_SUFFIX))


def delete_files(paths: tuple[Path, ...] | list[Path]) -> None:
    """Remove queue files whose work has committed."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
