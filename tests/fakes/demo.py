"""The offline demo assistant's replies (re-exported from services/demo_model/demo.py)."""

from services.demo_model.demo import *  # noqa: F401,F403
from services.demo_model.demo import CHUNK_DELAY, demo_reply, summarise_listing  # noqa: F401
