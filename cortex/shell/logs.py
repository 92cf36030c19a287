"""Logging for every entry point: a rotated file (never stdout in hooks), with secrets redacted."""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

LOG_MAX_BYTES = 1_000_000
LOG_BACKUPS = 3
_FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


class RedactingFilter(logging.Filter):
    """Run every record through the secret redactor before it reaches a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record in place; never drop it."""
        try:
            from cortex.core.redact.secrets import redact

            message = record.getMessage()
            cleaned = redact(message).text
            if cleaned != message:
                record.msg, record.args = cleaned, None
        except Exception:  # the log must never break the caller
            pass
        return True


def _file_handler(path: Path) -> logging.Handler | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8", delay=True
        )
        # Opening now surfaces a read-only directory here rather than at the first log call.
        handler.stream = handler._open()
        return handler
    except OSError:
        return None


def configure(
    log_file: Path, *, fallback: Path | None = None, level: str = "INFO", stderr: bool = False
) -> Path | None:
    """Send cortex's logs to `log_file` (or `fallback` when that is not writable); return the file used."""
    root = logging.getLogger("cortex")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(os.environ.get("CORTEX_LOG_LEVEL", level).upper())
    root.propagate = False
    used = None
    for candidate in (log_file, fallback):
        if candidate is None:
            continue
        opened = _file_handler(candidate)
        if opened is not None:
            opened.setFormatter(logging.Formatter(_FORMAT))
            opened.addFilter(RedactingFilter())
            root.addHandler(opened)
            used = candidate
            break
    if stderr:
        err = logging.StreamHandler()
        err.setFormatter(logging.Formatter("cortex: %(levelname)s %(message)s"))
        err.setLevel(logging.WARNING)
        err.addFilter(RedactingFilter())
        root.addHandler(err)
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    return used
