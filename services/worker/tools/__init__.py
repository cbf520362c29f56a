"""The agent's tools; importing this package registers every built-in tool module."""

from services.worker.tools import files  # noqa: F401  (registers the workspace file tools)
from services.worker.tools import patch  # noqa: F401  (registers patch)
from services.worker.tools import session_search  # noqa: F401  (registers session_search)
from services.worker.tools import memory  # noqa: F401  (registers the memory tool)
from services.worker.tools import skills  # noqa: F401  (registers skills_list, skill_view, skill_manage)
from services.worker.tools import terminal  # noqa: F401  (registers terminal and process)
from services.worker.tools import cronjob  # noqa: F401  (registers cronjob)
