"""FlashRank cross-encoder reranking from a cached model directory only. Loads a model.

FlashRank downloads a missing model on first use, with no timeout. cortex never lets that
happen implicitly: `load_flashrank` checks every file is in place BEFORE it constructs a
`Ranker`, and only `cortex doctor --fetch-reranker` (backends.rerank_fetch) downloads.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from cortex.config import Settings

# Pairwise ONNX cross-encoders FlashRank ships, and their model file. TinyBERT-L-2 is the
# default: ~85 ms for 100 candidates on 2 cores, against ~1.8 s for MiniLM-L-12.
MODEL_FILES: dict[str, str] = {
    "ms-marco-TinyBERT-L-2-v2": "flashrank-TinyBERT-L-2-v2.onnx",
    "ms-marco-MiniLM-L-12-v2": "flashrank-MiniLM-L-12-v2_Q.onnx",
    "ms-marco-MultiBERT-L-12": "flashrank-MultiBERT-L12_Q.onnx",
    "ce-esci-MiniLM-L12-v2": "flashrank-ce-esci-MiniLM-L12-v2_Q.onnx",
}
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
MAX_LENGTH_TOKENS = 256  # query + passage; FlashRank pads a batch to its longest pair
MAX_PASSAGE_CHARS = 1_200
SCORE_BATCH = 32
LOGIT_CLIP = 1e-7  # FlashRank's sigmoid saturates in float32; clip before taking the logit
RERANK_EXTRA_FIX = "pip install 'cortex-memory[rerank]'"
FETCH_FIX = "run `cortex doctor --fetch-reranker` once (downloads the model with a timeout)"


def reranker_dir(settings: Settings, models_dir: Path) -> Path:
    """The directory holding FlashRank model folders: `reranker_dir`, else CORTEX_HOME/models/flashrank."""
    configured = settings.reranker_dir
    return Path(configured).expanduser() if configured else models_dir / "flashrank"


def required_files(model: str) -> tuple[str, ...]:
    """Every file FlashRank reads for a model (empty when cortex does not support the model)."""
    onnx = MODEL_FILES.get(model)
    return (*TOKENIZER_FILES, onnx) if onnx else ()


def missing_files(cache_dir: Path, model: str) -> list[str]:
    """Files of `model` not yet in `cache_dir/model` (all of them for an unsupported model)."""
    if model not in MODEL_FILES:
        return ["<unsupported model>"]
    return [f for f in required_files(model) if not (cache_dir / model / f).is_file()]


def flashrank_unavailable(
    cache_dir: Path, model: str, find_spec: Callable[[str], Any] = importlib.util.find_spec
) -> str:
    """Why FlashRank cannot rerank with `model` from `cache_dir` ("" when all is in place)."""
    if model not in MODEL_FILES:
        return f"unsupported reranker_model {model!r} (known: {', '.join(MODEL_FILES)})"
    if find_spec("flashrank") is None:
        return f"flashrank is not installed ({RERANK_EXTRA_FIX})"
    where = cache_dir / model
    missing = missing_files(cache_dir, model)
    if len(missing) == len(required_files(model)):
        return f"no cached model at {where}; `cortex doctor --fetch-reranker` gets it"
    if missing:
        return f"incomplete model at {where} (missing {', '.join(missing)}); {FETCH_FIX}"
    return ""


def normalize_scores(raw: Sequence[float]) -> list[float]:
    """Scores of one query's candidates mapped to [0, 1] for blending with the fusion score.

    FlashRank's scores are sigmoid probabilities that crowd near 0 and 1; they are turned back
    into logits (clipped), then min-max scaled over the candidates, so the best gets 1, the
    worst 0, and the spread in between is kept. All-equal scores carry no ranking: 0.5 each.
    """
    logits = [_logit(s) for s in raw]
    if not logits:
        return []
    low, high = min(logits), max(logits)
    if high - low < 1e-9:
        return [0.5] * len(logits)
    return [(x - low) / (high - low) for x in logits]


def _logit(p: float) -> float:
    if not math.isfinite(p):
        p = 0.0
    p = min(max(p, LOGIT_CLIP), 1.0 - LOGIT_CLIP)
    return math.log(p / (1.0 - p))


class FlashRankReranker:
    """A FlashRank cross-encoder: `score` gives raw relevance, `normalize_scores` maps it to [0,1]."""

    backend = "flashrank"

    def __init__(self, ranker: Any, model: str, folder: Path) -> None:
        self._ranker = ranker
        self.model = model
        self.folder = folder

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """FlashRank's relevance (a probability) of each passage for the query, in passage order."""
        from flashrank import RerankRequest

        scores = [0.0] * len(passages)
        for start in range(0, len(passages), SCORE_BATCH):
            chunk = [
                {"id": start + i, "text": p[:MAX_PASSAGE_CHARS]}
                for i, p in enumerate(passages[start : start + SCORE_BATCH])
            ]
            for row in self._ranker.rerank(RerankRequest(query=query, passages=chunk)):
                scores[int(row["id"])] = float(row["score"])
        return scores

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Scores in [0, 1] (normalised over these passages), in passage order."""
        return normalize_scores(self.score(query, passages))


@contextlib.contextmanager
def _root_logging_kept() -> Iterator[None]:
    """FlashRank calls logging.basicConfig; undo it so no stray stderr handler appears."""
    import logging as std_logging

    root = std_logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)


def load_flashrank(cache_dir: Path, model: str) -> FlashRankReranker:
    """A reranker over an existing model folder; refuses (ValueError) when any file is missing."""
    missing = missing_files(cache_dir, model)
    if missing:  # checked first: a Ranker for a missing folder would start an untimed download
        raise ValueError(f"{cache_dir / model} is missing {', '.join(missing)}")
    from flashrank import Ranker

    with _root_logging_kept():
        ranker = Ranker(
            model_name=model, cache_dir=str(cache_dir), max_length=MAX_LENGTH_TOKENS, log_level="WARNING"
        )
    return FlashRankReranker(ranker, model, cache_dir / model)
