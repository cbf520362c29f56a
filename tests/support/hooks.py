"""A test's own worker hooks: the built-in set plus its additions, installed for the test and then removed."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from services.worker.hooks import Hooks, install
from services.worker.registrations import built_in_hooks


@contextmanager
def own_hooks(*, built_ins: bool = True) -> Iterator[Hooks]:
    """Install a fresh `Hooks` (with the built-in ones unless `built_ins` is False) for the block's length."""
    hooks = built_in_hooks() if built_ins else Hooks()
    previous = install(hooks)
    try:
        yield hooks
    finally:
        install(previous)
