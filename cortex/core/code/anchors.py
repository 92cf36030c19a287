"""Code anchors: what a memory saw of the files and symbols it names, and how to say it changed. Pure.

A memory that names a file (`app/config.py`), a symbol in one (`app/config.py:Settings`), or a
symbol the splitter finds in a file it names, records an anchor per reference: git's blob id of
the file, or a hash of the symbol's text, and the commit HEAD was at. Later the anchor is
checked against HEAD (`cortex.briefing.anchors`); a changed anchor marks the memory "may be
stale", a deleted or renamed one "stale".
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # recall imports this module: the splitter's patterns compile only when used
    from cortex.core.code.parse import CodeSymbol

MAX_REFERENCES = 12  # anchors per memory: a note naming more is a listing, not a claim about code
MIN_SYMBOL_CHARS = 3  # shorter names (`a`, `id`) match too many words of prose
MAX_LISTED = 2  # anchors a mark names; the rest are counted
_WORD = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")


class AnchorState(StrEnum):
    FRESH = "fresh"
    CHANGED = "changed"  # the file or symbol differs at HEAD: "may be stale"
    DELETED = "deleted"  # the file, or the symbol in it, is gone at HEAD: "stale"
    RENAMED = "renamed"  # the file moved at HEAD: "stale"


SEVERITY = {AnchorState.FRESH: 0, AnchorState.CHANGED: 1, AnchorState.RENAMED: 2, AnchorState.DELETED: 3}


@dataclass(frozen=True, slots=True)
class Anchor:
    """What a memory saw of one file (symbol "") or one symbol of it."""

    path: str  # relative to the project root, `/`-separated
    symbol: str  # qualified name, or "" for the whole file
    hash: str  # git's blob id of the file, or `symbol_hash` of the symbol's text
    commit: str | None  # HEAD when it was recorded (None outside git or before a first commit)
    at: datetime  # when it was recorded
    flagged: str | None = None  # the HEAD at which the worker found it changed (and demoted it)
    blob: str | None = None  # git's blob id of the whole file when recorded (unchanged: fresh)

    @property
    def label(self) -> str:
        return f"{self.path}:{self.symbol}" if self.symbol else self.path


@dataclass(frozen=True, slots=True)
class AnchorCheck:
    """An anchor against HEAD: its state and the commit that changed it (when known)."""

    anchor: Anchor
    state: AnchorState
    commit: str | None = None  # the commit that last changed (deleted, renamed) it
    when: datetime | None = None  # that commit's time
    renamed_to: str | None = None


def blob_id(data: bytes) -> str:
    """The id git gives a file of these bytes (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def symbol_hash(code: str) -> str:
    """A hash of a symbol's text that ignores trailing whitespace and line endings."""
    text = "\n".join(line.rstrip() for line in code.splitlines()).strip("\n")
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


@functools.cache
def _path_pattern() -> re.Pattern[str]:
    """A relative path with a known source extension, optionally `:Symbol` or `::Symbol` after it."""
    from cortex.core.code.parse import LANGUAGES

    exts = "|".join(sorted((re.escape(e[1:]) for e in LANGUAGES), key=len, reverse=True))
    return re.compile(
        rf"(?<![\w./-])(?P<path>(?:[\w.-]+/)*[\w.-]+\.(?:{exts}))(?![\w-]|\.\w)"
        r"(?::{1,2}(?P<symbol>[A-Za-z_][\w.]*))?"
    )


def named_paths(content: str, files: Sequence[str] = ()) -> dict[str, set[str]]:
    """Paths a memory names (its recorded files and path-like words of its text) -> the symbols
    named with them (`path:Symbol`); the caller keeps only paths that exist in the project."""
    out: dict[str, set[str]] = {}
    for f in files:
        out.setdefault(f, set())
    for m in _path_pattern().finditer(content):
        path = m.group("path").removeprefix("./")
        if path.startswith("../") or "/../" in path:
            continue
        found = out.setdefault(path, set())
        if m.group("symbol"):
            found.add(m.group("symbol").rstrip("."))
    return out


def named_symbols(
    content: str, symbols: Iterable[CodeSymbol], explicit: Iterable[str] = ()
) -> list[CodeSymbol]:
    """The symbols of one file the memory names: `explicit` ones (`path:Symbol`), else any
    whose name (or qualified name) the text uses as a word. Methods inside a named class are
    left to the class."""
    words = set(_WORD.findall(content))
    words |= {w.rsplit(".", 1)[-1] for w in words if "." in w}
    wanted = set(explicit)
    chosen: list[CodeSymbol] = []
    for s in symbols:
        if s.kind == "module":
            continue
        if wanted:
            hit = s.qualname in wanted or (s.name in wanted and "." not in s.qualname)
        else:
            hit = len(s.name) >= MIN_SYMBOL_CHARS and (s.qualname in words or s.name in words)
        if hit:
            chosen.append(s)
    names = {s.qualname for s in chosen}
    return [s for s in chosen if "." not in s.qualname or s.qualname.rsplit(".", 1)[0] not in names]


def worst(checks: Sequence[AnchorCheck]) -> list[AnchorCheck]:
    """The checks that are not fresh, the most severe first (then by label)."""
    bad = [c for c in checks if c.state is not AnchorState.FRESH]
    return sorted(bad, key=lambda c: (-SEVERITY[c.state], c.anchor.label))


def is_gone(checks: Sequence[AnchorCheck]) -> bool:
    """Whether any of `checks` says the anchored code is gone (deleted or renamed): "stale"."""
    return any(c.state in (AnchorState.DELETED, AnchorState.RENAMED) for c in checks)


def _after(check: AnchorCheck) -> str:
    if check.when is None:
        return "since this note"
    # A commit after the note's in history; its time has whole seconds and may lag a clock.
    seconds = (check.when - check.anchor.at).total_seconds()
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} after this note"
    return "right after this note"


def _one(check: AnchorCheck) -> str:
    where = f" in {check.commit[:7]}" if check.commit else ""
    when = _after(check)
    label = f"`{check.anchor.label}`"
    if check.state is AnchorState.RENAMED and check.renamed_to:
        return f"{label} renamed to `{check.renamed_to}`{where} ({when})"
    verb = "deleted" if check.state is AnchorState.DELETED else "changed"
    return f"{label} {verb}{where} ({when})"


def describe(checks: Sequence[AnchorCheck]) -> str:
    """The mark a memory carries: "may be stale: `app/config.py:Settings` changed in 4f2c1e0
    (3 days after this note)", "stale: ..." when an anchor is gone; "" when all are fresh."""
    bad = worst(checks)
    if not bad:
        return ""
    head = "stale" if is_gone(bad) else "may be stale"
    listed = "; ".join(_one(c) for c in bad[:MAX_LISTED])
    more = f" and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
    return f"{head}: {listed}{more}"
