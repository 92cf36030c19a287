"""Store checkpoints: SQLite online backups beside the store, listed, pruned and restored atomically.

A checkpoint is `<store stem>-<UTC time>-<n>-<reason>.db` in a `checkpoints/` folder next to the
store (`.memory/checkpoints/` for a project), plus a `.json` sidecar with its metadata. The
backup is written to a temporary name and renamed, and the sidecar is written last, so a
process killed half-way leaves no checkpoint that looks complete. Restoring copies the pages
back with the backup API inside one write transaction of the live file: other connections
see the old state or the new one, never a mix, and a kill mid-restore leaves the old state.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cortex.errors import NotFound, StoreError
from cortex.shell.failpoints import failpoint
from cortex.shell.files import atomic_write, file_lock, read_text
from cortex.store.port import Checkpoint
from cortex.store.sqlite import connection as db

KEEP_CHECKPOINTS = 5  # per store; a checkpoint costs one copy of the store on disk
CHECKPOINT_DIR = "checkpoints"
_SAFE = re.compile(r"[^a-z0-9_]+")


def checkpoint_dir(store_path: Path) -> Path:
    """Where checkpoints of the store at `store_path` live."""
    return store_path.parent / CHECKPOINT_DIR


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _free_name(folder: Path, stem: str, at: datetime, reason: str) -> Path:
    slug = _SAFE.sub("_", reason.lower()).strip("_") or "manual"
    for n in range(1000):
        path = folder / f"{stem}-{_stamp(at)}-{n:03d}-{slug}.db"
        if not path.exists() and not path.with_suffix(".json").exists():
            return path
    raise StoreError(f"too many checkpoints at {_stamp(at)} in {folder}", "remove old checkpoints")


def write_checkpoint(
    conn: db.Connection, *, reason: str, run: str, at: datetime, digest: Callable[[], str]
) -> Checkpoint:
    """Back the store up (SQLite online backup) into its checkpoint folder; keep the newest few.

    `digest` is computed in the same read snapshot as the backup, so the sidecar's digest is
    the digest of exactly what was saved even while other sessions write.
    """
    folder = checkpoint_dir(conn.path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # One writer at a time: a leftover temp file is then a killed writer's, never the
        # backup another process (the worker's consolidation, `cortex consolidate`) is writing.
        with file_lock(checkpoint_lock(conn.path)):
            return _write(conn, folder, reason=reason, run=run, at=at, digest=digest)
    except OSError as exc:
        raise db.translate(exc, folder) from exc


def checkpoint_lock(store_path: Path) -> Path:
    """The lock a checkpoint writer of the store at `store_path` holds while it writes."""
    return checkpoint_dir(store_path) / f".{store_path.stem}.lock"


def _write(
    conn: db.Connection, folder: Path, *, reason: str, run: str, at: datetime, digest: Callable[[], str]
) -> Checkpoint:
    """The checkpoint itself, under the writers' lock (its OSErrors are write_checkpoint's to
    translate)."""
    try:
        _remove_partial(folder, conn.path.stem)
        path = _free_name(folder, conn.path.stem, at, reason)
        tmp = path.with_name(path.name + ".tmp")
        target = conn.driver.module.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("BEGIN")
            try:
                saved = digest()
                conn.raw.backup(target)
            finally:
                conn.execute("COMMIT")
            # A checkpoint is read alone: no -wal/-shm files beside it.
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
        failpoint("checkpoint.after_backup")  # a complete backup under its temporary name
        tmp.replace(path)
        failpoint("checkpoint.after_rename")  # no sidecar yet: not listed, removed by the next one
        cp = Checkpoint(path, str(conn.path), reason, run, at.astimezone(UTC).isoformat(), saved)
        atomic_write(cp.sidecar, json.dumps(cp.to_dict(), indent=2) + "\n")
    except conn.driver.module.Error as exc:
        raise db.translate(exc, conn.path) from exc
    prune_checkpoints(conn.path, KEEP_CHECKPOINTS)
    return cp


def _remove_partial(folder: Path, stem: str) -> None:
    """Delete leftovers of a checkpoint whose writer was killed (temp files, no sidecar)."""
    # The backup under its temporary name, and a sidecar's (`atomic_write`'s temp file).
    for pattern in (f"{stem}-[0-9]*.db.tmp", f".{stem}-[0-9]*.json.*.tmp"):
        for leftover in folder.glob(pattern):
            with contextlib.suppress(OSError):
                leftover.unlink()
    for orphan in folder.glob(f"{stem}-[0-9]*.db"):
        if not orphan.with_suffix(".json").exists():
            with contextlib.suppress(OSError):
                orphan.unlink()


def _load(sidecar: Path) -> Checkpoint | None:
    text = read_text(sidecar)
    if text is None:
        return None
    try:
        d = json.loads(text)
        path = sidecar.with_suffix(".db")
        if not path.exists():
            return None
        return Checkpoint(
            path,
            str(d["store"]),
            str(d["reason"]),
            str(d.get("run", "")),
            str(d["created"]),
            str(d.get("digest", "")),
            d.get("restored_at"),
        )
    except (ValueError, KeyError, TypeError):
        return None


def list_checkpoints(store_path: Path) -> list[Checkpoint]:
    """Complete checkpoints of one store, newest first."""
    folder = checkpoint_dir(store_path)
    if not folder.is_dir():
        return []
    found = [_load(p) for p in folder.glob(f"{store_path.stem}-[0-9]*.json")]
    return sorted((c for c in found if c is not None), key=lambda c: c.name, reverse=True)


def find_checkpoint(store_paths: list[Path], ref: str) -> Checkpoint:
    """A checkpoint by name, unique name prefix or path, among the checkpoints of these stores."""
    every = [c for p in store_paths for c in list_checkpoints(p)]
    wanted = Path(ref).stem if ref.endswith((".db", ".json")) else ref
    exact = [c for c in every if c.name == wanted or str(c.path) == ref]
    matches = exact or [c for c in every if c.name.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no checkpoint named {ref!r}", "list them with `cortex restore --list`")
    shown = ", ".join(c.name for c in matches[:3])
    raise NotFound(f"checkpoint {ref!r} is ambiguous ({shown})", "give the full name")


def prune_checkpoints(store_path: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` checkpoints of a store; returns what was removed."""
    removed = []
    for cp in list_checkpoints(store_path)[keep:]:
        for p in (cp.path, cp.sidecar):
            with contextlib.suppress(OSError):
                p.unlink()
        removed.append(cp.path)
    return removed


def restore_checkpoint(conn: db.Connection, cp: Checkpoint) -> None:
    """Replace the live store's content with the checkpoint's, in one atomic step."""
    if conn.readonly:
        raise StoreError(f"{conn.path} is open read-only; cannot restore into it", "")
    db.check_file(cp.path)
    mod = conn.driver.module
    try:
        source = mod.connect(cp.path.resolve().as_uri() + "?mode=ro", uri=True)
    except mod.Error as exc:
        raise db.translate(exc, cp.path) from exc
    try:
        app_id = source.execute("PRAGMA application_id").fetchone()[0]
        if app_id != db.APPLICATION_ID:
            raise StoreError(
                f"{cp.path} is not a cortex store checkpoint; nothing was restored",
                "pick another checkpoint (`cortex restore --list`)",
            )
        source.backup(conn.raw)
    except mod.Error as exc:
        raise db.translate(exc, conn.path) from exc
    finally:
        source.close()


def mark_restored(cp: Checkpoint, at: datetime) -> Checkpoint:
    """Record in the sidecar that this checkpoint was restored (a rollback happens once)."""
    done = Checkpoint(
        cp.path, cp.store, cp.reason, cp.run, cp.created, cp.digest, at.astimezone(UTC).isoformat()
    )
    atomic_write(cp.sidecar, json.dumps(done.to_dict(), indent=2) + "\n")
    return done
