"""FAKE secrets in realistic settings, and ordinary text that redaction must leave alone.

Every credential here is random filler in the shape of a real one; none was ever issued.
Prefixes are joined at import time so secret scanners do not flag this file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretSample:
    kind: str  # the redaction kind expected somewhere in the output
    text: str  # the snippet as it would appear in a transcript
    secret: str  # the part that must never survive redaction


def _j(*parts: str) -> str:
    return "".join(parts)


ANTHROPIC_KEY = _j(
    "sk-", "ant-api03-",
    "wJSkRjaxuUSvvUYSSoF0j8kPtlDAVaS3dBzwqHVVX363HcCF78Y97o_UjYp7RNmxNyHaYV9NOd8r0q8C-mSiWMFGdfEv7AA",
)  # fmt: skip
OPENAI_KEY = _j("sk-", "4MKVhEUFM6TZRtR3VtdP", "T3BlbkFJ", "qFe8WctSIOdSmdNHnccm")
OPENAI_PROJECT_KEY = _j(
    "sk-", "proj-",
    "XDBvvMLIwko8IOA5DyH2nDbwFLCPJAXVhdrE3VJXjTCOGLgk37eI7O2pjVwp6sc-VEn2KnPoYL",
    "T3BlbkFJ",
    "gTaHL_E9yTYL_9S4xDQNMAAL5QaDtpc6RzGKXi5Asa6smYgOw9RTEzi1JGLEXa0sO40x9ehcZG",
)  # fmt: skip
AWS_ACCESS_KEY_ID = _j("AK", "IA", "KVCZ8GQD2L8HFV30")
AWS_TEMP_KEY_ID = _j("AS", "IA", "T6LIA9DUT4N2UJ02")
AWS_SECRET_KEY = "abweVOX3CFavUZdFf8DbklH7MDj+t5iovL/+VCt7"
GITHUB_PAT = _j("gh", "p_", "r8BrrCZYJRbR1DtfpSWNFSpHM3FFHdntbRtL")
GITHUB_OAUTH = _j("gh", "o_", "AND3TvpoaZvViPRjfgdsOncy62KibmWLA0tP")
GITHUB_APP = _j("gh", "s_", "Nq18zPzRZ5YRBkYLXVbth5cmJTEvNhjbZhpt")
GITHUB_FINE_PAT = _j(
    "github_",
    "pat_",
    "11O0LN7C5WDZSGB3XTU7PT_a4OKzpzVwIayh43vh7yViqWEPPlihj1MTrdHsxPvrwDXKErhtRFKs2K9ffD",
)
GITLAB_PAT = _j("gl", "pat-", "AzdsAXUO19QN01RhBewe")
SLACK_BOT = _j("xo", "xb-", "18752643957-8882391680469-x1OtUz6QW3hqTJwwzZHhN8vz")
SLACK_WEBHOOK = _j("https://hooks.", "slack.com/services/", "TWNLRNEHD/BN9LOI03W5R/8K7wUOdHsauE5iylGiFpF3NV")
STRIPE_SECRET = _j("sk", "_live_", "1FOQq6obbndyktw7bxVzeQBH")
STRIPE_RESTRICTED = _j("rk", "_live_", "Z2hSH5yUt2IYexHNdUfol1P3")
STRIPE_PUBLISHABLE = _j("pk", "_live_", "q0QvplGLkObq9eRDtILwIWvr")
GOOGLE_API_KEY = _j("AI", "za", "ZGf2fpWqWO002Q0k1LhtDNJKLPSQK9-QYak")
GOOGLE_CLIENT_SECRET = _j("GOC", "SPX-", "8gG96n64_lHQ1rqi2UIz_9toas7q")
NPM_TOKEN = _j("np", "m_", "AVLkpuHZ6JGOIBgKVTruWgiFaApaBuMk1iYZ")
HF_TOKEN = _j("h", "f_", "ezXRYCibFhmehdVEWUUqzhxAVWDFxiaNzf")
TWILIO_API_KEY = _j("S", "K", "49a3efe60202fabfa4f329e1359523b5")
TWILIO_AUTH_TOKEN = "da8f272e4a4a7d8e2c3001c9e8935478"
SENDGRID_KEY = _j("S", "G.", "Y7xgMU2IYvackVjin9P9vl.M1HNcnNGap7hvqrBpqDtXGO2TMwHO_AdF5CDuJu2VDa")
VOYAGE_KEY = _j("p", "a-", "V_256PCLB8dQqlm1ynrfXAEdGkhbBJcbCsF_1zBRrn5")
DIGITALOCEAN_TOKEN = _j("do", "p_v1_", "43943d1bf3520a27db4e8181d304f000f6d46906e66f9d8bb55817e78a6ec015")
SHOPIFY_TOKEN = _j("shp", "at_", "bac4e778c76c48c5c2029f7c3ddb565a")
DATABRICKS_TOKEN = _j("da", "pi", "d52f1ac6bdf943552fd52cd3f76a7619")
DOCKER_PAT = _j("dckr", "_pat_", "0Jz_BwFqifMDZFIEz4a-HRRoYVp")
PYPI_TOKEN = _j("pypi-", "AgEIcHlwaS5vcmc", "NpIyEi7QQaZAjBPKRwF4PtBpHSJcxCID5PS8yZMfEFONeWhMUvlZ3R5MfrRn")
JWT = _j(
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    ".",
    "eyJzdWIiOiJ1c2VyLTQ4MjEiLCJyb2xlIjoiYWRtaW4iLCJpYXQiOjE3NjM3MDAwMDB9",
    ".",
    "5EkIBtnC7tnmODUVhEK32yk0mHkHuPKrAzX4j6qs4C_",
)
PEM_BODY = (
    "mMrfB0gr74vZTh9OBoNcy2Ifl/EaxQehk/m4cqH/E1gq3Iu7wJttniYN0JKx0Egt\n"
    "Nme+E4Wz7KZSs2wvnS2mKVIQFObVyThCtUai1ob5goMy4wqQkjU/J87C1XyPSnxw\n"
    "BHPFS/is7AuQD7jm4zIlL50W1stNEgSJwfYVBuS+Yr1ohN294lGqJ9i7wFWJeAiG\n"
    "ji5Fr4kbTA+yKXmhY0crHVAf1NqMHpt3r8oFr3No=="
)
RSA_KEY = _j("-----BEGIN RSA ", "PRIVATE KEY-----\n", PEM_BODY, "\n-----END RSA PRIVATE KEY-----")
OPENSSH_KEY = _j("-----BEGIN OPENSSH ", "PRIVATE KEY-----\n", PEM_BODY, "\n-----END OPENSSH PRIVATE KEY-----")
PKCS8_KEY_ESCAPED = _j(
    "-----BEGIN ",
    "PRIVATE KEY-----\\n",
    PEM_BODY.replace("\n", "\\n"),
    "\\n-----END PRIVATE KEY-----\\n",
)
TRUNCATED_KEY = _j("-----BEGIN EC ", "PRIVATE KEY-----\n", PEM_BODY.split("\n")[0], "\n")
HEX_SECRET_64 = "f041b18dfa02eb04d09e47d0d9178b68cd106ed38bc5076341711efcb20f6579"
HEX_SECRET_32 = "62f9641553a4322e59fe72f49fc77414"
RANDOM_B62_32 = "I56poAIVQscTblyzJB3iMy1jnqfjPt0C"
RANDOM_B64_44 = "a0Cifso4kvT4ZfO+vxD8cX1krEpWfbW+51IbJlXLEZI="
BEARER_TOKEN = "0--uouOl4s9h3tJgB0rgwE4pepV2XALAiuNX260Q"
DISCORD_WEBHOOK = _j(
    "https://discord.com/api/", "webhooks/", "1187526439578882391/",
    "x1OtUz6QW3hqTJwwzZHhN8vzY7xgMU2IYvackVjin9P9vlM1HNcnNGap7hvqrBpq",
)  # fmt: skip
TELEGRAM_BOT_TOKEN = _j("7512093846", ":AA", "Fq2mZk8LwN4rT6yVb1XcJ9pH3sD5gE7uK")

SECRETS: tuple[SecretSample, ...] = (
    SecretSample("anthropic", f"export ANTHROPIC_API_KEY={ANTHROPIC_KEY}", ANTHROPIC_KEY),
    SecretSample("anthropic", f"client = Anthropic(api_key='{ANTHROPIC_KEY}')", ANTHROPIC_KEY),
    SecretSample("openai", f"OPENAI_API_KEY={OPENAI_KEY}", OPENAI_KEY),
    SecretSample("openai", f'openai.api_key = "{OPENAI_PROJECT_KEY}"', OPENAI_PROJECT_KEY),
    SecretSample("aws_access_key", f"aws_access_key_id = {AWS_ACCESS_KEY_ID}", AWS_ACCESS_KEY_ID),
    SecretSample("aws_access_key", f"the key {AWS_TEMP_KEY_ID} expired", AWS_TEMP_KEY_ID),
    SecretSample("aws_secret", f"aws_secret_access_key = {AWS_SECRET_KEY}", AWS_SECRET_KEY),
    SecretSample("aws_secret", f"AWS secret: {AWS_SECRET_KEY}", AWS_SECRET_KEY),
    SecretSample("github", f"git clone https://{GITHUB_PAT}@github.com/acme/api.git", GITHUB_PAT),
    SecretSample("github", f"GH_TOKEN={GITHUB_OAUTH} gh pr list", GITHUB_OAUTH),
    SecretSample("github", f"installation token {GITHUB_APP}", GITHUB_APP),
    SecretSample("github", f"token = '{GITHUB_FINE_PAT}'", GITHUB_FINE_PAT),
    SecretSample("gitlab", f"curl --header 'PRIVATE-TOKEN: {GITLAB_PAT}' api/v4", GITLAB_PAT),
    SecretSample("slack", f'"bot_token": "{SLACK_BOT}"', SLACK_BOT),
    SecretSample("slack", f"posting to {SLACK_WEBHOOK} failed", SLACK_WEBHOOK),
    SecretSample("stripe", f"stripe.api_key = '{STRIPE_SECRET}'", STRIPE_SECRET),
    SecretSample("stripe", f"restricted key {STRIPE_RESTRICTED}", STRIPE_RESTRICTED),
    SecretSample("stripe", f"publishableKey: {STRIPE_PUBLISHABLE}", STRIPE_PUBLISHABLE),
    SecretSample("google", f"?key={GOOGLE_API_KEY}&q=coffee", GOOGLE_API_KEY),
    SecretSample("google", f'"client_secret": "{GOOGLE_CLIENT_SECRET}"', GOOGLE_CLIENT_SECRET),
    SecretSample("npm", f"//registry.npmjs.org/:_authToken={NPM_TOKEN}", NPM_TOKEN),
    SecretSample("huggingface", f"huggingface-cli login --token {HF_TOKEN}", HF_TOKEN),
    SecretSample("twilio", f"api key sid {TWILIO_API_KEY}", TWILIO_API_KEY),
    SecretSample("token", f"TWILIO_AUTH_TOKEN={TWILIO_AUTH_TOKEN}", TWILIO_AUTH_TOKEN),
    SecretSample("sendgrid", f"SENDGRID_API_KEY='{SENDGRID_KEY}'", SENDGRID_KEY),
    SecretSample("voyage", f"voyageai.Client(api_key={VOYAGE_KEY})", VOYAGE_KEY),
    SecretSample("digitalocean", f"doctl auth init -t {DIGITALOCEAN_TOKEN}", DIGITALOCEAN_TOKEN),
    SecretSample("shopify", f"X-Shopify-Access-Token: {SHOPIFY_TOKEN}", SHOPIFY_TOKEN),
    SecretSample("databricks", f"DATABRICKS_TOKEN={DATABRICKS_TOKEN}", DATABRICKS_TOKEN),
    SecretSample("docker", f"echo {DOCKER_PAT} | docker login -u acme --password-stdin", DOCKER_PAT),
    SecretSample("pypi", f"password = {PYPI_TOKEN}", PYPI_TOKEN),
    SecretSample("discord", f"curl -X POST {DISCORD_WEBHOOK} -d @msg.json", DISCORD_WEBHOOK),
    SecretSample("telegram", f"bot = Bot('{TELEGRAM_BOT_TOKEN}')", TELEGRAM_BOT_TOKEN),
    SecretSample("jwt", f"the session cookie was {JWT}; it expires in an hour", JWT),
    SecretSample("private_key", f"key.pem:\n{RSA_KEY}\n", PEM_BODY.split("\n")[1]),
    SecretSample("private_key", OPENSSH_KEY, PEM_BODY.split("\n")[2]),
    SecretSample(
        "private_key",
        f'{{"type": "service_account", "private_key": "{PKCS8_KEY_ESCAPED}"}}',
        PEM_BODY.split("\n")[0],
    ),
    SecretSample("private_key", f"cat id_ec:\n{TRUNCATED_KEY}", PEM_BODY.split("\n")[0]),
    SecretSample(
        "url_password",
        "DATABASE_URL=postgres://app_user:Xk9-mPq2vL7wZ@db.internal:5432/app",
        "Xk9-mPq2vL7wZ",
    ),
    SecretSample("url_password", "redis://:S3cr3tRedisPass@cache:6379/0", "S3cr3tRedisPass"),
    SecretSample(
        "url_password",
        "mongodb+srv://admin:hunter2hunter2@cluster0.ab1cd.mongodb.net/test",
        "hunter2hunter2",
    ),
    SecretSample("url_password", "https://deploy:p@ss-w0rd-77@git.example.com/x.git", "ss-w0rd-77"),
    SecretSample("password", "DATABASE_PASSWORD=correct-horse-battery-9", "correct-horse-battery-9"),
    SecretSample("password", '{"username": "svc", "password": "p@ssw0rd!2024"}', "p@ssw0rd!2024"),
    SecretSample("password", "db:\n  user: app\n  password: Tr0ub4dor&3\n", "Tr0ub4dor&3"),
    SecretSample("password", "mysql -u root --password=Sup3rS3cretPw app", "Sup3rS3cretPw"),
    SecretSample("password", "PGPASSWORD=mZ7qL2xW9 psql -h db", "mZ7qL2xW9"),
    SecretSample("secret", f'JWT_SECRET="{HEX_SECRET_64}"', HEX_SECRET_64),
    SecretSample("api_key", f"STRIPE_KEY={RANDOM_B62_32}", RANDOM_B62_32),
    SecretSample("token", f"api_token: {RANDOM_B62_32}", RANDOM_B62_32),
    SecretSample("authorization", f"-H 'Authorization: Bearer {BEARER_TOKEN}'", BEARER_TOKEN),
    SecretSample(
        "authorization", "Authorization: Basic ZGVwbG95OnM0bmRib3gtcHc=", "ZGVwbG95OnM0bmRib3gtcHc="
    ),
    SecretSample("bearer", f"send it as bearer {BEARER_TOKEN} in the header", BEARER_TOKEN),
    SecretSample("secret", f"the signing secret is {RANDOM_B64_44} (rotate monthly)", RANDOM_B64_44),
    SecretSample("high_entropy", f"use {RANDOM_B62_32} for staging", RANDOM_B62_32),
    SecretSample("high_entropy", f"webhook key {HEX_SECRET_32} was leaked", HEX_SECRET_32),
    SecretSample("private", "my address is <private>221B Baker Street</private> ok", "221B Baker"),
    SecretSample("private", "notes <PRIVATE>\nsalary: 123k\n</Private> end", "salary: 123k"),
    SecretSample("private", "before <private>never closed, all of it goes", "all of it goes"),
)

# Ordinary code and prose from coding sessions: redact() must return each unchanged.
SAFE_TEXTS: tuple[str, ...] = (
    "We decided to use SQLite with WAL mode because several sessions write at once.",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the race in the worker",
    "Run `git show 3f2a9c1` and `git log --oneline -5` to see it.",
    "[spotter-4te 12e2d10] feat: add OTEL dependencies, bootstrap, and safe runtime defaults",
    "session 55604662-cf2a-4331-851a-ec234028f8ca resumed on branch feature/otel-tracing",
    "content hash sha256:f041b18dfa02eb04d09e47d0d9178b68cd106ed38bc5076341711efcb20f6579",
    "Edited /home/dev/projects/cortex/cortex/core/transcript.py and tests/core/test_gate.py",
    "see src/components/UserProfileSettings.tsx and lib/spotter_web/channels/terminal_channel.ex",
    "~/.claude/projects/-home-dev-proj/b9e46a85-10ad-4a95-b586-ea7fedafcadd.jsonl",
    "https://github.com/marot/spotter/blob/8cc42b0bd39d04e71e509d7d58e6782ab435329f/README.md",
    "https://docs.python.org/3/library/sqlite3.html#sqlite3.Connection.enable_load_extension",
    "https://docs.google.com/document/d/1WBxBSvW3NXhRp9ncmtokJloMLCtF4AYNhJaffvHe8Kw/edit",
    "connect to postgres://localhost:5432/app or ssh://git@github.com/owner/repo.git",
    "def test_extract_candidates_handles_deep_nesting(tmp_path: Path) -> None:",
    "class UserProfileSettingsController(BaseController): pass",
    "MAX_BRIEFING_CHARS = 9500\nTOKEN_TTL_S = 30\nmax_tokens=1024",
    "model = SentenceTransformer('all-MiniLM-L6-v2')  # cortex_memory.egg-info",
    ".btn { color: #ff00aa; background: #1e1e1e; border-color: #abcdef12; }",
    "pip install sentence-transformers==6.2.0 onnxruntime>=1.17; claude v2.1.330; python3.11.7",
    "base64 of hello world is aGVsbG8gd29ybGQ= and dGhpcyBpcyBhIHRlc3Q= decodes to prose",
    "token = get_token()\npassword = request.form['password']\nclient = Client(api_key=api_key)",
    "def login(username: str, password: str) -> bool:\n    if not secret_key: raise ConfigError()",
    'tokens = text.split()\nstats = {"token_count": 12, "max_tokens": 4096}',
    'headers = {"Authorization": f"Bearer {token}"}',
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "export OPENAI_API_KEY=$(cat ~/.openai)\npassword: ${DB_PASSWORD}\nAPI_KEY=<your-api-key>",
    "%{secret_key_base: :..., state: :unset}",
    "params: { _csrf_token: csrfToken },",
    "const { token } = useAuth(); if (!token) return null;",
    "The token: expired yesterday, so the refresh flow ran.",
    "assistant msg_01MKH1ccEGrZGNPvu8pYiiQa called toolu_0116Hyi5v8ut7Ffb7d8qV1Sc",
    "request req_011CY15QS2LGwAeBxdfa6e1V took 2.2 seconds (0.4s async, 1.7s sync)",
    "14 doctests, 297 tests, 0 failures",
    "the `sk-` prefix marks OpenAI keys; scikit-learn is imported as sklearn",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 and x86_64-linux-gnu-gcc-12",
    "hf_hub_download(repo_id='sentence-transformers/all-MiniLM-L6-v2')",
    "Using a password manager is the convention here; never commit .env files.",
    "Set `CORTEX_HOME=~/.claude/memory` to move the global store.",
    "password_min_length = 12\nsecret_name = 'prod/db'\ntoken_endpoint = '/oauth/token'",
    "The model id is claude-opus-4-6 and the embedding dim is 384.",
)
