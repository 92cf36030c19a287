"""Values that are public by design and look like secrets: set aside before the scan. Pure.

Integrity hashes (npm, SRI, Nix, go.sum, Terraform locks), public keys (ssh, age, PEM
certificates and public keys), content ids (IPFS, ULIDs, Stripe object ids), pod names and
blockchain addresses are replaced by an inert placeholder while secrets are looked for, then put
back unchanged.
"""

from __future__ import annotations

import re

_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use characters: never part of a token
# (hints, pattern): the pattern runs when one hint is in the text, or when the hint regex
# (one that starts with a literal, so it is fast to search) finds something.
_PUBLIC: tuple[tuple[tuple[str, ...] | re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (hints, re.compile(pattern, re.DOTALL))
    for hints, pattern in (
        (
            ("-----BEGIN",),
            r"-----BEGIN (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|EC PUBLIC KEY|CERTIFICATE REQUEST|"
            r"X509 CRL|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|SSH2 PUBLIC KEY)-----.*?-----END [A-Z0-9 ]+-----",
        ),
        (("sha",), r"(?<![\w-])sha(?:1|224|256|384|512)-[A-Za-z0-9+/]{27,}={0,2}"),
        (
            ("h1:", "zh:", "sha", "md5:", "blake2b:"),
            r"(?<![\w-])(?:h1|zh|sha1|sha256|sha512|md5|blake2b|sha3-256):[A-Za-z0-9+/]{27,}={0,2}",
        ),
        (("/nix/store/",), r"/nix/store/[0-9a-z]{32}-[\w.+-]+"),
        (("Qm",), r"(?<![\w-])Qm[1-9A-HJ-NP-Za-km-z]{44}(?![\w-])"),
        (("baf",), r"(?<![\w-])baf[a-z2-7]{50,}(?![\w-])"),
        (("age1",), r"(?<![\w-])age1[02-9ac-hj-np-z]{58}(?![\w-])"),
        (("bc1", "tb1"), r"(?<![\w-])(?:bc1|tb1)[02-9ac-hj-np-z]{25,87}(?![\w-])"),
        (
            ("ssh-", "ecdsa-"),
            r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
            r"[ \t]+AAAA[A-Za-z0-9+/]+={0,3}",
        ),
        (("data:",), r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+"),
        (
            ("_",),
            r"(?<![\w-])(?:ch|cus|pi|pm|price|prod|sub|evt|in|ii|il|po|tr|txn|re|seti|src|card|ba|acct|"
            r"cs|py|si|plan|file|link|du|dp|fr|iv|cn|setatt|ich)_[A-Za-z0-9]{8,32}(?![\w-])",
        ),
        (re.compile(r"[0-9A-HJKMNP-TV-Z]{26}"), r"(?<![\w-])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![\w-])"),
        (
            re.compile(r"-[a-z0-9]{8,10}-[a-z0-9]{5}(?![\w-])"),
            r"(?<![\w-])[a-z][a-z0-9]{0,30}(?:-[a-z][a-z0-9]{0,30}){0,4}-[a-z0-9]{8,10}-[a-z0-9]{5}(?![\w-])",
        ),
        (("0x",), r"(?<![\w])0x[a-fA-F0-9]{40}(?![\w])"),
        (
            ("-0",),
            r"(?<![\w-])(?:i|ami|subnet|vpc|sg|vol|snap|eni|igw|rtb|acl|nat|eipalloc|lt|tgw|vpce|pcx|fs|"
            r"fsap|r|sir|dopt)-0[0-9a-f]{7,16}(?![\w-])",
        ),
        (
            ("public", "pubkey", "address", "Public", "Address"),
            r"(?i:public key|pubkey|address):?[ \t]+[1-9A-HJ-NP-Za-km-z]{32,44}(?![\w-])",
        ),
        (("0x",), r"(?i:\btx|\btxn|transaction|tx hash):?[ \t]+0x[a-fA-F0-9]{64}(?![\w])"),
    )
)


def protect(text: str) -> tuple[str, list[str]]:
    """The text with public look-alikes replaced by placeholders, and the values set aside."""
    if _OPEN in text or _CLOSE in text:
        return text, []
    kept: list[str] = []

    def hold(m: re.Match[str]) -> str:
        kept.append(m.group(0))
        return f"{_OPEN}{len(kept) - 1}{_CLOSE}"

    for hints, pattern in _PUBLIC:
        if hints.search(text) if isinstance(hints, re.Pattern) else any(h in text for h in hints):
            text = pattern.sub(hold, text)
    return text, kept


_HELD = re.compile(_OPEN + r"(\d+)" + _CLOSE)


def restore(text: str, kept: list[str]) -> str:
    """Put the values `protect` set aside back in place."""
    if not kept:
        return text
    return _HELD.sub(lambda m: kept[int(m.group(1))] if int(m.group(1)) < len(kept) else "", text)
