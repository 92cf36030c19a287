"""The Anthropic Messages adapter: one call with timeouts and bounded, retry-after-aware retries."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from cortex.backends.port import LlmReply
from cortex.core.extract.llm_prompt import TokenUsage
from cortex.errors import CortexError

log = logging.getLogger("cortex.llm")

MAX_ATTEMPTS = 3
BACKOFF_S = 0.5  # doubled after each failed attempt that named no retry-after
MAX_RETRY_AFTER_S = 30.0  # a longer wait means "not today" for a background extraction
CONNECT_TIMEOUT_S = 5.0
HOSTED_EXTRA_FIX = "pip install 'cortex-memory[hosted]'"
API_KEY_ENV = "ANTHROPIC_API_KEY"


class LlmError(CortexError):
    """A call that did not produce a reply; `kind` says why (rate_limited, timeout, ...)."""

    def __init__(self, message: str, kind: str, fix: str = "") -> None:
        super().__init__(message, fix)
        self.kind = kind


class AnthropicLlm:
    """An Extractor: the Messages API through the official SDK, its own retries off (ours are bounded)."""

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self.model = model
        self._max_attempts = max(1, max_attempts)
        self._backoff_s = backoff_s
        self._max_retry_after_s = max_retry_after_s
        self._sleep = sleep

    def complete(self, system: str, user: str, *, max_tokens: int) -> LlmReply:
        """One reply; retries 429/5xx/timeouts/connection errors, raises LlmError when it gives up."""
        import anthropic

        wait = self._backoff_s
        for attempt in range(1, self._max_attempts + 1):
            try:
                message = self._client.messages.create(
                    model=self.model,
                    max_tokens=max_tokens,
                    system=system,
                    messages=[{"role": "user", "content": user}],
                )
                return _reply(message, self.model, attempt)
            except anthropic.APIStatusError as exc:
                error = _status_error(exc)
                retry_after = read_retry_after(exc.response.headers)
            except anthropic.APITimeoutError:
                error, retry_after = LlmError("the Anthropic API timed out", "timeout"), None
            except anthropic.APIConnectionError as exc:
                error = LlmError(f"cannot reach the Anthropic API: {exc}", "connection")
                retry_after = None
            if error.kind not in ("rate_limited", "server_error", "timeout", "connection"):
                raise error
            if attempt == self._max_attempts:
                raise LlmError(f"{error.message} (gave up after {attempt} attempts)", error.kind)
            delay = wait if retry_after is None else retry_after
            if delay > self._max_retry_after_s:
                raise LlmError(f"{error.message}; retry-after {delay:.0f} s is too long", error.kind)
            log.info("LLM call attempt %d failed (%s); retrying in %.2f s", attempt, error.kind, delay)
            self._sleep(max(delay, 0.0))
            wait *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def load_anthropic(
    api_key: str,
    model: str,
    *,
    timeout_s: float,
    base_url: str | None = None,
    **options: Any,
) -> AnthropicLlm:
    """An Anthropic adapter; the base URL comes from `base_url`, else ANTHROPIC_BASE_URL (as the SDK)."""
    try:
        import anthropic
    except ImportError as exc:
        raise LlmError("the anthropic package is not installed", "unavailable", HOSTED_EXTRA_FIX) from exc
    client = anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        timeout=anthropic.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
    )
    return AnthropicLlm(client, model, **options)


def read_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asked us to wait: `retry-after-ms`, `retry-after` seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _status_error(exc: Any) -> LlmError:
    status = int(exc.status_code)
    if status == 429:
        return LlmError("the Anthropic API is rate limiting (429)", "rate_limited")
    if status >= 500:
        return LlmError(f"the Anthropic API failed ({status})", "server_error")
    if status in (401, 403):
        return LlmError(f"the Anthropic API refused the key ({status})", "auth", "check ANTHROPIC_API_KEY")
    return LlmError(f"the Anthropic API rejected the request ({status}): {exc.message}", "bad_request")


def _reply(message: Any, model: str, attempts: int) -> LlmReply:
    texts = [b.text for b in (message.content or []) if getattr(b, "type", None) == "text"]
    usage = message.usage
    return LlmReply(
        text="".join(texts),
        usage=TokenUsage(
            input_tokens=int(usage.input_tokens or 0),
            output_tokens=int(usage.output_tokens or 0),
            cache_creation_input_tokens=int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
            cache_read_input_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
        ),
        model=str(message.model or model),
        stop_reason=message.stop_reason,
        attempts=attempts,
    )
