"""What the scripted model answers (re-exported from services/demo_model/replies.py)."""

from services.demo_model.replies import *  # noqa: F401,F403
from services.demo_model.replies import Reply, Responder, Scripted, ScriptedCall  # noqa: F401
