"""Team memory rules: the repository's identity, what may be shared, the team's copy. Pure.

A team store holds the memories developers of one repository share: decisions, conventions,
architecture, gotchas and code descriptions, never progress and never anything marked private.
Its namespace is the repository's identity, the remote URL with what differs between clones of
one repository (scheme, user, port, `.git`, case) taken out. A shared memory keeps its id in the
team store; its copy passes the sanitising gate again and carries who shared it as a tag.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from cortex.core.lifecycle.consolidate import CONTRADICTION_JACCARD
from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.render import SHARED_BY as SHARED_BY_TAG
from cortex.core.text import jaccard, word_set
from cortex.core.write.distinct import POLARITY_WORDS, flips
from cortex.core.write.sanitise import clean_field, sanitise_memory

SHAREABLE_TYPES: tuple[MemoryType, ...] = (
    MemoryType.DECISION,
    MemoryType.PATTERN,  # conventions
    MemoryType.ARCHITECTURE,
    MemoryType.GOTCHA,
    MemoryType.CODE_DESCRIPTION,
)
SHAREABLE_TYPE_NAMES = tuple(t.value for t in SHAREABLE_TYPES)
TEAM_TAG = "team"  # shared by hand: `cortex share`, `cortex remember --team`
PRIVATE_TAG = "private"  # kept off the team store whatever the team config says (`cortex unshare`)
SHARED_BY = SHARED_BY_TAG  # the team copy's tag naming who shared it
MAX_AUTHOR_CHARS = 200

_SCP = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")  # git@host:org/repo.git
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]*)(?::\d*)?(/.*)?$", re.IGNORECASE)


def repo_identity(remote_url: str | None) -> str | None:
    """The repository's identity from its remote URL, the same for every clone: `host/path`
    (or the path alone for a local remote), lower case, without scheme, user, port or `.git`."""
    url = (remote_url or "").strip()
    if not url:
        return None
    found = _URL.match(url)
    if found and not url.lower().startswith("file:"):
        host, path = found.group(1), found.group(2) or ""
    elif (scp := _SCP.match(url)) and not url.startswith("/"):
        host, path = scp.group(1), scp.group(2)
    else:
        host, path = "", re.sub(r"^file://", "", url, flags=re.IGNORECASE)
    path = re.sub(r"/+", "/", path.replace("\\", "/")).strip("/")
    path = re.sub(r"(?:\.git)?/*$", "", path, flags=re.IGNORECASE)
    ident = f"{host}/{path}" if host else f"/{path}"
    ident = ident.lower()
    return ident if ident.strip("/") else None


def parse_share_types(text: str) -> tuple[str, ...]:
    """`team_share_types` as type names (comma-separated); unknown or unshareable names dropped."""
    names = (part.strip().lower() for part in text.split(","))
    return tuple(dict.fromkeys(n for n in names if n in SHAREABLE_TYPE_NAMES))


def share_refusal(m: Memory) -> str | None:
    """Why `m` can never be shared (None when it can)."""
    if m.type is MemoryType.PROGRESS:
        return "progress notes are never shared: they are one developer's work in progress"
    if m.type not in SHAREABLE_TYPES:
        return f"{m.type.value} memories are not shared (shared: {', '.join(SHAREABLE_TYPE_NAMES)})"
    if m.scope is not Scope.PROJECT:
        return f"only project memories are shared; {m.id} is in the {m.scope.value} store"
    if m.status is not Status.ACTIVE:
        return f"{m.id} is {m.status.value}; only active memories are shared"
    return None


def wants_shared(m: Memory, auto_types: Collection[str]) -> bool:
    """Whether the team store should hold `m`: shareable, not private, and shared by hand or of
    a type the team config shares automatically."""
    if share_refusal(m) is not None or PRIVATE_TAG in m.tags:
        return False
    return TEAM_TAG in m.tags or m.type.value in auto_types


def marked_shared(m: Memory, now: datetime) -> Memory:
    """`m` tagged for the team store (and no longer private)."""
    tags = tuple(t for t in m.tags if t != PRIVATE_TAG)
    return replace(m, tags=(*tags, TEAM_TAG) if TEAM_TAG not in tags else tags, updated=now)


def marked_private(m: Memory, now: datetime) -> Memory:
    """`m` kept off the team store from now on, whatever its type."""
    tags = tuple(t for t in m.tags if t != TEAM_TAG)
    return replace(m, tags=(*tags, PRIVATE_TAG) if PRIVATE_TAG not in tags else tags, updated=now)


def shared_by(tags: Iterable[str]) -> str | None:
    """Who shared a team memory (`Name <email>`), from its tags."""
    for tag in tags:
        if tag.startswith(SHARED_BY):
            return tag.removeprefix(SHARED_BY) or None
    return None


def team_copy(m: Memory, author: str, now: datetime) -> Memory | None:
    """What the team store holds for a shared memory: through the sanitising gate again, no
    session or access history, attributed; None when nothing is left after redaction."""
    clean = sanitise_memory(m)
    if not clean.content.strip():
        return None
    who = clean_field(author, MAX_AUTHOR_CHARS) or "unknown"
    tags = tuple(t for t in clean.tags if t not in (TEAM_TAG, PRIVATE_TAG) and not t.startswith(SHARED_BY))
    source = Source(branch=clean.source.branch, commit=clean.source.commit, files=clean.source.files)
    return replace(
        clean,
        scope=Scope.TEAM,
        source=source,
        tags=(*tags, SHARED_BY + who),
        pinned=False,
        access_count=0,
        last_accessed=None,
        low_since=None,
        centrality=0.0,
        updated=now,
    )


def same_copy(a: Memory, b: Memory) -> bool:
    """True when two team copies say the same (the time of the last push aside)."""
    return replace(a, updated=b.updated, status_changed=b.status_changed) == b


def withdrawn(current: Memory, local: Memory | None, now: datetime) -> Memory:
    """The team copy of a memory no longer shared: superseded or archived as the local one is,
    else archived (unshared, forgotten, deleted). Kept, never deleted: history stays."""
    status = local.status if local is not None and local.status is Status.SUPERSEDED else Status.ARCHIVED
    return replace(current, status=status, status_changed=now, updated=now)


def contradiction_edges(new: Memory, others: Sequence[Memory], now: datetime) -> list[Edge]:
    """`contradicts` suggestions from a newly shared memory to active team memories of its type
    that say the opposite about the same subject; superseding stays a person's decision."""
    out = []
    mine = word_set(new.content) - POLARITY_WORDS
    for other in others:
        if other.id == new.id or other.type is not new.type or other.status is not Status.ACTIVE:
            continue
        if not flips(new.content, other.content):
            continue
        overlap = jaccard(mine, word_set(other.content) - POLARITY_WORDS)
        if overlap >= CONTRADICTION_JACCARD:
            out.append(
                Edge(new.id, other.id, EdgeType.CONTRADICTS, round(overlap, 4), EdgeStatus.SUGGESTED, now)
            )
    return out
