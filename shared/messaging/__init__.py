"""What processes tell each other through Redis: connections (one pool per URL per process), events (a
turn's replayable event stream and a session's notices) and cancels (a cancel pushed to the running worker)."""
