"""The sanitising gate every write passes: text redacted, metadata made plain data. Pure.

Content and summaries lose secrets and <private> spans (`secrets.redact`). Metadata (tags,
branch names, paths, session ids, commits) is data too: it is redacted, stripped of control,
line-break, zero-width, bidi and tag characters, and bounded in length, so no field can carry a
line of its own into the rules file or SessionStart output. The same cleaning runs again when
metadata is rendered (`core/redact/plain.py`).

A bare token says nothing about itself: a tag `3f9a...` may be a commit or a key. A tag that is
a secret the note's own text reveals (redaction removed it from the text, in any decoded view)
is dropped with it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cortex.core.model import Candidate, Memory, Source
from cortex.core.redact.decode import decoded_views
from cortex.core.redact.plain import plain_line
from cortex.core.redact.secrets import redact
from cortex.core.text import content_hash, normalize_text

MAX_TAG_CHARS = 512  # code index keys are `path:Symbol.method`
MAX_SUMMARY_CHARS = 2000
MAX_TAGS = 32
MAX_BRANCH_CHARS = 200
MAX_PATH_CHARS = 512
MAX_FILES = 64
MAX_ID_CHARS = 128
MIN_SECRET_TAG_CHARS = 8
_WORDS = re.compile(r"[A-Za-z][a-z]*(?:[-_.][a-z]+)*")  # a plain name: never judged a secret


def clean_field(value: str, limit: int) -> str:
    """A metadata field as stored: one plain line with secrets redacted."""
    return plain_line(redact(plain_line(value, limit * 4)).text, limit)


def clean_tags(tags: tuple[str, ...] | list[str], text: str = "") -> tuple[str, ...]:
    """Tags as stored; with the note's `text`, tags that are secrets it reveals are dropped."""
    out = [clean_field(t, MAX_TAG_CHARS) for t in tags[: MAX_TAGS * 2]]
    revealed = _revealed(text, out) if text else set()
    return tuple(dict.fromkeys(t for t in out if t and t not in revealed))[:MAX_TAGS]


def _revealed(text: str, tags: list[str]) -> set[str]:
    """The tags redaction removed from `text` (seen in a view of it, in no view of the result)."""
    suspects = [t for t in tags if len(t) >= MIN_SECRET_TAG_CHARS and not _WORDS.fullmatch(t)]
    if not suspects:
        return set()
    before = _views(text)
    seen = [t for t in suspects if any(t in view for view in before)]
    if not seen:
        return set()
    after = _views(redact(text).text)
    return {t for t in seen if not any(t in view for view in after)}


def _views(text: str) -> list[str]:
    views = decoded_views(text)
    return views + [" ".join(v.split()) for v in views]


def clean_files(files: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    out = (clean_field(f, MAX_PATH_CHARS) for f in files[: MAX_FILES * 2])
    return tuple(dict.fromkeys(f for f in out if f))[:MAX_FILES]


def _optional(value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    return clean_field(value, limit) or None


def sanitise_text(text: str) -> str:
    """Content or a summary as stored: redacted and normalised."""
    return normalize_text(redact(text).text)


def clean_summary(summary: str) -> str:
    """A summary (a heading) as stored: one line, redacted."""
    return plain_line(redact(summary).text, MAX_SUMMARY_CHARS) if summary else ""


def sanitise_source(source: Source) -> Source:
    return replace(
        source,
        session_id=_optional(source.session_id, MAX_ID_CHARS),
        branch=_optional(source.branch, MAX_BRANCH_CHARS),
        commit=_optional(source.commit, MAX_ID_CHARS),
        files=clean_files(source.files),
    )


def sanitise_candidate(cand: Candidate) -> Candidate:
    """A candidate as the write path stores it."""
    return replace(
        cand,
        content=sanitise_text(cand.content),
        summary=clean_summary(cand.summary),
        tags=clean_tags(cand.tags, cand.content),
        files=clean_files(cand.files),
    )


def sanitise_memory(m: Memory) -> Memory:
    """A whole memory arriving from outside (an import): every text field through the gate;
    the content hash follows the content."""
    content = sanitise_text(m.content)
    return replace(
        m,
        id=plain_line(m.id, MAX_ID_CHARS),
        content=content,
        summary=clean_summary(m.summary),
        tags=clean_tags(m.tags, m.content),
        source=sanitise_source(m.source),
        content_hash=content_hash(content) if content != m.content else m.content_hash,
    )
