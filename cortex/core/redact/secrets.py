"""Secrets and <private> spans out of text before anything stores, embeds or sends it. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from cortex.core.redact.contexts import redact_contexts
from cortex.core.redact.decode import redact_encoded
from cortex.core.redact.entropy import is_random_token
from cortex.core.redact.lookalikes import protect, restore
from cortex.core.redact.names import Setting, is_placeholder, secret_name_kind, value_is_secret
from cortex.core.redact.providers import EXTRA_PROVIDERS, masked
from cortex.core.redact.providers import Rule as _Rule
from cortex.core.redact.providers import tok as _tok

REDACTED_PREFIX = "[REDACTED:"
MAX_VALUE_DEPTH = 64  # tool inputs nest a few levels; deeper is junk, not data
# A replacement can expose a match next to it (text glued to a key): passes run to a fixpoint.
MAX_PASSES = 8
MAX_DECODE_DEPTH = 2  # base64 inside a JSON string inside a URL is as deep as it gets

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_L = r"(?<![A-Za-z0-9_-])"  # a token starts here
_R = r"(?![A-Za-z0-9_-])"  # and ends here


_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+:[^\n\\]*))*)",
    re.DOTALL,
)
_AWS_PREFIXES = ("A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA")
_PROVIDERS: tuple[_Rule, ...] = (
    _Rule("anthropic", ("sk-ant-",), _tok(r"sk-ant-[A-Za-z0-9_-]{20,}")),
    _Rule("openai", ("sk-",), _tok(r"sk-[A-Za-z0-9_-]{20,}"), lambda s: _mixed(s, digits=2)),
    _Rule("stripe", ("_live_", "_test_"), _tok(r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    _Rule("stripe", ("whsec_",), _tok(r"whsec_[A-Za-z0-9]{24,}")),
    _Rule(
        "aws_access_key",
        (*_AWS_PREFIXES, "AROA", "APKA"),
        re.compile(
            r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA"
            r"|APKA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
    ),
    _Rule(
        "github",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        _tok(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}"),
    ),
    _Rule("github", ("github_pat_",), _tok(r"github_pat_[A-Za-z0-9_]{30,255}")),
    _Rule("gitlab", ("gl",), _tok(r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_-]{20,}")),
    _Rule("slack", ("xox",), _tok(r"xox[abposre]-[A-Za-z0-9-]{10,}")),
    _Rule("slack", ("xapp-",), _tok(r"xapp-\d-[A-Za-z0-9-]{10,}")),
    _Rule(
        "slack",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/+-]{20,}"),
    ),
    _Rule(
        "discord",
        ("/api/webhooks/",),
        re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{40,}"),
    ),
    _Rule("telegram", (":AA",), re.compile(r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])")),
    _Rule("google", ("AIza",), _tok(r"AIza[0-9A-Za-z_-]{35}")),
    _Rule("google", ("GOCSPX-",), _tok(r"GOCSPX-[A-Za-z0-9_-]{20,}")),
    _Rule("google", ("ya29.",), _tok(r"ya29\.[0-9A-Za-z_-]{20,}")),
    _Rule("npm", ("npm_",), _tok(r"npm_[A-Za-z0-9]{36}")),
    _Rule("huggingface", ("hf_",), _tok(r"hf_[A-Za-z0-9]{30,}"), lambda s: _mixed(s, digits=0)),
    _Rule("twilio", ("SK",), re.compile(r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])")),
    _Rule("sendgrid", ("SG.",), _tok(r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    _Rule("pypi", ("pypi-",), _tok(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}")),
    _Rule("docker", ("dckr_pat_",), _tok(r"dckr_pat_[A-Za-z0-9_-]{20,}")),
    _Rule("digitalocean", ("_v1_",), _tok(r"do[opr]_v1_[a-f0-9]{64}")),
    _Rule("shopify", ("shp",), _tok(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")),
    _Rule("databricks", ("dapi",), _tok(r"dapi[a-f0-9]{32}(?:-\d)?")),
    _Rule("linear", ("lin_api_",), _tok(r"lin_api_[A-Za-z0-9]{40}")),
    _Rule("voyage", ("pa-",), _tok(r"pa-[A-Za-z0-9_-]{40,}"), lambda s: _mixed(s, digits=2)),
    _Rule("jwt", ("eyJ",), _tok(r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*")),
    *EXTRA_PROVIDERS,
)
_URL_PASSWORD = re.compile(
    r"(?i)([a-z][a-z0-9+.-]{1,30}://)([^\s:/?#@'\"<>\[\]]*):([^\s/?#'\"<>]+?)"
    r"@(?=[A-Za-z0-9.\[\]_%-]+(?::\d+)?(?:[/?#\s'\"<>),;]|$))"
)
_AWS_SECRET = re.compile(
    r"(?i)(aws[\w .-]{0,30}?secret[\w .-]{0,20}?[\"']?\s*[:=]\s*[\"']?)"
    r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|bot|digest|negotiate|apikey)\s+)?)([^\s\"',;]{8,})"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{16,})")
# A value is quoted, a placeholder in angle brackets that may hold words (`<keep your existing
# token>`: a bare value would end at its first space, `<keep`), or bare.
_ANGLED = r"<[^<>\n]{1,80}>"
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<q>[\"']?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,60})(?P=q)"
    r"(?P<sep>[ \t]*(?::=|=>|[:=])(?!=)[ \t]*)"
    rf"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|{_ANGLED}|[^\s\"'`,;)}}\[\]\\][^\s\"'`,;)}}\[\]]*)"
)
_FLAG = re.compile(
    r"(?<!\S)(?P<dash>--?)(?P<name>[A-Za-z][A-Za-z0-9_-]{1,40})(?P<sep>=|[ \t]+)"
    rf"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|{_ANGLED}|[^\s\"'`]+)"
)
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{22,}={0,2}(?![A-Za-z0-9+/_-])")
_URL_REST = re.compile(r"://[^\s'\"<>)\]]+")


@dataclass(frozen=True, slots=True)
class Redacted:
    """Redacted text, how many spans were replaced or dropped, and their kinds."""

    text: str
    count: int
    kinds: tuple[str, ...]  # distinct kinds found, sorted


class _Tally:
    def __init__(self) -> None:
        self.count = 0
        self.kinds: set[str] = set()

    def mark(self, kind: str) -> str:
        self.count += 1
        self.kinds.add(kind)
        return f"{REDACTED_PREFIX}{kind}]"


def redact(text: str) -> Redacted:
    """Drop <private> spans and replace secrets with [REDACTED:<kind>]; idempotent.

    Public look-alikes (integrity hashes, public keys, ids) are set aside first; secrets hidden
    by an encoding (URL, base64, JSON escapes, wrapped lines) are found in the decoded text and
    replaced in the original."""
    tally = _Tally()
    return Redacted(_redact(text, tally, 0), tally.count, tuple(sorted(tally.kinds)))


def _redact(text: str, tally: _Tally, depth: int) -> str:
    text, kept = protect(text)
    for _ in range(MAX_PASSES):
        found = tally.count
        text = _redact_once(text, tally)
        if tally.count == found:
            break  # a fixpoint: redacting the output again changes nothing
    if depth < MAX_DECODE_DEPTH:

        def scan(decoded: str) -> tuple[str, int]:
            inner = _Tally()
            cleaned = _redact(decoded, inner, depth + 1)
            tally.kinds |= inner.kinds
            return cleaned, inner.count

        text, found = redact_encoded(text, scan)
        tally.count += found
    return restore(text, kept)


def _redact_once(text: str, tally: _Tally) -> str:
    text, private = _PRIVATE.subn("", text)
    if private:
        tally.count += private
        tally.kinds.add("private")
    if "PRIVATE KEY" in text:
        text = _PEM.sub(lambda m: tally.mark("private_key"), text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: _url_password(m, tally), text)
    for rule in _PROVIDERS:  # most specific first: `sk-ant-` before `sk-`
        if any(hint in text for hint in rule.hints) and (rule.gate is None or rule.gate.search(text)):
            text = rule.pattern.sub(partial(_provider, rule=rule, tally=tally), text)
    lowered = text.lower()  # cheap substring tests before the case-insensitive scans
    if "aws" in lowered:
        text = _AWS_SECRET.sub(lambda m: _keep_prefix(m, "aws_secret", tally), text)
    if "authorization" in lowered:
        text = _AUTH_HEADER.sub(lambda m: _keep_prefix(m, "authorization", tally), text)
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: _keep_prefix(m, "bearer", tally), text)
    text = _sub_values(_ASSIGNMENT, text, partial(_assignment, tally=tally))
    text = _sub_values(_FLAG, text, partial(_flag, tally=tally))
    text = redact_contexts(text, tally.mark)
    return _high_entropy(text, tally)


def redact_value(obj: object) -> object:
    """Redact every string in a JSON-like value; values under secret-named keys go whole."""
    return _walk(obj, 0)


def _walk(obj: object, depth: int) -> object:
    if isinstance(obj, str):
        return redact(obj).text
    if depth >= MAX_VALUE_DEPTH:
        return None
    if isinstance(obj, Mapping):
        out: dict[object, object] = {}
        for key, value in obj.items():
            kind = secret_name_kind(key) if isinstance(key, str) else None
            if kind and isinstance(value, str) and _json_secret(str(key), value):
                out[key] = f"{REDACTED_PREFIX}{kind}]"
            else:
                out[key] = _walk(value, depth + 1)
        return out
    if isinstance(obj, list | tuple):
        items = [_walk(item, depth + 1) for item in obj]
        return tuple(items) if isinstance(obj, tuple) else items
    return obj


def _json_secret(key: str, value: str) -> bool:
    """A JSON string under a secret-named key, judged like `"key": "value"` in text."""
    return value_is_secret(key, f'"{value}"', Setting(colon=True, quoted_name=True))


def _mixed(token: str, *, digits: int) -> bool:
    """Random-looking: enough digits and both letter cases, unlike long kebab-case names."""
    body = token.split("-", 2)[-1] if token.startswith(("sk-", "pa-")) else token
    n_digits = sum(ch.isdigit() for ch in body)
    has_upper = any(ch.isupper() for ch in body)
    has_lower = any(ch.islower() for ch in body)
    return n_digits >= digits and ((has_upper and has_lower) or n_digits >= 4)


def _provider(m: re.Match[str], rule: _Rule, tally: _Tally) -> str:
    if rule.valid is not None and not rule.valid(m.group(0)):
        return m.group(0)
    if masked(m.group(0)):
        return m.group(0)
    return tally.mark(rule.kind)


def _keep_prefix(m: re.Match[str], kind: str, tally: _Tally) -> str:
    value = m.group(2)
    if value.startswith((REDACTED_PREFIX, "$", "<", "{")):
        return m.group(0)
    return m.group(1) + tally.mark(kind)


def _url_password(m: re.Match[str], tally: _Tally) -> str:
    scheme, user, password = m.group(1), m.group(2), m.group(3)
    if password.startswith(REDACTED_PREFIX) or is_placeholder(password):
        return m.group(0)
    return f"{scheme}{user}:{tally.mark('url_password')}@"


def _sub_values(pattern: re.Pattern[str], text: str, decide: Callable[[re.Match[str]], str | None]) -> str:
    """Like `pattern.sub`, but a match that is left alone gives its value back to the scan:
    in `A: PGPASSWORD=x` the value of `A` holds the next assignment."""
    out: list[str] = []
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        replacement = decide(m)
        if replacement is None:
            out.append(text[pos : m.start("value")])
            pos = m.start("value")
            continue
        out.append(text[pos : m.start()] + replacement)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _assignment(m: re.Match[str], tally: _Tally) -> str | None:
    name, value = m.group("name"), m.group("value")
    kind = secret_name_kind(name)
    if kind is None:
        return None
    text = m.string
    line_begin = text.rfind("\n", 0, m.start()) + 1
    line_close = text.find("\n", m.end())
    rest = text[m.end() : line_close if line_close >= 0 else len(text)].strip()
    sep = m.group("sep")
    setting = Setting(
        colon=":" in sep and "=" not in sep,
        quoted_name=bool(m.group("q")),
        line_start=not text[line_begin : m.start()].strip(" \t-{,"),
        line_end=not rest or rest.startswith(("#", ",", "}")),
    )
    if not value_is_secret(name, value, setting):
        return None
    return m.group(0)[: m.start("value") - m.start(0)] + _requote(value, tally.mark(kind))


def _flag(m: re.Match[str], tally: _Tally) -> str | None:
    name, value = m.group("name"), m.group("value")
    kind = secret_name_kind(name)
    if kind is None or value.startswith("-"):
        return None
    if not value_is_secret(name, value, Setting(flag=True)):
        return None
    return m.group(0)[: m.start("value") - m.start(0)] + _requote(value, tally.mark(kind))


def _requote(value: str, replacement: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[0] + replacement + value[0]
    return replacement


def _url_spans(text: str) -> list[tuple[int, int]]:
    """Spans of URLs: from the scheme (if any) before `://` to the next space or quote."""
    spans = []
    for m in _URL_REST.finditer(text):
        start = m.start()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "+.-"):
            start -= 1
        spans.append((start, m.end()))
    return spans


def _high_entropy(text: str, tally: _Tally) -> str:
    if len(text) < 20:
        return text
    urls = _url_spans(text)

    def replace(m: re.Match[str]) -> str:
        start = m.start()
        if any(a <= start < b for a, b in urls):
            return m.group(0)
        before = text[max(0, start - 24) : start]
        if not is_random_token(m.group(0), before):
            return m.group(0)
        return tally.mark("high_entropy")

    return _CANDIDATE.sub(replace, text)
