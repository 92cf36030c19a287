"""The rule a merge must pass: near-duplicates merge only when nothing distinguishing differs."""

from __future__ import annotations

import pytest

from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.distinct import distinguishing_difference, lost_by_merge
from cortex.core.write.gate import Neighbour, WriteAction, plan_write
from tests.core.write.test_gate import memory

DIFFERENT = [
    (
        "worker 2 note 1: unique fact number 2-1 about shard 201",
        "worker 1 note 2: unique fact number 1-2 about shard 102",
        "number",
    ),
    (
        "The API rate limit is 100 requests per minute",
        "The API rate limit is 120 requests per minute",
        "number",
    ),
    ("Run the tests with three workers in CI", "Run the tests with four workers in CI", "number"),
    (
        "Port 8080 serves the API and 9090 the metrics",
        "Port 9090 serves the API and 8080 the metrics",
        "number",
    ),
    ("We retry payment webhooks on failure", "We never retry payment webhooks on failure", "negation"),
    ("The cache is enabled in staging", "The cache is disabled in staging", "negation"),
    ("Use the bulk endpoint for imports", "Do not use the bulk endpoint for imports", "negation"),
    (
        "We use Redis for the job queue and the cache",
        "We use Valkey for the job queue and the cache",
        "technology",
    ),
    (
        "we use redis for the job queue and the cache",
        "we use valkey for the job queue and the cache",
        "technology",
    ),
    (
        "The test suite runs with pytest on every push",
        "The test suite runs with unittest on every push",
        "technology",
    ),
    (
        "Settings read REDIS_URL from app/config.py",
        "Settings read VALKEY_URL from app/config.py",
        "identifier",
    ),
    ("Call getUser before saving the profile", "Call getAccount before saving the profile", "identifier"),
    ("The loader lives in cortex/store/open.py", "The loader lives in cortex/store/port.py", "identifier"),
    (
        "Pin the client library to v1.2 until the fix lands",
        "Pin the client library to v1.3 until the fix lands",
        "number",
    ),
    (
        "The release is planned for 2026-03-05 at noon",
        "The release is planned for 2026-03-06 at noon",
        "number",
    ),
    ("The release is planned for Tuesday at noon", "The release is planned for Thursday at noon", "number"),
    ("Ask Alice before changing the deploy pipeline", "Ask Bob before changing the deploy pipeline", "name"),
    (
        "We picked FastAPI over Flask for the new service",
        "We picked Flask over FastAPI for the new service",
        "order",
    ),
]

SAME = [
    ("We use SQLite in WAL mode for the store", "we use sqlite in WAL mode for our store"),
    ("Use pytest for the tests.", "use pytest for tests"),
    ("The build uses Poetry now", "the build uses poetry now"),
    ("Port 8080 serves the API", "port 8080 serves the API."),
    ("Deploys go out from the release branch", "Deploys go out from the release branch, as agreed"),
    ("Settings read REDIS_URL from app/config.py", "settings read REDIS_URL from app/config.py!"),
]


@pytest.mark.parametrize(("a", "b", "why"), DIFFERENT)
def test_texts_that_differ_in_a_distinguishing_detail_never_merge(a: str, b: str, why: str) -> None:
    assert distinguishing_difference(a, b) == why
    assert distinguishing_difference(b, a) == why


@pytest.mark.parametrize(("a", "b"), SAME)
def test_re_typings_still_merge(a: str, b: str) -> None:
    assert distinguishing_difference(a, b) is None


def test_a_text_that_says_everything_the_other_says_and_more_may_absorb_it() -> None:
    short = "Shard 201 holds the EU customers"
    longer = "Shard 201 holds the EU customers and shard 202 the US ones"
    assert lost_by_merge(longer, short) is None  # keeping the longer text loses nothing
    assert lost_by_merge(short, longer) == "number"  # keeping the shorter one would


def cand(content: str) -> Candidate:
    return Candidate(content=content, type=MemoryType.DECISION, layer=Layer.USER, confidence=0.9)


@pytest.mark.parametrize(("a", "b", "why"), DIFFERENT)
def test_the_gate_inserts_and_links_instead_of_reinforcing(a: str, b: str, why: str) -> None:
    plan = plan_write(cand(b), exact=None, neighbours=[Neighbour(memory("m1", a), 0.85)])
    assert plan.action is WriteAction.INSERT
    assert [e.target for e in plan.edges] == ["m1"]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_the_gate_still_reinforces_a_re_typing(a: str, b: str) -> None:
    plan = plan_write(cand(b), exact=None, neighbours=[Neighbour(memory("m1", a), 0.85)])
    assert plan.action is WriteAction.REINFORCE and plan.target_id == "m1"


def test_the_gate_keeps_the_richer_text_when_it_adds_a_number() -> None:
    old = memory("m1", "Shard 201 holds the EU customers")
    new = cand("Shard 201 holds the EU customers and shard 202 the US ones")
    plan = plan_write(new, exact=None, neighbours=[Neighbour(old, 0.8)])
    assert plan.action is WriteAction.REINFORCE and plan.content == new.content


def test_the_gate_never_reinforces_with_a_poorer_text_that_drops_a_number() -> None:
    old = memory("m1", "Shard 201 holds the EU customers and shard 202 the US ones")
    new = cand("Shard 203 holds the EU customers and the US ones")
    plan = plan_write(new, exact=None, neighbours=[Neighbour(old, 0.8)])
    assert plan.action is WriteAction.INSERT


def test_a_cosine_match_does_not_merge_different_numbers_either() -> None:
    old = memory("m1", "Webhooks are retried for 72 hours by the provider")
    new = cand("The provider retries webhooks for 48 hours")
    plan = plan_write(new, exact=None, neighbours=[Neighbour(old, 0.6, 0.97)])
    assert plan.action is WriteAction.INSERT and plan.needs_cosine == ()


def test_a_replaced_content_word_blocks_a_lexical_merge_but_not_a_semantic_one() -> None:
    a, b = "The importer skips rows already in the ledger", "The exporter skips rows already in the ledger"
    assert distinguishing_difference(a, b) == "wording"
    assert distinguishing_difference(a, b, lexical=False) is None  # an embedding judged it


def test_an_opposite_word_is_a_different_fact() -> None:
    a, b = "The cache entries expire after the deploy", "The cache entries expire before the deploy"
    assert distinguishing_difference(a, b) == "opposite"
    assert distinguishing_difference(a, b, lexical=False) == "opposite"
