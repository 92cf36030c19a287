"""Check memories' code anchors against HEAD, cheaply: git's object ids and a cache keyed by HEAD.

An anchor (`cortex.core.code.anchors`) holds git's blob id of a file, or a hash of one symbol's
text, as a memory saw it. At HEAD, one `git cat-file --batch-check` gives every anchored file's
blob id: an unchanged id settles the anchor without reading the file. Only a changed file is
read (a symbol's hash, by blob id, is cached for good) and asked which commit changed it; a file
gone from both HEAD and the work tree is deleted or renamed (`stale.py` marks memories whose
files are all gone: an anchor says which one went, when, and where to). Differences no commit
made since the note (it was written against uncommitted edits) do not count.

Verdicts are cached in `anchors.json` beside the briefing cache, for one HEAD at a time: a
render or a recall at the same HEAD starts no git process. The SessionStart hook never calls
this: it reads the briefing the worker rendered.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cortex.core.code.anchors import Anchor, AnchorCheck, AnchorState, describe, symbol_hash
from cortex.core.code.parse import parse_symbols
from cortex.shell import git, git_objects
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.briefing.anchors")

CACHE_FILE = "anchors.json"
MAX_SYMBOL_FILES = 2_000  # files whose symbol hashes the cache keeps (by blob id)
Verdict = tuple[str, str | None, float | None, str | None]  # state, commit, unix time, renamed to


@dataclass
class HeadCache:
    """What git said at one HEAD: blob ids by path, verdicts by anchor; symbol hashes by blob."""

    head: str
    blobs: dict[str, str | None] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    symbols: dict[str, dict[str, str]] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def load(cls, path: Path | None, head: str) -> HeadCache:
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            data = {}
        symbols = data.get("symbols") if isinstance(data.get("symbols"), dict) else {}
        if not isinstance(data, dict) or data.get("head") != head:
            return cls(head, symbols=symbols or {})
        return cls(head, data.get("blobs") or {}, data.get("verdicts") or {}, symbols or {})

    def save(self, path: Path | None) -> None:
        if path is None or not self.dirty:
            return
        symbols = dict(list(self.symbols.items())[-MAX_SYMBOL_FILES:])
        body = {"head": self.head, "blobs": self.blobs, "verdicts": self.verdicts, "symbols": symbols}
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # a cache: the next check asks git again
            log.debug("anchor cache not written: %s", exc)


def _key(a: Anchor) -> str:
    return "\x1f".join((a.path, a.symbol, a.hash, a.commit or ""))


class _Checker:
    def __init__(self, root: Path, cache: HeadCache) -> None:
        self.root = root
        self.cache = cache

    def blobs(self, paths: Iterable[str]) -> None:
        missing = sorted({p for p in paths if p not in self.cache.blobs})
        if not missing:
            return
        found = git_objects.read_blob_ids(self.root, self.cache.head, missing)
        if found is None:
            return  # git did not answer: nothing is judged
        self.cache.blobs.update(found)
        self.cache.dirty = True

    def symbol_hashes(self, path: str, blob: str) -> dict[str, str] | None:
        if blob not in self.cache.symbols:
            text = git_objects.read_blob_text(self.root, blob)
            if text is None:
                return None
            hashes: dict[str, str] = {}
            for s in parse_symbols(path, text):
                hashes.setdefault(s.qualname, symbol_hash(s.code))
                hashes.setdefault(s.name, symbol_hash(s.code))
            self.cache.symbols[blob] = hashes
            self.cache.dirty = True
        return self.cache.symbols[blob]

    def verdict(self, a: Anchor) -> Verdict | None:
        key = _key(a)
        if key in self.cache.verdicts:
            return self.cache.verdicts[key]
        if a.path not in self.cache.blobs:
            return None  # git could not say
        blob = self.cache.blobs[a.path]
        state = AnchorState.FRESH
        if blob is None:
            if not (self.root / a.path).exists():
                state = AnchorState.DELETED
        elif not a.symbol:
            state = AnchorState.FRESH if blob == a.hash else AnchorState.CHANGED
        else:
            hashes = self.symbol_hashes(a.path, blob)
            if hashes is None:
                return None
            now = hashes.get(a.symbol)
            state = (
                AnchorState.DELETED
                if now is None
                else (AnchorState.FRESH if now == a.hash else AnchorState.CHANGED)
            )
        commit: str | None = None
        when: float | None = None
        renamed: str | None = None
        if state is not AnchorState.FRESH:
            change = git_objects.read_last_change(self.root, a.path, a.commit)
            if change is None and blob is not None:
                state = AnchorState.FRESH  # no commit since the note: it saw uncommitted edits
            elif change is not None:
                commit, when = change[0], change[1].timestamp()
                if blob is None:
                    renamed = git_objects.read_renamed_to(self.root, commit, a.path)
                    state = AnchorState.RENAMED if renamed else AnchorState.DELETED
        found: Verdict = (state.value, commit, when, renamed)
        self.cache.verdicts[key] = found
        self.cache.dirty = True
        return found


def check_anchors(
    root: Path, anchors: Mapping[str, Sequence[Anchor]], cache_file: Path | None = None
) -> dict[str, list[AnchorCheck]]:
    """Memory id -> its anchors that are not fresh at HEAD (memories all fresh are left out)."""
    if not anchors:
        return {}
    head = git.read_head_ref(root).sha  # from `.git`, no process
    if not head:
        return {}
    cache = HeadCache.load(cache_file, head)
    checker = _Checker(root, cache)
    checker.blobs(a.path for found in anchors.values() for a in found)
    out: dict[str, list[AnchorCheck]] = {}
    for memory_id, found in anchors.items():
        for a in found:
            v = checker.verdict(a)
            if v is None or v[0] == AnchorState.FRESH.value:
                continue
            when = datetime.fromtimestamp(v[2], tz=UTC) if v[2] is not None else None
            out.setdefault(memory_id, []).append(AnchorCheck(a, AnchorState(v[0]), v[1], when, v[3]))
    cache.save(cache_file)
    return out


def cache_path(briefing_dir: Path) -> Path:
    """Where the verdicts of the current HEAD are kept."""
    return briefing_dir / CACHE_FILE


def anchor_checks(
    root: Path,
    stores: Iterable[MemoryStore],
    ids: Iterable[str] | None = None,
    cache_file: Path | None = None,
) -> dict[str, list[AnchorCheck]]:
    """The project stores' memories (`ids`, else every active one) whose anchors changed at HEAD."""
    wanted = None if ids is None else sorted(set(ids))
    anchors: dict[str, list[Anchor]] = {}
    for store in stores:
        if wanted is not None and not wanted:
            break
        anchors.update(store.read_anchors(wanted))
    return check_anchors(root, anchors, cache_file)


def marks(checks: Mapping[str, Sequence[AnchorCheck]]) -> dict[str, str]:
    """Memory id -> the mark it carries ("may be stale: ...", "stale: ...")."""
    return {mid: text for mid, found in checks.items() if (text := describe(found))}
