"""Layer 4 (LLM): a tolerant parser from a model's reply to typed candidates it can trust. Pure."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from cortex.core.extract.explicit import TYPE_ALIASES
from cortex.core.graph import normalize_edge_type
from cortex.core.model import Candidate, EdgeType, Layer, MemoryType, Scope
from cortex.core.redact.secrets import redact
from cortex.core.text import as_text, first_line_summary, normalize_text

MAX_RESPONSE_CHARS = 64_000  # ~8x a full answer of MAX_OUTPUT_TOKENS: beyond it the reply is junk
MAX_LLM_CANDIDATES = 15
MAX_CONTENT_CHARS = 2_000
MAX_SUMMARY_CHARS = 120
MAX_TAGS = 8
MAX_FILES = 10
MAX_RELATED = 5
MAX_JSON_STARTS = 20  # brace positions tried when the reply wraps its JSON in prose
DEFAULT_LLM_CONFIDENCE = 0.6
LLM_MAX_CONFIDENCE = 0.9  # a model's guess never outranks what a person wrote down
PROJECT_ONLY_GLOBAL_CONFIDENCE = 0.3  # cap when the model did not call a memory global
# Code comes from `cortex index-code`; the LLM layer proposes prose only.
LLM_TYPES = frozenset(t for t in MemoryType if t != MemoryType.CODE)

_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_MEMORIES_ARRAY = re.compile(r'"memories"\s*:\s*\[')
_TAG_CHARS = re.compile(r"[^a-z0-9:._/-]+")
# Text that speaks to a model instead of recording a fact is an injection attempt, not memory.
_INSTRUCTION = re.compile(
    r"ignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier) (?:instructions|prompts?|rules)"
    r"|disregard (?:all |any )?(?:the )?(?:previous|prior|above|earlier|system)"
    r"|</?\s*(?:system|system-reminder|instructions?|assistant|human)\s*>"
    r"|^\s*(?:system|assistant|human)\s*:"
    r"|\byou are now\b|\bnew instructions\b|\bfrom now on,? you\b"
    r"|(?:reveal|print|repeat|show) (?:me )?(?:your|the) (?:system prompt|instructions)",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """Candidates found in a model reply, and what was wrong with the rest."""

    candidates: tuple[Candidate, ...]
    problems: tuple[str, ...]


def parse_extraction_response(
    text: str,
    *,
    default_priority: Mapping[MemoryType, int] | None = None,
    max_chars: int = MAX_RESPONSE_CHARS,
) -> ParsedReply:
    """Typed LLM-layer candidates from a reply; never raises, drops what it cannot trust.

    Accepts the JSON object the prompt asks for, bare or fenced or wrapped in prose, a bare
    list, trailing commas, and a reply cut short by max_tokens (its complete items are kept).
    Every text is redacted; items that read as instructions to a model, `code` items and
    `supersedes` edges are dropped; confidence, priority and counts are clamped.
    """
    if len(text) > max_chars:
        return ParsedReply((), (f"oversized reply ({len(text):,} characters)",))
    items, problems = _memory_items(text)
    out: list[Candidate] = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        cand, why = _candidate(item, default_priority or {})
        if cand is None:
            problems.append(f"item {n}: {why}")
        elif cand.content.casefold() not in seen:
            seen.add(cand.content.casefold())
            out.append(cand)
    if len(out) > MAX_LLM_CANDIDATES:
        problems.append(f"kept the first {MAX_LLM_CANDIDATES} of {len(out)} memories")
    return ParsedReply(tuple(out[:MAX_LLM_CANDIDATES]), tuple(problems))


def looks_like_instructions(text: str) -> bool:
    """True when text addresses a model (prompt injection) rather than stating a fact."""
    return _INSTRUCTION.search(text) is not None


def _memory_items(text: str) -> tuple[list[object], list[str]]:
    single: list[object] = []
    for doc in _json_documents(text):
        if isinstance(doc, dict):
            found = next((doc[k] for k in ("memories", "items", "candidates") if k in doc), None)
            if isinstance(found, list):
                return list(found), []
            if "content" in doc and not single:
                single = [doc]  # one bare item, unless a cut-short array below holds more
        elif isinstance(doc, list):
            return list(doc), []
    salvaged = _salvage_items(text)
    if salvaged:
        return salvaged, ["reply was cut short; kept its complete memories"]
    return (single, []) if single else ([], ["no JSON object with memories in the reply"])


def _loads(text: str) -> tuple[bool, object]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _json_documents(text: str) -> Iterator[object]:
    """Whole-text JSON, fenced JSON, then a JSON object starting at each of the first braces."""
    for source in (text.strip(), *(m.group(1) for m in _JSON_FENCE.finditer(text))):
        for attempt in (source, _TRAILING_COMMA.sub(r"\1", source)):
            ok, doc = _loads(attempt)
            if ok:
                yield doc
    decoder = json.JSONDecoder()
    # Only objects are looked for inside prose: a bracket there is as likely a list of tags.
    starts = [i for i, ch in enumerate(text) if ch == "{"][:MAX_JSON_STARTS]
    for start in starts:
        try:
            yield decoder.raw_decode(text, start)[0]
        except (ValueError, RecursionError):
            continue


def _salvage_items(text: str) -> list[object]:
    """Complete objects of a `memories` array whose end is missing (max_tokens cut the reply)."""
    head = _MEMORIES_ARRAY.search(text)
    if head is None:
        return []
    decoder = json.JSONDecoder()
    pos = head.end()
    items: list[object] = []
    while len(items) < MAX_LLM_CANDIDATES * 2:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        items.append(item)
    return items


def _candidate(item: object, priorities: Mapping[MemoryType, int]) -> tuple[Candidate | None, str]:
    if not isinstance(item, dict):
        return None, "not an object"
    raw_type = as_text(item.get("type") or item.get("memory_type"))
    kind = TYPE_ALIASES.get(raw_type.strip().casefold())
    if kind is None or kind not in LLM_TYPES:
        return None, f"unknown or unsupported type {raw_type[:30]!r}"
    content = _clean(as_text(item.get("content") or item.get("text")))[:MAX_CONTENT_CHARS].rstrip()
    summary = first_line_summary(_clean(as_text(item.get("summary") or item.get("title"))), MAX_SUMMARY_CHARS)
    content = content or summary
    if not content:
        return None, "no content"
    if looks_like_instructions(content) or looks_like_instructions(summary):
        return None, "reads as instructions to a model, not as a memory"
    glob = _unit(item.get("global_confidence"), 0.0)
    if as_text(item.get("scope")).strip().casefold() != "global":
        glob = min(glob, PROJECT_ONLY_GLOBAL_CONFIDENCE)
    return Candidate(
        content=content,
        type=kind,
        layer=Layer.LLM,
        summary=summary or first_line_summary(content),
        confidence=min(_unit(item.get("confidence"), DEFAULT_LLM_CONFIDENCE), LLM_MAX_CONFIDENCE),
        priority=_priority(item.get("priority"), priorities.get(kind, 5)),
        scope=Scope.PROJECT,  # the write gate promotes to global from global_confidence
        global_confidence=glob,
        tags=_tags(item.get("tags")),
        files=_files(item.get("files") or item.get("related_files")),
        edge_hints=_edges(item.get("related") or item.get("edges")),
    ), ""


def _clean(text: str) -> str:
    """Secrets out (a reply may try to smuggle them through), control characters out."""
    return normalize_text(redact(text).text)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _unit(value: object, default: float) -> float:
    number = _number(value)
    return default if number is None else min(max(number, 0.0), 1.0)


def _priority(value: object, default: int) -> int:
    number = _number(value)
    return default if number is None else int(min(max(round(number), 1), 10))


def _tags(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else []
    tags = (_TAG_CHARS.sub("-", as_text(t).strip().casefold()).strip("-")[:40] for t in items)
    return tuple(dict.fromkeys(t for t in tags if t))[:MAX_TAGS]


def _files(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else []
    paths = []
    for raw in items:
        path = as_text(raw).strip().strip("`'\"")
        if not path or len(path) > 200 or "://" in path or "\n" in path or ".." in path.split("/"):
            continue
        paths.append(path.removeprefix("./"))
    return tuple(dict.fromkeys(paths))[:MAX_FILES]


def _edges(value: object) -> tuple[tuple[str, EdgeType], ...]:
    items = value if isinstance(value, list) else []
    hints = []
    for raw in items:
        if not isinstance(raw, dict):
            continue
        target = first_line_summary(_clean(as_text(raw.get("to") or raw.get("target"))), MAX_SUMMARY_CHARS)
        kind = normalize_edge_type(as_text(raw.get("type")) or "relates_to")
        # Only a person may say one memory replaces another.
        if target and kind is not None and kind != EdgeType.SUPERSEDES:
            hints.append((target, kind))
    return tuple(dict.fromkeys(hints))[:MAX_RELATED]
