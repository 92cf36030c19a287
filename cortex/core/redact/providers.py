"""Provider token shapes beyond the common ones in `secrets.py`, from the providers' published
formats: a distinctive prefix or structure that makes the token recognisable anywhere. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_L = r"(?<![A-Za-z0-9_-])"  # a token starts here
_R = r"(?![A-Za-z0-9_-])"  # and ends here
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


_LITERAL = re.compile(r"(?:[A-Za-z0-9_~-]|\\[.$+])+")


def tok(body: str) -> re.Pattern[str]:
    """`body` as a whole token. A literal prefix goes first, with the start check behind it, so
    that the regex engine can jump to the prefix instead of trying every position."""
    m = _LITERAL.match(body)
    if m is None or "|" in body[: m.end() + 1] or body[m.end() : m.end() + 1] in ("?", "*", "{", "+"):
        return re.compile(_L + body + _R)
    n = len(m.group(0).replace("\\", ""))
    return re.compile(m.group(0) + rf"(?<![A-Za-z0-9_-][\s\S]{{{n}}})" + body[m.end() :] + _R)


@dataclass(frozen=True, slots=True)
class Rule:
    """A provider token with a recognisable shape. `hints` are substrings one of which must be
    present (a cheap test before the scan); `valid`, when given, rejects look-alikes such as
    long kebab-case names after "sk-"."""

    kind: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] | None = None
    gate: re.Pattern[str] | None = None  # a fast search (literal first) that must match first


def masked(token: str) -> bool:
    """A placeholder in a token's shape (`sk_test_xxxxxxxx`, `AKIAXXXXXXXXXXXXXXXX`): the part
    after the prefix repeats one or two characters."""
    body = re.split(r"[_.-]", token)[-1] if re.search(r"[_.-]", token) else token[4:]
    return len(body) >= 6 and len(set(body.lower())) <= 2


def _r(kind: str, hint: str, body: str) -> Rule:
    return Rule(kind, (hint,), tok(body))


EXTRA_PROVIDERS: tuple[Rule, ...] = (
    _r("groq", "gsk_", r"gsk_[A-Za-z0-9]{40,}"),
    _r("replicate", "r8_", r"r8_[A-Za-z0-9]{30,}"),
    _r("perplexity", "pplx-", r"pplx-[A-Za-z0-9]{40,}"),
    _r("xai", "xai-", r"xai-[A-Za-z0-9]{40,}"),
    _r("elevenlabs", "sk_", r"sk_[a-f0-9]{48}"),
    _r("langsmith", "lsv2_", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    _r("pinecone", "pcsk_", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}"),
    _r("alibaba", "LTAI", r"LTAI[A-Za-z0-9]{12,30}"),
    _r("tencent", "AKID", r"AKID[A-Za-z0-9]{32}"),
    _r("heroku", "HRKU-", r"HRKU-[A-Za-z0-9_-]{20,}"),
    _r("cloudflare", "v1.0-", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{100,}"),
    Rule("fly", ("fm1_", "fm2_"), re.compile(r"(?:FlyV1 )?fm[12][ar]?_[A-Za-z0-9_+/=-]{40,}")),
    _r("netlify", "nfp_", r"nfp_[A-Za-z0-9]{36}"),
    Rule("vault", ("hvs.", "hvb.", "hvr."), tok(r"hv[sbr]\.[A-Za-z0-9_-]{24,}")),
    _r("terraform", ".atlasv1.", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
    _r("doppler", "dp.", r"dp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{40,}"),
    _r("pulumi", "pul-", r"pul-[a-f0-9]{40}"),
    _r("supabase", "sbp_", r"sbp_[a-f0-9]{40}"),
    _r("firebase", "APA91b", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}"),
    _r("planetscale", "pscale_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}"),
    _r("render", "rnd_", r"rnd_[A-Za-z0-9]{32}"),
    _r("tailscale", "tskey-", r"tskey-[a-z]+-[A-Za-z0-9-]{20,}"),
    _r("bitbucket", "ATBB", r"ATBB[A-Za-z0-9_=.-]{32}"),
    _r("atlassian", "ATATT", r"ATATT3[A-Za-z0-9_=-]{100,}"),
    _r("circleci", "CCIPAT_", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    _r("buildkite", "bkua_", r"bkua_[a-f0-9]{40}"),
    Rule("sonarqube", ("squ_", "sqp_", "sqa_"), tok(r"sq[uap]_[a-f0-9]{40}")),
    _r("rubygems", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    _r("nuget", "oy2", r"oy2[a-z0-9]{43}"),
    _r("jfrog", "AKCp", r"AKCp[A-Za-z0-9]{60,}"),
    _r("clojars", "CLOJARS_", r"CLOJARS_[a-z0-9]{60}"),
    _r("octopus", "API-", r"API-[A-Z0-9]{26,}"),
    _r("harness", "pat.", r"pat\.[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9_-]{20}"),
    _r("postman", "PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _r("square", "EAAA", r"EAAA[A-Za-z0-9_-]{60}"),
    Rule("square", ("sq0atp-", "sq0csp-"), tok(r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}")),
    _r("braintree", "access_token$", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    _r("razorpay", "rzp_", r"rzp_(?:live|test)_[A-Za-z0-9]{14}"),
    _r("flutterwave", "FLWSECK", r"FLWSECK(?:_TEST)?-[a-fA-F0-9]{32}-X"),
    _r("plaid", "access-", r"access-(?:production|sandbox|development)-" + _UUID),
    _r("shippo", "shippo_", r"shippo_(?:live|test)_[a-f0-9]{40}"),
    Rule("easypost", ("EZAK", "EZTK"), tok(r"EZ[AT]K[a-f0-9]{54}")),
    Rule("mollie", ("live_", "test_"), tok(r"(?:live|test)_[A-Za-z0-9]{30,35}"), lambda s: _mixed_case(s)),
    _r("checkout", "sk_sbox_", r"sk_sbox_[a-z0-9]{26}"),
    _r("duffel", "duffel_", r"duffel_(?:live|test)_[A-Za-z0-9_-]{43}"),
    Rule("slack", ("xoxe",), tok(r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9-]{40,}")),
    Rule(
        "discord",
        (".",),
        re.compile(r"(?<![\w.-])[MN][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![\w-])"),
    ),
    _r("mailgun", "key-", r"key-[a-f0-9]{32}"),
    _r("mailchimp", "-us", r"[a-f0-9]{32}-us\d{1,2}"),
    _r("brevo", "xkeysib-", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    Rule(
        "teams_webhook",
        ("webhook.office.com",),
        re.compile(r"https://[A-Za-z0-9.-]*webhook\.office\.com/webhookb2/[^\s'\"<>]+"),
    ),
    Rule(
        "webhook",
        ("/hooks/", "/webhook"),
        re.compile(r"https://[A-Za-z0-9.-]+/(?:hooks|webhooks?)/[A-Za-z0-9_-]{20,}(?:/[A-Za-z0-9_-]{16,})*"),
    ),
    _r("telnyx", "KEY", r"KEY[0-9A-F]{32}_[A-Za-z0-9_-]{22}"),
    Rule(
        "ably",
        (":",),
        re.compile(r"(?<![\w.-])[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{6}:[A-Za-z0-9_-]{43}(?![\w-])"),
        gate=re.compile(r":[A-Za-z0-9_-]{43}"),
    ),
    _r("newrelic", "NRAK-", r"NRAK-[A-Z0-9]{27}"),
    _r("newrelic", "NRII-", r"NRII-[A-Za-z0-9_-]{32}"),
    _r("newrelic", "NRJS-", r"NRJS-[a-f0-9]{19}"),
    _r("sentry", "sntryu_", r"sntryu_[a-f0-9]{64}"),
    _r("sentry", "sntrys_", r"sntrys_[A-Za-z0-9_=+/-]{50,}"),
    _r("grafana", "glc_", r"glc_[A-Za-z0-9_+/=-]{32,}"),
    _r("grafana", "glsa_", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"),
    _r("dynatrace", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    Rule("launchdarkly", ("sdk-", "api-", "mob-"), tok(r"(?:sdk|api|mob)-" + _UUID)),
    _r("posthog", "phx_", r"phx_[A-Za-z0-9]{40,}"),
    _r("hubspot", "pat-", r"pat-(?:na|eu|ap)\d-" + _UUID),
    _r("salesforce", "00D", r"00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}"),
    _r("airtable", "pat", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    _r("notion", "secret_", r"secret_[A-Za-z0-9]{43}"),
    _r("notion", "ntn_", r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
    _r("linear", "lin_oauth_", r"lin_oauth_[a-f0-9]{64}"),
    Rule("asana", ("/",), re.compile(r"(?<![\w/])[12]/\d{16}/\d{16}:[a-f0-9]{32}(?![\w])")),
    _r("trello", "ATTA", r"ATTA[a-fA-F0-9]{64,72}"),
    _r("clickup", "pk_", r"pk_\d{6,10}_[A-Z0-9]{32}"),
    _r("figma", "figd_", r"figd_[A-Za-z0-9_-]{40}"),
    _r("typeform", "tfp_", r"tfp_[A-Za-z0-9_-]{44}_[A-Za-z0-9_-]{14}"),
    _r("contentful", "CFPAT-", r"CFPAT-[A-Za-z0-9_-]{43}"),
    _r("dropbox", "sl.", r"sl\.[A-Za-z0-9_-]{130,}"),
    _r("twitter", "AAAAAAAAAAAAAAAAAAAAA", r"AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%_-]{50,}"),
    _r("facebook", "EAA", r"EAA(?:CEdEose0cBA|[A-Z][a-z]{2})[A-Za-z0-9]{80,}"),
    _r("mapbox", "sk.eyJ", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    _r("onepassword", "ops_eyJ", r"ops_eyJ[A-Za-z0-9_+/=-]{50,}"),
    _r("age_secret_key", "AGE-SECRET-KEY-", r"AGE-SECRET-KEY-1[A-Z0-9]{58}"),
    _r("prefect", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _r("readme", "rdme_", r"rdme_[a-z0-9]{70}"),
    _r("frameio", "fio-u-", r"fio-u-[A-Za-z0-9_=-]{64}"),
    _r("yandex", "y0_", r"y0_[A-Za-z0-9_-]{55}"),
    _r("yandex", "AQVN", r"AQVN[A-Za-z0-9_-]{35,38}"),
    _r("adobe", "p8e-", r"p8e-[A-Za-z0-9_-]{32}"),
    _r("gitlab", "GR1348941", r"GR1348941[A-Za-z0-9_-]{20}"),
    _r("pagerduty", "u+", r"u\+[A-Za-z0-9_+-]{18}"),
    _r("intercom", "dG9rOj", r"dG9rOj[A-Za-z0-9_+/-]{40,}={0,2}"),
    _r("bitcoin_wif", "5", r"5[HJK][1-9A-HJ-NP-Za-km-z]{49}"),
)


def _mixed_case(token: str) -> bool:
    body = token.split("_", 1)[-1]
    return (
        any(c.isupper() for c in body) and any(c.islower() for c in body) and any(c.isdigit() for c in body)
    )
