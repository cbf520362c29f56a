"""The reviewer's skill evolution: one run, from its id to its stored outcome (see shared/evolution)."""
