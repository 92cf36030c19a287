"""`cortex doctor`: every check, in the order it prints them."""

from __future__ import annotations

from cortex.admin.backend_checks import backend_checks
from cortex.admin.checks import Check, runtime_and_store_checks
from cortex.admin.quarantine_check import quarantine_check
from cortex.admin.settings_check import settings_check
from cortex.admin.team_check import team_check
from cortex.app import Cortex


def doctor(cx: Cortex) -> list[Check]:
    """Runtime, vector search, models and stores, the team store, then the optional backends and
    the settings."""
    return [
        *runtime_and_store_checks(cx),
        team_check(cx),
        quarantine_check(cx),
        *backend_checks(cx),
        settings_check(cx),
    ]
