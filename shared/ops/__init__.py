"""What an operator sees: logs (structured, with turn and session ids, secrets redacted), metrics (kept in
Redis, exposed at /metrics) and heartbeats (which services are alive, for `hstack status` and /readyz)."""
