"""Fixtures the capture tests share: a deterministic embedder and a context that uses it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.paths import resolve_paths
from tests.conftest import T0
from tests.support.fakes import FakeEmbedder


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=32)


@pytest.fixture
def fcx(project: Path, fake: FakeEmbedder) -> Iterator[Cortex]:
    """A context whose embedder is the deterministic fake (as if the ONNX export were ready)."""
    clock = iter(T0 + timedelta(seconds=i) for i in range(1_000_000))
    cx = Cortex(
        resolve_paths(project),
        clock=lambda: next(clock),
        query_embedder=Choice(fake, "fake embedder"),
    )
    try:
        yield cx
    finally:
        cx.close()
