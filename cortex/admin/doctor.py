"""`cortex doctor`: every check, in the order it prints them."""

from __future__ import annotations

from cortex.admin.backend_checks import backend_checks
from cortex.admin.checks import Check, runtime_and_store_checks
from cortex.app import Cortex


def doctor(cx: Cortex) -> list[Check]:
    """Runtime, vector search, models and stores, then the optional backends."""
    return runtime_and_store_checks(cx) + backend_checks(cx)
