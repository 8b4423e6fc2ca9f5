"""Attacks on the hidden-test harness (issue 9, classes 1, 2, 3 and 5), each a real toy chain run.

Every attack is step 1 of the toy chain (0.1.0 -> 0.2.0) with a candidate that fixes
nothing; its honest score is HONEST_STEP1 = (TP 0, FN 9, FP 0). Each attack must score
no better, or be flagged; the ``attack`` fixture checks that the host survives and
writes nothing outside the run folder.
"""

from __future__ import annotations

import pytest
from redteam.conftest import HONEST_STEP1

pytestmark = pytest.mark.docker


def test_code_that_fixes_nothing_scores_the_honest_baseline(attack):
    run = attack({})
    assert run.build == HONEST_STEP1 and run.build_fix == HONEST_STEP1
    assert run.flags() == []
