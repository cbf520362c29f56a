"""Task names and their queues: the api and the beat enqueue by name, never by importing workers."""

RUN_TURN = "run_turn"
RESUME_TURN = "resume_turn"
REVIEW_SESSION = "review_session"
SWEEP_TURNS = "sweep_turns"
CHECK_CURATION = "check_curation"
CURATE_SKILLS = "curate_skills"
SWEEP_EXPIRED = "sweep_expired"
END_SESSION = "end_session"
BACK_UP_SERVER = "back_up_server"
TICK_CRON = "tick_cron"
PROBE_MCP_SERVER = "probe_mcp_server"
EVOLVE_SKILL = "evolve_skill"
CHECK_EVOLUTION = "check_evolution"
CONSOLIDATE_SKILLS = "consolidate_skills"
EMBED_MESSAGES = "embed_messages"

QUEUE_TURNS = "turns"
QUEUE_REVIEW = "review"
QUEUE_CURATOR = "curator"
QUEUES = (QUEUE_TURNS, QUEUE_REVIEW, QUEUE_CURATOR)

ROUTES = {
    RUN_TURN: {"queue": QUEUE_TURNS},
    RESUME_TURN: {"queue": QUEUE_TURNS},
    REVIEW_SESSION: {"queue": QUEUE_REVIEW},
    SWEEP_TURNS: {"queue": QUEUE_CURATOR},
    CHECK_CURATION: {"queue": QUEUE_CURATOR},
    CURATE_SKILLS: {"queue": QUEUE_CURATOR},
    SWEEP_EXPIRED: {"queue": QUEUE_CURATOR},
    END_SESSION: {"queue": QUEUE_CURATOR},
    BACK_UP_SERVER: {"queue": QUEUE_CURATOR},
    TICK_CRON: {"queue": QUEUE_CURATOR},
    PROBE_MCP_SERVER: {"queue": QUEUE_TURNS},
    EVOLVE_SKILL: {"queue": QUEUE_REVIEW},
    CHECK_EVOLUTION: {"queue": QUEUE_CURATOR},
    CONSOLIDATE_SKILLS: {"queue": QUEUE_REVIEW},  # model calls: the reviewer's pool, never the beat's worker
    EMBED_MESSAGES: {"queue": QUEUE_REVIEW},  # background work beside the turn, as reviews are
}
