"""The one path that downloads a FlashRank model: timed out, size-capped, extracted atomically.

Only `cortex doctor --fetch-reranker` calls it; hooks and recall never do (they read the folder
or go without reranking). Network and file writes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from cortex.backends.rerank import MODEL_FILES, missing_files, required_files
from cortex.errors import ModelError
from cortex.shell.files import file_lock

FLASHRANK_URL = "https://huggingface.co/prithivida/flashrank/resolve/main/{model}.zip"
URL_ENV = "CORTEX_RERANKER_URL"  # a mirror; `{model}` in it is replaced by the model name
READ_TIMEOUT_S = 30.0  # per socket operation
DEADLINE_S = 900.0  # the whole download
MAX_DOWNLOAD_BYTES = 300_000_000
MAX_EXTRACTED_BYTES = 600_000_000
CHUNK_BYTES = 1 << 16
LOCK_TIMEOUT_S = 5.0

Progress = Callable[[int, int], None]


def fetch_reranker(
    cache_dir: Path,
    model: str,
    *,
    url: str | None = None,
    timeout_s: float = READ_TIMEOUT_S,
    deadline_s: float = DEADLINE_S,
    progress: Progress | None = None,
) -> Path:
    """Download and unpack `model` into `cache_dir/model` unless it is complete already."""
    if model not in MODEL_FILES:
        raise ModelError(
            f"cortex cannot fetch reranker_model {model!r}",
            f"set reranker_model to one of: {', '.join(MODEL_FILES)}",
        )
    target = cache_dir / model
    if not missing_files(cache_dir, model):
        return target
    source = (url or os.environ.get(URL_ENV) or FLASHRANK_URL).replace("{model}", model)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(cache_dir / ".fetch.lock", timeout_s=LOCK_TIMEOUT_S):
        work = Path(tempfile.mkdtemp(prefix=f".{model}.", dir=cache_dir))
        try:
            archive = work / "model.zip"
            _download(source, archive, timeout_s, deadline_s, progress)
            unpacked = _unpack(archive, work / "unpacked")
            found = _model_folder(unpacked, model)
            if target.exists():  # an incomplete folder from elsewhere: replace it whole
                target.rename(work / "previous")
            os.replace(found, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _download(url: str, dest: Path, timeout_s: float, deadline_s: float, progress: Progress | None) -> None:
    if not url.startswith(("https://", "http://")):
        raise ModelError(f"refusing to download from {url!r}", f"set {URL_ENV} to an http(s) URL")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response, dest.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            if total > MAX_DOWNLOAD_BYTES:
                raise ModelError(f"{url} is {total:,} bytes, over the {MAX_DOWNLOAD_BYTES:,} limit", "")
            done = 0
            while chunk := response.read(CHUNK_BYTES):
                done += len(chunk)
                if done > MAX_DOWNLOAD_BYTES:
                    raise ModelError(f"{url} sent more than {MAX_DOWNLOAD_BYTES:,} bytes", "")
                if time.monotonic() - started > deadline_s:
                    raise ModelError(f"downloading {url} took over {deadline_s:.0f} s", "try again later")
                out.write(chunk)
                if progress:
                    progress(done, total or done)
    except ModelError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ModelError(
            f"could not download the reranker from {url}: {exc}",
            f"check the network, or put the model folder in place by hand (or set {URL_ENV})",
        ) from exc


def _unpack(archive: Path, dest: Path) -> Path:
    """Extract regular files only, each inside `dest`, within the size cap."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.infolist() if not m.is_dir()]
            if sum(m.file_size for m in members) > MAX_EXTRACTED_BYTES:
                raise ModelError("the reranker archive unpacks to more than the size limit", "")
            for member in members:
                rel = PurePosixPath(member.filename)
                if rel.is_absolute() or ".." in rel.parts or (member.external_attr >> 28) == 0o12:
                    raise ModelError(f"the reranker archive holds an unsafe entry {member.filename!r}", "")
                out = dest.joinpath(*rel.parts)
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst, CHUNK_BYTES)
    except zipfile.BadZipFile as exc:
        raise ModelError(f"the downloaded reranker is not a zip archive ({exc})", "try again later") from exc
    return dest


def _model_folder(unpacked: Path, model: str) -> Path:
    """The folder holding the model's files: `<model>/` in the archive, or its root."""
    for folder in (unpacked / model, unpacked):
        if all((folder / f).is_file() for f in required_files(model)):
            return folder
    raise ModelError(
        f"the reranker archive lacks some of {', '.join(required_files(model))}",
        "check the download URL",
    )
