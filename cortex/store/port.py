"""The storage port: what use cases may ask of a store, in core values only.

`MemoryStore` is what capture, recall and the briefing use every day; `StoreAdmin` adds what
the lifecycle, rebuild, import/export, status and recovery need. `StoreAdapter` is what an
adapter package offers before any store is open. A store is one scope (project or global) in
one place; statuses travel as their string values, vectors as float32 little-endian bytes
(`cortex.store.packing`), and a vector index is named by the string its adapter gives it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: every store-touching command imports the port, keep it cheap
    from cortex.core.code.anchors import Anchor
    from cortex.core.digest import StateDigest
    from cortex.core.model import Edge, Memory, MemoryType, Scope
    from cortex.core.recall.query import TextQuery
    from cortex.core.write.similar import Text

LIVE = ("active",)  # what everyday reads see unless they ask for more


@dataclass(frozen=True, slots=True)
class CursorRow:
    """Where the worker stopped reading one session's transcript."""

    session_id: str
    transcript_path: str
    byte_offset: int
    last_uuid: str | None
    malformed: int
    closed: bool


class VectorIndex(NamedTuple):
    """One vector index of a store: its name, the embedder whose vectors it holds, their size."""

    name: str
    embedder_key: str
    dim: int


class VectorHit(NamedTuple):
    """A memory near a query vector: its id, its status, and the cosine distance (0 is equal)."""

    id: str
    status: str
    distance: float


class VectorRebuild(NamedTuple):
    """One vector index rebuilt: vectors kept, memories left without one, and why none were kept
    when the old index could not be read."""

    kept: int
    pending: int
    problem: str | None = None


class StoreStats(NamedTuple):
    """Size and bookkeeping of one store, for `cortex status`."""

    schema: int
    edges: int
    journal: int
    bytes: int  # on disk, with the files that travel with it
    oldest_vector_index: str | None  # the first index created, whatever its embedder


class StoreFileCheck(NamedTuple):
    """What a look at a store file, without opening it for writing, found."""

    schema: int
    latest: int  # the schema this cortex writes: an older file is upgraded on the next write
    problems: tuple[str, ...]  # integrity problems; empty when sound


class RuntimeInfo(NamedTuple):
    """What this Python gives the adapter, for `cortex doctor`."""

    python: str
    vector_search: bool
    detail: str  # how vectors are searched, or why they cannot be
    fix: str = ""  # how to get vector search when it is missing


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One complete checkpoint of a store and what is recorded about it."""

    path: Path
    store: str  # the store file it was taken from
    reason: str
    run: str  # checkpoints taken for one consolidation share a run id
    created: str
    digest: str
    restored_at: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def sidecar(self) -> Path:
        return self.path.with_suffix(".json")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description."""
        return {
            "name": self.name,
            "path": str(self.path),
            "store": self.store,
            "reason": self.reason,
            "run": self.run,
            "created": self.created,
            "digest": self.digest,
            "restored_at": self.restored_at,
        }


# The weights of confidence, priority/10 and centrality (each clamped to [0, 1]) in the rank key
# the briefing reads in order: its own part of the briefing rank at the default weights.
RANK_KEY_WEIGHTS = (0.5, 0.2, 0.15)
ACCESS_LEVELS = 32  # access counts below this are each read as their own slice of the rank index


@dataclass(frozen=True, slots=True)
class RankBand:
    """Memories whose briefing rank may lie in [low, high), give or take float rounding: rank =
    key_scale * rank key + access_scale * log(access + 1) + (boost when recorded on `branch`)."""

    key_scale: float
    access_scale: float
    access_cap: float  # the largest access share of any memory the caller wants
    branch: str | None
    boost: float
    low: float
    high: float


@runtime_checkable
class BriefingReads(Protocol):
    """Index reads that let the briefing read only what it can show (an adapter may lack them:
    the briefing then reads every active memory)."""

    def brief_band(
        self, type_: str, pinned: bool, band: RankBand, known: Mapping[str, Memory], limit: int
    ) -> tuple[list[Memory], float]: ...
    def brief_top(self, type_: str, pinned: bool, band: RankBand) -> float | None: ...
    def brief_by_access(
        self, type_: str, pinned: bool, limit: int, below: tuple[int, int] | None = None
    ) -> list[tuple[int, int, Memory]]: ...
    def brief_counts(self) -> dict[tuple[str, bool, str | None], int]: ...
    def brief_newest_session(self, types: Sequence[str]) -> Memory | None: ...
    def brief_session_count(self, session_id: str, types: Sequence[str]) -> int: ...
    def brief_tagged(self, tag: str) -> list[Memory]: ...
    def brief_paths(self) -> list[str]: ...
    def brief_stale(
        self, gone: Sequence[str], present: Sequence[str], limit: int
    ) -> tuple[int, list[str]]: ...
    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]: ...


@runtime_checkable
class WordSearch(Protocol):
    """Finding active memories by the words they hold, unranked (an adapter may lack it:
    consolidation then reads every active memory's text)."""

    def word_rows(self, words: Sequence[str]) -> dict[str, Any]:
        """The row numbers of the memories (any status) holding each word, an integer array
        (numpy) each: a superset
        (stemming may add memories; the caller checks the words), never missing one whose
        words, as `cortex.core.text.words` splits and folds them, include it, for ASCII words.
        A row number stands for one memory while the store is open (`texts_at` reads it)."""

    def texts_at(self, rows: Sequence[int], types: Sequence[str]) -> list[Text]:
        """The active memories of `types` among these row numbers."""

    def word_counts(self, words: Sequence[str], cap: int) -> dict[str, int]:
        """How many memories (any status) hold each word, counted up to `cap` (stems count)."""


class MemoryStore(Protocol):
    """Memories, their links and history, transcript cursors, settings and vectors of one scope."""

    @property
    def scope(self) -> Scope: ...
    @property
    def path(self) -> Path: ...
    @property
    def readonly(self) -> bool:
        """Opened for reading only (a read-only directory, a full disk): writes would fail."""

    @property
    def vectors(self) -> bool:
        """Whether vectors can be stored and searched here."""

    @property
    def vector_note(self) -> str:
        """How vectors are searched here, or why they cannot be."""

    def close(self) -> None: ...
    def transaction(self) -> AbstractContextManager[object]:
        """One write transaction: every write inside commits together or not at all."""

    # -- memories
    def insert_memory(self, m: Memory, actor: str, at: datetime, op: str = "insert") -> None: ...
    def update_memory(self, old: Memory, new: Memory, actor: str, at: datetime, op: str) -> None: ...
    def get(self, memory_id: str) -> Memory | None: ...
    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]: ...
    def find_prefix(self, prefix: str, limit: int = 5) -> list[Memory]: ...
    def by_hash(self, content_hash: str) -> Memory | None: ...
    def list_memories(
        self,
        statuses: Sequence[str] | None = LIVE,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Memory]: ...
    def counts(self) -> dict[str, dict[str, int]]: ...
    def record_access(self, ids: Sequence[str], at: datetime, actor: str) -> None: ...
    def search_text(
        self, query: TextQuery, limit: int, statuses: Sequence[str] = LIVE
    ) -> list[tuple[str, float]]:
        """(id, score) best first; a larger score is a better match."""

    def tagged(self, tag: str, types: Sequence[str]) -> list[Memory]: ...
    def tag_prefix(self, prefix: str, types: Sequence[str]) -> list[Memory]: ...
    def active_ids(self) -> list[str]: ...

    # -- journal and edges
    def journal(self, actor: str, op: str, memory_id: str | None, payload: Any, at: datetime) -> None: ...
    def journal_rows(self, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]: ...
    def upsert_edge(self, e: Edge, actor: str, at: datetime) -> None: ...
    def delete_edge(self, source: str, target: str, etype: str, actor: str, at: datetime) -> None: ...
    def edges(self, ids: Sequence[str] | None = None, status: str | None = None) -> list[Edge]: ...
    def write_centrality(self, scores: dict[str, float]) -> None: ...

    # -- cursors and settings
    def read_cursor(self, session_id: str) -> CursorRow | None: ...
    def write_cursor(self, c: CursorRow, at: datetime) -> None: ...
    def read_records(self, records: Collection[str]) -> set[str]:
        """Which of these transcript records (uuids) capture has read before: it took memories
        from them, or gave them to the LLM layer."""

    def mark_read(self, records: Collection[str], at: datetime) -> None:
        """Record that capture took memories from these records, or gave them to the LLM layer
        (the first time is kept)."""

    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...

    # -- code anchors (what a memory saw of the files and symbols it names)
    def write_anchors(self, memory_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of one memory (none: it names no code now)."""

    def read_anchors(self, ids: Iterable[str] | None = None) -> dict[str, list[Anchor]]:
        """Anchors by memory id: of `ids` (any status), or of every active memory."""

    def anchored_paths(self) -> list[str]:
        """Every path an anchor names (of any memory), once each."""

    def read_moved_anchors(self, blobs: Mapping[str, str | None]) -> dict[str, list[Anchor]]:
        """Anchors of active memories on the paths of `blobs` whose file is not the blob given
        there (None: not a file now): the only ones a check must look at."""

    def flag_anchors(self, memory_id: str, anchors: Sequence[Anchor], head: str) -> None:
        """Record that these anchors of a memory were found changed at `head`."""

    # -- vectors
    def vector_index(self, embedder_key: str) -> VectorIndex | None: ...
    def ensure_vector_index(self, embedder_key: str, dim: int, at: datetime) -> str: ...
    def ensure_chunk_index(self, embedder_key: str, dim: int, at: datetime) -> str: ...
    def write_vectors(self, index: str, vectors: Sequence[tuple[str, bytes]]) -> None: ...
    def write_chunk_vectors(self, index: str, vectors: Sequence[tuple[str, Sequence[bytes]]]) -> None: ...
    def unembedded(self, index: str | None, limit: int | None = None) -> list[str]: ...
    def count_unembedded(self, index: str | None) -> int: ...
    def nearest(self, embedder_key: str, query: bytes, k: int, *, chunk_k: int = 0) -> list[VectorHit]: ...
    def read_vectors(self, index: str, ids: Sequence[str], *, exact: bool = True) -> dict[str, bytes]: ...


class StoreAdmin(MemoryStore, Protocol):
    """A store as its upkeep sees it: whole-store reads, verbatim imports, indexes, checkpoints."""

    def count_active(self) -> int: ...
    def all_memories(self) -> list[Memory]: ...
    def state_digest(self) -> StateDigest: ...
    def tick_candidates(
        self, cutoffs: dict[MemoryType, datetime], prune_before: datetime, floor: float
    ) -> list[Memory]: ...
    def active_texts(self) -> list[Text]: ...
    def journal_seq(self) -> int: ...
    def changed_ids(self, after_seq: int) -> set[str]: ...
    def import_memory(self, m: Memory) -> None: ...
    def import_edge(self, e: Edge, at: datetime) -> bool: ...
    def append_journal(self, rows: Iterable[dict[str, Any]]) -> int: ...
    def vector_indexes(self) -> list[VectorIndex]: ...
    def delete_vectors(self, ids: Sequence[str]) -> None: ...
    def rebuild_text_index(self) -> None: ...
    def check_text_index(self) -> bool: ...
    def rebuild_vector_index(self, index: VectorIndex, at: datetime) -> VectorRebuild: ...
    def stats(self) -> StoreStats: ...
    def migrate(self) -> int: ...
    def write_checkpoint(self, *, reason: str, run: str, at: datetime) -> Checkpoint: ...
    def restore_checkpoint(self, cp: Checkpoint) -> None: ...


class StoreAdapter(Protocol):
    """What an adapter offers before a store is open: opening one, and work on store files."""

    def open_store(self, scope: Scope, path: Path, *, readonly: bool = False) -> StoreAdmin: ...
    def inspect_file(self, path: Path) -> StoreFileCheck: ...
    def newer_schema(self, path: Path) -> bool: ...
    def runtime_info(self) -> RuntimeInfo: ...
    def checkpoint_dir(self, store_path: Path) -> Path: ...
    def list_checkpoints(self, store_path: Path) -> list[Checkpoint]: ...
    def find_checkpoint(self, store_paths: list[Path], ref: str) -> Checkpoint: ...
    def mark_restored(self, cp: Checkpoint, at: datetime) -> Checkpoint: ...
    def checkpoint_file(
        self, scope: Scope, path: Path, *, reason: str, run: str, at: datetime
    ) -> Checkpoint: ...
