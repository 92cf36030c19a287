"""Secrets recognised by where they sit rather than by their shape. Pure.

Command-line credentials (`curl -u`, `mysql -p`, `sshpass -p`, `docker login -p`, `redis-cli -a`,
`-D...password=`, `--set x.password=`, `-var 'db_password=...'`, `.netrc`), connection strings
(libpq, ADO.NET, JDBC, Go MySQL DSNs, NuGet), secret query parameters, prose ("the staging
password is ..."), hex keys next to a name that is not a hash's, BIP39 mnemonics and keypair
byte arrays.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cortex.core.redact.names import is_placeholder, secret_name_kind

Mark = Callable[[str], str]
REDACTED = "[REDACTED:"
_VALUE = r"(?P<v>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`]+)"
_CURL_USER = re.compile(r"(?<!\S)(?:-u|--user|--proxy-user)[ \t]+['\"]?[^\s:'\"]+:(?P<v>[^\s'\"]+)")
_MYSQL = re.compile(r"(?<!\S)-p(?P<v>[^\s'\"-][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")")
_SHORT_FLAG = re.compile(r"(?<!\S)-(?:p|a)[ \t]+" + _VALUE)
_SSHPASS = re.compile(r"\bsshpass[ \t]+-p[ \t]*" + _VALUE)
_GH_SECRET = re.compile(r"\bsecret set[ \t]+\S+[ \t]+(?:--body|-b)[ \t=]+" + _VALUE)
_SETTING = re.compile(
    r"(?:(?<!\S)-D|--set(?:-string|-file)?[ \t=]+['\"]?|-var[ \t=]+['\"]?|--from-literal=|--build-arg[ \t]+)"
    r"(?P<name>[\w.\[\]/-]+)=(?P<v>[^\s'\",]+)"
)
_NETRC = re.compile(
    r"\bmachine[ \t]+\S+(?:[ \t]+(?:login|account)[ \t]+\S+)*[ \t]+password[ \t]+(?P<v>[^\s'\"]+)"
)
_CONN_PASSWORD = re.compile(
    r"(?i)(?<![\w.-])(?:password|pwd|passwd)[ \t]*=[ \t]*(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^;\s'\"&]+)"
)
_CONN_CONTEXT = re.compile(
    r"(?i)(?<![\w.-])(?:host|hostaddr|server|data source|user id|uid|user|username|dbname|database|"
    r"initial catalog|port|sslmode|addr|address)[ \t]*="
)
_NUGET = re.compile(r"ClearTextPassword\"?[ \t]+value=\"(?P<v>[^\"]+)\"")
_QUERY = re.compile(
    r"(?i)[?&;](?P<name>password|passwd|pwd|pass|token|access_token|auth_token|api_key|apikey|"
    r"api-key|secret|client_secret|private_token|auth|sig|signature|key|code_verifier)=(?P<v>[^&\s#'\"<>]+)"
)
_GO_DSN = re.compile(r"(?<![\w/])[\w.-]+:(?P<v>[^\s'\"]+)@(?:tcp|unix|udp)\(")
_URL_PASSWORD = re.compile(r"://[^\s:/?#@'\"<>\[\]]*:(?P<v>[^\s'\"<>@]+)@(?=[A-Za-z0-9.\[\]_%-]+)")
_PROSE = re.compile(
    r"(?i)\b(?P<name>password|passphrase|passwd|pin|token|secret|api[ _-]?key|access[ _-]?key|key|"
    r"credentials?|salt|seed|hmac|dsn|webhook(?: url)?|private[ _-]key|keypair|signing \w+|auth \w+)"
    r"(?:[ \t]+(?!is\b|was\b|to\b)[\w.-]+){0,4}?"
    r"[ \t]*(?:\bis\b|\bwas\b|\bto\b|:|=)[ \t]*(?:now[ \t]+|set to[ \t]+)?"
    r"(?P<v>\"[^\"\n]+\"|'[^'\n]+'|`[^`\n]+`|[^\s\"'`]+)"
)
_HEX_RUN = re.compile(r"\b(?P<v>0x[a-fA-F0-9]{64}|[a-f0-9]{32,128}|[A-F0-9]{32,128})(?![0-9a-fA-F])")
_NAME_BEFORE = re.compile(r"(?<![\w.-])(?P<name>[A-Za-z_][\w.-]{0,60})['\"]?[ \t]*[:=][ \t]*['\"]?\Z")
_HASH_NAMES = re.compile(
    r"(?i)(?:sha|hash|digest|checksum|commit|rev|revision|etag|id|uid|uuid|integrity|fingerprint|"
    r"version|ref|tree|blob|object|image|container|tx|txn|block|address|addr|md5|crc|parent|head|"
    r"base|target|source|sum|signature_id|node|build|zh|h1)\d*s?$"
)
_MNEMONIC_CONTEXT = re.compile(
    r"(?i)(?:mnemonic|seed phrase|recovery phrase|secret phrase|seed words|"
    r"backup phrase|wallet words)"
)
_WORD_RUN = re.compile(r"(?<![\w-])(?:[a-z]{3,8}[ \t\n]+){11,23}[a-z]{3,8}(?![\w-])")
_BYTE_ARRAY = re.compile(r"\[[ \t\n]*(?:\d{1,3}[ \t\n]*,[ \t\n]*){31,63}\d{1,3}[ \t\n]*\]")
_FILE_EXT = re.compile(r"\.(?:py|ts|js|tsx|jsx|json|md|ya?ml|toml|txt|rb|go|rs|ex|exs|sh|html|css|lock)$")
_SYMBOLS = set("!#$%&*@^~+/?")


def redact_contexts(text: str, mark: Mark) -> str:
    lowered = text.lower()
    if "-u" in text or "--user" in text:
        text = _CURL_USER.sub(lambda m: _replace(m, "password", mark), text)
    if "mysql" in lowered or "mariadb" in lowered:
        text = _sub_lines(text, _MYSQL, "password", mark, ("mysql", "mariadb"))
    if "login" in lowered or "redis-cli" in lowered:
        text = _sub_lines(text, _SHORT_FLAG, "password", mark, ("docker login", "podman login", "redis-cli"))
    if "sshpass" in lowered:
        text = _SSHPASS.sub(lambda m: _replace(m, "password", mark), text)
    if "secret set" in lowered:
        text = _GH_SECRET.sub(lambda m: _replace(m, "secret", mark), text)
    if any(flag in text for flag in ("-D", "--set", "-var", "--from-literal", "--build-arg")):
        text = _SETTING.sub(lambda m: _setting(m, mark), text)
    if "machine" in lowered:
        text = _NETRC.sub(lambda m: _replace(m, "password", mark), text)
    if "cleartextpassword" in lowered:
        text = _NUGET.sub(lambda m: _replace(m, "password", mark), text)
    if "pw" in lowered or "pass" in lowered:
        text = _CONN_PASSWORD.sub(lambda m: _conn(m, mark), text)
    if "=" in text and ("?" in text or "&" in text):
        text = _QUERY.sub(lambda m: _query(m, mark), text)
    if "@tcp(" in text or "@unix(" in text or "@udp(" in text:
        text = _GO_DSN.sub(lambda m: _replace(m, "password", mark), text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: _url(m, mark), text)
    text = _HEX_RUN.sub(lambda m: _hex(m, mark), text)
    text = _PROSE.sub(lambda m: _prose(m, mark), text)
    if _MNEMONIC_CONTEXT.search(text):
        text = _WORD_RUN.sub(lambda m: _mnemonic(m, mark), text)
    if "[" in text:
        text = _BYTE_ARRAY.sub(lambda m: _keypair(m, mark), text)
    return text


def _replace(m: re.Match[str], kind: str, mark: Mark) -> str:
    value = m.group("v")
    inner = value.strip("'\"`")
    if not inner or inner.startswith(REDACTED) or is_placeholder(inner):
        return m.group(0)
    start, end = m.start("v") - m.start(0), m.end("v") - m.start(0)
    quote = value[0] if value[0] in "'\"`" and value[-1] == value[0] and len(value) > 1 else ""
    return m.group(0)[:start] + quote + mark(kind) + quote + m.group(0)[end:]


def _sub_lines(text: str, pattern: re.Pattern[str], kind: str, mark: Mark, commands: tuple[str, ...]) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if any(c in line.lower() for c in commands):
            lines[i] = pattern.sub(lambda m: _replace(m, kind, mark), line)
    return "\n".join(lines)


def _setting(m: re.Match[str], mark: Mark) -> str:
    name = re.split(r"[.\[\]/]", m.group("name").strip("[]"))
    last = [part for part in name if part][-1] if any(name) else ""
    kind = secret_name_kind(last) or secret_name_kind(m.group("name").replace(".", "_"))
    if kind is None and _hexy(m.group("v")) and not _HASH_NAMES.search(last):
        kind = "secret"
    return _replace(m, kind, mark) if kind else m.group(0)


def _conn(m: re.Match[str], mark: Mark) -> str:
    window = m.string[max(0, m.start() - 160) : m.end() + 160]
    if not _CONN_CONTEXT.search(window):
        return m.group(0)
    return _replace(m, "password", mark)


def _query(m: re.Match[str], mark: Mark) -> str:
    value = m.group("v")
    if m.group("name").lower() in ("key", "sig", "auth", "signature") and len(value) < 16:
        return m.group(0)
    if len(value) < 4 or (value.isdigit() and len(value) < 8):
        return m.group(0)
    return _replace(m, "token", mark)


def _url(m: re.Match[str], mark: Mark) -> str:
    value = m.group("v")
    if re.match(r"\d{1,5}(?:/|$)", value) or "://" in value:
        return m.group(0)  # a port and a path, not a password
    return _replace(m, "url_password", mark)


def _hexy(value: str) -> bool:
    body = value[2:] if value.startswith("0x") else value
    return len(body) >= 32 and re.fullmatch(r"[a-f0-9]+|[A-F0-9]+", body) is not None


def _hex(m: re.Match[str], mark: Mark) -> str:
    named = _NAME_BEFORE.search(m.string, max(0, m.start() - 70), m.start())
    if named is None:
        return m.group(0)
    name = named.group("name")
    if _HASH_NAMES.search(name.replace("-", "_").split(".")[-1]) or _HASH_NAMES.search(
        re.split(r"[_.-]", name)[-1]
    ):
        return m.group(0)
    value = m.group("v")
    if len(set(value.lower())) <= 4:
        return m.group(0)
    return _replace(m, secret_name_kind(name) or "secret", mark)


def _credential_like(value: str) -> bool:
    """A value that reads as a generated key or a password rather than a word, path or call."""
    if len(value) < 8 or value.startswith((REDACTED, "/", "./", "~/", "$", "{", "<", "%(")):
        return False
    if _FILE_EXT.search(value) or "(" in value or value.lower().startswith(("http://", "https://")):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_symbol = any(c in _SYMBOLS for c in value)
    mixed = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return (
        (has_digit and has_alpha)
        or (has_symbol and has_alpha and (has_digit or mixed))
        or (mixed and len(value) >= 16 and not re.fullmatch(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)+", value))
    )


def _prose(m: re.Match[str], mark: Mark) -> str:
    raw = m.group("v")
    value = raw.strip("'\"`").rstrip(".,;:)!?") if raw[0] in "'\"`" else raw.rstrip(".,;:)")
    name = m.group("name").lower()
    if value.lower().startswith(("https://", "http://")) and "webhook" in name and len(value) > 30:
        return m.group(0)[: m.start("v") - m.start(0)] + mark("webhook")
    if not _credential_like(value) or is_placeholder(value):
        return m.group(0)
    if re.fullmatch(r"[\w-]+\.[\w.-]+", value) and not any(c.isdigit() for c in value.split(".")[0]):
        return m.group(0)  # a dotted name: settings.token, foo.bar
    start = m.start("v") - m.start(0) + raw.index(value)
    kind = "password" if "pass" in name or name == "pin" else secret_name_kind(name) or "secret"
    return m.group(0)[:start] + mark(kind) + m.group(0)[start + len(value) :]


def _mnemonic(m: re.Match[str], mark: Mark) -> str:
    before = m.string[max(0, m.start() - 80) : m.start()]
    if not _MNEMONIC_CONTEXT.search(before) and not re.search(r"(?i)mnemonic|seed", before):
        return m.group(0)
    return mark("mnemonic")


def _keypair(m: re.Match[str], mark: Mark) -> str:
    numbers = [int(n) for n in re.findall(r"\d+", m.group(0))]
    if len(numbers) not in (32, 64) or max(numbers) > 255 or len(set(numbers)) < 16:
        return m.group(0)
    return mark("keypair")
