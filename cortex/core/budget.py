"""Token estimates, greedy packing under a budget, per-type soft budgets, truncation notes. Pure."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

CHARS_PER_TOKEN = 4.0  # English prose in a BPE tokenizer
TOKENS_PER_WORD = 4.0 / 3.0  # ~0.75 words per token
_WORD = re.compile(r"[^\W_]+")
# ASCII letters and digits kept, every other byte a space: an ASCII text's runs of `_WORD` are
# then its whitespace-separated words (~5x faster than the regex; a render counts ~350,000 chars).
_ASCII_WORDS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: the larger of a character and a word estimate, rounded, at least 1.

    Characters: ASCII counts 1/4 token, any other character 1 token (CJK, emoji and accented
    text tokenize far worse than English). Words: 4/3 token per run of letters/digits. Taking
    the larger errs towards over-counting (a budget overflow costs more than a spare line), and
    both parts only grow as text is appended, so the estimate is monotone in appended text.
    """
    if not text:
        return 0
    # Same count as testing each character, without a Python-level loop over the text.
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    char_tokens = ascii_chars / CHARS_PER_TOKEN + (len(text) - ascii_chars)
    if ascii_chars == len(text):
        words = len(text.encode("ascii").translate(_ASCII_WORDS).split())
    else:
        words = len(_WORD.findall(text))
    word_tokens = words * TOKENS_PER_WORD
    return max(1, math.floor(max(char_tokens, word_tokens) + 0.5))


@dataclass(frozen=True, slots=True)
class Packed(Generic[T]):
    """What fitted (in input order), how many items did not, and the cost of what fitted."""

    kept: tuple[T, ...]
    dropped: int
    used: int


def _first_fit(costs: Sequence[int], indices: Sequence[int], allowance: int) -> tuple[list[int], int]:
    # Walk in order, take whatever still fits; a big item does not block smaller ones after it.
    taken: list[int] = []
    spent = 0
    for i in indices:
        if spent + costs[i] <= allowance:
            taken.append(i)
            spent += costs[i]
    return taken, spent


def _costs(items: Sequence[T], cost: Callable[[T], int]) -> list[int]:
    costs = [cost(item) for item in items]
    if any(c < 0 for c in costs):
        raise ValueError("item costs must be >= 0")
    return costs


def pack(items: Sequence[T], cost: Callable[[T], int], budget: int) -> Packed[T]:
    """Keep items in order while they fit (first fit: a too-big item is skipped, not a stop)."""
    costs = _costs(items, cost)
    taken, spent = _first_fit(costs, range(len(items)), max(budget, 0))
    return Packed(tuple(items[i] for i in taken), len(items) - len(taken), spent)


def _portion(amount: int, part: float, whole: float, cap: int) -> int:
    # Ratio first and a hard cap: float rounding must never let portions overbook the budget.
    return min(math.floor(amount * (part / whole)), cap) if whole > 0 else 0


def pack_by_type(
    items_by_type: Mapping[str, Sequence[T]],
    shares: Mapping[str, float],
    budget: int,
    cost: Callable[[T], int],
) -> dict[str, Packed[T]]:
    """Pack each type into a soft share of `budget`, then hand unused budget to hungry types.

    1. Quotas: each type with items gets floor(budget * share / total share), the shares taken
       over the types that have items (missing share = 0). Each type first-fits its own items,
       in order, into its quota. So every type keeps at least what it would keep alone in its
       quota: no type is starved by another.
    2. Redistribution: budget left unused (quotas not filled, rounding) is split among the
       types that still have an item that fits, in proportion to their shares (equally if
       those are all 0), and each first-fits more of its remaining items; repeated while that
       makes progress, then the rest goes to hungry types in order of share (then name).
    Guarantees: the total never exceeds `budget`; each type's kept items keep input order;
    when a type exceeds its quota, it only used budget no other type could use, so at the
    end every dropped item costs more than the budget still unused.
    """
    budget = max(budget, 0)
    names = [name for name, items in items_by_type.items() if items]
    costs = {name: _costs(items_by_type[name], cost) for name in names}
    share = {name: max(shares.get(name, 0.0), 0.0) for name in names}
    total_share = sum(share.values())
    kept: dict[str, list[int]] = {name: [] for name in names}
    spent = 0
    for name in names:
        quota = _portion(budget, share[name], total_share, budget - spent)
        kept[name], used = _first_fit(costs[name], range(len(costs[name])), quota)
        spent += used

    def remaining(name: str) -> list[int]:
        taken = set(kept[name])
        return [i for i in range(len(costs[name])) if i not in taken]

    def hungry(left: int) -> list[str]:
        return [n for n in names if any(costs[n][i] <= left for i in remaining(n))]

    while hungry_now := hungry(budget - spent):
        left = budget - spent
        weight = {n: share[n] for n in hungry_now}
        if not sum(weight.values()):
            weight = dict.fromkeys(hungry_now, 1.0)
        progress = False
        for name in hungry_now:
            allowance = _portion(left, weight[name], sum(weight.values()), budget - spent)
            taken, used = _first_fit(costs[name], remaining(name), allowance)
            if taken:
                kept[name] = sorted([*kept[name], *taken])
                spent += used
                progress = True
        if not progress:
            for name in sorted(hungry_now, key=lambda n: (-share[n], n)):
                taken, used = _first_fit(costs[name], remaining(name), budget - spent)
                kept[name] = sorted([*kept[name], *taken])
                spent += used
            break

    result: dict[str, Packed[T]] = {}
    for name, items in items_by_type.items():
        chosen = kept.get(name, [])
        used = sum(costs[name][i] for i in chosen)
        result[name] = Packed(tuple(items[i] for i in chosen), len(items) - len(chosen), used)
    return result


def truncation_note(dropped: int) -> str:
    """The honest last line of a cut briefing; empty when nothing was dropped."""
    if dropped <= 0:
        return ""
    if dropped == 1:
        return "… 1 more memory not shown; use /recall <topic> to search it."
    return f"… {dropped} more memories not shown; use /recall <topic> to search them."
