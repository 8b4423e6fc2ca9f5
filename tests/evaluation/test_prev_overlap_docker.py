"""A step's prev evaluation needs nothing from the agent: it runs while the agent works."""

from __future__ import annotations

import threading
import time

import pytest

from swechain_ci.agents import phase as agent_phase
from swechain_ci.evaluation import step as step_evaluation
from swechain_ci.run import run_chain

pytestmark = pytest.mark.docker


def test_prev_is_evaluated_while_the_agent_works(docker_engine, tmp_path, monkeypatch):
    events: list[tuple[str, float, float, str]] = []
    real_evaluate, real_agent = step_evaluation.evaluate, agent_phase.run_agent

    def evaluate(*args, **kwargs):
        started = time.monotonic()
        result = real_evaluate(*args, **kwargs)
        events.append(("evaluate", started, time.monotonic(), threading.current_thread().name))
        return result

    def run_agent(agent, ctx):
        started = time.monotonic()
        time.sleep(3)  # an agent that takes its time
        outcome = real_agent(agent, ctx)
        events.append((f"agent step {ctx.step_index} {ctx.phase}", started, time.monotonic(), ""))
        return outcome

    monkeypatch.setattr(step_evaluation, "evaluate", evaluate)
    monkeypatch.setattr(agent_phase, "run_agent", run_agent)
    card = run_chain("toy", "oracle", tmp_path / "run", steps="1-2")
    assert (card.build.resolving, card.build.precision) == (1.0, 1.0)
    [(_, agent_start, agent_end, _)] = [e for e in events if e[0] == "agent step 2 build"]
    background = [e for e in events if e[0] == "evaluate" and e[3].startswith("swechain-background")]
    assert len(background) == 1, events  # step 1's prev is old gold; step 2's runs alongside its Build
    _, prev_start, prev_end, _ = background[0]
    assert prev_start < agent_end and agent_start < prev_end, events  # they overlap
    # The evaluation phase takes that run (prev-run.json) instead of running prev again:
    # step 1's Build, step 2's prev and step 2's Build.
    assert len([e for e in events if e[0] == "evaluate"]) == 3, events
