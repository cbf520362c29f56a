"""Logs are structured, carry turn and session ids, and never print a secret."""

from __future__ import annotations

import json
import logging

import pytest

from shared.ops.logs import JsonFormatter, Redactor, session_id_var, turn_id_var

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def render(record_msg: str, *args, secrets=None, exc=None) -> dict:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, record_msg, args, exc)
    Redactor(secrets).filter(record)
    return json.loads(JsonFormatter().format(record))


def test_keys_and_configured_secrets_are_redacted():
    line = render("auth %s with %s and key=%s", "Bearer hsk_abcdefghijklmnop", "sk-live-1234567890", "plain-secret-value",
                  secrets=["plain-secret-value"])
    assert "hsk_abcdefghijklmnop" not in line["msg"]
    assert "sk-live-1234567890" not in line["msg"]
    assert "plain-secret-value" not in line["msg"]


def test_records_carry_the_current_turn_and_session():
    t, s = turn_id_var.set("turn_1"), session_id_var.set("ses_1")
    try:
        line = render("working")
    finally:
        turn_id_var.reset(t)
        session_id_var.reset(s)
    assert (line["turn_id"], line["session_id"]) == ("turn_1", "ses_1")
