"""Helpers for the plugin runtime tests: call hooks in process, run the worker, read stores back."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cortex.core.model import Scope
from cortex.paths import STORE_DIR
from cortex.plugin import hooks, worker
from cortex.shell.files import file_lock
from cortex.store.sqlite.store import Store
from tests.support.transcript_builders import FIXTURES, assistant_record, line, user_record

REPO = Path(__file__).resolve().parents[2]
LAUNCH = REPO / "hooks" / "launch.py"
DEMO_TRANSCRIPT = REPO / "cortex" / "data" / "demo_transcript.jsonl"
SESSION = "5e551011-0000-4000-8000-000000000001"
CURSORS_SQL = "SELECT session_id, transcript_path, byte_offset, last_uuid, malformed, closed FROM cursors"

needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"shared transcript fixtures not found at {FIXTURES}"
)

__all__ = ["FIXTURES", "assistant_record", "line", "user_record"]


def run_hook(
    event: str, payload: Mapping[str, Any] | bytes | str, env: Mapping[str, str] | None = None
) -> str:
    """Call `cortex.plugin.hooks.main` in this process; returns what it printed (asserting exit 0)."""
    raw = (
        payload
        if isinstance(payload, bytes)
        else (payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8"))
    )
    out = io.StringIO()
    assert hooks.main(event, io.BytesIO(raw), out, env) == 0
    return out.getvalue()


@contextlib.contextmanager
def worker_lock_held(project: Path) -> Iterator[None]:
    """Hold the project's worker lock, as a running worker would: hooks then only queue."""
    with file_lock(project / STORE_DIR / worker.LOCK_FILE, blocking=False):
        yield


def stop_payload(
    project: Path, transcript: Path, session: str = SESSION, message: str = ""
) -> dict[str, Any]:
    """A Stop hook input as Claude Code 2.1.330 sends it."""
    return {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": message,
    }


def queue_stop(project: Path, transcript: Path, session: str = SESSION, message: str = "") -> None:
    """The Stop hook with a worker 'running': the session is queued and no process starts."""
    with worker_lock_held(project):
        assert run_hook("Stop", stop_payload(project, transcript, session, message)) == ""


def capture(
    project: Path, transcript: Path, session: str = SESSION, message: str = ""
) -> worker.WorkerReport:
    """Stop hook, then the worker in this process (no waiting for a lagging transcript)."""
    queue_stop(project, transcript, session, message)
    return worker.run(project, lag_wait_s=0.0)


def queue_files(project: Path) -> list[Path]:
    folder = project / STORE_DIR / "queue"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def open_store(path: Path, scope: Scope) -> Store:
    return Store.open(path, scope)


def snapshot(project: Path, home: Path) -> dict[str, Any]:
    """The logical content of both stores: memories, edges (by content hash) and cursors."""
    out: dict[str, Any] = {}
    for scope, path in (
        (Scope.PROJECT, project / STORE_DIR / "cortex.db"),
        (Scope.GLOBAL, home / "cortex-global.db"),
    ):
        if not path.exists():
            out[scope.value] = None
            continue
        store = open_store(path, scope)
        try:
            memories = store.list_memories(statuses=None)
            by_id = {m.id: m.content_hash for m in memories}
            out[scope.value] = {
                "memories": sorted(
                    (
                        m.content_hash,
                        m.type.value,
                        m.content,
                        m.summary,
                        round(m.confidence, 4),
                        m.priority,
                        m.pinned,
                        m.tags,
                        (
                            m.source.session_id,
                            m.source.transcript_offset,
                            m.source.branch,
                            m.source.files,
                            m.source.said_at,
                            m.source.record,
                        ),
                        m.access_count,
                        m.status.value,
                    )
                    for m in memories
                ),
                "edges": sorted(
                    (by_id.get(e.source), by_id.get(e.target), e.type.value, e.strength, e.status.value)
                    for e in store.edges()
                ),
                "cursors": sorted(tuple(r) for r in store.conn.execute(CURSORS_SQL)),
            }
        finally:
            store.close()
    return out


def inserts_by_hash(path: Path, scope: Scope = Scope.PROJECT) -> Counter[str]:
    """How many times the journal records an insert of each content hash."""
    store = open_store(path, scope)
    try:
        rows = store.journal_rows()
    finally:
        store.close()
    return Counter(r["payload"].get("content_hash") for r in rows if r["op"] == "insert")


def memory_count(path: Path, scope: Scope = Scope.PROJECT) -> int:
    if not path.exists():
        return 0
    store = open_store(path, scope)
    try:
        return len(store.list_memories(statuses=None))
    finally:
        store.close()


def files_under(*paths: Path) -> list[Path]:
    """Every regular file at or below the given paths (missing ones ignored)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(f for f in p.rglob("*") if f.is_file())
        elif p.is_file():
            out.append(p)
    return out


def occurrences(needle: str, files: list[Path]) -> list[str]:
    """Files whose bytes contain `needle` (as UTF-8)."""
    raw = needle.encode("utf-8")
    return [str(f) for f in files if raw in f.read_bytes()]


@contextlib.contextmanager
def read_only(*dirs: Path) -> Iterator[None]:
    """Make directories unwritable, even for root (an immutable flag), and restore them after."""
    if os.geteuid() != 0:
        modes = {d: d.stat().st_mode for d in dirs}
        for d in dirs:
            d.chmod(0o555)
        try:
            yield
        finally:
            for d, mode in modes.items():
                d.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root without chattr: no way to make a directory read-only")
    done = []
    try:
        for d in dirs:
            proc = subprocess.run([chattr, "+i", str(d)], capture_output=True, check=False)
            if proc.returncode != 0:
                pytest.skip(f"running as root and chattr +i failed: {proc.stderr.decode().strip()}")
            done.append(d)
        yield
    finally:
        for d in done:
            subprocess.run([chattr, "-i", str(d)], capture_output=True, check=False)


def write_transcript(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line(r) for r in records))
    return path


def decision_session(session: str = SESSION) -> list[dict[str, Any]]:
    """A small transcript with an explicit tag, a decision, and a failing-then-passing test."""
    recs: list[dict[str, Any]] = [
        user_record(
            "Should the job queue use Redis or Postgres advisory locks?", uuid="u1", sessionId=session
        ),
        assistant_record(
            "msg_1",
            {
                "type": "text",
                "text": "We decided to use Postgres advisory locks instead of Redis, because the app "
                "already runs Postgres and one less service is simpler to operate.\n\n"
                "[MEMORY: gotcha] Advisory locks are per connection, so pgbouncer in transaction "
                "mode silently drops them.",
            },
            uuid="a1",
            sessionId=session,
        ),
    ]
    return recs
