"""A failure whose traceback has an entry without a line number (a pytest-timeout SIGALRM in C-level code) is
reported as that test's failure, where pytest's own formatting raised and ended the whole pass."""

from __future__ import annotations

import sys
import types

import pytest

from tests.support import tracebacks

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def _timed_out() -> pytest.ExceptionInfo:
    """A Failed("Timeout") raised here, whose innermost entry maps to no line, chained to a cause alike."""
    frame = sys._getframe()
    cause = RuntimeError("interrupted")
    cause.__traceback__ = types.TracebackType(None, frame, 10**6, -1)  # lasti past the code: tb_lineno None
    try:
        raise pytest.fail.Exception("Timeout (>120.0s) from pytest-timeout.") from cause
    except pytest.fail.Exception as exc:
        exc.__traceback__.tb_next = types.TracebackType(None, frame, 10**6, -1)
        return pytest.ExceptionInfo.from_exc_info((type(exc), exc, exc.__traceback__))


def test_pytest_cannot_format_a_lineless_traceback_by_itself():
    excinfo = _timed_out()
    assert tracebacks.lineless(excinfo.value)
    with pytest.raises(TypeError):
        excinfo.getrepr(style="long", chain=True)


def test_a_lineless_failure_is_reported_with_its_message_and_every_frame():
    fixed = tracebacks.with_line_numbers(_timed_out())
    assert not tracebacks.lineless(fixed.value)
    report = str(fixed.getrepr(style="long", chain=True))
    assert "Timeout (>120.0s) from pytest-timeout." in report
    assert "RuntimeError: interrupted" in report
    assert "_timed_out" in report
