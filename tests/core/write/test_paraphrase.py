"""The semantic merge rule: paraphrases agree on every distinguishing detail, near misses do not."""

from __future__ import annotations

import pytest

from cortex.core.write.paraphrase import PARAPHRASE_COSINE, paraphrase_difference, same_fact, stem
from tests.support.paraphrase_pairs import WEBHOOK, WEBHOOK_3D, WEBHOOK_72H

SAME = [
    (WEBHOOK, WEBHOOK_72H),
    (WEBHOOK, WEBHOOK_3D),  # 72 hours is three days: the same duration
    (WEBHOOK_72H, WEBHOOK_3D),
    ("Retries stop after 90 seconds", "After 90 s the retries stop"),
    ("Use pnpm, not npm, for the frontend", "The frontend uses pnpm instead of npm"),
    ("Do not hard-code feature flags", "Don't hard-code feature flags"),
    ("The cache lives in Redis for 10 minutes", "Redis holds the cache for ten minutes"),
]

DIFFERENT = [
    (WEBHOOK_72H, WEBHOOK_72H.replace("72", "48"), "number"),
    (WEBHOOK_3D, WEBHOOK_3D.replace("three", "two"), "number"),
    (
        "Port 8080 serves the API and 9090 the metrics",
        "Port 9090 serves the API and 8080 the metrics",
        "number",
    ),
    ("We never retry payment webhooks ourselves", "We always retry payment webhooks ourselves", "negation"),
    ("Logs are shipped to Datadog", "Logs are not shipped to Datadog", "negation"),
    (
        "Format dates with the user's locale, not the server's",
        "Format dates with the server's locale, not the user's",
        "negation",
    ),
    ("The cache lives in Redis", "The cache lives in Memcached", "technology"),
    ("Background jobs use Celery with redis", "Background jobs use Celery with valkey", "technology"),
    ("Config comes from app/settings.py", "Config comes from app/config.py", "identifier"),
    ("Pin Django to 4.2 for now", "Pin Django to 5.0 for now", "number"),
    ("The release is cut every Wednesday", "The release is cut every Thursday", "date"),
    ("Run migrations before the deploy", "Run migrations after the deploy", "opposite"),
    (
        "The importer reads CSV files from the bucket",
        "The exporter writes CSV files to the bucket",
        "opposite",
    ),
    ("Batch size for the importer is 80 rows", "Batch size for the exporter is 80 rows", "opposite"),
    ("We store the audit events in MySQL", "We store the access events in MySQL", "wording"),
    ("Deploys need an approval in production", "Deploys need an approval", "opposite"),
    # Where work stands: the same task list, its items moved from open to done (a real pair the
    # write gate merged, keeping the older, open wording current).
    (
        "Task list. Open: Fork + clone jcode in $WS/jcode; Build + install jcode stable",
        "Task list. Done: Fork + clone jcode in $WS/jcode; Build + install jcode stable",
        "opposite",
    ),
    ("PR #12 is open and waits for review", "PR #12 is merged and waits for review", "opposite"),
    (
        "We picked FastAPI over Flask for the new service",
        "We picked Flask over FastAPI for the new service",
        "order",
    ),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_paraphrases_agree_on_every_detail(a: str, b: str) -> None:
    assert paraphrase_difference(a, b) is None
    assert paraphrase_difference(b, a) is None


@pytest.mark.parametrize(("a", "b", "why"), DIFFERENT)
def test_near_misses_differ_in_a_named_detail(a: str, b: str, why: str) -> None:
    assert paraphrase_difference(a, b) == why
    assert paraphrase_difference(b, a) == why


def test_the_cosine_decides_only_above_the_threshold() -> None:
    assert same_fact(WEBHOOK, WEBHOOK_72H, PARAPHRASE_COSINE)
    assert not same_fact(WEBHOOK, WEBHOOK_72H, PARAPHRASE_COSINE - 0.01)
    assert not same_fact(WEBHOOK, WEBHOOK_72H, None)
    assert not same_fact(WEBHOOK_72H, WEBHOOK_72H.replace("72", "24"), 0.999)


def test_stems_match_inflections() -> None:
    assert stem("retries") == stem("retry") == stem("retried")
    assert stem("committed") == stem("commits") == stem("commit")
    assert stem("passes") == stem("pass")
