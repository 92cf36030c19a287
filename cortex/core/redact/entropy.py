"""Does a token look like random key material rather than a name, path, hash or word? Pure."""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from itertools import pairwise

MIN_BASE64_CHARS = 20
MIN_HEX_CHARS = 32
# Bits per character. Random base64 of 20 chars measures about 4.0 (its maximum is
# log2(20) = 4.32), random hex of 32 about 3.6; names and prose stay lower per length.
MIN_BASE64_ENTROPY_BITS = 3.6
MIN_HEX_ENTROPY_BITS = 3.0
# Share of adjacent character pairs that change class (lower/upper/digit/symbol):
# about 0.6 for random base64, under 0.3 for camelCase and snake_case names.
MIN_CLASS_SWITCH_RATIO = 0.35
# Share of letter pairs inside word-like runs that are common English bigrams: 0.8-1.0 for
# names such as `UserProfileSettings`, about 0.4 for random letters.
MIN_ENGLISH_RATIO = 0.75
_BIGRAMS = """
th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le
ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr
no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni
ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl ab gh ty op
wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt oc fa ef cu rn sc
gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au ck
ew mu br bi pt ak pu ui rg ib tl ny ki rk ys ob mm fu ph og ms ye ud mb ip ub oi rl gu dr hr
cc tw ft wn nu af hu nn eo vo rv nf xp gn sm fl iz ok nl my gl aw ju oa eq sy sl ps jo lf nv
je nk kn gs dy hy ze ks xt bs ik dd cy rp sk xi oe oy ws lv dl rf eu dg wr xa yi nm eb rb tm
xc eh tc gy ja hn yp za
"""
_COMMON_BIGRAMS = frozenset(_BIGRAMS.split())
# Generated object ids that are not secrets: Anthropic `msg_01…`/`toolu_01…`, OpenAI `call_…`.
_OBJECT_ID = re.compile(
    r"(?:[a-z]{2,12}_)+0[0-9A-Za-z]{18,40}|(?:chatcmpl|call|asst|thread|run|file|batch|resp)[-_]\w{16,}"
)
# Hex digests people quote on purpose: SHA-1 (git) and SHA-256.
_DIGEST_LENGTHS = frozenset({40, 64})
_HASH_CONTEXT = re.compile(
    r"(?i)(commit|sha|hash|digest|checksum|md5|etag|revision|rev|object|blob|tree|id)\W*$"
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_WORD_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_SEPARATORS = re.compile(r"[-_]+")


def shannon_entropy(text: str) -> float:
    """Shannon entropy of the character distribution, in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def is_random_token(token: str, before: str = "") -> bool:
    """True for strings that look like generated secrets; `before` is the text just before it."""
    body = token.rstrip("=")
    if len(body) < MIN_BASE64_CHARS or _UUID.search(body):
        return False
    if _HEX.fullmatch(body):
        return _random_hex(body, before)
    if _OBJECT_ID.fullmatch(body):
        return False
    if "/" in body and all(_path_part(part) for part in body.split("/")):
        return False  # a path such as src/components/UserProfile
    parts = [p for p in _SEPARATORS.split(body) if p]
    if len(parts) >= 3 and all(len(p) <= 8 for p in parts):
        return False  # TLS_AES_128_GCM_SHA256, x86_64-w64-mingw32-gcc
    if _decodes_to_prose(body):
        return False
    has_digit = any(ch.isdigit() for ch in body)
    has_upper = any(ch.isupper() for ch in body)
    has_lower = any(ch.islower() for ch in body)
    if has_digit + has_upper + has_lower < 2:
        return False
    return (
        shannon_entropy(body) >= _entropy_floor(len(body), MIN_BASE64_ENTROPY_BITS)
        and _class_switch_ratio(body) >= MIN_CLASS_SWITCH_RATIO
        and not _wordy(body)
    )


def _random_hex(body: str, before: str) -> bool:
    if len(body) < MIN_HEX_CHARS or len(body) in _DIGEST_LENGTHS or _HASH_CONTEXT.search(before):
        return False
    has_digit = any(ch.isdigit() for ch in body)
    has_alpha = any(ch.isalpha() for ch in body)
    return has_digit and has_alpha and shannon_entropy(body) >= MIN_HEX_ENTROPY_BITS


def _entropy_floor(length: int, floor: float) -> float:
    """Longer random strings have more distinct characters; ask a little more of them."""
    return floor + min(0.8, max(0.0, math.log2(length / MIN_BASE64_CHARS) * 0.4))


def _class(ch: str) -> int:
    if ch.islower():
        return 0
    if ch.isupper():
        return 1
    if ch.isdigit():
        return 2
    return 3


def _class_switch_ratio(text: str) -> float:
    switches = sum(_class(a) != _class(b) for a, b in pairwise(text))
    return switches / max(1, len(text) - 1)


def _path_part(part: str) -> bool:
    return (
        len(part) < 8
        or _wordy(part)
        or _UUID.fullmatch(part) is not None
        or (len(part) in _DIGEST_LENGTHS and _HEX.fullmatch(part) is not None)
    )


def _wordy(text: str) -> bool:
    """Made of English-looking runs, as names are; random letters pair up unusually."""
    pairs = [
        run[i : i + 2]
        for part in _WORD_PART.findall(text)
        for run in [part.lower()]
        for i in range(len(run) - 1)
    ]
    if len(pairs) < 3:
        return False
    return sum(pair in _COMMON_BIGRAMS for pair in pairs) / len(pairs) >= MIN_ENGLISH_RATIO


def _decodes_to_prose(body: str) -> bool:
    """Base64 of ordinary text (`aGVsbG8gd29ybGQ=`, a JSON document) is not key material."""
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("ascii")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False
    # Text (prose, JSON, config) rather than key bytes: the decoding view scans what it says.
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return len(decoded) >= 8 and printable == len(decoded) and any(ch in decoded for ch in ' \n":=')
