"""Stage 7, site: what people look at. The static leaderboard site (build, plots), the weekly
history of leaderboards and the regression alerts between weeks (history), and the optional
model-written sentence per failed step (summary).

Imports: every earlier stage and the foundation modules; never github or the run.
"""
