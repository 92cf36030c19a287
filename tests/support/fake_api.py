"""A local HTTP server speaking enough of the Anthropic Messages and Voyage embeddings APIs.

Tests point the real SDK clients at it (`base_url`), script its replies, and read back what it
received. It also serves static files (the reranker download). Never used by the product.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

VOYAGE_DEFAULT_DIM = 1024


@dataclass(frozen=True)
class Received:
    """One request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    raw: bytes = b""  # the request body as sent (its length is what a request costs on the wire)


@dataclass(frozen=True)
class Reply:
    """A scripted answer: status, JSON body (or raw bytes), headers, and a delay before sending."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None


def message_reply(
    text: str, *, input_tokens: int = 1200, output_tokens: int = 300, stop_reason: str = "end_turn"
) -> Reply:
    """A successful Messages API answer carrying `text`."""
    return Reply(
        200,
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-5-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    )


def error_reply(status: int, kind: str, headers: dict[str, str] | None = None, delay_s: float = 0.0) -> Reply:
    """An API error in the shape both APIs use."""
    body = {"type": "error", "error": {"type": kind, "message": f"fake {kind}"}, "detail": f"fake {kind}"}
    return Reply(status, body, headers or {}, delay_s)


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for a text (same text, same vector)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    vec = np.random.default_rng(seed).standard_normal(dim)
    return [float(x) for x in vec / np.linalg.norm(vec)]


class FakeApi:
    """The server; use as a context manager. Scripted replies are consumed in order, per API."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.messages_script: deque[Reply] = deque()
        self.voyage_script: deque[Reply] = deque()
        self.files: dict[str, Reply] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        """The base URL for the Anthropic SDK (it appends /v1/messages)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def voyage_url(self) -> str:
        """The base URL for the Voyage SDK (it appends /embeddings)."""
        return self.url + "/v1"

    def __enter__(self) -> FakeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def requests_to(self, path: str) -> list[Received]:
        """What was received on one endpoint, in order."""
        with self._lock:
            return [r for r in self.received if r.path.split("?")[0] == path]

    def voyage_inputs(self) -> list[str]:
        """Every text sent to the embeddings endpoint."""
        return [t for r in self.requests_to("/v1/embeddings") for t in r.body.get("input", [])]

    # -- answering -------------------------------------------------------------------------
    def answer(self, received: Received) -> Reply:
        """Record a request and pick its reply: scripted first, else a sensible default."""
        with self._lock:
            self.received.append(received)
            path = received.path.split("?")[0]
            if path == "/v1/messages":
                return (
                    self.messages_script.popleft()
                    if self.messages_script
                    else message_reply('{"memories": []}')
                )
            if path == "/v1/embeddings":
                if self.voyage_script:
                    return self.voyage_script.popleft()
                return _embeddings(received.body or {})
            if path in self.files:
                return self.files[path]
        return error_reply(404, "not_found_error")


def _embeddings(body: dict[str, Any]) -> Reply:
    dim = int(body.get("output_dimension") or VOYAGE_DEFAULT_DIM)
    texts = body.get("input") or []
    data = []
    for i, text in enumerate(texts):
        vec = fake_vector(text, dim)
        if body.get("encoding_format") == "base64":
            emb: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
        else:
            emb = vec
        data.append({"object": "embedding", "embedding": emb, "index": i})
    tokens = sum(len(t.split()) for t in texts)
    return Reply(
        200, {"object": "list", "data": data, "model": body.get("model"), "usage": {"total_tokens": tokens}}
    )


def _streamed(request: Any, reply: Reply) -> bool:
    """A streaming Messages request answered by a message: the reply goes out as server-sent events."""
    return (
        isinstance(request, dict)
        and request.get("stream") is True
        and reply.status == 200
        and reply.raw is None
        and isinstance(reply.body, dict)
        and reply.body.get("type") == "message"
    )


def _message_events(message: dict[str, Any]) -> bytes:
    """A message as the Messages API streams it (what the Claude Code CLI asks for)."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message.get("content") or []):
        text = str(block.get("text", ""))
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for at in range(0, len(text), 400):
            delta = {"type": "text_delta", "text": text[at : at + 400]}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    final = {"stop_reason": message.get("stop_reason"), "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": final,
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode("utf-8")


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state to manage

        def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
            return

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = api.answer(Received(self.command, self.path, headers, body, raw))
            if reply.delay_s:
                time.sleep(reply.delay_s)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode("utf-8")
            ctype = "application/octet-stream" if reply.raw is not None else "application/json"
            if _streamed(body, reply):
                payload, ctype = _message_events(reply.body), "text/event-stream"
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        do_GET = _serve
        do_POST = _serve

    return Handler
