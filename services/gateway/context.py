"""What every platform of one gateway process shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.gateway.client import ApiClient
from shared.config import Settings


@dataclass
class Gateway:
    settings: Settings
    api: ApiClient
    platforms: dict = field(default_factory=dict)
    delivery: object = None
