"""Failures pytest can report: a traceback entry without a line number is given its frame's.

pytest-timeout's SIGALRM can interrupt a frame at an instruction that maps to no source line; the traceback
entry's `tb_lineno` is then None and pytest, formatting the failure, dies with an INTERNALERROR
("unsupported operand type(s) for -: 'NoneType' and 'int'") that ends the whole pass and hides which test
timed out and where. `with_line_numbers` rebuilds such a traceback (and those of the exceptions chained to
it) with each lineless entry at its frame's current instruction and line (else the function's first line)."""

from __future__ import annotations

import types

import pytest


def lineless(exc: BaseException | None) -> bool:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_lineno is None:
                return True
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    return False


def with_line_numbers(excinfo: pytest.ExceptionInfo) -> pytest.ExceptionInfo:
    seen: set[int] = set()
    exc = excinfo.value
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = _lined(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__
    return pytest.ExceptionInfo.from_exc_info((excinfo.type, excinfo.value, _lined(excinfo.tb)))


def _lined(tb: types.TracebackType | None) -> types.TracebackType | None:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for entry in reversed(entries):
        frame, lasti, line = entry.tb_frame, entry.tb_lasti, entry.tb_lineno
        if line is None:  # the frame where it stands now (its last instruction, if it has returned)
            lasti, line = frame.f_lasti, frame.f_lineno or frame.f_code.co_firstlineno
        rebuilt = types.TracebackType(rebuilt, frame, lasti, line)
    return rebuilt
