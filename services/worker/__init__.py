"""The worker service (queues `turns` and `review`): tasks.py (thin Celery tasks), runtime.py (what a process
runs turns with), agent/ (the loop, prompt, history, compression), tools/ and features/ (what the agent can
do and what a turn adds), review/, approval/, sandbox/. registrations.py is the one call list that puts every
tool and hook in place at start-up; hooks.py holds the hooks a turn calls."""
