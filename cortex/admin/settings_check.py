"""`cortex doctor`'s settings: every setting's effective value and where that value came from."""

from __future__ import annotations

from typing import Any

from cortex.admin.checks import Check
from cortex.app import Cortex
from cortex.config import DEFAULT_SOURCE, SETTING_NAMES, Settings, load_settings_with_sources
from cortex.errors import ConfigError

IN_CODE = "set by the caller"  # a context built with its own Settings (tests, benchmarks)
UNKNOWN = "unknown"


def setting_rows(cx: Cortex) -> list[tuple[str, Any, str]]:
    """(name, effective value, source) of every setting, in the order of `Settings`; the source
    is `default`, `FILE:LINE` or the CORTEX_* variable that set it."""
    try:
        loaded = load_settings_with_sources(cx.paths)
    except ConfigError:  # a context given its settings: the files are not what it runs with
        loaded = None
    return _rows(cx, loaded)


def _rows(cx: Cortex, loaded: tuple[Settings, dict[str, str]] | None) -> list[tuple[str, Any, str]]:
    settings, sources = loaded if loaded is not None else (None, {})
    rows = []
    for name in SETTING_NAMES:
        value = getattr(cx.settings, name)
        if settings is not None and value != getattr(settings, name):
            source = IN_CODE
        else:
            source = sources.get(name, UNKNOWN)
        rows.append((name, value, source))
    return rows


def settings_check(cx: Cortex) -> Check:
    """One line of doctor: which settings differ from the defaults (the full list follows it)."""
    try:
        loaded = load_settings_with_sources(cx.paths)
    except ConfigError as exc:
        return Check("settings", "fail", exc.message, exc.fix)
    changed = [name for name, _, source in _rows(cx, loaded) if source != DEFAULT_SOURCE]
    total = len(SETTING_NAMES)
    if not changed:
        return Check("settings", "ok", f"all {total} at their defaults (no config file or CORTEX_* setting)")
    return Check("settings", "ok", f"{len(changed)} of {total} set ({', '.join(changed)}), the rest default")
