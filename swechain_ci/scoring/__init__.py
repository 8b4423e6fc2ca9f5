"""Stage 6, scoring: pure functions over per-test outcome maps (score), a step's records from
its runs (step), the error report for the one Fix (fix_report), the scorecard (report) and the
leaderboard (leaderboard).

Imports: every earlier stage and the foundation modules; never github or the run.
"""
