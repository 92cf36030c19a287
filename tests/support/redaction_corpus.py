"""The redaction dev corpus: FAKE secrets planted eight ways, and look-alikes that must survive.

Generated from `corpus_kinds.py` and `corpus_safe.py` with a fixed seed, so every run sees the
same text. `leaks(secret, text)` says whether a secret can still be read back from a text by the
usual decodings (URL-decoding, base64, JSON escapes, joining wrapped lines).
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import re
import string
import textwrap
import urllib.parse
from dataclasses import dataclass
from functools import cache

from tests.support.corpus_kinds import (
    COMMANDS,
    KIND_LINES,
    PASSWORD_COMMANDS,
    PASSWORD_URLS,
    PROSE,
    URLS,
)
from tests.support.corpus_safe import SAFE_LINES

SEED = 15
PLANTINGS = ("plain", "command", "url", "url_encoded", "base64", "wrapped", "json", "prose")
SECRETS_WANTED = 210
_ALNUM = string.ascii_letters + string.digits
_ALPHABETS = {
    "A": _ALNUM,
    "a": string.ascii_lowercase + string.digits,
    "U": string.ascii_uppercase + string.digits,
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "d": string.digits,
    "w": _ALNUM + "-_",
    "b": _ALNUM + "+/",
    "L": string.ascii_lowercase,
    "8": "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz",
    "C": "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
    "z": "abcdefghijklmnopqrstuvwxyz234567",
    "n": "0123456789abcdfghijklmnpqrsvwxyz",
    "q": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",  # bech32
}
# A few words of the BIP39 English list (enough to make a phrase that reads like one).
_BIP39 = [
    "abandon",
    "ability",
    "able",
    "about",
    "above",
    "absent",
    "absorb",
    "abstract",
    "absurd",
    "abuse",
    "access",
    "accident",
    "account",
    "accuse",
    "achieve",
    "acid",
    "acoustic",
    "acquire",
    "across",
    "act",
    "action",
    "actor",
    "actress",
    "actual",
    "adapt",
    "add",
    "addict",
    "address",
    "adjust",
    "admit",
    "adult",
    "advance",
    "advice",
    "aerobic",
    "affair",
    "afford",
    "afraid",
    "again",
    "age",
    "agent",
    "agree",
    "ahead",
    "aim",
    "air",
    "airport",
    "aisle",
    "alarm",
    "album",
    "alcohol",
    "alert",
    "alien",
    "all",
    "alley",
    "allow",
    "almost",
    "alone",
    "alpha",
    "already",
    "also",
    "alter",
    "always",
    "amateur",
    "amazing",
    "among",
    "amount",
    "amused",
    "analyst",
    "anchor",
    "ancient",
    "anger",
    "angle",
    "angry",
    "animal",
    "ankle",
    "announce",
    "annual",
    "another",
    "answer",
    "antenna",
]
_WORDS = ("Winter", "Summer", "Orchid", "Falcon", "Harbor", "Copper", "Maple", "Staging", "Prod")
_SYMBOLS = "!#$%&*/@+?^~"
_FIELD = re.compile(r"\{(?:([A-Za-z0-9]):(\d+)|([uPMKBJ]))\}")
_SENTENCES = (
    "the quick brown fox jumps over the lazy dog",
    "hello world from the fixture loader",
    '{"name": "demo", "version": 3, "enabled": true}',
)


@dataclass(frozen=True, slots=True)
class Planting:
    kind: str
    family: str
    way: str  # one of PLANTINGS
    text: str
    secret: str  # what must not be readable in the output


@dataclass(frozen=True, slots=True)
class SafeSample:
    kind: str
    text: str
    keep: tuple[str, ...]  # substrings that must survive unchanged


def _field(rng: random.Random, cls: str | None, n: str | None, whole: str | None) -> str:
    if cls is not None and n is not None:
        return "".join(rng.choice(_ALPHABETS[cls]) for _ in range(int(n)))
    if whole == "u":
        h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
    if whole == "P":
        a, b = rng.sample(_WORDS, 2)
        return f"{a}{rng.randint(1990, 2030)}{rng.choice(_SYMBOLS)}{b}{rng.choice(_SYMBOLS)}"
    if whole == "M":
        return " ".join(rng.choice(_BIP39) for _ in range(12))
    if whole == "K":
        return "[" + ",".join(str(rng.randint(0, 255)) for _ in range(64)) + "]"
    if whole == "B":
        return base64.b64encode(rng.choice(_SENTENCES).encode()).decode()
    if whole == "J":
        return base64.b64encode(_SENTENCES[2].encode()).decode()
    raise ValueError(whole)


def fill(shape: str, rng: random.Random) -> str:
    return _FIELD.sub(lambda m: _field(rng, m.group(1), m.group(2), m.group(3)), shape)


def _kinds() -> list[tuple[str, str, str, str, str]]:
    rows = []
    for line in KIND_LINES.strip().splitlines():
        kind, family, label, desc, shape = line.replace("~", "").split("|")
        rows.append((kind, family, label, desc, shape))
    return rows


def plant(kind: str, family: str, label: str, desc: str, value: str, rng: random.Random) -> list[Planting]:
    """One secret, planted each of the eight ways."""
    is_password = family == "password"
    command = rng.choice(PASSWORD_COMMANDS if is_password else COMMANDS)
    url = rng.choice(PASSWORD_URLS if is_password else URLS)
    if value.startswith("http") or "://" in value:
        url = f"curl -X POST {value} -d @message.json"
    plain = f"{label}={value}" if " " not in value else f'{label}="{value}"'
    sentence = f"the {desc} is {value}"
    texts = {
        "plain": plain,
        "command": command.format(v=value, n=label, l=label.lower()),
        "url": url.format(v=value),
        "url_encoded": "redirect to https://app.acme.io/login?next="
        + urllib.parse.quote(f"https://app.acme.io/setup?{plain}", safe=""),
        "base64": "payload " + base64.b64encode(sentence.encode()).decode() + " sent",
        "wrapped": textwrap.fill(
            f"for the deploy set {plain} in the CI settings",
            width=rng.randint(24, 40),
            break_long_words=True,
            break_on_hyphens=False,
        ),
        "json": json.dumps({"type": "tool_use", "command": f'export {label}="{value}"'}),
        "prose": rng.choice(PROSE).format(d=desc, v=value),
    }
    return [Planting(kind, family, way, texts[way], value) for way in PLANTINGS]


@cache
def secret_plantings() -> tuple[Planting, ...]:
    rng = random.Random(SEED)
    kinds = _kinds()
    out: list[Planting] = []
    for i in range(SECRETS_WANTED):
        kind, family, label, desc, shape = kinds[i % len(kinds)]
        out.extend(plant(kind, family, label, desc, fill(shape, rng), rng))
    return tuple(out)


@cache
def safe_samples() -> tuple[SafeSample, ...]:
    rng = random.Random(SEED + 1)
    out = []
    for _ in range(2):
        for line in SAFE_LINES.strip().splitlines():
            kind, template = line.split("|", 1)
            text = fill(template.replace("\\n", "\n"), rng)
            keep = tuple(re.findall(r"\[\[(.*?)\]\]", text, re.DOTALL))
            out.append(SafeSample(kind, text.replace("[[", "").replace("]]", ""), keep))
    return tuple(out)


def kind_count() -> int:
    return len({k for k, *_ in _kinds()})


_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def _views(text: str) -> list[str]:
    joined = re.sub(r"\n[ \t]*", "", text)
    spaced = re.sub(r"\s+", " ", text)
    views = [text, joined, spaced, urllib.parse.unquote(text), urllib.parse.unquote(joined)]
    views.append(text.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n"))
    for view in list(views):
        for m in _B64_RUN.finditer(view):
            run = m.group(0)
            try:
                raw = base64.b64decode(
                    run + "=" * (-len(run) % 4), altchars=b"-_" if "-" in run or "_" in run else None
                )
            except (binascii.Error, ValueError):
                continue
            views.append(raw.decode("utf-8", "replace"))
    return views


def leaks(secret: str, text: str) -> bool:
    """Whether `secret` can be read back from `text` (directly or by a usual decoding)."""
    return any(secret in view for view in _views(text))
