"""Failures pytest can report: a traceback entry without a line number is given its frame's.

pytest-timeout's SIGALRM can interrupt a frame at an instruction that maps to no source line; the traceback
entry's `tb_lineno` is then None and pytest, formatting the failure, dies with an INTERNALERROR
("unsupported operand type(s) for -: 'NoneType' and 'int'") that ends the whole pass and hides which test
timed out and where. `with_line_numbers` rebuilds such a traceback (and those of the exceptions chained to
it) with each lineless entry at its frame's current instruction and line (else the function's first line)."""

from __future__ import annotations

import types
from typing import Iterator

import pytest


def lineless(exc: BaseException | None) -> bool:
    return any(tb.tb_lineno is None for e in _chain(exc) for tb in _entries(e.__traceback__))


def with_line_numbers(excinfo: pytest.ExceptionInfo) -> pytest.ExceptionInfo:
    for exc in _chain(excinfo.value):
        exc.__traceback__ = _lined(exc.__traceback__)
    return pytest.ExceptionInfo.from_exc_info((excinfo.type, excinfo.value, excinfo.value.__traceback__))


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """The exception and those it was raised from or during, as pytest reports them (each once)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _entries(tb: types.TracebackType | None) -> list[types.TracebackType]:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def _lined(tb: types.TracebackType | None) -> types.TracebackType | None:
    rebuilt = None
    for entry in reversed(_entries(tb)):
        frame, lasti, line = entry.tb_frame, entry.tb_lasti, entry.tb_lineno
        if line is None:  # the frame where it stands now (its last instruction, if it has returned)
            lasti, line = frame.f_lasti, frame.f_lineno or frame.f_code.co_firstlineno
        rebuilt = types.TracebackType(rebuilt, frame, lasti, line)
    return rebuilt
