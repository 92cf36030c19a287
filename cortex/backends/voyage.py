"""The Voyage hosted embedder (voyage-3.5-lite): batched API calls, code never sent. Network I/O.

Voyage vectors live in their own vec0 index (key `voyage-3.5-lite-1024`), never mixed with local
MiniLM vectors: the index is chosen by the embedder's key. When Voyage cannot be used at load time
(no key, no SDK) the choice (backends.choose) falls back to the local embedder and its own index.
When the API fails during a call, the call raises ModelError: a write leaves the memory pending
for `cortex backfill`, and recall answers from FTS for that query.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cortex.backends.anthropic import read_retry_after
from cortex.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("cortex.voyage")

API_KEY_ENV = "VOYAGE_API_KEY"
BASE_URL_ENV = "VOYAGE_BASE_URL"  # like ANTHROPIC_BASE_URL: a proxy or a test server
VOYAGE_DIM = 1024  # voyage-3.5-lite's default output dimension
MAX_BATCH_TEXTS = 128  # the API takes up to 1,000 texts per request
MAX_BATCH_TOKENS = 100_000  # the API takes up to 1M tokens per request for the lite model
CHARS_PER_TOKEN = 3  # a deliberate over-estimate, so a batch never passes the token limit
DOCUMENT_TIMEOUT_S = 30.0
QUERY_TIMEOUT_S = 10.0
MAX_ATTEMPTS = 3
BACKOFF_S = 1.0
MAX_RETRY_AFTER_S = 20.0
CODE_TYPE_PREFIX = "[code]"  # how `embedding_text` starts the text of a `code` memory
HOSTED_EXTRA_FIX = "pip install 'cortex-memory[hosted]'"

_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")
_BLANK_RUN = re.compile(r"\n{3,}")
_TYPE_PREFIX = re.compile(r"^(?:\[[^\]\n]{1,80}\]\s)*")  # `[type] [project:name] ` of embedding_text


def voyage_key(model: str, dim: int = VOYAGE_DIM) -> str:
    """The vector-index key of a Voyage model at a dimension (e.g. voyage-3.5-lite-1024)."""
    return f"{model}-{dim}"


def code_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks, fences included (an unclosed one runs to the end)."""
    spans: list[tuple[int, int]] = []
    fence: str | None = None
    opened = pos = 0
    for line in text.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence, opened = opener.group(1), pos
        elif (
            fence is not None
            and opener
            and opener.group(1)[0] == fence[0]
            and len(opener.group(1)) >= len(fence)
        ):
            spans.append((opened, pos + len(line)))
            fence = None
        pos += len(line)
    if fence is not None:
        spans.append((opened, len(text)))
    return spans


def strip_code_blocks(text: str) -> str:
    """Text with every fenced code block (and an unclosed one to the end) removed."""
    return _without(text, code_spans(text), 0)


def _without(text: str, spans: Sequence[tuple[int, int]], offset: int) -> str:
    """`text`, which starts at `offset` of the text `spans` were found in, minus those spans."""
    kept, at = [], 0
    for start, end in spans:
        lo, hi = max(start - offset, 0), min(end - offset, len(text))
        if lo < hi:
            kept.append(text[at:lo] if lo > at else "")
            at = max(at, hi)
    kept.append(text[at:])
    return _BLANK_RUN.sub("\n\n", "".join(kept)).strip()


def sendable_texts(texts: Sequence[str]) -> list[str]:
    """What may leave the machine for each text: never a `code` memory, never a line of code.

    A text that is a slice of a longer text in the same call (a memory's extra windows are
    embedded with the memory) loses the code of the longer text's blocks, so a window that
    starts or ends inside a code block sends none of it either.
    """
    parts = []
    for text in texts:
        prefix = _TYPE_PREFIX.match(text)
        head = prefix.group(0) if prefix else ""
        if head.lstrip().startswith(CODE_TYPE_PREFIX):
            raise ValueError("code memories are never sent to a hosted embedder")
        parts.append((head, text[len(head) :]))
    # Only a text with a code block can lend its code to a slice of it.
    hosts = [(body, spans) for _, body in parts if (spans := code_spans(body))]
    out = []
    for head, body in parts:
        host = next(((h, sp) for h, sp in hosts if len(h) > len(body) and body and body in h), None)
        kept = _without(body, host[1], host[0].find(body)) if host else strip_code_blocks(body)
        out.append((head + kept).strip() if kept else head + "(code only)")
    return out


def sendable_text(text: str) -> str:
    """What may leave the machine for one standalone text (see `sendable_texts`)."""
    return sendable_texts([text])[0]


def plan_batches(texts: Sequence[str]) -> Iterator[list[int]]:
    """Index lists of consecutive texts, each within the API's count and token limits."""
    batch: list[int] = []
    tokens = 0
    for i, text in enumerate(texts):
        cost = len(text) // CHARS_PER_TOKEN + 1
        if batch and (len(batch) >= MAX_BATCH_TEXTS or tokens + cost > MAX_BATCH_TOKENS):
            yield batch
            batch, tokens = [], 0
        batch.append(i)
        tokens += cost
    if batch:
        yield batch


class VoyageEmbedder:
    """Unit-norm float32 vectors from the Voyage API; one vec0 index of its own."""

    backend = "voyage"
    # What it sends of a text depends on the other texts of the same call (`sendable_texts`): a
    # caller that remembers vectors must not split a call (cortex.capture.embed.Remembering).
    reads_calls_whole = True

    def __init__(
        self,
        client: Any,
        model: str,
        dim: int = VOYAGE_DIM,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self.model = model
        self.dim = dim
        self.key = voyage_key(model, dim)
        self._max_attempts = max(1, max_attempts)
        self._backoff_s = backoff_s
        self._sleep = sleep

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed memory texts (code blocks stripped first); raises ModelError when the API fails."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        return self._embed(sendable_texts(texts), "document")

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; raises ModelError when the API fails (recall then uses FTS)."""
        return self._embed([sendable_text(text)], "query").reshape(self.dim)

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for batch in plan_batches(texts):
            vectors = self._call([texts[i] for i in batch], input_type)
            if len(vectors) != len(batch) or any(len(v) != self.dim for v in vectors):
                raise ModelError(
                    f"Voyage returned {len(vectors)} vectors for {len(batch)} texts (or a wrong size)",
                    "check voyage_model in config.toml",
                )
            rows = np.asarray(vectors, dtype=np.float32)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            out[batch] = rows / np.where(norms == 0, 1.0, norms)
        return out

    def _call(self, batch: list[str], input_type: str) -> list[list[float]]:
        from voyageai import error

        retryable = (error.RateLimitError, error.ServerError, error.ServiceUnavailableError)
        wait = self._backoff_s
        for attempt in range(1, self._max_attempts + 1):
            try:
                result = self._client.embed(
                    batch,
                    model=self.model,
                    input_type=input_type,
                    truncation=True,
                    output_dimension=self.dim,
                )
                return [list(v) for v in result.embeddings]
            except retryable as exc:
                problem, delay = f"{type(exc).__name__}: {exc}", read_retry_after(exc.headers or {})
            except (error.Timeout, error.APIConnectionError) as exc:
                problem, delay = f"{type(exc).__name__}: {exc}", None
            except error.VoyageError as exc:
                raise ModelError(f"the Voyage API refused the request: {exc}", _fix(exc)) from exc
            delay = wait if delay is None else delay
            if attempt == self._max_attempts or delay > MAX_RETRY_AFTER_S:
                raise ModelError(
                    f"the Voyage API failed ({problem}) after {attempt} attempts",
                    "try again later; `cortex backfill` embeds what was left pending",
                )
            log.info("Voyage attempt %d failed (%s); retrying in %.2f s", attempt, problem, delay)
            self._sleep(max(delay, 0.0))
            wait *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def _fix(exc: Exception) -> str:
    from voyageai import error

    if isinstance(exc, error.AuthenticationError):
        return f"check {API_KEY_ENV}"
    return "check voyage_model in config.toml"


def voyage_unavailable(env: dict[str, str] | None = None) -> str:
    """Why Voyage cannot be used here ("" when it can)."""
    env = dict(os.environ) if env is None else env
    if not env.get(API_KEY_ENV, "").strip():
        return f"{API_KEY_ENV} is not set"
    if importlib.util.find_spec("voyageai") is None:
        return f"the voyageai package is not installed ({HOSTED_EXTRA_FIX})"
    return ""


def load_voyage(
    model: str, *, timeout_s: float, base_url: str | None = None, **options: Any
) -> VoyageEmbedder:
    """A Voyage embedder with the SDK's own retries off (ours honour retry-after and are bounded)."""
    try:
        from voyageai.client import Client
    except ImportError as exc:
        raise ModelError("the voyageai package is not installed", HOSTED_EXTRA_FIX) from exc
    client = Client(
        api_key=os.environ[API_KEY_ENV].strip(),
        max_retries=0,
        timeout=timeout_s,
        base_url=base_url or os.environ.get(BASE_URL_ENV) or None,
    )
    return VoyageEmbedder(client, model, **options)
