"""Redaction: every corpus secret goes, ordinary code and prose stay, and it is idempotent."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cortex.core.redact.entropy import is_random_token, shannon_entropy
from cortex.core.redact.names import secret_name_kind
from cortex.core.redact.secrets import REDACTED_PREFIX, redact, redact_value
from tests.support.secrets_corpus import (
    ANTHROPIC_KEY,
    GITHUB_PAT,
    RANDOM_B62_32,
    SAFE_TEXTS,
    SECRETS,
    SecretSample,
)


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: f"{s.kind}:{s.text[:24]}")
def test_corpus_secret_is_redacted_with_its_kind(sample: SecretSample) -> None:
    result = redact(sample.text)
    assert sample.secret not in result.text
    assert sample.kind in result.kinds
    assert result.count >= 1


@pytest.mark.parametrize("sample", SECRETS, ids=lambda s: f"{s.kind}:{s.text[:24]}")
def test_redaction_is_idempotent_on_the_corpus(sample: SecretSample) -> None:
    once = redact(sample.text)
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.count == 0


@pytest.mark.parametrize("text", SAFE_TEXTS, ids=lambda t: t[:30])
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.count == 0 and result.kinds == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>secret plan</private> b", "a  b"),
        ("a <PRIVATE>x\ny</Private> b <private>z</private>", "a  b "),
        ("keep this <private>drop\nall of\nthe rest", "keep this "),
        ("no tags at all", "no tags at all"),
    ],
)
def test_private_spans_are_dropped(text: str, expected: str) -> None:
    assert redact(text).text == expected


def test_private_spans_go_before_secrets_are_looked_for() -> None:
    # Removing the span must not glue two halves into a key that then survives.
    text = f"key: {ANTHROPIC_KEY[:20]}<private>gap</private>{ANTHROPIC_KEY[20:]}"
    assert ANTHROPIC_KEY not in redact(text).text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "postgres://app:s3cretpw@db.internal:5432/app",
            "postgres://app:[REDACTED:url_password]@db.internal:5432/app",
        ),
        ("https://user:p@ss@host/x", "https://user:[REDACTED:url_password]@host/x"),
        ("redis://:pw12345@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"),
    ],
)
def test_url_passwords_keep_user_and_host(text: str, expected: str) -> None:
    assert redact(text).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PASSWORD=hunter2", "PASSWORD=[REDACTED:password]"),
        ('"api_key": "abc123def456"', '"api_key": "[REDACTED:api_key]"'),
        ("client_secret: zz9-plural-z-alpha", "client_secret: [REDACTED:secret]"),
        ("export GITHUB_TOKEN='tok-77-abc'", "export GITHUB_TOKEN='[REDACTED:token]'"),
        (
            "Authorization: Bearer abcdef0123456789xyz",
            "Authorization: Bearer [REDACTED:authorization]",
        ),
        ("--token=s3cr3t-value", "--token=[REDACTED:token]"),
    ],
)
def test_secret_named_assignments_keep_the_name(text: str, expected: str) -> None:
    assert redact(text).text == expected


def test_redact_value_walks_json_like_values() -> None:
    value = {
        "command": f"curl -H 'Authorization: token {GITHUB_PAT}' https://api.github.com",
        "env": {"PASSWORD": "short", "DEBUG": "1"},
        "args": ["--verbose", f"--key={RANDOM_B62_32}"],
        "nested": ({"password": ""},),
        "count": 3,
    }
    out = redact_value(value)
    assert isinstance(out, dict)
    flat = repr(out)
    assert GITHUB_PAT not in flat and RANDOM_B62_32 not in flat and "short" not in flat
    assert out["env"] == {"PASSWORD": "[REDACTED:password]", "DEBUG": "1"}
    assert out["nested"] == ({"password": ""},)  # nothing there to hide
    assert out["count"] == 3


def test_redact_value_caps_depth() -> None:
    deep: object = "leaf"
    for _ in range(500):
        deep = [deep]
    out = redact_value(deep)
    depth = 0
    while isinstance(out, list):
        out, depth = out[0], depth + 1
    assert out is None and depth == 64


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("password", "password"),
        ("PGPASSWORD", "password"),
        ("DB_PASS", "password"),
        ("access_token", "token"),
        ("clientSecret", "secret"),
        ("OPENAI_API_KEY", "api_key"),
        ("X-Api-Key", "api_key"),
        ("STRIPE_KEY", "api_key"),
        ("max_tokens", None),
        ("token_count", None),
        ("secret_name", None),
        ("primary_key", None),
        ("tokenizer", None),
        ("access_key_id", None),
    ],
)
def test_secret_names(name: str, kind: str | None) -> None:
    assert secret_name_kind(name) == kind


@pytest.mark.parametrize(
    ("token", "random"),
    [
        ("I56poAIVQscTblyzJB3iMy1jnqfjPt0C", True),
        ("a0Cifso4kvT4ZfO+vxD8cX1krEpWfbW+51IbJlXLEZI=", True),
        ("62f9641553a4322e59fe72f49fc77414", True),
        ("UserProfileSettingsController", False),
        ("test_extract_candidates_handles_deep_nesting", False),
        ("3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39", False),  # a git SHA
        ("55604662-cf2a-4331-851a-ec234028f8ca", False),
        ("msg_01MKH1ccEGrZGNPvu8pYiiQa", False),
        ("src/components/UserProfileSettings", False),
        ("TLS_AES_256_GCM_SHA384", False),
        ("dGhpcyBpcyBhIHRlc3Q=", False),  # base64 of "this is a test"
        ("aaaaaaaaaaaaaaaaaaaaaaaa", False),
    ],
)
def test_random_token_detection(token: str, random: bool) -> None:
    assert is_random_token(token) is random


def test_hex_after_hash_words_is_a_digest_not_a_secret() -> None:
    assert is_random_token("62f9641553a4322e59fe72f49fc77414", "webhook key ")
    assert not is_random_token("62f9641553a4322e59fe72f49fc77414", "the md5: ")
    assert not is_random_token("62f9641553a4322e59fe72f49fc77414", "commit ")


def test_entropy_is_bits_per_character() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


# --- invariants ----------------------------------------------------------------------------------

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789_.,;:!?()'\"-", min_size=1, max_size=12)
prose = st.lists(words, max_size=12).map(" ".join)
separators = st.sampled_from([" ", "\n", "\t", " (", ") ", ": ", " `", "` ", "\n\n", ' "', '" '])


@settings(max_examples=400)
@given(st.sampled_from(SECRETS), prose, prose, separators, separators)
def test_a_corpus_secret_never_survives_anywhere_in_prose(
    sample: SecretSample, before: str, after: str, left: str, right: str
) -> None:
    # Sensitive text is delimited from its neighbours as it is in real transcripts.
    assume("<private>" not in before.lower())
    text = before + left + sample.text + right + after
    assert sample.secret not in redact(text).text


@settings(max_examples=400)
@given(st.text(max_size=300))
def test_redact_is_idempotent_and_total_on_any_text(text: str) -> None:
    once = redact(text)
    assert once.count >= len(once.kinds)
    twice = redact(once.text)
    assert twice.text == once.text


@settings(max_examples=200)
@given(st.lists(st.one_of(prose, st.sampled_from([s.text for s in SECRETS])), max_size=6))
def test_redacted_text_only_gains_redaction_markers(parts: list[str]) -> None:
    text = "\n".join(parts)
    result = redact(text)
    if result.count == 0:
        assert result.text == text
    else:
        assert REDACTED_PREFIX in result.text or "private" in result.kinds


fragments = st.one_of(
    st.sampled_from([s.text for s in SECRETS]),
    st.sampled_from(SAFE_TEXTS),
    st.sampled_from(["PASSWORD=", "token: ", "<private>", "://u:", "@h/", "Bearer ", "=", '"']),
    st.text(max_size=10),
)


@settings(max_examples=300)
@given(st.lists(fragments, max_size=6).map("".join))
def test_redact_is_idempotent_even_on_glued_fragments(text: str) -> None:
    # Glued text can hide a match until a neighbour is replaced; redact runs to a fixpoint.
    once = redact(text)
    assert redact(once.text).text == once.text
