"""Content health of a store: duplicates, junk, secrets and memories never used. Pure.

`cortex audit` reports these beside the store's integrity. A duplicate is a pair the write
gate would have merged (same type, word Jaccard at the near-duplicate threshold, nothing
distinguishing differs); junk is an empty or fragmentary text, boilerplate, or tool noise;
a secret is what the write path's redaction would change today; never used is a memory no
recall or briefing has counted; stale is a memory whose code anchors changed at HEAD (filled in
by the audit, which asks git).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cortex.core.model import Memory, Status
from cortex.core.redact.secrets import redact
from cortex.core.text import words
from cortex.core.write.distinct import distinguishing_difference
from cortex.core.write.gate import NEAR_DUPLICATE_JACCARD
from cortex.core.write.similar import SimilarPair, Text, find_similar_pairs, text_of

MIN_WORDS = 3  # fewer distinct words than this says nothing on its own
BOILERPLATE = re.compile(
    r"^(ok(ay)?|done|thanks?( you)?|sure|yes|no|got it|sounds good|let me (check|look|see)( that| this)?"
    r"|i('| wi)ll (check|look)( into it)?|here you go|todo|tbd|n/?a|lorem ipsum.*)[.!]*$",
    re.IGNORECASE,
)
TOOL_NOISE = re.compile(
    r"^(\s*(\$ |>>> |\[\d+/\d+\]|total \d+|drwx|-rw-|PASSED|FAILED|ERROR|WARNING|INFO|DEBUG|"
    r"Traceback \(most recent call last\)|at [\w.$]+\(|\s*File \")).*",
    re.IGNORECASE,
)


def junk_kind(content: str) -> str | None:
    """Why a memory's text is junk (`empty`, `fragment`, `boilerplate`, `tool noise`), or None."""
    text = content.strip()
    if not text:
        return "empty"
    if BOILERPLATE.match(text):
        return "boilerplate"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 2 and sum(1 for ln in lines if TOOL_NOISE.match(ln)) * 2 > len(lines):
        return "tool noise"
    if len(set(words(text))) < MIN_WORDS:
        return "fragment"
    return None


def never_used(m: Memory) -> bool:
    """No recall, and no session that used it (use feedback counts an access), ever counted it."""
    return m.access_count == 0 and m.last_accessed is None


@dataclass(slots=True)
class Health:
    """Content findings of one store's live memories (ids, so a person can look at them)."""

    memories: int = 0
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    junk: dict[str, str] = field(default_factory=dict)  # id -> kind
    secrets: list[str] = field(default_factory=list)
    never_used: list[str] = field(default_factory=list)
    stale: dict[str, str] = field(default_factory=dict)  # id -> what its code anchors say at HEAD

    def rate(self, n: int) -> float:
        return round(n / self.memories, 4) if self.memories else 0.0

    @property
    def duplicate_ids(self) -> set[str]:
        return {i for pair in self.duplicates for i in pair}


def content_health(
    memories: Sequence[Memory], similar: Callable[[Sequence[Text], float], list[SimilarPair]] | None = None
) -> Health:
    """Duplicates, junk, secrets and never-used memories among the active `memories`.

    `similar` finds the pairs as `find_similar_pairs` does (the default), faster on large stores.
    """
    live = [m for m in memories if m.status is Status.ACTIVE]
    by_id = {m.id: m for m in live}
    health = Health(memories=len(live))
    found = (similar or find_similar_pairs)([text_of(m) for m in live], NEAR_DUPLICATE_JACCARD)
    for p in found:
        if not distinguishing_difference(by_id[p.a].content, by_id[p.b].content):
            health.duplicates.append((p.a, p.b))
    for m in sorted(live, key=lambda m: m.id):
        kind = junk_kind(m.content)
        if kind is not None:
            health.junk[m.id] = kind
        if any(redact(text).text != text for text in (m.content, m.summary, *m.tags)):
            health.secrets.append(m.id)
        if never_used(m):
            health.never_used.append(m.id)
    return health
