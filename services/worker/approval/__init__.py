"""The approval gate's decision core: what a command really runs, and whether it may.

No database and no parking yet: the terminal tool and the approvals API arrive with the wiring.
"""

from .gate import Decision, decide, dangerous, deny_list, deny_patterns, hardline, normalise
from .guardian import fence, guardian_messages, parse_verdict, strip_comments

__all__ = ["Decision", "dangerous", "decide", "deny_list", "deny_patterns", "fence", "guardian_messages",
           "hardline", "normalise", "parse_verdict", "strip_comments"]
