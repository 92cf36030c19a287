"""What cortex needs from an embedder, a reranker and an extractor model, and a chosen one. Pure.

Use cases type against these protocols, never against a concrete backend, so a backend can be
swapped (or faked in tests) without them importing its libraries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from cortex.core.extract.llm_prompt import TokenUsage

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Choice(Generic[T]):
    """The backend to use (None: go on without it), what it is and why in words, and a fix if any."""

    backend: T | None
    note: str
    fix: str = ""


@runtime_checkable
class Embedder(Protocol):
    """Turns already-prefixed texts into unit-norm float32 vectors of one model and dimension.

    An embedder whose treatment of a text depends on the other texts of its call (a hosted one
    that strips code using the memory a window is cut from) says so with a class attribute
    `reads_calls_whole = True`: callers that remember vectors then never split its calls."""

    @property
    def key(self) -> str: ...  # names model + dim; picks the vec0 table

    @property
    def dim(self) -> int: ...

    @property
    def backend(self) -> str: ...  # "onnx", "sentence-transformers", "voyage", "fake", ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Reranker(Protocol):
    """Scores passages against a query: one score in [0, 1] per passage, in passage order."""

    @property
    def backend(self) -> str: ...  # "flashrank", ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]: ...


@dataclass(frozen=True, slots=True)
class LlmReply:
    """The text of a reply and the tokens it cost."""

    text: str
    usage: TokenUsage
    model: str
    stop_reason: str | None
    attempts: int


class Extractor(Protocol):
    """A chat model that answers one system + user prompt with text (the LLM extraction layer)."""

    def complete(self, system: str, user: str, *, max_tokens: int) -> LlmReply:
        """The reply text and its token usage; raises LlmError when no reply came."""
        ...
