"""Long memory text -> overlapping word windows, each embedded as an extra vector. Pure.

The embedding model reads only its first ~256 tokens, so one vector per memory sees only the
start of a long memory. Extra vectors for later windows let vector search find a memory by
any part of it; recall max-pools the windows back onto their memory.
"""

from __future__ import annotations

import re

# ~160 words stay under the model's 256-token window even with the `[type] [project:x]` prefix.
CHUNK_WORDS = 160
CHUNK_STRIDE_WORDS = 128  # 32 words of overlap so a sentence cut at one edge is whole in the next
# At most this many extra windows per memory: the first ~540 words are covered. A memory is a
# note; past that, keyword search still sees every word and embedding cost stays bounded.
MAX_EXTRA_CHUNKS = 3
CHUNK_SLOTS = 16  # row numbers reserved per memory in the chunk index (rowid = n * slots + i)

_WORD = re.compile(r"\S+")


def plan_chunks(
    text: str,
    window: int = CHUNK_WORDS,
    stride: int = CHUNK_STRIDE_WORDS,
    max_chunks: int = MAX_EXTRA_CHUNKS,
) -> list[str]:
    """The windows after the first (the memory's own vector covers that): verbatim slices."""
    if window <= 0 or stride <= 0 or stride > window:
        raise ValueError(f"need 0 < stride <= window, got window={window}, stride={stride}")
    spans = [m.span() for m in _WORD.finditer(text)]
    chunks: list[str] = []
    start = stride
    while len(spans) > start + (window - stride) and len(chunks) < min(max_chunks, CHUNK_SLOTS):
        end = min(start + window, len(spans)) - 1
        chunks.append(text[spans[start][0] : spans[end][1]])
        start += stride
    return chunks
