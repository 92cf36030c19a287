"""Markdown text -> prose paragraphs and sentences (code, quotes, tables left out); paths. Pure."""

from __future__ import annotations

import re

from cortex.core.extract.transcript_blocks import CLIP_MARK

MAX_SENTENCE_CHARS = 400

_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_EMPHASIS = re.compile(r"\*\*|__")
# A line of a program's log, pasted or quoted: it opens with a time of day or a date and time
# ("15:12:06.527 If running locally, make sure to ...", "[22:37:02] done", "2025-10-20T15:12:06Z").
_LOG_LINE = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[T ])?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?(?:\s|$)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9`\"'(\[*_])")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp)\.$", re.IGNORECASE)
_MARK = "\ue000"  # private-use character: stands in for inline code while splitting
_MASKED = re.compile(_MARK + r"(\d+)" + _MARK)
# A path never starts right after a word, a separator, a drive colon or a variable (`$HOME/`).
_PATH = re.compile(
    r"(?<![\w./\\:$%}~-])(?:~?/)?(?:[\w@.+-]+/)+[\w@.+-]+\.[A-Za-z0-9]{1,8}(?![\w/\\])"
    r"|(?<![\w./\\:$%}~-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|ex|exs|erl|go|rs|rb|java|kt|scala|c|h"
    r"|cc|cpp|hpp|cs|swift|php|sh|sql|md|toml|yaml|yml|json|jsonl|ini|cfg|lock|html|css|vue)(?![\w/\\])"
)
# A Windows path (`C:\Users\me\app.py`, `C:/Program Files/Git/bin/bash.exe`): a folder name may
# hold spaces between words without dots ("Program Files (x86)"); the file name holds none.
_WIN_WORD = r"[^\\/:*?\"<>|\s`']"
_WINDOWS_PATH = re.compile(
    rf"(?<!\w)[A-Za-z]:[\\/](?:(?:[^\\/:*?\"<>|\s`'.]+(?: [^\\/:*?\"<>|\s`'.]+)+|{_WIN_WORD}+)[\\/])*"
    rf"{_WIN_WORD}+\.[A-Za-z0-9]{{1,8}}\b"
)


def parse_prose_blocks(text: str) -> list[str]:
    """Paragraphs of prose: fenced and indented code, blockquotes, tables, log lines and headings
    removed."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if current:
            blocks.append("\n".join(current))
            current.clear()

    for line in text.splitlines():
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            continue
        if opener:
            flush()
            fence = opener.group(1)
            continue
        stripped = line.strip()
        if not stripped or _HEADING.match(line) or stripped == CLIP_MARK:
            flush()  # a clipped result's head and tail are not one paragraph
        elif stripped.startswith((">", "|")) or line.startswith(("    ", "\t")) or _LOG_LINE.match(line):
            flush()  # quoted text is someone else's statement; tables, indented code and logs are data
        elif _LIST_MARKER.match(line):
            flush()  # every list item stands alone
            current.append(_LIST_MARKER.sub("", line, count=1).strip())
        else:
            current.append(stripped)
    flush()
    return [b for b in blocks if b]


def parse_sentences(block: str) -> list[str]:
    """Split a prose paragraph into sentences, without breaking inside inline code."""
    masked, codes = _mask_inline_code(block.replace("\n", " ").replace(_MARK, ""))
    pieces: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(masked):
        if _ABBREVIATIONS.search(masked[start : m.start()]):
            continue
        pieces.append(masked[start : m.start()])
        start = m.end()
    pieces.append(masked[start:])
    sentences = []
    for piece in pieces:
        sentence = _EMPHASIS.sub("", _unmask(piece, codes)).strip()
        if sentence:
            sentences.append(sentence[:MAX_SENTENCE_CHARS])
    return sentences


def parse_mentioned_paths(text: str) -> list[str]:
    """File paths mentioned in text (`cortex/core/gate.py`, `db.py`), in order, deduplicated.
    A Windows path is one path (`C:/Program Files/...`, separators made `/`), never the
    relative-looking pieces inside it; `~/`, `/home/...` and `$HOME/...` stay absolute."""
    seen: dict[str, None] = {}
    for m in _WINDOWS_PATH.finditer(text):
        seen.setdefault(m.group(0).replace("\\", "/"), None)
    text = _WINDOWS_PATH.sub(lambda m: " " * len(m.group(0)), text)
    for m in _PATH.finditer(text):
        path = m.group(0).removeprefix("./")
        if "://" not in text[max(0, m.start() - 8) : m.start()] and not path.startswith("."):
            seen.setdefault(path, None)
    return list(seen)


def code_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks and inline code in `text`."""
    spans: list[tuple[int, int]] = []
    pos = 0
    fence: str | None = None
    fence_start = 0
    for line in text.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence, fence_start = opener.group(1), pos
        elif fence is not None and opener and opener.group(1)[0] == fence[0]:
            spans.append((fence_start, pos + len(line)))
            fence = None
        elif fence is None:
            spans.extend((pos + a, pos + b) for a, b in _inline_spans(line))
        pos += len(line)
    if fence is not None:
        spans.append((fence_start, len(text)))
    return spans


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of blockquote lines (`> ...`)."""
    spans = []
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(">"):
            spans.append((pos, pos + len(line)))
        pos += len(line)
    return spans


def _inline_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _INLINE_CODE.finditer(line)]


def _mask_inline_code(text: str) -> tuple[str, list[str]]:
    codes: list[str] = []

    def keep(m: re.Match[str]) -> str:
        codes.append(m.group(0))
        return f"{_MARK}{len(codes) - 1}{_MARK}"

    return _INLINE_CODE.sub(keep, text), codes


def _unmask(text: str, codes: list[str]) -> str:
    return _MASKED.sub(lambda m: codes[int(m.group(1))], text)
