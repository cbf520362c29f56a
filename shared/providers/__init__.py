"""External memory providers: the interface, the registry third parties use, the manager, `recall`.

    from shared.providers import MemoryProvider, register

    @register
    class Notes(MemoryProvider):
        name = "notes"
        def prefetch(self, query, ctx): ...

Select it with MEMORY_PROVIDER=notes (and list its module in MEMORY_PROVIDER_MODULES).
"""

from shared.providers.base import MemoryProvider, ProviderContext
from shared.providers.manager import ProviderManager, build_manager
from shared.providers.registry import provider_class, register, registered_names, unregister

__all__ = [
    "MemoryProvider", "ProviderContext", "ProviderManager", "build_manager", "provider_class", "register",
    "registered_names", "unregister",
]
