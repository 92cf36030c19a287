"""Which memories the briefing withholds as instruction-like, looking at every field. Pure.

The text check (`core/redact/injection.py`) runs on the content, the summary, the tags and the
source metadata: a branch name or path can carry an order as well as a note can. Withheld notes
stay stored and recallable (shown fenced, as data); `cortex doctor` counts them.
"""

from __future__ import annotations

import functools

from cortex.core.model import Memory
from cortex.core.redact.injection import score_instruction_like


def withheld_reasons(m: Memory) -> tuple[str, ...]:
    """Why `m` is kept out of the briefing (empty when it may go in)."""
    src = m.source
    fields = (
        m.content,
        m.summary,
        *m.tags,
        src.branch or "",
        src.session_id or "",
        src.commit or "",
        *src.files,
    )
    reasons: list[str] = []
    for text in fields:
        if text:
            reasons.extend(score_instruction_like(text))
    return tuple(dict.fromkeys(reasons))


@functools.lru_cache(maxsize=4096)  # a render checks the same leading notes for each part
def is_withheld(m: Memory) -> bool:
    """True when `m` must not be promoted into the briefing."""
    return bool(withheld_reasons(m))
