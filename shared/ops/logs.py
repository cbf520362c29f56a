"""Structured logs that carry turn and session ids and never print a secret."""

from __future__ import annotations

import json
import logging
import re
import sys
from contextvars import ContextVar
from datetime import datetime, timezone

turn_id_var: ContextVar[str | None] = ContextVar("turn_id", default=None)
session_id_var: ContextVar[str | None] = ContextVar("session_id", default=None)

_SECRET_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\b(hsk_|sk-|sk_|xox[abp]-|ghp_|gho_)[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',]{6,}"),
]


class Redactor(logging.Filter):
    """Masks known secret values and key-shaped strings in every record."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        super().__init__()
        self.secrets = [s for s in (secrets or []) if s]

    def redact(self, text: str) -> str:
        for value in self.secrets:
            text = text.replace(value, "[REDACTED]")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[REDACTED]", text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = self.redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        record.turn_id = turn_id_var.get()
        record.session_id = session_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for field in ("turn_id", "session_id"):
            value = getattr(record, field, None)
            if value:
                out[field] = value
        if record.exc_text:
            out["exc"] = record.exc_text
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ids = " ".join(f"{f}={getattr(record, f)}" for f in ("turn_id", "session_id") if getattr(record, f, None))
        line = f"{record.levelname.lower():<7} {record.name}: {record.getMessage()}" + (f" [{ids}]" if ids else "")
        return line + ("\n" + record.exc_text if record.exc_text else "")


def setup_logging(level: str = "INFO", fmt: str = "json", secrets: list[str] | None = None) -> None:
    """Configure the root logger once for a process."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(Redactor(secrets))
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
