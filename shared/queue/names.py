"""Task names and their queues: the api and the beat enqueue by name, never by importing workers."""

RUN_TURN = "run_turn"
REVIEW_SESSION = "review_session"
SWEEP_TURNS = "sweep_turns"

QUEUE_TURNS = "turns"
QUEUE_REVIEW = "review"
QUEUE_CURATOR = "curator"
QUEUES = (QUEUE_TURNS, QUEUE_REVIEW, QUEUE_CURATOR)

ROUTES = {
    RUN_TURN: {"queue": QUEUE_TURNS},
    REVIEW_SESSION: {"queue": QUEUE_REVIEW},
    SWEEP_TURNS: {"queue": QUEUE_CURATOR},
}
