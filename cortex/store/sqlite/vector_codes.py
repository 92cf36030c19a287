"""Binary codes of each vector index, for a nearest-neighbour search whose cost grows gently.

sqlite-vec 0.1 scans every float vector of a vec0 table (~25 ms per 10,000 on 2 cores), and its
int8 and bit tables are no faster, nor are its lookups by rowid (measured at 100,000 and
1,000,000 vectors: `benchmarks/results/vector_options.md`). So each vec0 index `T` has a plain
table `T_codes` holding, per memory row, the sign bits of its unit vector (48 bytes at 384
dimensions), and `T_units` the unit vector itself. A store with at least `ANN_MIN` vectors is
searched by Hamming distance over every code (numpy, a few ms per 100,000); the best of those
(`SHORTLIST` per vector re-ranked, more in a bigger store) are scored again by the dot product of
the float query with their codes' signs (no vector read), and the best `CANDIDATES` of that are
ranked by cosine on their float vectors: recall@10 >= 0.98 against exact search. Smaller stores
keep the exact search. Every writer of `cortex.store.sqlite.vectors` keeps the codes in step, in
the same transaction; a store whose codes could not be built (no sqlite-vec at migration time)
is marked incomplete in `meta` and searched exactly until its next vector write builds them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from cortex.store.sqlite.codec import BATCH, marks
from cortex.store.sqlite.connection import Connection, data_version

ANN_MIN = 20_000  # below this many vectors, exact search is as fast and exact
CANDIDATES = 400  # re-ranked by their float vectors, at least ...
PER_RESULT = 10  # ... and this many per result wanted
SHORTLIST = 8  # codes scored against the float query per vector re-ranked, at least ...
GROWTH = 250  # ... and one per this many vectors
# At 1,000,000 vectors (40 queries): Hamming order alone, 400 re-ranked: recall@10 0.970, 1,000:
# 0.985 (recall@50 0.973); with the float query's second look at 3,200 or 4,000 codes, 400:
# 0.995, 500: recall@10 0.998, recall@50 0.988. A vector read costs ~15 us, a code scored ~1 us.
BLOCK = 1 << 15  # codes compared per pass: the pass's words stay in the CPU's cache
CHUNK = 1024  # codes per stored blob
MAX_HELD = 4  # code matrices held in memory at once (48 MB per 1,000,000 vectors)
READY = "vector_codes_ready:"  # meta key prefix: the table's codes cover all its vectors

MAX_DIRTY = 64  # chunks a search reads afresh at most; beyond, the whole table is read again
MAX_TRACKED = 64  # connections whose writes are tracked at once (idle ones are let go first)

_LOCK = threading.Lock()
# (connection, table) -> (the DB-API connection, its data version at the read, row numbers in
# order, codes word by word): the table as this connection last read it whole ...
_HELD: dict[tuple[int, str], tuple[Any, int, Any, Any]] = {}
# ... and (the DB-API connection, the chunks it has written since; None: the whole table
# changed), which a search reads afresh: the copy stays good across this process's own writes,
# committed or rolled back.
_DIRTY: dict[tuple[int, str], tuple[Any, set[int] | None]] = {}


def codes_table(table: str) -> str:
    """The plain table holding the codes of vec0 table `table`."""
    return f"{table}_codes"


def units_table(table: str) -> str:
    """The plain table holding the unit vectors of vec0 table `table`, read to re-rank."""
    return f"{table}_units"


def _ensure_table(conn: Connection, table: str) -> None:
    # Codes are kept CHUNK rows to a blob, so that a process reads every code in a few hundred
    # rows (a new process searching 100,000 memories reads 100 blobs, not 100,000 rows).
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {codes_table(table)} "
        "(chunk INTEGER PRIMARY KEY, codes BLOB NOT NULL, present BLOB NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {units_table(table)} (n INTEGER PRIMARY KEY, vector BLOB NOT NULL)"
    )


def _dirty(conn: Connection, key: tuple[int, str]) -> set[int] | None:
    """The chunks this connection wrote since its copy was read (under `_LOCK`)."""
    entry = _DIRTY.get(key)
    return set() if entry is None or entry[0] is not conn.raw else entry[1]


def _idle(raw: Any) -> bool:
    """Whether a DB-API connection has no write pending (a closed one has none)."""
    try:
        return not raw.in_transaction
    except Exception:  # closed
        return True


def _touched(conn: Connection, table: str, chunks: Sequence[int] | None) -> None:
    """Note that this connection wrote these chunks of the table's codes (None: all of them)."""
    key = (id(conn.raw), table)
    with _LOCK:
        dirty = _dirty(conn, key)
        if chunks is None or dirty is None or len(dirty) + len(chunks) > MAX_DIRTY:
            dirty = None
            _HELD.pop(key, None)
        else:
            dirty.update(chunks)
        _DIRTY.pop(key, None)
        _DIRTY[key] = (conn.raw, dirty)
        for old in [k for k, (raw, _) in _DIRTY.items() if _idle(raw)]:
            if len(_DIRTY) <= MAX_TRACKED:
                break
            del _DIRTY[old]  # no write of it is pending: its next copy starts clean
            _HELD.pop(old, None)


def create(conn: Connection, table: str) -> None:
    """The (empty) codes table of a new index, marked complete."""
    _touched(conn, table, None)
    _ensure_table(conn, table)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (READY + table,))


def ready(conn: Connection, table: str) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (READY + table,)).fetchone()
    return row is not None


def backfill(conn: Connection, table: str) -> None:
    """Build the codes of every vector of `table` (needs sqlite-vec in this connection)."""
    create(conn, table)
    conn.execute(f"DELETE FROM {codes_table(table)}")
    conn.execute(f"DELETE FROM {units_table(table)}")
    cursor = conn.execute(f"SELECT rowid, embedding FROM {table}")
    while rows := cursor.fetchmany(10_000):
        write(conn, table, [(int(n), bytes(blob)) for n, blob in rows])


def encode(blobs: Sequence[bytes]) -> tuple[Any, Any]:
    """(unit float32 rows, sign-bit codes as uint64 words) of packed float32 vectors."""
    import numpy as np

    from cortex.store.packing import unit_rows

    unit = unit_rows(list(blobs))
    bits = np.packbits(unit > 0, axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return unit, np.ascontiguousarray(bits).view(np.uint64)


def write(conn: Connection, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Store (or replace) the codes of these row numbers' vectors."""
    if not rows:
        return
    unit, codes = encode([blob for _, blob in rows])
    _ensure_table(conn, table)  # an index whose codes wait for `backfill` stays not ready
    _update(conn, table, [n for n, _ in rows], codes)
    conn.executemany(
        f"INSERT OR REPLACE INTO {units_table(table)} (n, vector) VALUES (?, ?)",
        [(n, unit[i].tobytes()) for i, (n, _) in enumerate(rows)],
    )


def delete(conn: Connection, table: str, ns: Sequence[int]) -> None:
    if ns and conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (codes_table(table),)).fetchone():
        _update(conn, table, list(ns), None)
        conn.execute(f"DELETE FROM {units_table(table)} WHERE n IN ({marks(ns)})", list(ns))


def _update(conn: Connection, table: str, ns: Sequence[int], codes: Any) -> None:
    """Set (or, with no `codes`, clear) the code of each row number in its chunk."""
    import numpy as np

    by_chunk: dict[int, list[int]] = {}
    for i, n in enumerate(ns):
        by_chunk.setdefault(n // CHUNK, []).append(i)
    _touched(conn, table, list(by_chunk))
    for chunk, positions in by_chunk.items():
        row = conn.execute(
            f"SELECT codes, present FROM {codes_table(table)} WHERE chunk = ?", (chunk,)
        ).fetchone()
        if row is None and codes is None:
            continue
        if row is None:
            block = np.zeros((CHUNK, codes.shape[1]), dtype=np.uint64)
            present = np.zeros(CHUNK, dtype=np.uint8)
        else:
            present = np.frombuffer(row[1], dtype=np.uint8).copy()
            block = np.frombuffer(row[0], dtype=np.uint64).reshape(CHUNK, -1).copy()
        slots = np.array([ns[i] % CHUNK for i in positions])
        if codes is None:
            present[slots] = 0
        else:
            block[slots] = codes[positions]
            present[slots] = 1
        conn.execute(
            f"INSERT OR REPLACE INTO {codes_table(table)} (chunk, codes, present) VALUES (?, ?, ?)",
            (chunk, block.tobytes(), present.tobytes()),
        )


def drop(conn: Connection, table: str) -> None:
    _touched(conn, table, None)
    conn.execute(f"DROP TABLE IF EXISTS {codes_table(table)}")
    conn.execute(f"DROP TABLE IF EXISTS {units_table(table)}")
    conn.execute("DELETE FROM meta WHERE key = ?", (READY + table,))


def _read(conn: Connection, table: str, chunks: Sequence[int] | None) -> tuple[Any, Any]:
    """(row numbers in order, codes word by word) of these chunks (None: every chunk). The
    codes are held word by word (one contiguous row per 64 bits of every vector): a distance
    is then a few passes over contiguous words instead of a sum across each short row (~3x)."""
    import numpy as np

    sql = f"SELECT chunk, codes, present FROM {codes_table(table)}"
    if chunks is None:
        rows = conn.execute(sql + " ORDER BY chunk")
    else:
        rows = conn.execute(sql + f" WHERE chunk IN ({marks(chunks)}) ORDER BY chunk", list(chunks))
    parts_n, parts_codes = [], []
    for chunk, blob, present in rows:
        mask = np.frombuffer(present, dtype=np.uint8).astype(bool)
        parts_n.append(np.flatnonzero(mask) + int(chunk) * CHUNK)
        parts_codes.append(np.frombuffer(blob, dtype=np.uint64).reshape(CHUNK, -1)[mask])
    ns = np.concatenate(parts_n) if parts_n else np.zeros(0, dtype=np.int64)
    codes = np.concatenate(parts_codes) if parts_codes else np.zeros((0, 1), dtype=np.uint64)
    return ns, np.ascontiguousarray(codes.T)


def _held(conn: Connection, table: str) -> tuple[Any, Any, list[int]] | None:
    """(row numbers, codes, chunks to read afresh) of the table: the copy this connection read
    whole while no other connection has committed since, and the chunks it wrote after that
    read (their rows in the copy may be stale: the caller reads them again). A copy read inside
    a transaction is kept too: every chunk that transaction wrote is among the chunks to read."""
    key = (id(conn.raw), table)
    version = data_version(conn)
    with _LOCK:
        held = _HELD.get(key)
        dirty = _dirty(conn, key)
        if held is not None and held[0] is conn.raw and held[1] == version and dirty is not None:
            return held[2], held[3], sorted(dirty)
    if not ready(conn, table):
        return None
    ns, codes = _read(conn, table, None)
    quiet = not getattr(conn.raw, "in_transaction", False)  # nothing written is uncommitted
    with _LOCK:
        dirty = set() if quiet else _dirty(conn, key)
        if dirty is not None:
            _DIRTY.pop(key, None)
            _DIRTY[key] = (conn.raw, dirty)
            _HELD.pop(key, None)
            _HELD[key] = (conn.raw, version, ns, codes)
            while len(_HELD) > MAX_HELD:
                del _HELD[next(iter(_HELD))]  # its writes stay tracked: a copy read again starts clean
    return ns, codes, sorted(dirty or ())


class _Codes:
    """The codes a search scores: the held copy, its rows written since marked to skip, and the
    chunks written since read afresh after it (not copied into it: 48 MB at 1,000,000)."""

    def __init__(self, conn: Connection, table: str, ns: Any, words: Any, chunks: list[int]) -> None:
        import numpy as np

        self.skip = np.zeros(len(ns), dtype=bool)
        for c in chunks:
            lo, hi = np.searchsorted(ns, [c * CHUNK, (c + 1) * CHUNK]).tolist()
            self.skip[lo:hi] = True
        fresh_n, fresh_words = _read(conn, table, chunks) if chunks else (ns[:0], words[:, :0])
        if not len(ns):  # nothing held (an empty table then): the fresh chunks are all there is
            ns, words, self.skip = fresh_n, fresh_words, np.zeros(len(fresh_n), dtype=bool)
            fresh_n, fresh_words = fresh_n[:0], fresh_words[:, :0]
        self.held, self.words, self.fresh = len(ns), words, fresh_words
        self.ns = np.concatenate([ns, fresh_n]) if len(fresh_n) else ns
        self.count = len(self.ns) - int(self.skip.sum())

    def hamming(self, query: Any) -> Any:
        import numpy as np

        distance = _hamming(self.words, query)
        distance[self.skip] = np.iinfo(np.int32).max  # written since: scored in `fresh`
        return np.concatenate([distance, _hamming(self.fresh, query)]) if self.fresh.shape[1] else distance

    def columns(self, at: Any) -> Any:
        """The codes of these positions (of `ns`), word by word."""
        import numpy as np

        if not self.fresh.shape[1]:
            return self.words[:, at]
        held = at < self.held
        out = np.empty((self.words.shape[0], len(at)), dtype=np.uint64)
        out[:, held] = self.words[:, at[held]]
        out[:, ~held] = self.fresh[:, at[~held] - self.held]
        return out


def knn(conn: Connection, table: str, query: bytes, k: int) -> list[tuple[int, float]] | None:
    """(row number, cosine distance) of about the k nearest vectors, nearest first; None when
    the table is too small for this search (or has no complete codes): search exactly then."""
    import numpy as np

    found = _held(conn, table)
    if found is None or (not found[2] and len(found[0]) < ANN_MIN):
        return None
    codes = _Codes(conn, table, *found)
    if codes.count < ANN_MIN:
        return None
    if k <= 0:
        return []
    unit, q = encode([query])
    distance = codes.hamming(q[0])
    ns = codes.ns
    wanted = min(codes.count, max(CANDIDATES, PER_RESULT * k))
    shortlist = min(codes.count, max(SHORTLIST * wanted, codes.count // GROWTH))
    # Rows to skip score above any code, so a shortlist no longer than the rows kept holds none.
    near = np.argpartition(distance, shortlist - 1)[:shortlist] if shortlist < len(ns) else np.arange(len(ns))
    if wanted < len(near):
        score = _sign_dot(codes.columns(near), unit[0])
        near = near[np.argpartition(-score, wanted - 1)[:wanted]]
    picked = ns[near]
    vectors: dict[int, bytes] = {}
    candidates = sorted(int(n) for n in picked)  # row order: the table's pages in order
    for start in range(0, len(candidates), BATCH):
        chunk = candidates[start : start + BATCH]
        sql = f"SELECT n, vector FROM {units_table(table)} WHERE n IN ({marks(chunk)})"
        vectors.update((int(n), bytes(v)) for n, v in conn.execute(sql, chunk))
    rows = list(vectors)
    matrix = np.frombuffer(b"".join(vectors[n] for n in rows), dtype="<f4").reshape(len(rows), -1)
    sims = matrix @ unit[0]
    order = np.lexsort((np.array(rows), -sims))[:k]
    return [(rows[i], float(1.0 - sims[i])) for i in order]


def _hamming(words: Any, query: Any) -> Any:
    """Hamming distance (int32) of every held code to the query's, a block of codes at a time:
    each pass over a whole 1,000,000-code word would stream 8 MB through memory three times."""
    import numpy as np

    count = words.shape[1]
    distance = np.zeros(count, dtype=np.int32)
    xor = np.empty(min(BLOCK, count), dtype=np.uint64)
    bits = np.empty(len(xor), dtype=np.uint8)
    for start in range(0, count, BLOCK):
        end = min(start + BLOCK, count)
        part, x, b = distance[start:end], xor[: end - start], bits[: end - start]
        for word, q in zip(words, query, strict=True):
            np.bitwise_xor(word[start:end], q, out=x)
            if hasattr(np, "bitwise_count"):
                np.bitwise_count(x, out=b)
            else:  # numpy < 2
                b[:] = np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)
            np.add(part, b, out=part)
    return distance


def _sign_dot(words: Any, unit: Any) -> Any:
    """The dot product of a float query with the signs (+1/-1) of each code's bits: a closer
    estimate of the cosine than the Hamming distance (the query keeps its magnitudes), from a
    table of every byte's sum per byte position."""
    import numpy as np

    as_bytes = np.ascontiguousarray(words.T).view(np.uint8)  # one row of bytes per code, as packed
    padded = np.zeros(as_bytes.shape[1] * 8, dtype=np.float32)
    padded[: len(unit)] = unit
    signs = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32) * 2 - 1
    table = signs @ padded.reshape(-1, 8).T  # byte value x byte position
    return table[as_bytes, np.arange(as_bytes.shape[1])].sum(axis=1)


def forget_all() -> None:
    """Drop every held code matrix (tests)."""
    with _LOCK:
        _HELD.clear()
        _DIRTY.clear()
