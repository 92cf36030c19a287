"""Errors with messages that name the fix; the CLI prints them, hooks log them. Pure."""

from __future__ import annotations


class CortexError(Exception):
    """An error the user can act on; `fix` says how."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.fix}" if self.fix else self.message


class StoreError(CortexError):
    """The store cannot be opened or written (corrupt, foreign, read-only, disk full)."""


class NotACortexStore(StoreError):
    """The file exists but is not a cortex database (or is corrupt); it is never overwritten."""


class ModelError(CortexError):
    """The embedding model or its runtime is missing or broken."""


class NotFound(CortexError):
    """A memory id (or prefix) that does not exist."""


class ConfigError(CortexError):
    """A configuration file or CORTEX_* variable has a bad value."""


class InputError(CortexError):
    """User input that cannot be stored or searched (empty, binary, too large)."""
