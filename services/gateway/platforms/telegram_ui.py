"""What the Telegram adapter says: pairing answers, command help, approval keyboards."""

from __future__ import annotations

from telegram import BotCommand, InlineKeyboardButton, InlineKeyboardMarkup

COMMANDS = {
    "new": "start a fresh conversation",
    "forget": "delete this conversation everywhere it is kept (asks first)",
    "stop": "stop the running answer",
    "status": "what the agent is doing",
    "memory": "what the agent keeps about you",
    "skills": "the skills the agent has",
    "approve": "approve the pending command (/approve session: for this session)",
    "deny": "deny the pending command",
    "cron": "your scheduled jobs (/cron pause|resume|run|remove ID)",
    "whoami": "who you are here",
    "help": "these commands",
}
CRON_ACTIONS = {"pause": {"status": "paused"}, "resume": {"status": "active"}, "run": None, "remove": None}
DECISIONS = {"once": ("approve", "once", "approved once"), "session": ("approve", "session", "approved for the session"),
             "deny": ("deny", "once", "denied")}


def bot_commands() -> list[BotCommand]:
    return [BotCommand(name, about) for name, about in COMMANDS.items()]


def help_text() -> str:
    return "Commands:\n" + "\n".join(f"/{name} — {about}" for name, about in COMMANDS.items())


def pairing_text(answer: dict) -> str:
    """The only thing an unknown user ever gets: a code and how the owner approves it (or when to ask again)."""
    if answer.get("status") == "code":
        code = answer["code"]
        return (f"Hi! I don't know you yet. Here's your pairing code: {code}\n"
                f"It is valid for one hour. Ask the bot owner to run:\n"
                f"hstack pairing approve telegram {code}")
    if answer.get("status") == "wait":
        return "You asked for a pairing code a moment ago: ask the bot owner to approve it, or try again later."
    return "Too many pairing requests right now; please try again later."


def approval_keyboard(approval_id: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[
        InlineKeyboardButton("Approve", callback_data=f"ap:{approval_id}:once"),
        InlineKeyboardButton("Approve for session", callback_data=f"ap:{approval_id}:session"),
        InlineKeyboardButton("Deny", callback_data=f"ap:{approval_id}:deny"),
    ]])


def approval_text(data: dict) -> str:
    command = str(data.get("command", ""))[:3000]
    reason = str(data.get("reason", "") or "")[:500]
    return f"Approval needed to run:\n{command}" + (f"\nWhy: {reason}" if reason else "")


def question_keyboard(data: dict) -> InlineKeyboardMarkup:
    """One button per choice; the callback carries the choice's index (Telegram allows 64 bytes)."""
    qid = str(data.get("clarification_id", ""))
    return InlineKeyboardMarkup([[InlineKeyboardButton(str(choice), callback_data=f"cq:{qid}:{i}")]
                                 for i, choice in enumerate(data.get("choices") or [])])


def parse_question_callback(data: str) -> tuple[str, int] | None:
    """(clarification_id, choice index) from a question button's callback data."""
    kind, _, rest = (data or "").partition(":")
    qid, _, index = rest.rpartition(":")
    if kind != "cq" or not qid or not index.isdigit():
        return None
    return qid, int(index)


def parse_callback(data: str) -> tuple[str, str] | None:
    """(approval_id, once|session|deny) from a button's callback data."""
    kind, _, rest = (data or "").partition(":")
    approval_id, _, choice = rest.rpartition(":")
    if kind != "ap" or not approval_id or choice not in DECISIONS:
        return None
    return approval_id, choice


def memory_text(view: dict) -> str:
    lines = []
    for part, title in (("user", "About you"), ("memory", "Notes")):
        entries = (view.get(part) or {}).get("entries") or []
        lines.append(f"{title}:" + ("".join(f"\n• {e}" for e in entries) if entries else " nothing yet"))
    return "\n".join(lines)


def skills_text(listing: dict) -> str:
    skills = [s for s in listing.get("data", []) if s.get("state", "active") == "active"]
    if not skills:
        return "No skills yet."
    return "Skills:\n" + "\n".join(f"• {s['name']} — {s.get('description', '')[:80]}" for s in skills[:50])


FORGET_ASK = ("This deletes this chat's conversation: its messages, search entries, pending approvals and kept "
              "outputs. What the agent learned into memory and skills stays. Send /forget yes to confirm.")


def forgotten_text(done: dict) -> str:
    return f"Deleted this conversation ({done['messages']} messages). {done['kept']}"


def cron_text(jobs: list[dict]) -> str:
    """The user's scheduled jobs: id, status, schedule, next run and last outcome."""
    if not jobs:
        return "No scheduled jobs. Ask me, e.g. \"remind me in 20 minutes to call mum\"."
    lines = [f"• {j['name'][:60]} — {j['schedule']} ({j['status']}); next {(j['next_run_at'] or '-')[:16]}; "
             f"last {j['last_status'] or '-'}\n  id {j['id']}" for j in jobs[:30]]
    return "Scheduled jobs:\n" + "\n".join(lines)
