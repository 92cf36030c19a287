"""A labelled set of near-duplicate and near-miss pairs for the write gate's merge decision.

Generated from templates with a fixed seed (nothing copied from elsewhere). A positive pair is
the same fact typed again: other case, punctuation, filler words, clause order, articles. A
negative pair shares most of its words but states a different fact: another number, version,
date, identifier, named technology or person, a negation, or an opposite word. Unrelated
pairs that merely share a subject are negatives too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SEED = 17

SERVICES = ("billing", "search", "ingest", "auth", "export", "ledger", "notifier", "scheduler")
TECH = ("Redis", "Valkey", "Postgres", "MySQL", "Kafka", "RabbitMQ", "SQLite", "DynamoDB")
TOOLS = ("pytest", "unittest", "poetry", "pip", "docker", "podman", "terraform", "ansible")
PEOPLE = ("Alice", "Bilal", "Chen", "Dana", "Emeka", "Farah")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
PATHS = ("app/config.py", "app/settings.py", "deploy/values.yaml", "src/main.rs", "lib/queue.ts")
ENVS = ("staging", "production")
VARS = ("REDIS_URL", "VALKEY_URL", "DATABASE_URL", "CACHE_TTL", "QUEUE_NAME")

TEMPLATES = (
    "The {svc} service listens on port {port} in the cluster",
    "We deploy the {svc} service with {tool} every {day}",
    "Retries for the {svc} jobs stop after {n} attempts",
    "The {svc} cache lives in {tech} and entries expire after {n} minutes",
    "Pin {tool} to version {ver} for the {svc} build",
    "The {svc} worker reads its settings from {path} at startup",
    "The {svc} migration is scheduled for {date} after the freeze",
    "Ask {person} before changing the {svc} release pipeline",
    "The {svc} service gets {var} from the environment when it starts",
    "We store the {svc} audit events in {tech} for {n} days",
    "The {svc} tests run with {tool} on every push to the main branch",
    "Batch size for the {svc} importer is {n} rows per transaction",
)
FILLERS = (" for now", " as agreed", " in practice", " by default", " as well")
NEGATE = {
    "listens": "never listens",
    "deploy": "do not deploy",
    "stop": "never stop",
    "lives": "no longer lives",
    "Pin": "Do not pin",
    "reads": "never reads",
    "is scheduled": "is not scheduled",
    "Ask": "Never ask",
    "gets": "never gets",
    "store": "do not store",
    "run": "do not run",
    "is": "is not",
}
# Same-meaning swaps (positives the word rule may miss) and different-meaning swaps (negatives).
SYNONYMS = {"service": "app", "starts": "boots", "attempts": "tries", "jobs": "tasks", "changing": "editing"}
OTHER_WORDS = {
    "importer": "exporter",
    "audit": "access",
    "cluster": "mesh",
    "build": "release",
    "freeze": "launch",
}
OPPOSITE = {"after": "before", "every": "every", "reads": "writes", "startup": "shutdown", "starts": "stops"}


@dataclass(frozen=True, slots=True)
class Pair:
    a: str
    b: str
    merge: bool  # the label: True when b is a, typed again
    kind: str  # what differs


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "svc": rng.choice(SERVICES),
        "tech": rng.choice(TECH),
        "tool": rng.choice(TOOLS),
        "person": rng.choice(PEOPLE),
        "day": rng.choice(DAYS),
        "path": rng.choice(PATHS),
        "var": rng.choice(VARS),
        "port": str(rng.randint(1024, 9999)),
        "n": str(rng.randint(2, 90)),
        "ver": f"{rng.randint(1, 9)}.{rng.randint(0, 20)}",
        "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    }


def _retype(text: str, rng: random.Random) -> tuple[str, str]:
    """The same fact typed again, and how."""
    how = rng.choice(("case", "punctuation", "filler", "article", "case+punctuation", "spacing", "synonym"))
    if how == "synonym":
        for word, same in SYNONYMS.items():
            if f" {word}" in text:
                return text.replace(f" {word}", f" {same}", 1), how
        how = "filler"
    if how == "case":
        return text.lower(), how
    if how == "punctuation":
        return text + rng.choice((".", "!", " .", ";")), how
    if how == "filler":
        return text + rng.choice(FILLERS), how
    if how == "article":
        return (text.replace("The ", "", 1) if text.startswith("The ") else "Note: " + text), how
    if how == "spacing":
        return "  " + text.replace(" ", "  ", 2) + " ", how
    return text.lower().rstrip() + ".", how


def _near_miss(template: str, slots: dict[str, str], rng: random.Random) -> tuple[str, str] | None:
    """The same template with one distinguishing change, and which kind."""
    slots_in = ("port", "n", "ver", "date", "path", "var", "tech", "tool", "person", "day")
    kinds = [k for k in slots_in if "{" + k + "}" in template] + ["negation"]
    kinds += [
        k for k, words in (("opposite", OPPOSITE), ("other word", OTHER_WORDS)) if _has_any(template, words)
    ]
    kind = rng.choice(kinds)
    if kind == "other word":
        for word, other in OTHER_WORDS.items():
            if f" {word}" in template:
                return template.replace(f" {word}", f" {other}", 1).format(**slots), kind
        return None
    if kind == "negation":
        for word, neg in NEGATE.items():
            if f" {word} " in f" {template} ":
                return f" {template} ".replace(f" {word} ", f" {neg} ", 1).strip().format(**slots), kind
        return None
    if kind == "opposite":
        for word, opp in OPPOSITE.items():
            if word != opp and f" {word}" in template:
                return template.replace(f" {word}", f" {opp}", 1).format(**slots), kind
        return None
    other = dict(slots)
    for _ in range(20):
        other = {**slots, **{k: v for k, v in _slots(rng).items() if k == kind}}
        if other[kind] != slots[kind]:
            break
    else:
        return None
    return template.format(**other), LABELS[kind]


LABELS = {
    "port": "number", "n": "number", "ver": "version", "date": "date", "path": "identifier",
    "var": "identifier", "tech": "technology", "tool": "technology", "person": "name", "day": "date",
}  # fmt: skip


def _has_any(template: str, words: dict[str, str]) -> bool:
    return any(f" {w}" in template and w != v for w, v in words.items())


def labelled_pairs(n_positive: int = 120, n_negative: int = 180, seed: int = SEED) -> list[Pair]:
    """`n_positive` re-typings and `n_negative` near misses and look-alikes, in a fixed order."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    while sum(p.merge for p in pairs) < n_positive:
        template = rng.choice(TEMPLATES)
        text = template.format(**_slots(rng))
        retyped, how = _retype(text, rng)
        pairs.append(Pair(text, retyped, True, how))
    negatives = 0
    while negatives < n_negative:
        template, slots = rng.choice(TEMPLATES), _slots(rng)
        text = template.format(**slots)
        if rng.random() < 0.1:  # another fact about the same service
            other = rng.choice([t for t in TEMPLATES if t != template]).format(**slots)
            pairs.append(Pair(text, other, False, "other fact"))
            negatives += 1
            continue
        miss = _near_miss(template, slots, rng)
        if miss is None or miss[0] == text:
            continue
        b, kind = miss
        if rng.random() < 0.3:  # a near miss typed differently too
            b, _ = _retype(b, rng)
        pairs.append(Pair(text, b, False, kind))
        negatives += 1
    return pairs
