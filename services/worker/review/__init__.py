"""Background review: after enough turns, a fork of the conversation decides what to keep in memory and skills.

trigger.py counts each finished turn and commits a due review; drain.py runs a session's reviews on
queue `review`; fork.py is one review (the parent's exact context plus one instruction, a few tools);
calls.py runs its tool calls exactly once; prompt.py holds the instructions; lease.py keeps its lease.
"""
