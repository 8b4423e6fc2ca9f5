"""Stage 3, evaluation: the in-container harness (harness/), one hidden-test run with its
report cross-checked (evaluate), per-test outcome maps (outcomes), a step's runs on prev and
on each agent phase's code (step), the oracle of a chain (oracle) and its agreement with the
reference implementation's (compare).

Imports: the chain and containers stages and the foundation modules.
"""
