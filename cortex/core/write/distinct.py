"""What two similarly worded texts must agree on before one may be merged into the other. Pure.

Word overlap says two texts are about the same thing; it cannot say they state the same fact.
"shard 201" and "shard 102", "use Redis" and "use Valkey", "v1.2" and "v1.3", "retry" and
"never retry" share nearly every word and are different facts. A merge keeps one wording and
drops the other, so near-duplicates merge only when nothing distinguishing differs: the same
numbers in the same order (versions, dates, ports, counts), the same identifiers (paths,
snake_case, camelCase, dotted names, ALL-CAPS names), the same negations, the same named
technologies and proper nouns. Re-typings (case, punctuation, filler words) still merge.
"""

from __future__ import annotations

import bisect
import functools
import re

from cortex.core.text import word_set, words

# Words whose presence on one side only flips a statement's meaning ("use X" / "don't use X"):
# such near-duplicates are not merged but linked as a possible contradiction.
POLARITY_WORDS = frozenset(
    {
        "not", "no", "never", "don", "doesn", "didn", "won", "isn", "aren", "wasn", "shouldn",
        "cannot", "can't", "without", "avoid", "stop", "disable", "disabled", "enable",
        "enabled", "fail", "fails", "failed", "failing", "pass", "passed", "passes", "passing",
        "broken", "works", "rejected", "removed", "instead",
    }
)  # fmt: skip
# Further negations and qualifiers: on one side only, the two texts are different facts.
NEGATION_WORDS = POLARITY_WORDS | frozenset(
    {
        "nor", "neither", "none", "nothing", "nobody", "nowhere", "unless", "except", "mustn",
        "couldn", "wouldn", "hasn", "haven", "hadn", "weren", "deprecated", "forbidden",
    }
)  # fmt: skip

NUMBER_WORDS = frozenset(
    {
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
        "eighty", "ninety", "hundred", "thousand", "million", "billion", "first", "second",
        "third", "fourth", "fifth", "half", "twice", "double", "triple", "dozen", "once",
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "january", "february", "march", "april", "june", "july", "august", "september",
        "october", "november", "december", "yesterday", "today", "tomorrow",
        "ms", "kb", "mb", "gb", "tb", "seconds", "minutes", "hours", "days", "weeks", "months",
        "years", "minute", "hour", "day", "week", "month", "year",
    }
)  # fmt: skip

# Named technologies often written in lower case (a capitalised name is caught as a proper noun).
TECHNOLOGIES = frozenset(
    {
        "postgres", "postgresql", "mysql", "mariadb", "sqlite", "redis", "valkey", "memcached",
        "mongodb", "mongo", "cassandra", "dynamodb", "elasticsearch", "opensearch", "kafka",
        "rabbitmq", "nats", "celery", "sidekiq", "python", "rust", "go", "golang", "java",
        "kotlin", "scala", "ruby", "php", "perl", "javascript", "typescript", "node", "nodejs",
        "deno", "bun", "swift", "c", "cpp", "csharp", "dotnet", "haskell", "elixir", "erlang",
        "clojure", "lua", "zig", "bash", "zsh", "fish", "powershell", "react", "vue", "svelte",
        "angular", "nextjs", "django", "flask", "fastapi", "rails", "spring", "express",
        "pytest", "unittest", "nose", "jest", "vitest", "mocha", "cypress", "playwright",
        "selenium", "pip", "poetry", "uv", "pipenv", "conda", "npm", "yarn", "pnpm", "cargo",
        "maven", "gradle", "make", "cmake", "bazel", "ninja", "docker", "podman", "kubernetes",
        "k8s", "helm", "terraform", "ansible", "nginx", "apache", "caddy", "traefik", "envoy",
        "aws", "gcp", "azure", "s3", "gcs", "lambda", "heroku", "vercel", "netlify", "fly",
        "git", "github", "gitlab", "bitbucket", "jenkins", "circleci", "travis", "linux",
        "macos", "windows", "ubuntu", "debian", "alpine", "fedora", "centos", "graphql", "grpc",
        "rest", "json", "yaml", "toml", "xml", "csv", "protobuf", "avro", "parquet", "http",
        "https", "tcp", "udp", "websocket", "websockets", "oauth", "jwt", "saml", "ldap",
        "mypy", "pyright", "ruff", "flake8", "pylint", "black", "isort", "eslint", "prettier",
        "biome", "webpack", "vite", "rollup", "esbuild", "babel", "tailwind", "bootstrap",
        "pandas", "numpy", "polars", "spark", "airflow", "dbt", "snowflake", "bigquery",
        "redshift", "clickhouse", "duckdb", "sqlalchemy", "alembic", "prisma", "hibernate",
        "pydantic", "attrs", "stripe", "sentry", "datadog", "prometheus", "grafana", "loki",
        "vault", "consul", "etcd", "zookeeper", "vim", "neovim", "emacs", "vscode", "tmux",
        "utf8", "ascii", "sha256", "md5", "bcrypt", "argon2", "ssh", "tls", "ssl", "onnx",
        "torch", "pytorch", "tensorflow", "jax", "cuda", "openai", "anthropic", "claude",
    }
)  # fmt: skip

# Words that name one side of an opposition ("reads" / "writes", "before" / "after"): on one
# side only, the two texts say different things.
OPPOSITE_WORDS = frozenset(
    {
        "before", "after", "read", "reads", "write", "writes", "increase", "decrease", "min",
        "minimum", "max", "maximum", "first", "last", "upper", "lower", "open", "close", "allow",
        "allows", "deny", "denies", "add", "adds", "remove", "start", "starts", "sync", "async",
        "public", "private", "internal", "external", "input", "output", "client", "server",
        "true", "false", "off", "more", "less", "fewer", "higher", "above", "below", "earlier",
        "later", "faster", "slower", "local", "remote", "staging", "production", "prod", "dev",
        "primary", "replica", "inbound", "outbound", "ascending", "descending", "required",
        "optional", "blocking", "lazy", "eager", "mutable", "immutable", "encrypted",
        "plaintext", "success", "error", "errors", "warning", "allowed", "denied", "accept",
        "reject", "include", "exclude", "includes", "excludes", "left", "right", "top", "bottom",
    }
)  # fmt: skip

# Words that carry no fact of their own: a re-typing may add, drop or swap them freely.
FILLER_WORDS = frozenset(
    {
        "the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from",
        "as", "is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "these",
        "those", "we", "our", "us", "you", "your", "they", "their", "i", "my", "so", "but", "if",
        "then", "than", "when", "while", "which", "who", "what", "there", "here", "into", "onto",
        "via", "per", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could",
        "should", "may", "might", "also", "just", "now", "still", "note", "several", "many",
        "some", "few", "various", "multiple", "lots", "plenty", "numerous", "really", "very",
        "quite", "currently", "actually", "basically", "all", "any", "each", "every", "same",
    }
)  # fmt: skip

_NUMBER = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_TOKEN = re.compile(r"[A-Za-z_$][\w$]*(?:[./:\-][\w$]+)*")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_SENTENCE_END = re.compile(r"[.!?:;\n]\s*$")


@functools.lru_cache(maxsize=4096)
def _signature(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str], frozenset[str]]:
    """The numbers in order, the identifiers, the named things (proper nouns) and every
    token of `text` (case-folded)."""
    numbers = tuple(m.group(0).replace(",", "") for m in _NUMBER.finditer(text))
    identifiers: set[str] = set()
    names: set[str] = set()
    tokens: set[str] = set()
    for m in _TOKEN.finditer(text):
        folded, kind = _token(m.group(0))
        tokens.add(folded)
        if kind == _IDENTIFIER:
            identifiers.add(folded)
        elif kind == _CAPITALISED and not _sentence_initial(text, m.start()):
            names.add(folded)
    return numbers, frozenset(identifiers), frozenset(names), frozenset(tokens)


_IDENTIFIER, _CAPITALISED, _PLAIN = "identifier", "capitalised", "plain"


def specificity(text: str) -> int:
    """How many distinct specifics `text` names: numbers, identifiers and proper nouns."""
    numbers, identifiers, names, _ = _signature(text)
    return len(set(numbers)) + len(identifiers) + len(names)


@functools.lru_cache(maxsize=32768)
def _token(tok: str) -> tuple[str, str]:
    """A token case-folded, and whether it is an identifier, capitalised (a proper noun where it
    does not start a sentence) or plain. Texts share most of their tokens: each is judged once."""
    if _is_identifier(tok):
        return tok.casefold(), _IDENTIFIER
    return tok.casefold(), _CAPITALISED if len(tok) > 1 and tok[0].isupper() else _PLAIN


def _is_identifier(tok: str) -> bool:
    if any(c in tok for c in "_./:$") or any(c.isdigit() for c in tok):
        return True
    if "-" in tok:  # kebab-case: a flag or a package name, not a hyphenated English word
        return tok.islower() and len(tok.split("-")) > 2
    if _CAMEL.search(tok):
        return True
    return len(tok) >= 2 and tok.isupper()


def _sentence_initial(text: str, start: int) -> bool:
    before = text[:start]
    return (
        not before.strip()
        or bool(_SENTENCE_END.search(before))
        or before.rstrip().endswith(('"', "(", "-", "*"))
    )


def lost_by_merge(kept: str, dropped: str, *, lexical: bool = True) -> str | None:
    """What merging would lose if `kept` stays and `dropped` goes (None: nothing).

    A negation on either side only is a different fact; otherwise `dropped` may go when every
    number (in order), identifier, named technology, proper noun and opposite word ("before",
    "reads") it has is in `kept`. A `lexical` merge (decided by shared words alone) also
    refuses a replaced content word and the same names in another order; a merge an
    embedding judged the same meaning does not.
    """
    words_kept, words_dropped = word_set(kept), word_set(dropped)
    if (words_kept ^ words_dropped) & NEGATION_WORDS:
        return "negation"
    only_dropped, only_kept = words_dropped - words_kept, words_kept - words_dropped
    nums_kept, _, _, tokens_kept = _signature(kept)
    nums_dropped, ids_dropped, names_dropped, _ = _signature(dropped)
    if not _subsequence(nums_dropped, nums_kept) or only_dropped & NUMBER_WORDS:
        return "number"
    if not ids_dropped <= tokens_kept:
        return "identifier"
    if only_dropped & TECHNOLOGIES:
        return "technology"
    if only_dropped & names_dropped:
        return "name"
    if only_dropped & OPPOSITE_WORDS or (only_dropped and only_kept & OPPOSITE_WORDS):
        return "opposite"
    if lexical and _content(only_dropped) and _content(only_kept):
        return "wording"  # a word replaced by another: "importer" / "exporter"
    if lexical and not same_order(kept, dropped):
        return "order"  # the same words in another order: "FastAPI over Flask" / "Flask over FastAPI"
    return None


def distinguishing_difference(a: str, b: str, *, lexical: bool = True) -> str | None:
    """Why `a` and `b` state different facts despite their shared words (None: nothing
    distinguishing differs, either may be merged into the other)."""
    return lost_by_merge(a, b, lexical=lexical) or lost_by_merge(b, a, lexical=lexical)


def same_order(text_a: str, text_b: str) -> bool:
    """The words both texts share come in the same order, but for one moved word, and their
    names in the same order: a re-typing keeps both; "finished X, next Y" and "finished Y,
    next X", or "A talks to B through Go, and Kafka ..." with Go and Kafka swapped, do not."""
    if _moved_words(text_a, text_b) >= 2:
        return False
    names_a, names_b = _named(text_a), _named(text_b)
    common = set(names_a) & set(names_b)
    return [x for x in names_a if x in common] == [x for x in names_b if x in common]


def _moved_words(text_a: str, text_b: str) -> int:
    """How many of the words both texts have (first mentions, filler aside) are out of order:
    their number less the longest run kept in order (patience sorting, n log n)."""
    first_b: dict[str, int] = {}
    for i, w in enumerate(w for w in words(text_b) if w not in FILLER_WORDS):
        first_b.setdefault(w, i)
    seen: set[str] = set()
    order = []
    for w in words(text_a):
        if w in first_b and w not in seen:
            seen.add(w)
            order.append(first_b[w])
    tails: list[int] = []
    for x in order:
        at = bisect.bisect_left(tails, x)
        tails[at : at + 1] = [x]
    return len(order) - len(tails)


@functools.lru_cache(maxsize=4096)
def _named(text: str) -> tuple[str, ...]:
    """The identifiers, named technologies and proper nouns of `text`, first mentions in order."""
    out: dict[str, None] = {}
    for m in _TOKEN.finditer(text):
        folded, kind = _token(m.group(0))
        if (
            kind == _IDENTIFIER
            or folded in TECHNOLOGIES
            or (kind == _CAPITALISED and not _sentence_initial(text, m.start()))
        ):
            out.setdefault(folded)
    return tuple(out)


def _content(ws: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in ws if len(w) > 2 and w not in FILLER_WORDS)


def _subsequence(small: tuple[str, ...], big: tuple[str, ...]) -> bool:
    it = iter(big)
    return all(x in it for x in small)


def flips(a: str, b: str) -> bool:
    """One side negates or reverses what the other says."""
    return bool((word_set(a) ^ word_set(b)) & POLARITY_WORDS)
