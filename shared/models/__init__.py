"""SQLModel tables and API schemas, one module per concept; importing this registers every table."""

from shared.models.approvals import Approval
from shared.models.attachments import Attachment
from shared.models.clarifications import Clarification
from shared.models.compactions import Compaction
from shared.models.cron import CronJob, CronRun
from shared.models.curator import CuratorRun, CuratorState, CuratorTransition
from shared.models.gateway import (GatewayChat, GatewayIdentity, OutboxItem, PairingLock, PairingRequest,
                                   WebhookRoute)
from shared.models.imports import ImportRecord
from shared.models.memory import MemorySnapshot, MemoryStagedWrite
from shared.models.reviews import Review, ReviewCall, ReviewCounter
from shared.models.search import MessageVector
from shared.models.sessions import ChatSession, Message
from shared.models.todos import SessionTodo
from shared.models.skills import SkillRecord, SkillStagedWrite
from shared.models.turns import TERMINAL_STATUSES, Turn, TurnStatus
from shared.models.users import ApiKey, User

__all__ = [
    "ApiKey", "Approval", "Attachment", "ChatSession", "Clarification", "Compaction", "CronJob", "CronRun", "CuratorRun",
    "CuratorState", "CuratorTransition",
    "GatewayChat", "GatewayIdentity", "ImportRecord", "OutboxItem", "PairingLock", "PairingRequest", "WebhookRoute",
    "MemorySnapshot", "MemoryStagedWrite", "Message", "MessageVector", "Review", "ReviewCall", "ReviewCounter",
    "SessionTodo", "SkillRecord", "SkillStagedWrite", "TERMINAL_STATUSES", "Turn", "TurnStatus", "User",
]
