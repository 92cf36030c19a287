"""The briefing's files: cortex's block in the rules file, the per-(branch, cwd) caches, git exclude.

Stdlib only: the SessionStart hook reads these files and must not import anything heavy. The
text helpers (`split_rules_block`, `merge_rules_block`, `digest_text`) are pure; the rest
reads or writes one kind of thing, the briefing's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger("cortex.briefing_files")

BEGIN_MARKER = "<!-- cortex:begin -->"
END_MARKER = "<!-- cortex:end -->"
CACHE_VERSION = 1
STABLE_RECORD = "stable.json"  # the digest of the block cortex last wrote, on every branch
LOCK_FILE = ".lock"
FILE_MODE = 0o644
MAX_CACHE_BYTES = 1_000_000
MAX_RECORDED_DIGESTS = 3
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def read_text(path: Path, max_bytes: int = MAX_CACHE_BYTES) -> str | None:
    """A small text file's content, or None when absent or unreadable."""
    # Not cortex.shell.files.read_text: importing that module pulls in tempfile, which the
    # SessionStart hook (reads only) does not need.
    try:
        with path.open("rb") as fh:
            return fh.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return None


def _read_for_rewrite(path: Path) -> str:
    """All of a user-owned file, undecodable bytes kept as-is (surrogateescape) for writing back."""
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return ""


def _atomic_write(path: Path, text: str, *, sync: bool = True) -> None:
    from cortex.shell.files import atomic_write  # writers only; see read_text

    atomic_write(path, text.encode("utf-8", errors="surrogateescape"), mode=FILE_MODE, sync=sync)


# -- the rules file block (pure helpers) ----------------------------------------------------
def split_rules_block(text: str) -> tuple[str, str | None, str]:
    """(text before, body of cortex's first block or None, text after).

    A begin marker without an end marker owns the rest of the file: cortex wrote everything
    after its marker, so nothing of the user's is lost by replacing it.
    """
    lines = text.splitlines(keepends=True)
    begin = next((i for i, ln in enumerate(lines) if ln.strip() == BEGIN_MARKER), None)
    if begin is None:
        return text, None, ""
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].strip() == END_MARKER), len(lines))
    body = "".join(lines[begin + 1 : end]).strip("\n")
    return "".join(lines[:begin]), body, "".join(lines[end + 1 :])


def defuse_markers(body: str) -> str:
    """The body with every line that reads as one of cortex's block markers made inert, so no
    stored text can end (or open) the block."""
    markers = (BEGIN_MARKER, END_MARKER)
    return "\n".join(
        line.replace("<!--", "<!-") if line.strip() in markers else line for line in body.split("\n")
    )


def merge_rules_block(existing: str, body: str | None) -> str:
    """The rules file with cortex's block set to `body` (None removes it); user text is kept.

    The block goes where the first one was (every other cortex block is removed), else at
    the end. Returns "" when nothing but whitespace would be left.
    """
    before, old, after = split_rules_block(existing)
    while old is not None:
        rest_before, old_again, rest_after = split_rules_block(after)
        if old_again is None:
            break
        after = rest_before + rest_after
    block = f"{BEGIN_MARKER}\n{defuse_markers(body.strip())}\n{END_MARKER}\n" if body and body.strip() else ""
    if old is None:
        # No blank line before the block: removing it later gives back the user's exact text.
        joiner = "" if not existing or existing.endswith("\n") else "\n"
        text = existing + joiner + block if block else existing
    else:
        text = before + block + after
    return text if text.strip() else ""


def digest_text(text: str) -> str:
    """A short, stable fingerprint of a briefing part (surrounding whitespace ignored)."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:20]


# -- the rules file (I/O) -------------------------------------------------------------------
def read_rules_block(path: Path) -> str | None:
    """The body of cortex's block in the rules file; None when the file or block is absent."""
    text = read_text(path)
    return None if text is None else split_rules_block(text)[1]


def write_rules_block(path: Path, body: str | None) -> bool:
    """Set cortex's block (None removes it) atomically; delete the file if nothing else is in it.

    Returns True when the file changed. Raises OSError when it cannot be written.
    """
    existing = _read_for_rewrite(path)
    merged = merge_rules_block(existing, body)
    if merged == existing:
        return False
    if not merged:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return bool(existing)
    _atomic_write(path, merged)
    return True


def ensure_git_exclude(common_dir: Path, entry: str) -> bool:
    """Add `entry` to `<git common dir>/info/exclude` unless it is there; True when added.

    The user's tracked `.gitignore` is never touched: the exclude file is local to the clone.
    """
    path = common_dir / "info" / "exclude"
    text = _read_for_rewrite(path)
    present = {line.strip() for line in text.splitlines()}
    if entry in present or entry.lstrip("/") in present:
        return False
    joiner = "" if not text or text.endswith("\n") else "\n"
    _atomic_write(path, f"{text}{joiner}{entry}\n")
    return True


# -- the caches ------------------------------------------------------------------------------
# NamedTuples, not dataclasses: the SessionStart hook imports this module (see cortex.paths).
class CachedBriefing(NamedTuple):
    """A rendered briefing for one (branch, cwd), as SessionStart and `cortex brief` read it."""

    branch: str | None  # branch name, or the sha when detached; None outside git
    cwd: str  # session directory relative to the project root ("" = the root)
    head: str | None
    rendered_at: str  # ISO 8601, UTC
    stable_digest: str | None  # digest of the block written to the rules file; None = not written
    stable: str
    moment: str
    full: str
    meta: dict[str, Any]  # per part: shown, dropped, withheld ...
    version: int = CACHE_VERSION


class StableRecord(NamedTuple):
    """The blocks cortex wrote into the rules file lately, newest first (shared by every branch).

    More than one, because the record is written just before the rules file: a session that
    starts in between, or after a failed write, still sees a block cortex wrote.
    """

    digests: tuple[str, ...]
    written_at: str


def cache_slug(branch: str | None, cwd: str) -> str:
    """File name stem for a (branch, cwd) cache: readable prefix, collision-proof hash."""
    readable = _SLUG_UNSAFE.sub("-", f"{branch or 'no-branch'}").strip("-")[:40] or "branch"
    key = hashlib.sha256(f"{branch or ''}\0{cwd}".encode()).hexdigest()[:12]
    return f"{readable}-{key}"


def _load_json(path: Path) -> dict[str, Any] | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        log.warning("ignoring unreadable briefing cache %s", path)
        return None
    return data if isinstance(data, dict) else None


_STR_FIELDS = ("cwd", "rendered_at", "stable", "moment", "full")
_OPTIONAL_STR_FIELDS = ("branch", "head", "stable_digest")


def _cache_from(data: dict[str, Any] | None) -> CachedBriefing | None:
    # A cache is a hint: anything malformed (hand-edited, another version) reads as absent.
    if not data or data.get("version") != CACHE_VERSION:
        return None
    fields: dict[str, Any] = {k: data.get(k) for k in CachedBriefing._fields}
    fields["meta"] = fields["meta"] if isinstance(fields["meta"], dict) else {}
    if not all(isinstance(fields[k], str) for k in _STR_FIELDS):
        return None
    if not all(fields[k] is None or isinstance(fields[k], str) for k in _OPTIONAL_STR_FIELDS):
        return None
    return CachedBriefing(**fields)


def read_cache(briefing_dir: Path, branch: str | None, cwd: str) -> CachedBriefing | None:
    """The cache for (branch, cwd), or None when absent, unreadable or from another version."""
    return _cache_from(_load_json(briefing_dir / f"{cache_slug(branch, cwd)}.json"))


def read_latest_cache(briefing_dir: Path, branch: str | None = None) -> CachedBriefing | None:
    """The most recently rendered cache, of `branch` (any directory) when given, else of any."""
    try:
        paths = [p for p in briefing_dir.glob("*.json") if p.name != STABLE_RECORD]
    except OSError:
        return None
    caches = [c for c in (_cache_from(_load_json(p)) for p in paths) if c is not None]
    if branch is not None:
        caches = [c for c in caches if c.branch == branch]
    return max(caches, key=lambda c: c.rendered_at, default=None)


def write_cache(briefing_dir: Path, cached: CachedBriefing) -> Path:
    """Write the (branch, cwd) cache atomically; returns its path. Raises OSError. Not forced to
    disk (the worker writes it after every turn): lost to a power cut, it reads as unreadable,
    which every reader takes for no cache (SessionStart then renders)."""
    path = briefing_dir / f"{cache_slug(cached.branch, cached.cwd)}.json"
    _atomic_write(path, json.dumps(cached._asdict(), ensure_ascii=False, indent=1), sync=False)
    return path


def read_stable_record(briefing_dir: Path) -> StableRecord | None:
    """What cortex wrote into the rules file lately, or None."""
    data = _load_json(briefing_dir / STABLE_RECORD)
    if not data or not isinstance(data.get("digests"), list):
        return None
    digests = tuple(d for d in data["digests"] if isinstance(d, str))
    return StableRecord(digests[:MAX_RECORDED_DIGESTS], str(data.get("written_at", "")))


def write_stable_record(briefing_dir: Path, digest: str | None, written_at: str) -> StableRecord:
    """Record that the rules file is about to carry `digest` (None: no block). Raises OSError."""
    previous = read_stable_record(briefing_dir)
    earlier = previous.digests if previous else ()
    digests = ((digest,) if digest else ()) + tuple(d for d in earlier if d != digest)
    record = StableRecord(digests[:MAX_RECORDED_DIGESTS], written_at)
    if previous is not None and previous.digests == record.digests:
        return previous  # the blocks it records already: no write (and no fsync) after every turn
    _atomic_write(briefing_dir / STABLE_RECORD, json.dumps(record._asdict()))
    return record
