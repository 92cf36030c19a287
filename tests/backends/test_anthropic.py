"""The Anthropic adapter against a local fake Messages API, with the real SDK client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from email.utils import formatdate

import pytest

from cortex.backends.anthropic import AnthropicLlm, LlmError, load_anthropic, read_retry_after
from cortex.core.extract.llm_prompt import TokenUsage
from tests.support.fake_api import FakeApi, Reply, error_reply, message_reply

pytest.importorskip("anthropic", reason="the hosted extra (anthropic) is not installed")


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def adapter(api: FakeApi, **options: object) -> tuple[AnthropicLlm, list[float]]:
    slept: list[float] = []
    llm = load_anthropic(
        "sk-ant-test", "claude-haiku-4-5", timeout_s=1.0, base_url=api.url, sleep=slept.append, **options
    )
    return llm, slept


def test_a_good_reply_returns_text_and_usage(api: FakeApi) -> None:
    api.messages_script.append(message_reply('{"memories": []}', input_tokens=900, output_tokens=40))
    llm, slept = adapter(api)
    got = llm.complete("the system", "the user", max_tokens=256)
    assert got.text == '{"memories": []}'
    assert got.usage == TokenUsage(input_tokens=900, output_tokens=40)
    assert got.attempts == 1 and slept == []
    [sent] = api.requests_to("/v1/messages")
    assert sent.body["system"] == "the system"
    assert sent.body["messages"] == [{"role": "user", "content": "the user"}]
    assert sent.body["max_tokens"] == 256 and sent.body["model"] == "claude-haiku-4-5"
    assert "sk-ant-test" in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))


def test_base_url_comes_from_the_environment_like_the_sdk(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    llm = load_anthropic("sk-ant-test", "claude-haiku-4-5", timeout_s=1.0)
    assert llm.complete("s", "u", max_tokens=10).text == '{"memories": []}'
    assert len(api.requests_to("/v1/messages")) == 1


def test_a_429_is_retried_after_the_time_the_server_names(api: FakeApi) -> None:
    api.messages_script.extend(
        [error_reply(429, "rate_limit_error", {"retry-after": "2"}), message_reply("ok")]
    )
    llm, slept = adapter(api)
    got = llm.complete("s", "u", max_tokens=10)
    assert got.text == "ok" and got.attempts == 2
    assert slept == [2.0]


def test_a_retry_after_beyond_the_limit_gives_up_at_once(api: FakeApi) -> None:
    api.messages_script.append(error_reply(429, "rate_limit_error", {"retry-after": "3600"}))
    llm, slept = adapter(api)
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    assert err.value.kind == "rate_limited" and "too long" in err.value.message
    assert slept == [] and len(api.requests_to("/v1/messages")) == 1


def test_500s_are_retried_a_bounded_number_of_times(api: FakeApi) -> None:
    api.messages_script.extend([error_reply(500, "api_error")] * 5)
    llm, slept = adapter(api, max_attempts=3, backoff_s=0.5)
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    assert err.value.kind == "server_error" and "3 attempts" in err.value.message
    assert slept == [0.5, 1.0]  # exponential backoff, no sleep after the last attempt
    assert len(api.requests_to("/v1/messages")) == 3


def test_a_529_overload_then_success(api: FakeApi) -> None:
    api.messages_script.extend([error_reply(529, "overloaded_error"), message_reply("fine")])
    llm, _ = adapter(api)
    assert llm.complete("s", "u", max_tokens=10).text == "fine"


def test_a_slow_server_times_out_and_is_retried(api: FakeApi) -> None:
    api.messages_script.extend([Reply(200, message_reply("late").body, delay_s=3.0)] * 2)
    llm = load_anthropic(
        "sk-ant-test",
        "claude-haiku-4-5",
        timeout_s=0.3,
        base_url=api.url,
        max_attempts=2,
        sleep=lambda s: None,
    )
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    # Each reply would have come, late: an error at all says both attempts gave up before it.
    assert err.value.kind == "timeout"
    assert len(api.requests_to("/v1/messages")) == 2


@pytest.mark.parametrize(("status", "kind"), [(400, "bad_request"), (401, "auth"), (403, "auth")])
def test_client_errors_are_not_retried(api: FakeApi, status: int, kind: str) -> None:
    api.messages_script.append(error_reply(status, "invalid_request_error"))
    llm, slept = adapter(api)
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    assert err.value.kind == kind and slept == []
    assert len(api.requests_to("/v1/messages")) == 1


def test_an_unreachable_api_is_a_connection_error() -> None:
    with FakeApi() as gone:
        url = gone.url  # the port is closed once the server stops
    llm = load_anthropic("k", "claude-haiku-4-5", timeout_s=0.5, base_url=url, max_attempts=1)
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    assert err.value.kind == "connection"


def test_retry_after_headers() -> None:
    assert read_retry_after({"retry-after": "7"}) == 7.0
    assert read_retry_after({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    assert read_retry_after({}) is None
    assert read_retry_after({"retry-after": "soon"}) is None
    dated = read_retry_after({"retry-after": formatdate(time.time() + 60, usegmt=True)})
    assert dated is not None and 55 < dated <= 61
