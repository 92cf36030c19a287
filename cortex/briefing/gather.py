"""Read, by index, only the memories a briefing can show: its cost follows the budget, not the store.

The briefing ranks each bucket (pinned, then each type) and stops taking memories once the budget
could not hold more (`plan_candidates`). Here each bucket is read in bands of rank from the top
down: the rank index (type, pinned, access count, rank key) finds every memory whose rank may
lie in a band, one seek per access count, so a read costs about what it returns. The first band
starts at the best rank there is; bands widen until the memories the briefing would take, and
every one ranked above them, are known, and where ranks crowd a band stops at the rank of the
last row the bucket can still take, so only about those rows are ever decoded.
`render_briefings` given that pool and `StoreFacts` (the counts and the access scale of all
memories) renders the same text as from every memory.

Stores without these reads (`BriefingReads`), and weights the rank key cannot order by (another
ratio of confidence, priority and centrality, or a recency weight), are read whole instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cortex.briefing import anchors
from cortex.briefing.stale import flag_stale
from cortex.core.briefing.compose import (
    BUCKET_OF,
    MAX_STALE_IDS,
    MIN_ENTRY_TOKENS,
    MOMENT_BUCKETS,
    PART_BUCKETS,
    BriefingPart,
    StoreFacts,
    is_second_hand,
)
from cortex.core.briefing.quarantine import is_withheld
from cortex.core.briefing.text import MAX_ENTRY_CHARS, MAX_STALE_LISTED
from cortex.core.extract.structural import EDITS_TAG
from cortex.core.model import Memory, MemoryType
from cortex.core.recall.ranking import BriefingWeights, log_access, score_briefing
from cortex.core.write.state import branch_key
from cortex.store.port import RANK_KEY_WEIGHTS, BriefingReads, RankBand

FIRST_BAND = 0.05  # the first band's width in rank; then as wide as the rows still needed take
TYPICAL_ENTRY_TOKENS = 24  # what a briefing entry costs at least, give or take: sizes the bands
ACCESS_CHUNK = 16  # rows per read of the most accessed memories
BAND_SLACK_ROWS = 8  # rows a band may read beyond those the bucket can still take
WIDEN = 0.3  # the next band as wide as this share of the rows still needed took: ranks crowd lower down
MAX_LATEST_EDITS = 3  # `compose.MAX_EDIT_NOTES`
SLACK = 1e-9  # float rounding between the rank of a band and the rank computed here
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
Key = tuple[bool, bool, float, int, str]


@dataclass(frozen=True, slots=True)
class Pool:
    """What the briefing render needs, read by index."""

    memories: list[Memory]  # in store order (store by store, newest first)
    stale: frozenset[str]
    facts: StoreFacts
    total: int  # active memories of the briefed types in all


def _key_scale(weights: BriefingWeights) -> float | None:
    """λ with (confidence, priority, centrality) weights = λ·RANK_KEY_WEIGHTS, or None."""
    if weights.recency:
        return None
    scale = weights.confidence / RANK_KEY_WEIGHTS[0]
    mine = (weights.confidence, weights.priority, weights.centrality)
    if any(abs(w - scale * k) > 1e-12 for w, k in zip(mine, RANK_KEY_WEIGHTS, strict=True)):
        return None
    return scale


class _Reader:
    """The index reads of one render, shared by its parts and buckets."""

    def __init__(
        self, stores: Sequence[BriefingReads], branch: str | None, weights: BriefingWeights, scale: float
    ) -> None:
        self.stores = stores
        self.weights = weights
        self.total = weights.confidence + weights.priority + weights.centrality + weights.access
        self.scale = scale / self.total
        self.skipped: dict[str, bool] = {}
        self.store_of: dict[str, int] = {}
        self.taken: dict[str, Memory] = {}
        self.known: dict[str, Memory] = {}  # every memory read, by id: read once per render
        self.edits = self._tagged(EDITS_TAG)
        boosted = branch is not None and weights.branch_boost > 0
        self.branch_tagged = self._tagged(branch) if boosted and branch else []
        self.latest: dict[BriefingPart, list[Memory]] = {}
        self.by_access: dict[
            tuple[int, str, bool, tuple[int, int] | None], list[tuple[int, int, Memory]]
        ] = {}

    def _tagged(self, tag: str) -> list[Memory]:
        out = []
        for i, s in enumerate(self.stores):
            for m in s.brief_tagged(tag):
                self.store_of.setdefault(m.id, i)
                out.append(m)
        return out

    def eligible(self, m: Memory, part: BriefingPart, branch: str | None) -> bool:
        """`plan_eligible` for one active memory of the part's types."""
        if BUCKET_OF[m.type] in MOMENT_BUCKETS and not m.pinned and _other_branch(m.source.branch, branch):
            return False
        return m.pinned or EDITS_TAG not in m.tags or any(m.id == e.id for e in self.latest[part])

    def read_latest_edits(self, part: BriefingPart, branch: str | None) -> int:
        """Keep the part's latest edit notes; return how many edit notes it would otherwise see."""
        types = set(part_types(part))
        mine = [
            m
            for m in self.edits
            if not m.pinned
            and m.type.value in types
            and not (BUCKET_OF[m.type] in MOMENT_BUCKETS and _other_branch(m.source.branch, branch))
        ]
        self.latest[part] = sorted(mine, key=lambda m: (m.created, m.id), reverse=True)[:MAX_LATEST_EDITS]
        for m in self.latest[part]:
            self.taken[m.id] = m
        return len(mine)

    def max_log(self, part: BriefingPart, branch: str | None) -> float:
        """The largest log(access+1) among the part's eligible memories, read most accessed first."""
        best = max((log_access(m) for m in self.latest[part]), default=0.0)
        for type_ in part_types(part):
            for pinned in (False, True):
                for s in self.stores:
                    below: tuple[int, int] | None = None
                    while True:
                        rows = self._by_access(s, type_, pinned, below)
                        first = next((m for _, _, m in rows if self.eligible(m, part, branch)), None)
                        if first is not None:
                            best = max(best, log_access(first))
                        if first is not None or len(rows) < ACCESS_CHUNK:
                            break
                        below = (rows[-1][0], rows[-1][1])
        return best

    def _by_access(
        self, s: BriefingReads, type_: str, pinned: bool, below: tuple[int, int] | None
    ) -> list[tuple[int, int, Memory]]:
        """`brief_by_access`, read once per render (each part asks again with its own branch)."""
        key = (id(s), type_, pinned, below)
        if key not in self.by_access:
            self.by_access[key] = s.brief_by_access(type_, pinned, ACCESS_CHUNK, below)
        return self.by_access[key]

    def read_bucket(
        self, part: BriefingPart, bucket: str, branch: str | None, max_log: float, budget: int
    ) -> None:
        """Read one bucket until the memories `plan_candidates` takes, and all ranked above
        them, are known; keep them in `taken`."""
        pinned = bucket == "pinned"
        types = [t for t in part_types(part) if pinned or BUCKET_OF[MemoryType(t)] == bucket]
        boost = self.weights.branch_boost if branch is not None else 0.0
        access_share = self.weights.access / self.total
        found = {
            m.id: m
            for m in (*self.branch_tagged, *self.latest[part])
            if m.pinned == pinned and m.type.value in types
        }
        keys: dict[str, Key] = {}

        def key(m: Memory) -> Key:
            if m.id not in keys:
                rank = score_briefing(m, self.weights, max_log, None, branch)
                keys[m.id] = (
                    not m.pinned,
                    m.type is not MemoryType.DECISION,
                    -rank,
                    -_micros(m.updated),
                    m.id,
                )
            return keys[m.id]

        # Every memory ranked at or above low[group] is read ("not a decision" groups: pinned
        # decisions come before other pinned notes). Ranks never exceed the sum of the weights.
        top = self.scale * sum(RANK_KEY_WEIGHTS) + access_share + boost
        access_scale = access_share / max_log if max_log else 0.0
        probe = RankBand(self.scale, access_scale, access_share, branch, boost, 0.0, top)
        # Bands start at the best rank there is (none above it reads anything) and skip a type
        # of a store once they are below its best rank: mostly the pinned ones, few or none.
        best = {(t, i): s.brief_top(t, pinned, probe) for t in types for i, s in enumerate(self.stores)}
        low = {}
        for group in (False, True):
            tops = [
                x for (t, _), x in best.items() if (t != MemoryType.DECISION.value) == group and x is not None
            ]
            low[group] = min(top, max(tops)) if tops else -math.inf
        width = FIRST_BAND
        need = min(budget // MIN_ENTRY_TOKENS + 1, 2 * budget // TYPICAL_ENTRY_TOKENS + 1)
        while True:
            ranked = sorted(
                ((key(m), m) for m in found.values() if self.eligible(m, part, branch)), key=lambda km: km[0]
            )
            bounds = {g: (v if types_in(types, g) else -math.inf) for g, v in low.items()}
            taken, settled, target = _settle(ranked, bounds, budget, self._skipped)
            if settled:  # what `plan_candidates` visits in this bucket: all the render needs of it
                self.taken.update((m.id, m) for m in taken)
                return
            before = len(found)
            # A band never reads many more rows than the bucket can still take (by count, and by
            # the least cost of entries like those taken so far): where ranks crowd, it stops
            # at the rank of the last of them.
            limit = _rows_left(taken, budget, self._skipped, need) + BAND_SLACK_ROWS
            used = width
            for group, goal in target.items():
                if not types_in(types, group) or low[group] == -math.inf:
                    continue
                new_low = min(low[group] - width, goal - 4 * SLACK)
                new_low = -math.inf if new_low <= 0 else new_low  # ranks are never negative
                band_of = RankBand(
                    self.scale, access_scale, access_share, branch, boost, new_low, low[group] + SLACK
                )
                for t in types:
                    if (t != MemoryType.DECISION.value) != group:
                        continue
                    for i, s in enumerate(self.stores):
                        most = best[(t, i)]
                        if most is None or most < new_low - SLACK:
                            continue  # nothing of this type in this store ranks in the band
                        got_band, floor = s.brief_band(t, pinned, band_of, self.known, limit)
                        new_low = max(new_low, floor)  # read down to there for every type
                        for m in got_band:
                            self.known[m.id] = m
                            found[m.id] = m
                            self.store_of.setdefault(m.id, i)
                if not math.isinf(new_low):
                    used = min(used, low[group] - new_low)
                low[group] = new_low
            # The next band is about as wide as the rows still needed took in this one, and at
            # most as wide as the ranks read so far span: ranks crowd more densely further down.
            got = len(found) - before
            if got:
                wanted = max(need - len(ranked) - got, 8)
                finite = [v for v in low.values() if v > -math.inf]
                span = max(-key(m)[2] for m in found.values()) - min(finite) if finite else 0.0
                span = max(span, FIRST_BAND / 2)
                width = min(max(WIDEN * wanted * used / got, FIRST_BAND / 4), span)
            else:
                width *= 1.5

    def _skipped(self, m: Memory) -> bool:
        """Passed over by `plan_candidates` without counting: second-hand or instruction-like."""
        if m.id not in self.skipped:
            self.skipped[m.id] = is_second_hand(m) or is_withheld(m)
        return self.skipped[m.id]


def _entry_floor(m: Memory) -> int:
    """The least an entry costs, as `plan_candidates` counts it."""
    return min(len(m.content), MAX_ENTRY_CHARS) // 4 + MIN_ENTRY_TOKENS


def _rows_left(taken: list[Memory], budget: int, skipped: Callable[[Memory], bool], need: int) -> int:
    """About how many more rows a bucket that took `taken` can take before `plan_candidates`
    stops it (more than twice the budget spent, or the count reached)."""
    kept = [m for m in taken if not skipped(m)]
    if not kept:
        return need
    spent = sum(_entry_floor(m) for m in kept)
    by_cost = math.ceil(max(2 * budget - spent, 0) * len(kept) / spent) + 1
    return max(min(need - len(kept), by_cost), 0)


def types_in(types: list[str], group: bool) -> bool:
    """Whether any of `types` is in the group (True: not a decision)."""
    return any((t != MemoryType.DECISION.value) == group for t in types)


def _settle(
    ranked: list[tuple[Key, Memory]],
    bounds: dict[bool, float],
    budget: int,
    skipped: Callable[[Memory], bool],
) -> tuple[list[Memory], bool, dict[bool, float]]:
    """(the rows `plan_candidates` visits in this bucket, whether no unread row can change that,
    and otherwise the rank down to which each group must be read; inf: one band more).

    `bounds[group]`: no unread memory of the group ranks above it (-inf: all are read)."""
    max_count = budget // MIN_ENTRY_TOKENS + 1
    count = spent = 0
    visited: list[Memory] = []
    for (_, group, neg_rank, _, _), m in ranked:
        if count >= max_count or spent > 2 * budget:
            return visited, True, {}
        if group and bounds[False] > -math.inf:  # pinned: every decision comes first
            return visited, False, {False: -math.inf, True: -neg_rank}
        if -neg_rank <= bounds[group] + SLACK:  # an unread row may rank above this one
            return visited, False, {group: -neg_rank}
        visited.append(m)
        if skipped(m):
            continue
        count += 1
        spent += min(len(m.content), MAX_ENTRY_CHARS) // 4 + MIN_ENTRY_TOKENS
    if count >= max_count or spent > 2 * budget or max(bounds.values()) == -math.inf:
        return visited, True, {}
    return visited, False, {g: math.inf for g, v in bounds.items() if v > -math.inf}  # read on


def part_types(part: BriefingPart) -> list[str]:
    """The memory types a part shows."""
    return [t.value for t in MemoryType if BUCKET_OF.get(t) in PART_BUCKETS[part]]


def _other_branch(recorded: str | None, branch: str | None) -> bool:
    """`is_other_feature_branch` on a recorded branch name."""
    key = branch_key(recorded)
    return bool(key) and key != branch_key(branch)


def _micros(t: datetime) -> int:
    return (t - _EPOCH) // _US


def read_pool(
    stores: Sequence[object],
    root: Path,
    *,
    branch: str | None,
    weights: BriefingWeights,
    budget_tokens: int,
    cache_file: Path | None = None,
) -> Pool | None:
    """The memories of `stores` the briefing can reach and the facts about the rest, read by
    index; None when a store lacks the index reads or the weights are not the key's. `cache_file`:
    the anchors' cache (`anchors.cache_path`), whose blob ids at HEAD say which files are gone."""
    scale = _key_scale(weights)
    if scale is None or not all(isinstance(s, BriefingReads) for s in stores):
        return None
    readers = [s for s in stores if isinstance(s, BriefingReads)]
    reader = _Reader(readers, branch, weights, scale)
    budget = max(budget_tokens, 0)
    counts = [s.brief_counts() for s in readers]
    eligible: dict[BriefingPart, int] = {}
    max_log: dict[BriefingPart, float] = {}
    for part in BriefingPart:
        part_branch = None if part is BriefingPart.STABLE else branch  # as `render_briefings` ranks
        edits = reader.read_latest_edits(part, part_branch)
        eligible[part] = _count(part, part_branch, counts) - edits + len(reader.latest[part])
        max_log[part] = reader.max_log(part, part_branch)
        for bucket in ("pinned", *PART_BUCKETS[part]):
            reader.read_bucket(part, bucket, part_branch, max_log[part], budget)
    briefed = [t.value for t in MemoryType if t in BUCKET_OF]
    stale_count, stale_first, gone = _stale(reader, root, cache_file)
    last = _last_session(readers, briefed)
    facts = StoreFacts(eligible, max_log, last, stale_count, tuple(stale_first))
    total = sum(n for by_key in counts for (t, _, _), n in by_key.items() if t in briefed)
    # In `list_memories` order (newest first, then id), store by store, as the full read gives them.
    pool = sorted(reader.taken.values(), key=lambda m: m.id)
    pool.sort(key=lambda m: m.created, reverse=True)
    pool.sort(key=lambda m: reader.store_of[m.id])
    return Pool(pool, flag_stale(pool, gone) | set(stale_first), facts, total)


def _count(
    part: BriefingPart, branch: str | None, counts: list[dict[tuple[str, bool, str | None], int]]
) -> int:
    """Active memories `plan_eligible` keeps, before its rule on edit notes."""
    types = set(part_types(part))
    total = 0
    for by_key in counts:
        for (type_, pinned, recorded), n in by_key.items():
            if type_ not in types:
                continue
            moment = BUCKET_OF[MemoryType(type_)] in MOMENT_BUCKETS
            if pinned or not (moment and _other_branch(recorded, branch)):
                total += n
    return total


def _stale(reader: _Reader, root: Path, cache: Path | None) -> tuple[int, list[str], dict[str, str | None]]:
    """`anchors.read_stale` of the stores; the first few stale memories join the pool."""
    count, first, gone = anchors.read_stale(reader.stores, root, cache, MAX_STALE_IDS)
    for i, s in enumerate(reader.stores):
        for m in s.get_many(first[:MAX_STALE_LISTED]).values():
            reader.store_of.setdefault(m.id, i)
            reader.taken[m.id] = m
    return count, first, gone


def _last_session(stores: Sequence[BriefingReads], types: list[str]) -> tuple[Memory, int] | None:
    newest = [m for s in stores if (m := s.brief_newest_session(types)) is not None]
    if not newest:
        return None
    last = max(newest, key=lambda m: (m.created, m.id))
    session = last.source.session_id or ""
    return last, sum(s.brief_session_count(session, types) for s in stores)
