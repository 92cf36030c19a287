"""The redaction dev corpus: recall over every planting, look-alikes left alone, nothing merged."""

from __future__ import annotations

from collections import Counter

import pytest

from cortex.core.redact.secrets import redact
from tests.support.redaction_corpus import (
    PLANTINGS,
    kind_count,
    leaks,
    safe_samples,
    secret_plantings,
)

MIN_RECALL = 0.995
MAX_FALSE_POSITIVE_RATE = 0.02


def test_the_corpus_is_as_large_as_the_issue_asks() -> None:
    plantings = secret_plantings()
    secrets = {p.secret for p in plantings}
    assert len(secrets) >= 200 and kind_count() >= 150
    assert Counter(p.secret for p in plantings).most_common()[-1][1] >= len(PLANTINGS) == 8
    safe = safe_samples()
    assert len(safe) >= 150 and len({s.kind for s in safe}) >= 40
    assert all(s.keep and all(k in s.text for k in s.keep) for s in safe)


def test_every_planting_is_readable_before_redaction() -> None:
    assert all(leaks(p.secret, p.text) for p in secret_plantings())


def test_recall_over_all_plantings() -> None:
    plantings = secret_plantings()
    missed = [p for p in plantings if leaks(p.secret, redact(p.text).text)]
    assert 1 - len(missed) / len(plantings) >= MIN_RECALL, [(p.kind, p.way) for p in missed]


@pytest.mark.parametrize("way", PLANTINGS)
def test_each_way_of_planting_is_mostly_caught(way: str) -> None:
    plantings = [p for p in secret_plantings() if p.way == way]
    missed = [p for p in plantings if leaks(p.secret, redact(p.text).text)]
    assert len(missed) / len(plantings) <= 0.02, [(p.kind, p.text[:80]) for p in missed]


def test_look_alikes_survive_and_no_two_samples_merge() -> None:
    samples = safe_samples()
    outputs = {s.text: redact(s.text).text for s in samples}
    altered = [s for s in samples if any(k not in outputs[s.text] for k in s.keep)]
    assert len(altered) / len(samples) <= MAX_FALSE_POSITIVE_RATE, [s.text[:80] for s in altered]
    assert len(set(outputs.values())) == len(outputs)


def test_redaction_of_the_corpus_is_idempotent() -> None:
    for p in secret_plantings()[::7]:
        once = redact(p.text)
        assert redact(once.text).text == once.text, p.text


def test_a_tag_that_is_a_secret_of_its_note_goes_with_it() -> None:
    from cortex.core.model import Candidate, Layer, MemoryType
    from cortex.core.write.sanitise import clean_tags, sanitise_candidate

    def tags(text: str, tag: str) -> tuple[str, ...]:
        return sanitise_candidate(Candidate(text, MemoryType.CONTEXT, Layer.USER, tags=("ops", tag))).tags

    kept = [p for p in secret_plantings() if any(p.secret in t for t in tags(f"note: {p.text}", p.secret))]
    assert not kept, [(p.kind, p.way) for p in kept]
    for s in safe_samples():  # a public look-alike as a tag of its own note stays as a tag alone would
        for k in s.keep:
            assert tags(s.text, k) == clean_tags(("ops", k)), (s.kind, k)
    assert tags("deploy with the release token", "release-token") == ("ops", "release-token")
