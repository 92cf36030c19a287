"""Metadata as one plain line of data: what every stored and rendered field is reduced to. Pure."""

from __future__ import annotations

import re
import unicodedata

# Characters that change how text reads without being visible: zero-width, bidi controls,
# the tag block (U+E0000-E007F), line and paragraph separators.
INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2028\u2029"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f]"
)
_SPACE_RUN = re.compile(r"\s+")
_MARKER_OPEN = re.compile(r"<!--|-->")


def plain_line(value: str, limit: int) -> str:
    """`value` as one plain line: no control, invisible or line-break characters, comment
    markers defused, spaces collapsed, at most `limit` characters."""
    if value.isascii() and value.isprintable():  # the common case: nothing to normalise or blank
        text = value
    else:
        text = INVISIBLE.sub("", unicodedata.normalize("NFC", value))
        text = "".join(" " if unicodedata.category(ch)[0] in "CZ" and ch != " " else ch for ch in text)
    while _MARKER_OPEN.search(text):  # `<!---` would close up again after one pass
        text = _MARKER_OPEN.sub(lambda m: "<!-" if m.group(0) == "<!--" else "->", text)
    text = _SPACE_RUN.sub(" ", text).strip()
    return text[:limit].rstrip()


def display_field(value: str | None, limit: int) -> str:
    """A metadata field as rendered: one plain line (stored text went through the gate; this
    guards what older versions stored)."""
    return plain_line(value or "", limit)
