"""Scheduled jobs' pure rules: schedules (cron, interval, one time) and what a run's outcome says."""
