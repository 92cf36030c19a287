"""Decode before scanning: secrets hidden by an encoding are found in the decoded text and
redacted in the original. Pure.

Four views: JSON string escapes, URL-encoding, base64 runs that decode to text, and lines
hard-wrapped in the middle of a token. A view is scanned only when the text holds its encoding;
what the scan finds is replaced in the original text (the whole encoded run for URL-encoding and
base64, the same span for JSON escapes and joined lines).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable

Scan = Callable[[str], tuple[str, int]]  # text -> (redacted text, spans replaced)
PREFIX = "[REDACTED:"
_JSON_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})(?:[^"\\\n]|\\.)*)"')
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_URL_ENCODED = re.compile(r"[^\s\"'<>]*%[0-9A-Fa-f]{2}[^\s\"'<>]*")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/_=-])")
_T = r"[A-Za-z0-9+/=_$!#%&*@^~.,:-]"  # characters of tokens and passwords
# A newline inside a token: a long run of token characters on one side of it.
_WRAP = re.compile(rf"\n(?:(?<={_T * 16}\n)[ \t]*(?={_T})|(?<={_T}\n)[ \t]*(?={_T}{{16}}))")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
MAX_JOINS = 2000  # a text with more wrapped lines than this is scanned as it is


def redact_encoded(text: str, scan: Scan) -> tuple[str, int]:
    """`text` with secrets found in its decoded views replaced; the number replaced."""
    count = 0
    if "\\" in text:
        text, n = _json_view(text, scan)
        count += n
    if "%" in text and _PERCENT.search(text):
        text, n = _url_view(text, scan)
        count += n
    if len(text) >= 24:
        text, n = _base64_view(text, scan)
        count += n
    if "\n" in text:
        text, n = _joined_view(text, scan)
        count += n
    return text, count


def _json_view(text: str, scan: Scan) -> tuple[str, int]:
    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        try:
            decoded = json.loads(f'"{m.group(1)}"')
        except ValueError:
            return m.group(0)
        cleaned, n = scan(decoded)
        if not n:
            return m.group(0)
        count += n
        return json.dumps(cleaned, ensure_ascii=False)

    return _JSON_STRING.sub(one, text), count


def _url_view(text: str, scan: Scan) -> tuple[str, int]:
    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        run = m.group(0)
        decoded = _unquote(run)
        if decoded == run:
            return run
        cleaned, n = scan(decoded)
        if not n:
            return run
        count += n
        return _quote(cleaned)

    return _URL_ENCODED.sub(one, text), count


_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_URL_SAFE = frozenset("[]:/?=&@+,;!~*'()._-")


def decoded_views(text: str) -> list[str]:
    """`text` and every decoded view `redact_encoded` would scan (one level deep)."""
    views = [text]

    def keep(decoded: str) -> tuple[str, int]:
        views.append(decoded)
        return decoded, 0

    redact_encoded(text, keep)
    return views


def _unquote(text: str) -> str:
    return _PERCENT_RUN.sub(
        lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"), text
    )


def _quote(text: str) -> str:
    return "".join(
        ch
        if (ch.isascii() and ch.isalnum()) or ch in _URL_SAFE
        else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in text
    )


def _decoded_text(run: str) -> str | None:
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    alt = b"-_" if ("-" in body or "_" in body) else None
    if alt and ("+" in body or "/" in body):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=alt, validate=True)
        decoded = raw.decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return decoded if decoded and printable >= 0.95 * len(decoded) else None


def _base64_view(text: str, scan: Scan) -> tuple[str, int]:
    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        decoded = _decoded_text(m.group(0))
        if decoded is None:
            return m.group(0)
        _, n = scan(decoded)
        if not n:
            return m.group(0)
        count += n
        return f"{PREFIX}base64]"

    return _BASE64.sub(one, text), count


def _joined_view(text: str, scan: Scan) -> tuple[str, int]:
    """Lines broken inside a token: scan them joined, keep what the joins made visible. Only the
    lines around the joins are scanned, a block of connected lines at a time."""
    joins = [(m.start(), m.end()) for m in _WRAP.finditer(text)]
    if not joins or len(joins) > MAX_JOINS:
        return text, 0
    blocks: list[list[tuple[int, int]]] = []
    for start, end in joins:
        if blocks and text.rfind("\n", 0, start) < blocks[-1][-1][1]:
            blocks[-1].append((start, end))  # on the line the previous join opened
        else:
            blocks.append([(start, end)])
    out: list[str] = []
    pos = found = 0
    for block in blocks:
        begin = text.rfind("\n", 0, block[0][0]) + 1
        close = text.find("\n", block[-1][1])
        close = len(text) if close < 0 else close
        cleaned, n = _join_block(text[begin:close], [(a - begin, b - begin) for a, b in block], scan)
        out.append(text[pos:begin] + cleaned)
        pos = close
        found += n
    out.append(text[pos:])
    return "".join(out), found


def _join_block(text: str, joins: list[tuple[int, int]], scan: Scan) -> tuple[str, int]:
    pieces: list[str] = []
    offsets: list[tuple[int, int]] = []  # (joined index, original index) where each piece starts
    pos = length = 0
    for start, end in joins:
        offsets.append((length, pos))
        pieces.append(text[pos:start])
        length += start - pos
        pos = end
    offsets.append((length, pos))
    pieces.append(text[pos:])
    joined = "".join(pieces)
    cleaned, n = scan(joined)
    if not n:
        return text, 0
    spans = replaced_spans(joined, cleaned)
    if spans is None:
        return cleaned, n  # could not align: the joined, redacted text is the safe answer
    join_points = [j for j, _ in offsets[1:]]
    out: list[str] = []
    last = kept = 0
    for a, b, marker in spans:
        if not any(a - 40 <= p <= b for p in join_points):
            continue  # found without the joins too: the plain scan already judged it
        oa, ob = _to_original(a, offsets), _to_original(b, offsets, end=True)
        out.append(text[last:oa] + marker)
        last = ob
        kept += 1
    out.append(text[last:])
    return "".join(out), kept


def _to_original(index: int, offsets: list[tuple[int, int]], end: bool = False) -> int:
    base_j, base_o = offsets[0]
    for j, o in offsets:
        if j < index or (j == index and not end):
            base_j, base_o = j, o
        else:
            break
    return base_o + (index - base_j)


def replaced_spans(before: str, after: str) -> list[tuple[int, int, str]] | None:
    """Where redaction replaced text: (start, end, marker) spans of `before` that became markers
    in `after`; None when the two do not align (text was dropped rather than replaced)."""
    spans: list[tuple[int, int, str]] = []
    i = j = 0
    for m in _MARKER.finditer(after):
        segment = after[j : m.start()]
        if before[i : i + len(segment)] != segment:
            return None
        i += len(segment)
        marker = m.group(0)
        j = m.end()
        if before.startswith(marker, i):
            i += len(marker)
            continue
        nxt = _MARKER.search(after, j)
        anchor = after[j : nxt.start() if nxt else len(after)][:64]
        end = before.find(anchor, i) if anchor else len(before)
        if end < 0:
            return None
        spans.append((i, end, marker))
        i = end
    return spans if before[i:] == after[j:] else None
