"""The write gate's lexical merge decision on the labelled near-duplicate / near-miss set.

    python -m benchmarks.dedup [--markdown OUT]

A pair is merged when its word Jaccard reaches the gate's near-duplicate threshold and nothing
distinguishing differs (`cortex/core/write/distinct.py`); the label says whether the second
text is the first typed again. Precision and recall of "merge", overall and per kind of pair,
with the Jaccard threshold alone for comparison. The set is `tests/support/dedup_pairs.py`
(generated from templates with a fixed seed). The embedding path is not measured here.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from cortex.core.text import jaccard, word_set
from cortex.core.write.distinct import distinguishing_difference
from cortex.core.write.gate import NEAR_DUPLICATE_JACCARD
from tests.support.dedup_pairs import SEED, Pair, labelled_pairs


def merges(p: Pair, *, rule: bool = True) -> bool:
    """The gate's lexical decision for one pair (`rule=False`: the threshold alone)."""
    if jaccard(word_set(p.a), word_set(p.b)) < NEAR_DUPLICATE_JACCARD:
        return False
    return not rule or distinguishing_difference(p.a, p.b) is None


def scores(pairs: list[Pair], *, rule: bool = True) -> dict[str, float]:
    tp = sum(1 for p in pairs if p.merge and merges(p, rule=rule))
    fp = sum(1 for p in pairs if not p.merge and merges(p, rule=rule))
    fn = sum(1 for p in pairs if p.merge and not merges(p, rule=rule))
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
    }


def report(pairs: list[Pair]) -> str:
    with_rule, alone = scores(pairs), scores(pairs, rule=False)
    kinds = Counter((p.kind, p.merge) for p in pairs)
    lines = [
        "# Write gate: lexical merge decision on the labelled pair set",
        "",
        f"`python -m benchmarks.dedup` over {len(pairs)} pairs from `tests/support/dedup_pairs.py`",
        f"(seed {SEED}): {sum(p.merge for p in pairs)} re-typings that should merge,",
        f"{sum(not p.merge for p in pairs)} near misses and look-alikes that must not.",
        f"Merge = word Jaccard >= {NEAR_DUPLICATE_JACCARD} and nothing distinguishing differs.",
        "",
        "| decision | precision | recall | merged wrongly | missed |",
        "|---|---|---|---|---|",
        f"| Jaccard >= {NEAR_DUPLICATE_JACCARD} alone (before) | {alone['precision']:.3f} | "
        f"{alone['recall']:.3f} | {alone['fp']} | {alone['fn']} |",
        f"| Jaccard + distinguishing-detail rule (now) | {with_rule['precision']:.3f} | "
        f"{with_rule['recall']:.3f} | {with_rule['fp']} | {with_rule['fn']} |",
        "",
        "Per kind of pair (merged / pairs, with the rule):",
        "",
        "| kind | label | pairs | merged |",
        "|---|---|---|---|",
    ]
    for (kind, label), n in sorted(kinds.items(), key=lambda x: (not x[0][1], x[0][0])):
        merged = sum(1 for p in pairs if p.kind == kind and p.merge == label and merges(p))
        lines.append(f"| {kind} | {'merge' if label else 'keep apart'} | {n} | {merged} |")
    lines += [
        "",
        "Limits: the set is generated from 12 templates, so it measures the rule on the kinds of",
        "difference it names, not on free paraphrase; a same-meaning word swap (`synonym`) is",
        "refused by the lexical rule on purpose (a replaced content word may be a different fact)",
        "and is left to the embedding path, which this benchmark does not run. The rule and the",
        "set were written together (no held-out set): read the numbers as a regression check of",
        "the named kinds, not as an estimate on real notes.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", type=Path, help="write the report here")
    args = parser.parse_args()
    text = report(labelled_pairs())
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
