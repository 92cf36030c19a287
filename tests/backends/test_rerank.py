"""FlashRank reranking from a cached folder only, and the one path that downloads it.

No real FlashRank weights can be had offline, so the end-to-end tests build a stand-in: a tiny
random-weight BERT cross-encoder exported to ONNX in the folder layout FlashRank expects (with
the all-MiniLM-L6-v2 tokenizer files). It proves the code path (files checked, Ranker built,
passages scored and mapped to [0, 1]); its scores mean nothing.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.app import Cortex
from cortex.backends.choose import choose_reranker, reranker_unavailable
from cortex.backends.rerank import (
    MODEL_FILES,
    FlashRankReranker,
    missing_files,
    normalize_scores,
    required_files,
    reranker_dir,
)
from cortex.backends.rerank_fetch import fetch_reranker
from cortex.config import Settings
from cortex.errors import ModelError
from cortex.paths import resolve_paths
from tests.support.fake_api import FakeApi, Reply

REPO = Path(__file__).resolve().parents[2]
MODEL = "ms-marco-TinyBERT-L-2-v2"
TOKENIZER_SOURCE = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def build_stand_in(folder: Path) -> None:
    """A random-weight 2-layer BERT cross-encoder (one logit) in FlashRank's folder layout."""
    torch = pytest.importorskip("torch", reason="building the stand-in cross-encoder needs torch")
    transformers = pytest.importorskip("transformers", reason="the stand-in needs transformers")
    from cortex.backends.model_locate import resolve_model

    source = Path(resolve_model(None).path_or_name)
    if not (source / "tokenizer.json").is_file():
        pytest.skip("the stand-in borrows the local MiniLM tokenizer, which is not installed")
    folder.mkdir(parents=True)
    for name in TOKENIZER_SOURCE:
        shutil.copyfile(source / name, folder / name)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        initializer_range=0.5,  # wide random weights: scores that actually differ
    )
    model = transformers.BertForSequenceClassification(config).eval()
    config.to_json_file(folder / "config.json")

    class Logits(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, ids: object, mask: object, types: object) -> object:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).logits

    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Logits(),
            (sample, sample, torch.zeros_like(sample)),
            str(folder / MODEL_FILES[MODEL]),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names},
            opset_version=17,
            dynamo=False,
        )


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("flashrank", reason="the rerank extra (flashrank) is not installed")
    cache = tmp_path_factory.mktemp("flashrank")
    build_stand_in(cache / MODEL)
    return cache


def rerank_cx(project: Path, cache: Path | None, **overrides: object) -> Cortex:
    s = replace(Settings(), reranker_dir=str(cache) if cache else "", **overrides)
    return Cortex(resolve_paths(project), s)


def zipped(folder: Path, prefix: str = MODEL) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"{prefix}/{path.name}" if prefix else path.name)
    return buf.getvalue()


def dummy_model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in required_files(MODEL):
        (folder / name).write_text("{}", encoding="utf-8")
    return folder


# -- availability: nothing is ever downloaded implicitly ----------------------------------------
def test_why_reranking_is_off(project: Path, tmp_path: Path) -> None:
    cases = [
        ({"reranker": "none"}, "reranker = none"),
        ({"reranker_model": "ms-marco-Nope"}, "unsupported reranker_model"),
        ({}, "no cached model at"),
    ]
    for overrides, why in cases:
        cx = rerank_cx(project, tmp_path / "cache", **overrides)
        assert why in reranker_unavailable(cx.settings, cx.paths, find_spec=lambda name: object())
        cx.close()
    cx = rerank_cx(project, tmp_path / "cache")
    assert "flashrank is not installed" in reranker_unavailable(
        cx.settings, cx.paths, find_spec=lambda name: None
    )
    cx.close()


def test_the_default_folder_is_under_cortex_home(project: Path, cortex_home: Path) -> None:
    cx = rerank_cx(project, None)
    assert reranker_dir(cx.settings, cx.paths.models_dir) == cortex_home / "models" / "flashrank"
    cx.close()


def test_an_incomplete_folder_is_reported_and_left_alone(project: Path, tmp_path: Path) -> None:
    pytest.importorskip("flashrank", reason="the rerank extra (flashrank) is not installed")
    cache = tmp_path / "cache"
    folder = dummy_model(cache / MODEL)
    (folder / MODEL_FILES[MODEL]).unlink()
    before = sorted(p.name for p in folder.iterdir())
    cx = rerank_cx(project, cache)
    choice = choose_reranker(cx.settings, cx.paths)
    cx.close()
    assert choice.backend is None and "incomplete model" in choice.note
    assert MODEL_FILES[MODEL] in choice.note
    assert sorted(p.name for p in folder.iterdir()) == before  # FlashRank never got to "repair" it


def test_a_missing_model_never_reaches_flashrank(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "never-created"
    cx = rerank_cx(project, cache)
    assert cx.reranker() is None
    cx.close()
    assert not cache.exists()  # a Ranker would have created it and started its download


def test_recall_in_a_fresh_process_never_downloads(project: Path, tmp_path: Path) -> None:
    """`cortex recall` with reranking on and no cached model: no download attempt, no folder."""
    cache = tmp_path / "cache"
    env = {**os.environ, "CORTEX_RERANKER_DIR": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "cortex", "-C", str(project), "recall", "anything at all", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not cache.exists()
    assert "huggingface" not in done.stderr.lower()


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=40))
@settings(max_examples=200, deadline=None)
def test_normalised_scores_are_in_unit_range_and_keep_the_order(raw: list[float]) -> None:
    norm = normalize_scores(raw)
    assert len(norm) == len(raw)
    assert all(0.0 <= x <= 1.0 for x in norm)
    for i, j in itertools.combinations(range(len(raw)), 2):
        if raw[i] < raw[j]:
            assert norm[i] <= norm[j]
    if raw and max(norm) - min(norm) > 0:
        assert max(norm) == pytest.approx(1.0) and min(norm) == pytest.approx(0.0)


def test_normalisation_edge_cases() -> None:
    assert normalize_scores([]) == []
    assert normalize_scores([0.3, 0.3]) == [0.5, 0.5]
    assert normalize_scores([float("nan"), 0.9]) == [0.0, 1.0]
    # Saturated probabilities still order by their (clipped) logits.
    low, mid, high = normalize_scores([1e-9, 0.5, 1.0])
    assert low == 0.0 and high == 1.0 and 0.4 < mid < 0.6


# -- the stand-in cross-encoder, end to end ------------------------------------------------------
@pytest.mark.slow
def test_a_cached_model_reranks(project: Path, stand_in: Path) -> None:
    root = logging.getLogger()
    handlers = list(root.handlers)
    cx = rerank_cx(project, stand_in)
    reranker = cx.reranker()
    cx.close()
    assert isinstance(reranker, FlashRankReranker)
    assert root.handlers == handlers  # FlashRank's logging.basicConfig was undone
    passages = [
        "SQLite runs in WAL mode so readers never block the writer.",
        "The briefing is markdown under a hard character cap.",
        "Deploys go out from the release branch only.",
        "x " * 2_000,  # longer than the model's window: truncated, still scored
    ]
    raw = reranker.score("how do readers avoid blocking", passages)
    assert len(raw) == 4 and all(0.0 < s < 1.0 for s in raw)
    assert len(set(raw)) > 1  # the stand-in's random weights still tell passages apart
    assert reranker.score("how do readers avoid blocking", passages) == raw  # deterministic
    one = reranker.score("how do readers avoid blocking", passages[2:3])
    assert one[0] == pytest.approx(raw[2], abs=1e-4)  # order and batching do not change a score
    norm = reranker.rerank("how do readers avoid blocking", passages)
    assert min(norm) == 0.0 and max(norm) == 1.0
    assert sorted(range(4), key=raw.__getitem__) == sorted(range(4), key=norm.__getitem__)
    many = reranker.score("q", [f"passage {i}" for i in range(70)])  # three internal batches
    assert len(many) == 70


# -- the explicit download -----------------------------------------------------------------------
def test_fetch_downloads_and_unpacks_atomically(tmp_path: Path) -> None:
    source = dummy_model(tmp_path / "src")
    cache = tmp_path / "cache"
    with FakeApi() as api:
        api.files["/m/model.zip"] = Reply(200, raw=zipped(source))
        seen: list[tuple[int, int]] = []
        folder = fetch_reranker(
            cache, MODEL, url=api.url + "/m/model.zip", progress=lambda d, t: seen.append((d, t))
        )
        assert folder == cache / MODEL and missing_files(cache, MODEL) == []
        assert seen and seen[-1][0] == seen[-1][1]
        again = fetch_reranker(cache, MODEL, url=api.url + "/m/model.zip")
        assert again == folder and len(api.requests_to("/m/model.zip")) == 1  # complete: no refetch
    assert sorted(p.name for p in cache.iterdir()) == [".fetch.lock", MODEL]  # no temp left


def test_fetch_accepts_an_archive_without_the_model_folder(tmp_path: Path) -> None:
    source = dummy_model(tmp_path / "src")
    with FakeApi() as api:
        api.files["/flat.zip"] = Reply(200, raw=zipped(source, prefix=""))
        folder = fetch_reranker(tmp_path / "cache", MODEL, url=api.url + "/flat.zip")
    assert missing_files(tmp_path / "cache", MODEL) == [] and folder.name == MODEL


def test_fetch_replaces_an_incomplete_folder(tmp_path: Path) -> None:
    source = dummy_model(tmp_path / "src")
    cache = tmp_path / "cache"
    (cache / MODEL).mkdir(parents=True)
    (cache / MODEL / "config.json").write_text("partial")
    with FakeApi() as api:
        api.files["/m.zip"] = Reply(200, raw=zipped(source))
        fetch_reranker(cache, MODEL, url=api.url + "/m.zip")
    assert (cache / MODEL / "config.json").read_text() == "{}"


def evil_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../escape.txt", "gotcha")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(404, {"detail": "no"}), "could not download"),
        (Reply(200, raw=b"this is not a zip"), "not a zip archive"),
        (Reply(200, raw=evil_zip()), "unsafe entry"),
        (Reply(200, raw=b"PK" + b"\0" * 10, delay_s=3.0), "could not download"),
    ],
    ids=["404", "not-zip", "zip-slip", "stalled"],
)
def test_fetch_failures_name_the_problem_and_leave_nothing(
    tmp_path: Path, reply: Reply, message: str
) -> None:
    cache = tmp_path / "cache"
    with FakeApi() as api:
        api.files["/m.zip"] = reply
        with pytest.raises(ModelError, match=message):
            fetch_reranker(cache, MODEL, url=api.url + "/m.zip", timeout_s=0.5)
    assert not (cache / MODEL).exists()
    assert not (tmp_path / "escape.txt").exists() and not (cache / "escape.txt").exists()
    assert [p.name for p in cache.iterdir()] == [".fetch.lock"]


def test_fetch_refuses_unknown_models_and_odd_urls(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot fetch"):
        fetch_reranker(tmp_path, "some-model")
    with pytest.raises(ModelError, match="refusing"):
        fetch_reranker(tmp_path, MODEL, url="file:///etc/passwd")


@pytest.mark.slow
def test_doctor_fetch_reranker_then_recall_path_uses_it(
    project: Path, stand_in: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with FakeApi() as api:
        api.files["/fr/ms-marco-TinyBERT-L-2-v2.zip"] = Reply(200, raw=zipped(stand_in / MODEL))
        env = {
            **os.environ,
            "CORTEX_RERANKER_DIR": str(cache),
            "CORTEX_RERANKER_URL": api.url + "/fr/{model}.zip",
            "PYTHONPATH": str(REPO),
        }
        done = subprocess.run(
            [sys.executable, "-m", "cortex", "-C", str(project), "doctor", "--fetch-reranker", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert "Reranker model ready" in done.stderr
    assert checks["reranker"]["state"] == "ok" and "FlashRank" in checks["reranker"]["detail"]
    assert "reranker flashrank" in checks["backends"]["detail"]
    cx = rerank_cx(project, cache)
    assert isinstance(cx.reranker(), FlashRankReranker)
    cx.close()
