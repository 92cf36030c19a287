"""Which key names suggest a secret, and whether the value assigned to one is a literal. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cortex.core.redact.entropy import is_random_token

MIN_PROSE_WORDS = 5  # a quoted value this many words long is a message, not a password
_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "passcode"})
_TOKEN_WORDS = frozenset({"token", "bearer", "apitoken", "accesstoken", "authtoken"})
_SECRET_WORDS = frozenset(
    {"secret", "credential", "credentials", "creds", "privatekey", "apikey", "secretkey"}
)
# Words that are secrets only as the last part of a name (`DB_PASS`, `X-Signature`, `auth`).
_LAST_ONLY = frozenset({"pass", "signature", "sig", "auth", "cookie"})
# Names that say little on their own: their value must look generated to be redacted.
_WEAK = frozenset({"signature", "sig", "auth", "cookie"})
# `pad_token`, `eos_token`, `page_token`: tokenizer symbols and cursors, not credentials.
_NOT_CREDENTIAL_TOKENS = frozenset(
    {
        "pad", "eos", "bos", "unk", "sep", "cls", "mask", "delimiter", "special", "stop", "eot",
        "start", "end", "image", "audio", "video", "page", "next", "continuation", "cursor",
        "cancellation", "sync", "word", "boundary", "max", "num", "n",
    }
)  # fmt: skip
# `key` is a secret when qualified (`api_key`, `SigningKey`) or an env var (`STRIPE_KEY`).
_KEY_QUALIFIERS = frozenset(
    {
        "api", "secret", "private", "access", "auth", "signing", "sign", "encryption", "encrypt",
        "master", "client", "app", "service", "account", "license", "webhook", "deploy", "ssh",
        "gpg", "pgp", "session", "subscription", "consumer", "admin", "root", "hmac", "jwt",
        "openai", "anthropic", "voyage", "stripe", "aws", "gcp", "azure", "google", "github",
        "gitlab", "slack", "twilio", "sendgrid", "mailgun", "hf", "huggingface", "cohere",
        "mistral", "groq", "pinecone", "supabase", "firebase", "algolia", "sentry", "datadog",
        "npm", "pypi", "x",
    }
)  # fmt: skip
# A secret word followed by one of these names metadata about the secret, not the secret.
_META_SUFFIXES = frozenset(
    {
        "type", "types", "count", "counts", "ttl", "limit", "limits", "url", "uri", "endpoint",
        "file", "path", "dir", "len", "length", "expiry", "expires", "expiration", "budget",
        "usage", "env", "var", "name", "names", "field", "header", "prefix", "regex", "re",
        "pattern", "policy", "min", "max", "timeout", "rotation", "ids", "index", "kind", "mode",
        "label", "hint", "help", "format", "source", "provider", "manager", "store", "storage",
        "class", "cls", "fn", "func", "callback", "required", "enabled", "set", "arn", "reset",
        "id", "estimate", "estimator", "counter", "tokens", "input", "output", "loss",
        "indices", "mask", "masks", "labels", "logits", "embeddings", "embedding", "emb",
        "positions", "position", "offsets", "offset", "spans", "span", "probs", "scores",
        "score", "weights", "states", "num", "size", "shape", "dim", "list", "map", "dict",
    }
)  # fmt: skip
_LITERALS = frozenset({"true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off"})
_TYPE_NAMES = frozenset(
    {"str", "string", "int", "bytes", "bool", "float", "number", "any", "object", "unknown"}
)
# Words that follow a colon in code, not in config (`if not secret: raise ...`).
_KEYWORDS = frozenset(
    {
        "raise", "return", "pass", "continue", "break", "yield", "await", "lambda", "not", "and",
        "or", "in", "is", "if", "else", "elif", "for", "while", "with", "try", "except",
        "finally", "def", "class", "import", "from", "as", "del", "assert", "print", "new",
        "const", "let", "var", "function", "async", "this", "self", "required", "optional",
    }
)  # fmt: skip
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_NAME = re.compile(r".*(?:[a-z][A-Z]|_).*")  # camelCase or snake_case: a variable
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_KEY_CHARS = re.compile(r"[A-Za-z0-9_+/.~-]+={0,2}")  # what generated keys and passwords are made of
_CODE_PUNCTUATION = re.compile(r"[()\[\]{}]|==|!=|<=|>=|->|=>|\|\||&&")
_CSS_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}")
_MASK = re.compile(
    r"[*xX.•#_/-]+|.*(?:\.\.\.|…)|(?i:redacted|changeme|placeholder|example|dummy|secret|password)"
)


@dataclass(frozen=True, slots=True)
class SecretName:
    """What a secret-looking key name says about its value."""

    kind: str  # the redaction kind: password, token, secret, api_key
    weak: bool  # the name alone is weak evidence: only a generated-looking value is redacted


@dataclass(frozen=True, slots=True)
class Setting:
    """How a value was assigned to its name."""

    colon: bool = False  # `name: value` (YAML, JSON, headers) rather than `name = value`
    quoted_name: bool = False  # `"name": value` (JSON, dict literals)
    line_start: bool = False  # the name opens its line, as a config key does
    line_end: bool = False  # the value closes its line, as a config value does
    flag: bool = False  # `--name value` on a command line


def secret_name_kind(name: str) -> str | None:
    """The redaction kind for a key name that suggests a secret (`password`, `token`), or None."""
    found = parse_secret_name(name)
    return found.kind if found else None


def parse_secret_name(name: str) -> SecretName | None:
    """Whether a key name suggests a secret, and how strongly."""
    segments = [s.lower() for s in _SEGMENT.findall(name)]
    env_style = name.upper() == name and any(ch.isalpha() for ch in name)
    for i in range(len(segments)):
        found = _segment_kind(segments, i, env_style)
        if found is not None:
            return None if any(s in _META_SUFFIXES for s in segments[i + 1 :]) else found
    return None


def _segment_kind(segments: list[str], i: int, env_style: bool) -> SecretName | None:
    seg, last = segments[i], i == len(segments) - 1
    if seg in _PASSWORD_WORDS or (seg == "pass" and last) or seg.endswith("password"):
        return SecretName("password", weak=False)
    if seg in _TOKEN_WORDS or (seg.endswith("token") and len(seg) > 5 and env_style):
        # PGPASSWORD, GITHUBTOKEN: env names glue words together.
        weak = i > 0 and segments[i - 1] in _NOT_CREDENTIAL_TOKENS
        return None if weak else SecretName("token", weak=False)
    if seg in _SECRET_WORDS or (seg in _LAST_ONLY and last) or seg.endswith("secret"):
        return SecretName("secret", weak=seg in _WEAK)
    if seg == "key" and i > 0:
        if segments[i - 1] in _KEY_QUALIFIERS:
            return SecretName("api_key", weak=False)
        if env_style and last:  # STRIPE_KEY, but also CACHE_KEY = "users"
            return SecretName("api_key", weak=True)
    return None


def is_placeholder(value: str) -> bool:
    """A reference or mask standing in for a secret (`$TOKEN`, `<your-key>`, `***`), not one."""
    inner = _unquote(value).strip()
    return (
        not inner
        or inner.startswith(("$", "%(", "{{", "[REDACTED:", "process.env", "os.environ", "ENV["))
        or (inner.startswith("<") and inner.endswith(">"))
        or _MASK.fullmatch(inner) is not None
    )


def value_is_secret(name: str, value: str, setting: Setting) -> bool:
    """Whether `value`, assigned to secret-named `name`, is a literal secret rather than code."""
    found = parse_secret_name(name)
    if found is None or is_placeholder(value):
        return False
    inner = _unquote(value).strip()
    generated = is_random_token(inner) or (
        _KEY_CHARS.fullmatch(inner) is not None and _digits_and_letters(inner, min_len=12)
    )
    if found.weak:
        return generated
    if inner != value.strip():  # a quoted literal: a secret unless it reads as a sentence
        return len(inner.split()) < MIN_PROSE_WORDS and not _CSS_COLOR.fullmatch(inner)
    if inner.lower() in _LITERALS or inner.lower() in _TYPE_NAMES or inner in _KEYWORDS:
        return False
    env_style = name.upper() == name and any(ch.isalpha() for ch in name)
    if _NUMBER.fullmatch(inner):
        return env_style and len(inner) >= 4
    if generated:
        return True
    if inner.startswith((":", "/", "./", "~/")) or _CODE_PUNCTUATION.search(inner):
        return False  # a call, an index, a path, a Ruby/Elixir symbol, a comparison
    if _DOTTED.fullmatch(inner) or (setting.quoted_name and _IDENTIFIER.fullmatch(inner)):
        return False  # `settings.token`, `{"token": token}`: code, not a value
    if inner == name or (_IDENTIFIER.fullmatch(inner) and _looks_like_code(inner)):
        return False  # `token=token`, `token: Token`, `password: userPassword`
    if setting.flag or (env_style and not setting.colon):
        return True  # `--password hunter2`, .env `PASSWORD=hunter2`
    # YAML `password: hunter2` is a whole line; prose ("Two-pass: read the file") goes on.
    return setting.colon and setting.line_start and setting.line_end and len(inner) >= 4


def _looks_like_code(word: str) -> bool:
    has_digit = any(ch.isdigit() for ch in word)
    return not has_digit and (word[:1].isupper() or _CODE_NAME.fullmatch(word) is not None)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    return value


def _digits_and_letters(text: str, *, min_len: int) -> bool:
    return len(text) >= min_len and any(ch.isdigit() for ch in text) and any(ch.isalpha() for ch in text)
