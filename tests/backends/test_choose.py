"""The one policy for backends: which embedder, reranker and extraction model, and why, from config."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.choose import (
    Purpose,
    choose_embedder,
    choose_extractor,
    choose_reranker,
    embedder_key,
    embeddings_wanted,
    planned_embedder,
)
from cortex.backends.port import Choice, Embedder
from cortex.config import EmbedderName, RerankerName, Settings, load_settings
from cortex.errors import ConfigError
from cortex.paths import resolve_paths
from tests.support.fakes import FakeEmbedder

DAY = "2026-03-01"


def test_config_names_become_enums_and_unknown_embedders_are_refused(project: Path) -> None:
    paths = resolve_paths(project)
    settings = load_settings(paths, env={"CORTEX_EMBEDDER": "voyage", "CORTEX_RERANKER": "FlashRank"})
    assert settings.embedder is EmbedderName.VOYAGE and settings.reranker is RerankerName.FLASHRANK
    with pytest.raises(ConfigError) as err:  # refused at load time, not a silent keyword-only recall
        load_settings(paths, env={"CORTEX_EMBEDDER": "bogus"})
    assert "CORTEX_EMBEDDER" in err.value.message and "local, voyage, none" in err.value.message
    # Settings built in code are not checked: an unknown name still chooses nothing, and says why.
    choice = choose_embedder(Settings(embedder="bogus"), paths, Purpose.QUERY)  # type: ignore[arg-type]
    assert choice.backend is None and "unknown backend 'bogus'" in choice.note


def test_embeddings_off_is_decided_without_loading_anything(project: Path) -> None:
    off = Settings(embedder=EmbedderName.NONE)
    paths = resolve_paths(project)
    assert not embeddings_wanted(off) and embeddings_wanted(Settings())
    assert planned_embedder(off) == (EmbedderName.NONE, "")
    assert embedder_key(off, paths) is None
    for purpose in Purpose:
        assert choose_embedder(off, paths, purpose).backend is None


def test_voyage_without_a_key_plans_the_local_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    name, why = planned_embedder(Settings(embedder=EmbedderName.VOYAGE))
    assert name is EmbedderName.LOCAL and "VOYAGE_API_KEY is not set" in why
    assert planned_embedder(Settings()) == (EmbedderName.LOCAL, "")


def test_reranking_off_in_config_loads_nothing(project: Path) -> None:
    choice = choose_reranker(Settings(reranker=RerankerName.NONE), resolve_paths(project))
    assert choice.backend is None and "reranker = none" in choice.note


@pytest.mark.parametrize(
    ("env", "settings", "why"),
    [
        ({}, {}, "ANTHROPIC_API_KEY is not set"),
        ({"ANTHROPIC_API_KEY": "k"}, {"llm_extraction": False}, "disabled in config"),
    ],
)
def test_an_extractor_that_is_off_says_why(
    project: Path, env: dict[str, str], settings: dict[str, object], why: str
) -> None:
    s = replace(Settings(), **settings)
    choice = choose_extractor(s, resolve_paths(project), day=DAY, env=env)
    assert choice.backend is None and why in choice.note


def test_the_context_says_whether_a_query_embedder_is_cheap_without_loading(project: Path) -> None:
    paths = resolve_paths(project)
    fake: Choice[Embedder] = Choice(FakeEmbedder(), "fake")
    assert Cortex(paths, Settings(), query_embedder=fake).query_embedder_ready()
    assert not Cortex(paths, Settings(), query_embedder=Choice(None, "none")).query_embedder_ready()
    off = Cortex(paths, Settings(embedder=EmbedderName.NONE))
    assert not off.query_embedder_ready()
    assert off._query_embedder is None  # asking chose nothing
