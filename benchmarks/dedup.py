"""The write gate's merge decision on the labelled pair sets: lexical re-typings and paraphrases.

    python -m benchmarks.dedup [--markdown OUT]

Two sets: `tests/support/dedup_pairs.py` (generated from templates with a fixed seed: re-typings
and near misses that share most words) and `tests/support/paraphrase_pairs.py` (hand-written
developer notes: paraphrases in other words, near misses that differ in a number, a negation,
a named technology, an identifier, a version, a date or a direction, and same-topic pairs).

Each pair goes through the gate itself (`cortex.core.write.gate.plan_write`): the first text
is the stored memory, the second the candidate, with their word Jaccard and the cosine of
their embeddings (all-MiniLM-L6-v2 through the ONNX export, embedded as the store embeds
them: `[type] [project:shop] text`). "Merge" is a REINFORCE plan. Precision and recall of
that decision, the lexical rule alone for comparison, and the cosine threshold swept.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cortex.core.model import Candidate, Layer, Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash, embedding_text, jaccard, word_set
from cortex.core.write import gate
from cortex.core.write.distinct import distinguishing_difference
from cortex.core.write.gate import NEAR_DUPLICATE_JACCARD, Neighbour, WriteAction, plan_write
from cortex.core.write.paraphrase import PARAPHRASE_COSINE
from tests.support.dedup_pairs import SEED, Pair, labelled_pairs
from tests.support.paraphrase_pairs import held_out, labelled

PROJECT = "shop"
NOW = datetime(2026, 11, 25, tzinfo=UTC)
SWEEP = (0.84, 0.86, 0.88, 0.90, 0.92, 0.94)


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled pair as the gate sees it: stored text `a`, candidate `b`."""

    a: str
    b: str
    merge: bool
    kind: str
    type: str
    source: str  # "generated" or "hand-written"


def cases() -> list[Case]:
    """Every set: generated, hand-written (calibration), hand-written held out."""
    out = [Case(p.a, p.b, p.merge, p.kind, "decision", "generated") for p in labelled_pairs()]
    out += [Case(p.a, p.b, p.merge, p.kind, p.type, "hand-written") for p in labelled()]
    out += [Case(p.a, p.b, p.merge, p.kind, p.type, "held-out") for p in held_out()]
    return out


def merges(p: Pair | Case, *, rule: bool = True) -> bool:
    """The gate's lexical decision for one pair (`rule=False`: the threshold alone)."""
    if jaccard(word_set(p.a), word_set(p.b)) < NEAR_DUPLICATE_JACCARD:
        return False
    return not rule or distinguishing_difference(p.a, p.b) is None


def _memory(c: Case) -> Memory:
    return Memory(
        id="m1",
        content=c.a,
        summary=c.a[:60],
        type=MemoryType(c.type),
        scope=Scope.PROJECT,
        confidence=0.7,
        priority=5,
        pinned=False,
        source=Source(),
        tags=(),
        access_count=0,
        last_accessed=None,
        created=NOW,
        updated=NOW,
        status=Status.ACTIVE,
        content_hash=content_hash(c.a),
    )


def gate_merges(c: Case, cosine: float | None) -> bool:
    """The write gate's decision: does storing `b` next to `a` reinforce `a`?"""
    cand = Candidate(content=c.b, type=MemoryType(c.type), layer=Layer.USER, confidence=0.7)
    near = Neighbour(_memory(c), jaccard(word_set(c.a), word_set(c.b)), cosine)
    return plan_write(cand, exact=None, neighbours=[near]).action is WriteAction.REINFORCE


def scores(
    pairs: Sequence[Pair | Case], decide: Callable[[int], bool] | None = None, *, rule: bool = True
) -> dict[str, float]:
    """tp/fp/fn, precision and recall of `decide(i)` (default: the lexical rule, or the
    Jaccard threshold alone with `rule=False`)."""
    got = [decide(i) if decide else merges(p, rule=rule) for i, p in enumerate(pairs)]
    tp = sum(1 for p, m in zip(pairs, got, strict=True) if p.merge and m)
    fp = sum(1 for p, m in zip(pairs, got, strict=True) if not p.merge and m)
    fn = sum(1 for p, m in zip(pairs, got, strict=True) if p.merge and not m)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
    }


def embed_text(c: Case, text: str) -> str:
    return embedding_text(text, c.type, PROJECT)


def cosines(items: Sequence[Case], embed: Callable[[list[str]], object]) -> list[float]:
    """The cosine of each pair's two embeddings, as the store would compute it."""
    import numpy as np

    texts = sorted({embed_text(c, t) for c in items for t in (c.a, c.b)})
    vecs = np.asarray(embed(texts), dtype="float64")
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    row = {t: i for i, t in enumerate(texts)}
    return [float(vecs[row[embed_text(c, c.a)]] @ vecs[row[embed_text(c, c.b)]]) for c in items]


def decisions(
    items: Sequence[Case], cos: Sequence[float], threshold: float = PARAPHRASE_COSINE
) -> list[bool]:
    """The gate's decision on every pair, with the paraphrase threshold set to `threshold`."""
    saved = gate.PARAPHRASE_COSINE
    gate.PARAPHRASE_COSINE = threshold
    try:
        return [gate_merges(c, x) for c, x in zip(items, cos, strict=True)]
    finally:
        gate.PARAPHRASE_COSINE = saved


def _row(name: str, s: Mapping[str, float]) -> str:
    return f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['fp']} | {s['fn']} |"


def report(items: Sequence[Case], cos: Sequence[float], model: str) -> str:
    now = decisions(items, cos)

    def part(source: str) -> tuple[list[Case], list[int]]:
        idx = [i for i, c in enumerate(items) if c.source == source]
        return [items[i] for i in idx], idx

    hand, hand_idx = part("hand-written")
    held, held_idx = part("held-out")
    lines = [
        "# Write gate: merge decision on the labelled pair sets",
        "",
        f"`python -m benchmarks.dedup` over {len(items)} pairs: "
        f"{len(items) - len(hand) - len(held)} generated",
        f"(`tests/support/dedup_pairs.py`, seed {SEED}), {len(hand)} hand-written developer notes the",
        f"rule was calibrated on and {len(held)} written after it was fixed (held out), both in",
        f"`tests/support/paraphrase_pairs.py`; {sum(c.merge for c in items)} should merge,",
        f"{sum(not c.merge for c in items)} must not.",
        "",
        f"Embedding model: {model}; texts embedded as the store embeds them",
        f"(`[type] [project:{PROJECT}] text`). Each pair goes through `plan_write`: merge = a",
        "REINFORCE plan. Thresholds: lexical merge at word Jaccard >=",
        f"{NEAR_DUPLICATE_JACCARD} with nothing distinguishing (`core/write/distinct.py`); semantic",
        f"merge at cosine >= {PARAPHRASE_COSINE} of the same memory type with no distinguishing",
        "detail (`core/write/paraphrase.py`).",
        "",
        "| decision | precision | recall | merged wrongly | missed |",
        "|---|---|---|---|---|",
        _row("all pairs: lexical rule alone (no cosines)", scores(items)),
        _row("all pairs: the gate with cosines (now)", scores(items, lambda i: now[i])),
        _row("hand-written: lexical rule alone", scores(hand)),
        _row("hand-written: the gate with cosines", scores(hand, lambda i: now[hand_idx[i]])),
        _row("held out: lexical rule alone", scores(held)),
        _row("held out: the gate with cosines", scores(held, lambda i: now[held_idx[i]])),
        "",
        "Paraphrase threshold swept (all pairs; the rule unchanged):",
        "",
        "| cosine >= | precision | recall | merged wrongly | missed |",
        "|---|---|---|---|---|",
    ]
    for t in SWEEP:
        got = decisions(items, cos, t)
        lines.append(_row(f"{t:.2f}", scores(items, lambda i, got=got: got[i])))
    lines += ["", "Per kind of pair (merged / pairs, the gate with cosines):", ""]
    lines += ["| set | kind | label | pairs | merged | cosine min-max |", "|---|---|---|---|---|---|"]
    kinds = Counter((c.source, c.kind, c.merge) for c in items)
    for (source, kind, label), n in sorted(kinds.items(), key=lambda x: (x[0][0], not x[0][2], x[0][1])):
        idx = [i for i, c in enumerate(items) if (c.source, c.kind, c.merge) == (source, kind, label)]
        span = f"{min(cos[i] for i in idx):.3f}-{max(cos[i] for i in idx):.3f}"
        merged = sum(now[i] for i in idx)
        lines.append(
            f"| {source} | {kind} | {'merge' if label else 'keep apart'} | {n} | {merged} | {span} |"
        )
    wrong = [(items[i], cos[i]) for i in range(len(items)) if now[i] != items[i].merge]
    lines += ["", "Decided wrongly:", ""]
    lines += [
        f"- {'merged' if not c.merge else 'missed'} ({c.kind}, cosine {x:.3f}): {c.a!r} / {c.b!r}"
        for c, x in wrong
    ]
    lines += [
        "",
        "Limits: the hand-written set and the paraphrase rule were written by the same hands and",
        "the rule was adjusted while reading it; the held-out pairs were written after, and the",
        'one wrong merge they showed ("FastAPI over Flask" / "Flask over FastAPI": the same',
        "words, the names swapped) added the name-order check, so they are not fully unseen",
        "either. Thirty pairs are a small sample: read the numbers as a regression check and a",
        "rough estimate, not a measurement on real notes. A missed paraphrase stays a separate",
        "memory linked `relates_to` (cosine >= 0.75; a suggested link where few words are shared);",
        "the misses are mostly rewordings that swap",
        'an opposite ("before" / "after"), add a polarity word ("stops working", "always"),',
        "or reorder several numbers: the rule refuses them on purpose. A single replaced word",
        "(`synonym` in the generated set) is refused too: an embedding cannot tell a synonym",
        'from another thing ("importer" / "exporter" are at cosine 0.92).',
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", type=Path, help="write the report here")
    args = parser.parse_args()
    from benchmarks.gen_store import load_document_embedder

    embedder, note = load_document_embedder()
    items = cases()
    text = report(items, cosines(items, embedder.embed_documents), note.split(" (")[0])
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
