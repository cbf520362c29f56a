"""Provider classes by name: the stack's own, listed here, and third parties' registered at start-up.

A third-party provider is one small module that subclasses `MemoryProvider` and decorates the class
with `@register`; listing the module in MEMORY_PROVIDER_MODULES makes the worker import it when it
builds its provider manager, and MEMORY_PROVIDER=<name> selects it. The built-in `recall` registers
nothing on import: `_with_built_ins` adds it the first time the registry is used.
"""

from __future__ import annotations

import importlib
import logging
import threading

from shared.providers.base import MemoryProvider

log = logging.getLogger(__name__)

_CLASSES: dict[str, type[MemoryProvider]] = {}
_LOCK = threading.Lock()
_built_ins_added = False


def _with_built_ins() -> None:
    """Add the stack's own providers once, before any lookup or registration."""
    global _built_ins_added
    if _built_ins_added:
        return
    from shared.providers.recall import RecallProvider  # it imports the search engine: only once providers are used

    with _LOCK:
        _CLASSES.setdefault(RecallProvider.name, RecallProvider)
        _built_ins_added = True


def register(provider_class: type[MemoryProvider]) -> type[MemoryProvider]:
    """Make a provider class selectable by its `name`; usable as a class decorator."""
    _with_built_ins()
    name = (provider_class.name or "").strip().lower()
    if not name or name == "none":
        raise ValueError(f"{provider_class.__name__} needs a `name` other than '' or 'none'.")
    if not issubclass(provider_class, MemoryProvider):
        raise TypeError(f"{provider_class.__name__} must subclass shared.providers.MemoryProvider.")
    with _LOCK:
        existing = _CLASSES.get(name)
        if existing is not None and existing is not provider_class:
            raise ValueError(f"A memory provider named {name!r} is already registered ({existing.__name__}).")
        _CLASSES[name] = provider_class
    return provider_class


def unregister(name: str) -> None:
    """Forget a provider class (a plugin being unloaded, or a test cleaning up)."""
    with _LOCK:
        _CLASSES.pop(name.strip().lower(), None)


def provider_class(name: str) -> type[MemoryProvider] | None:
    """The class registered under `name`, if any."""
    _with_built_ins()
    with _LOCK:
        return _CLASSES.get(name.strip().lower())


def registered_names() -> list[str]:
    _with_built_ins()
    with _LOCK:
        return sorted(_CLASSES)


def import_modules(spec: str) -> None:
    """Import each comma-separated module of `spec` (MEMORY_PROVIDER_MODULES) so it can register."""
    for module in (m.strip() for m in spec.split(",")):
        if not module:
            continue
        try:
            importlib.import_module(module)
        except Exception:
            log.exception("memory provider module %r could not be imported", module)
