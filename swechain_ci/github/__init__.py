"""Stage 8, GitHub: comments, statuses and job summaries (reporting), a run as a git branch
(branches) and the commands the workflows call (cli).

Imports: every earlier stage and the foundation modules; never the run or the top-level CLI.
"""
