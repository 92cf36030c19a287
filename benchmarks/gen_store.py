"""Build a realistic cortex project store of N memories, fast, for benchmarks. Writes files.

`build_store(root, n, seed, embed)` writes N generated memories (decisions, gotchas, conventions,
progress, ...) with edges, statuses, branches and dates through the real store API in bulk
transactions, then embeds them with the real local model in batches. Vectors go through
`cortex.store.sqlite.embed_cache`, so a rerun with the same seed embeds nothing and takes seconds.

`--synthetic-vectors` writes vectors that need no model instead (`synthetic_vectors`): each word
of a memory gets a fixed pseudo-random direction, a memory the normalised sum of its words', so
texts that share most words are close, as real embeddings of near-duplicates are. They are filed
under their own embedder key (`SYNTHETIC_KEY`), never mistaken for the model's; they serve
benchmarks that need vectors at sizes the embedding cache does not cover (consolidation at
100,000 memories), not retrieval quality.

    python -m benchmarks.gen_store /tmp/demo --n 10000 --seed 1 [--no-embed | --synthetic-vectors]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash, first_line_summary
from cortex.paths import Paths, ensure_store_dir

CACHE_DIR = Path(__file__).resolve().parent / ".cache"
CACHE_FILE = "embeddings.sqlite"
MODEL_HOME = CACHE_DIR / "home"  # holds only the ONNX export, shared with the retrieval harness
BATCH = 1_000  # memories per write transaction
EMBED_BATCH = 256
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)  # fixed: the same seed gives the same store
ACTOR = "gen_store"
SYNTHETIC_KEY = "synthetic-words-384"
SYNTHETIC_DIM = 384

COMPONENTS = (
    "job queue", "billing service", "auth middleware", "search indexer", "API gateway",
    "session store", "payments webhook", "image pipeline", "CI pipeline", "deploy script",
    "ORM layer", "cache layer", "notification worker", "feature flag client", "migration runner",
    "rate limiter", "GraphQL resolvers", "admin dashboard", "CLI", "log shipper", "sync engine",
    "upload service", "email sender", "report generator", "websocket hub", "config loader",
    "metrics exporter", "permission checker", "audit log", "scheduler", "PDF renderer",
    "mobile API", "checkout flow", "onboarding wizard", "data warehouse export",
)  # fmt: skip
TECH = (
    "Postgres", "Redis", "SQLite", "Kafka", "RabbitMQ", "Elasticsearch", "S3", "Docker",
    "Kubernetes", "Terraform", "GitHub Actions", "Celery", "FastAPI", "Django", "React",
    "TypeScript", "Go", "Rust", "gRPC", "nginx", "Sentry", "Prometheus", "OpenTelemetry",
    "pydantic", "SQLAlchemy", "Alembic", "pytest", "Playwright", "Vite", "Stripe", "Twilio",
)  # fmt: skip
REASONS = (
    "it keeps the p95 latency under budget", "the team already operates it",
    "it needs no extra daemon", "the old approach lost writes under load",
    "it is cheaper at our volume", "it gives us transactions across both tables",
    "retries were double-charging customers", "the vendor SDK is unmaintained",
    "it halves the cold start time", "local development needs no network",
    "it makes the tests deterministic", "the security review required it",
)  # fmt: skip
SYMPTOMS = (
    "times out", "returns stale data", "deadlocks", "leaks file handles", "drops messages",
    "double-sends", "runs out of memory", "logs secrets", "retries forever", "silently skips rows",
)  # fmt: skip
CONDITIONS = (
    "two deploys overlap", "the batch is larger than {n} items", "the clock jumps back",
    "the cache is cold", "a migration runs during traffic", "the payload has unicode keys",
    "the connection pool is exhausted", "the feature flag is off", "running on macOS",
    "the worker restarts mid-job", "the timezone is not UTC",
)  # fmt: skip
WORKAROUNDS = (
    "pin the client to v{v}", "set the timeout to {n} ms", "wrap it in a transaction",
    "call flush() before closing", "use the idempotency key", "run it with --serial",
    "clear the cache first", "retry with exponential backoff", "set TZ=UTC in the container",
)  # fmt: skip
CONVENTIONS = (
    "returns typed results instead of dicts", "logs through the structured logger",
    "keeps SQL in one module per table", "validates input at the boundary",
    "has a fake for tests next to the real client", "names feature flags after the ticket",
    "uses UTC timestamps with a Z suffix", "wraps external calls in a circuit breaker",
)  # fmt: skip
PEOPLE = ("Dana", "Priya", "Marco", "Yuki", "Sam", "Lena", "Omar", "Ines", "Tomasz", "Ada")
FILES = (
    "src/{c}/service.py", "src/{c}/models.py", "src/{c}/client.ts", "tests/test_{c}.py",
    "deploy/{c}.tf", "src/{c}/handlers.go", "docs/{c}.md",
)  # fmt: skip
BRANCHES = ("main", "main", "main", "feature/retries", "feature/new-billing", "fix/timeouts")
TYPE_MIX = (
    (MemoryType.DECISION, 18), (MemoryType.GOTCHA, 16), (MemoryType.PATTERN, 12),
    (MemoryType.ARCHITECTURE, 10), (MemoryType.PROGRESS, 20), (MemoryType.CONTEXT, 14),
    (MemoryType.CODE_DESCRIPTION, 6), (MemoryType.PREFERENCE, 4),
)  # fmt: skip
STATUS_MIX = ((Status.ACTIVE, 90), (Status.ARCHIVED, 6), (Status.SUPERSEDED, 3), (Status.PRUNED, 1))
EDGE_MIX = (
    (EdgeType.RELATES_TO, 70),
    (EdgeType.REFINES, 15),
    (EdgeType.DERIVED_FROM, 10),
    (EdgeType.CONTRADICTS, 5),
)


@dataclass(frozen=True, slots=True)
class BuiltStore:
    """What `build_store` made and how long it took."""

    root: Path
    db: Path
    memories: int
    edges: int
    embedded: int
    embedder: str
    seconds_write: float
    seconds_embed: float


def _pick(rng: random.Random, weighted: Sequence[tuple[Any, int]]) -> Any:
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        n=rng.choice((50, 100, 250, 500, 1000, 5000)), v=f"{rng.randint(1, 9)}.{rng.randint(0, 30)}"
    )


def render_text(rng: random.Random, kind: MemoryType, comp: str) -> str:
    """One memory's text in the voice of a real session note."""
    tech, other = rng.sample(TECH, 2)
    comp2 = rng.choice(COMPONENTS)
    if kind == MemoryType.DECISION:
        return rng.choice(
            (
                f"We chose {tech} for the {comp} because {rng.choice(REASONS)}.",
                f"Decided to move the {comp} from {other} to {tech}; {rng.choice(REASONS)}.",
                f"Rejected {other} for the {comp}: {rng.choice(REASONS)} with {tech} instead.",
            )
        )
    if kind == MemoryType.GOTCHA:
        cond = _fill(rng, rng.choice(CONDITIONS))
        fix = _fill(rng, rng.choice(WORKAROUNDS))
        return f"The {comp} {rng.choice(SYMPTOMS)} when {cond}; {fix}."
    if kind == MemoryType.PATTERN:
        return f"Code in the {comp} always {rng.choice(CONVENTIONS)}; follow it in new {tech} modules."
    if kind == MemoryType.ARCHITECTURE:
        return f"The {comp} talks to the {comp2} through {tech}, and {other} holds its state."
    if kind == MemoryType.PROGRESS:
        task = rng.choice(
            ("the retry logic", "the schema change", "pagination", "the rollout", "error handling")
        )
        return f"Finished {task} in the {comp} on top of {tech}; next: wire it into the {comp2}."
    if kind == MemoryType.CONTEXT:
        person = rng.choice(PEOPLE)
        return f"{person} owns the {comp}; ask before changing its {tech} setup or the {comp2} contract."
    if kind == MemoryType.CODE_DESCRIPTION:
        return f"The {comp} entry point parses {tech} messages, validates them and hands them to the {comp2}."
    return f"Prefer {tech} over {other} for new work on the {comp}; {rng.choice(REASONS)}."


def generate_memories(n: int, seed: int) -> Iterator[tuple[Memory, str]]:
    """N distinct memories (with their component), deterministic for a seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    made = 0
    while made < n:
        kind = _pick(rng, TYPE_MIX)
        comp = rng.choice(COMPONENTS)
        text = render_text(rng, kind, comp)
        if rng.random() < 0.25:  # some notes carry a second sentence, as real ones do
            text += f" Ticket {rng.choice('ABCDEFG')}-{rng.randint(100, 9999)} has the details."
        digest = content_hash(text)
        if digest in seen:
            continue
        seen.add(digest)
        made += 1
        created = NOW - timedelta(days=rng.uniform(0, 365), seconds=rng.randint(0, 86_399))
        slug = comp.replace(" ", "_")
        files = tuple(sorted({f.format(c=slug) for f in rng.sample(FILES, rng.randint(0, 2))}))
        status = _pick(rng, STATUS_MIX)
        accessed = int(rng.paretovariate(1.5)) - 1
        yield (
            Memory(
                id=f"{rng.getrandbits(40):010x}",
                content=text,
                summary=first_line_summary(text),
                type=kind,
                scope=Scope.PROJECT,
                confidence=round(rng.uniform(0.35, 1.0), 3),
                priority=rng.randint(2, 9),
                pinned=rng.random() < 0.01,
                source=Source(
                    f"sess-{rng.getrandbits(32):08x}",
                    rng.randint(0, 500_000),
                    rng.choice(BRANCHES),
                    None,
                    files,
                ),
                tags=tuple(sorted({slug, rng.choice(TECH).lower()})),
                access_count=accessed,
                last_accessed=created + timedelta(days=rng.uniform(0, 30)) if accessed else None,
                created=created,
                updated=created,
                status=status,
                content_hash=digest,
                status_changed=created + timedelta(days=1) if status != Status.ACTIVE else None,
            ),
            comp,
        )


def plan_edges(items: Sequence[tuple[Memory, str]], seed: int) -> list[Edge]:
    """Links between memories about the same component (~0.6 per memory), as the gate makes."""
    rng = random.Random(seed + 1)
    by_comp: dict[str, list[str]] = {}
    edges: dict[tuple[str, str, EdgeType], Edge] = {}
    for memory, comp in items:
        earlier = by_comp.setdefault(comp, [])
        for _ in range(rng.choice((0, 0, 1, 1, 2))):
            if not earlier:
                break
            target = rng.choice(earlier[-200:])
            kind = _pick(rng, EDGE_MIX)
            status = EdgeStatus.SUGGESTED if rng.random() < 0.1 else EdgeStatus.ACTIVE
            edges[(memory.id, target, kind)] = Edge(
                memory.id, target, kind, round(rng.uniform(0.3, 0.95), 3), status, memory.created
            )
        earlier.append(memory.id)
    return list(edges.values())


def load_document_embedder(cache_dir: Path = CACHE_DIR) -> tuple[Any, str]:
    """(cached embedder, description): the real local model via its ONNX export, with a vector cache.

    The ONNX export gives the same vectors as sentence-transformers (cosine > 0.9999) and is
    faster on CPU; it is made once under `cache_dir/home`.
    """
    from cortex.backends import local as embed
    from cortex.backends.model_locate import resolve_model
    from cortex.store.sqlite.embed_cache import CachedEmbedder, EmbeddingCache

    home = cache_dir / "home"
    embed.ensure_onnx_export(resolve_model(None), home)
    choice = embed.load_query_embedder(None, home)
    if choice.backend is None:
        raise RuntimeError(f"no local embedder: {choice.note}")
    return CachedEmbedder(choice.backend, EmbeddingCache(cache_dir / CACHE_FILE)), choice.note


def synthetic_vectors(texts: Sequence[str], dim: int = SYNTHETIC_DIM) -> list[bytes]:
    """Packed unit vectors for texts, no model: the sum of a fixed random direction per word.

    A word's direction is seeded by its hash, so the same text gets the same vector in every
    run and process; two texts sharing k of their words have a cosine near k / sqrt(|a| |b|).
    """
    import hashlib

    import numpy as np

    from cortex.core.text import words

    directions: dict[str, Any] = {}
    out = []
    for text in texts:
        total = np.zeros(dim, dtype=np.float64)
        for w in set(words(text)):
            d = directions.get(w)
            if d is None:
                seed = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                d = directions[w] = np.random.default_rng(seed).standard_normal(dim)
            total += d
        norm = float(np.linalg.norm(total)) or 1.0
        out.append((total / norm).astype("<f4").tobytes())
    return out


def write_synthetic_vectors(store: Any, memories: Sequence[Memory]) -> int:
    """Synthetic vectors (see `synthetic_vectors`) for these memories, in bulk transactions."""
    written = 0
    for start in range(0, len(memories), BATCH):
        batch = [m for m in memories[start : start + BATCH] if m.type != MemoryType.CODE]
        blobs = synthetic_vectors([m.content for m in batch])
        with store.transaction():
            table = store.ensure_vector_index(SYNTHETIC_KEY, SYNTHETIC_DIM, NOW)
            store.write_vectors(table, [(m.id, b) for m, b in zip(batch, blobs, strict=True)])
        written += len(batch)
    return written


def build_store(
    path: Path,
    n: int,
    seed: int = 1,
    embed: bool = True,
    *,
    cache_dir: Path = CACHE_DIR,
    synthetic: bool = False,
) -> BuiltStore:
    """Write N memories (+ edges, + vectors when `embed`) into a new project store under `path`.

    With `synthetic`, the vectors are `synthetic_vectors` (no model, no embedding cache).

    `path` is the project root (made a git-like root with an empty `.git`); the store lands in
    `path/.memory/cortex.db`. The root's name is part of every embedded text, so keep it stable
    across runs for the embedding cache to hit. Refuses a root that already holds a store.
    """
    from cortex.capture.embed import write_embeddings
    from cortex.recall.traverse import refresh_centrality

    root = Path(path)
    (root / ".git").mkdir(parents=True, exist_ok=True)
    paths = Paths(root.resolve(), cache_dir / "home")
    if paths.project_db.exists():
        raise FileExistsError(f"{paths.project_db} exists; build_store only makes new stores")
    ensure_store_dir(paths)
    items = list(generate_memories(n, seed))
    edges = plan_edges(items, seed)
    started = time.perf_counter()
    cx = Cortex(paths, clock=lambda: NOW, actor=ACTOR)
    try:
        store = cx.write_store(Scope.PROJECT)
        for start in range(0, len(items), BATCH):
            with store.transaction():
                for memory, _ in items[start : start + BATCH]:
                    store.insert_memory(memory, ACTOR, memory.created)
        for start in range(0, len(edges), BATCH):
            with store.transaction():
                for edge in edges[start : start + BATCH]:
                    store.upsert_edge(edge, ACTOR, edge.created or NOW)
        with store.transaction():
            refresh_centrality(store)
        wrote = time.perf_counter()
        embedded, note = 0, "not embedded"
        live = [m for m, _ in items if m.status in (Status.ACTIVE, Status.ARCHIVED)]
        if embed and synthetic:
            embedded, note = write_synthetic_vectors(store, live), f"synthetic vectors ({SYNTHETIC_KEY})"
        elif embed:
            embedder, note = load_document_embedder(cache_dir)
            for start in range(0, len(live), EMBED_BATCH):
                embedded += write_embeddings(cx, store, live[start : start + EMBED_BATCH], embedder)
        done = time.perf_counter()
    finally:
        cx.close()
    return BuiltStore(
        root, paths.project_db, len(items), len(edges), embedded, note, wrote - started, done - wrote
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: build one store and say what it holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("root", type=Path, help="project root to create (must not hold a store)")
    parser.add_argument("--n", type=int, default=10_000, help="number of memories (default 10,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-embed", action="store_true", help="skip vectors (keyword-only store)")
    parser.add_argument(
        "--synthetic-vectors", action="store_true", help="vectors without the model (see synthetic_vectors)"
    )
    args = parser.parse_args(argv)
    built = build_store(
        args.root, args.n, args.seed, embed=not args.no_embed, synthetic=args.synthetic_vectors
    )
    print(
        f"{built.memories} memories, {built.edges} edges, {built.embedded} vectors in {built.db} "
        f"(write {built.seconds_write:.1f} s, embed {built.seconds_embed:.1f} s; {built.embedder})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
