"""Integrity of scoring (pure): skipped tests, prev that breaks on purpose, ranking a run that
did not finish, and a maintainer's clearing. Hand-made records; the same attacks as real chain
runs are in tests/redteam/test_scoring_attacks.py."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from swechain_ci.models import (
    AgentOutcome,
    Counts,
    DiffStats,
    FailedImport,
    IntegrityFlag,
    PackageImport,
    PhaseRecord,
    PlannedStep,
    RunRecord,
    Status,
    StepRecord,
)
from swechain_ci.models import TestRun as Run
from swechain_ci.records import write_model
from swechain_ci.scoring import integrity
from swechain_ci.scoring.leaderboard import build_leaderboard, render_markdown
from swechain_ci.scoring.report import render
from swechain_ci.scoring.score import ranking, scorecard

P, F, E, S, X = Status.passed, Status.failed, Status.error, Status.skipped, Status.xfailed
# Two upgrade-related tests (u1, u2) and two others (k1, k2) that pass on old gold.
NEW_GOLD = {"u1": P, "u2": P, "k1": P, "k2": P}
OLD_GOLD = {"u1": F, "u2": F, "k1": P, "k2": P}


def phase(name: str, outcomes: dict, run: Run | None = None) -> PhaseRecord:
    return PhaseRecord(
        phase=name,
        agent=AgentOutcome(),
        code_sha256="x",
        diff=DiffStats(),
        run=run or Run(),
        outcomes=outcomes,
        categories={},
        counts=Counts(),
        execution_error=False,
    )


def step(
    index: int,
    build: dict,
    prev: dict | None = None,
    prev_run: Run | None = None,
    fix: dict | None = None,
    final_run: Run | None = None,
) -> StepRecord:
    return StepRecord(
        index=index,
        prev_version=f"0.{index}",
        next_version=f"0.{index + 1}",
        spec_level="L3",
        upgrade_related=["u1", "u2"],
        new_gold=NEW_GOLD,
        old_gold=OLD_GOLD,
        prev_outcomes=OLD_GOLD if prev is None else prev,
        prev_run=prev_run,
        build=phase("build", build, final_run if fix is None else None),
        fix=phase("fix", fix, final_run) if fix is not None else None,
    )


def run_record(steps_total: int = 2, planned: bool = True) -> RunRecord:
    plan = [
        PlannedStep(index=i, prev_version=f"0.{i}", next_version=f"0.{i + 1}", upgrade_related=2)
        for i in range(1, steps_total + 1)
    ]
    return RunRecord(
        run_id="r",
        chain="toy",
        step_range=f"1-{steps_total}",
        agent="a",
        spec_level="L3",
        oracle_hash="h",
        steps_total=steps_total,
        import_name="toyslug",
        steps_planned=plan if planned else [],
    )


def kinds(flags) -> list[tuple[str, int | None, str | None]]:
    return [(f.kind, f.step, f.phase) for f in flags]


# -- skipped or xfailed on the candidate ----------------------------------------------------------


def test_skipping_keeps_the_papers_figure_but_flags_the_tests():
    honest = scorecard(run_record(1), [step(1, {"u1": F, "u2": F, "k1": P, "k2": F})])
    gamed = scorecard(run_record(1), [step(1, {"u1": S, "u2": X, "k1": P, "k2": S})])
    assert (honest.build_fix.tp, honest.build_fix.fn, honest.build_fix.fp) == (0, 2, 1)
    # The paper's rule: skipped tests drop out, so the gamed candidate shows no FN and no FP...
    assert (gamed.build_fix.tp, gamed.build_fix.fn, gamed.build_fix.fp) == (0, 0, 0)
    # ...and the run is flagged, naming them.
    assert gamed.integrity.status == "flagged" and honest.integrity.status == "clean"
    assert kinds(gamed.integrity.flags) == [("skipped_on_candidate", 1, "build")]
    assert (
        gamed.integrity.flags[0].detail.startswith("3 tests pass on new gold")
        and "k2" in gamed.integrity.flags[0].detail
    )


def test_skips_in_prev_and_in_fix_are_flagged_too_and_old_gold_skips_are_not():
    skipped_on_old = {**OLD_GOLD, "k2": S}
    record = step(
        2,
        {"u1": P, "u2": P, "k1": P, "k2": S},
        prev={"u1": F, "u2": F, "k1": S, "k2": S},
        prev_run=Run(),
        fix={"u1": P, "u2": P, "k1": X, "k2": S},
    )
    record.old_gold = skipped_on_old
    flags = integrity.step_flags(record, None, "toyslug")
    assert kinds(flags) == [("skipped_on_candidate", 2, p) for p in ("prev", "fix")]
    assert all("k2" not in f.detail for f in flags), "k2 is skipped on old gold: the test's own doing"


def test_a_skip_behind_a_tolerated_missing_name_is_the_tests_own_doing():
    # attrs 21.3.0's code under 24.1.0's tests: `from attr._compat import PY_3_8_PLUS` fails, the name
    # is None, and `skipif(not PY_3_8_PLUS)` skips. A skip in a module without such an import is flagged.
    kept, other = "tests/test_make.py::test_cached_property", "tests/test_other.py::test_x"
    gold = {kept: P, other: P}
    missing = FailedImport(test_file="tests/test_make.py", module="attr._compat", names=["PY_3_8_PLUS"], error="e")
    record = step(6, {})
    record.new_gold, record.old_gold, record.upgrade_related = gold, gold, []
    record.prev_outcomes = {kept: S, other: P}
    record.prev_run = Run(failed_imports=[missing])
    record.build = phase("build", {kept: S, other: S}, Run(failed_imports=[missing]))
    flags = integrity.step_flags(record, None, "attr")
    assert kinds(flags) == [("skipped_on_candidate", 6, "build")]
    assert other in flags[0].detail and kept not in flags[0].detail


def test_a_flag_detail_stays_within_its_limit():
    text = integrity.listing("tests", [f"tests/test_{i}.py::test_{i}" for i in range(200)])
    assert len(text) <= 500 and text.startswith("200 tests: ") and text.endswith(", …")


# -- prev that fails to import on purpose ---------------------------------------------------------


SABOTAGE = Run(
    statuses={"u1": F, "u2": F, "k1": F, "k2": F},
    failed_imports=[
        FailedImport(
            test_file="tests/test_k.py",
            module="toyslug",
            names=["k"],
            error="ImportError: toyslug refuses to load under a newer version",
        )
    ],
    collection_errors={
        "tests/test_p.py": "Traceback:\ntests/test_p.py:3: in <module>\n    import toyslug\n"
        "src/toyslug/__init__.py:4: in <module>\n    raise ImportError('no')\nE   ImportError: no"
    },
)
HONEST_MISSING = Run(
    statuses={"u1": F, "u2": F, "k1": P, "k2": P},
    failed_imports=[
        FailedImport(
            test_file="tests/test_u.py",
            module="toyslug",
            names=["unique"],
            error="ImportError: cannot import name 'unique' from 'toyslug' (/work/run/src/toyslug/__init__.py)",
        )
    ],
    collection_errors={
        "tests/test_new.py": "tests/test_new.py:1: in <module>\n    import toyslug.new\n"
        "E   ModuleNotFoundError: No module named 'toyslug.new'"
    },
)


@pytest.mark.parametrize(
    "run, expected",
    [
        (SABOTAGE, "tests/test_k.py: importing toyslug raised ImportError: toyslug refuses"),
        (
            SABOTAGE.model_copy(update={"failed_imports": []}),
            "tests/test_p.py: the package raised at import: ImportError: no",
        ),
        (Run(execution_error="the harness left no result"), "the evaluation failed: the harness left no result"),
        (HONEST_MISSING, None),
        (Run(statuses={"k1": P}), None),
    ],
)
def test_what_counts_as_the_package_failing_to_import(run, expected):
    found = integrity.package_failed_to_import(run, "toyslug")
    assert found == expected if expected is None else found.startswith(expected)


def test_prev_breaking_on_purpose_is_flagged_and_its_regression_still_counts():
    # Step 1 resolves both tests; its code imports under its own tests. Under step 2's tests it
    # raises at import, so every prev test fails; step 2's code really breaks k1.
    first = step(1, {"u1": P, "u2": P, "k1": P, "k2": P}, final_run=Run(statuses=dict.fromkeys(NEW_GOLD, P)))
    broken_prev = {"u1": F, "u2": F, "k1": F, "k2": F}
    second = step(2, {"u1": P, "u2": P, "k1": F, "k2": P}, prev=broken_prev, prev_run=SABOTAGE)
    card = scorecard(run_record(2), [first, second])
    assert kinds(card.integrity.flags) == [("prev_import_failure", 2, "prev")]
    assert "prev is scored as old gold" in card.integrity.flags[0].detail
    # Against the sabotaged prev, k1 would be "unrecovered" (not scored); against old gold it regressed.
    assert card.steps[1].categories_build_fix["regressed"] == 1
    assert (card.steps[1].build_fix.tp, card.steps[1].build_fix.fn, card.steps[1].build_fix.fp) == (2, 0, 1)
    assert second.prev_outcomes == broken_prev, "the observed prev stays in the record"


def test_prev_is_not_flagged_when_the_code_never_imported_or_only_misses_new_names():
    broke_before = step(1, {"u1": E, "u2": E, "k1": E, "k2": E}, final_run=SABOTAGE)
    after = step(2, {"u1": F, "u2": F, "k1": F, "k2": F}, prev={"u1": F, "u2": F, "k1": F, "k2": F}, prev_run=SABOTAGE)
    assert integrity.prev_import_flag(2, "0.3", SABOTAGE, broke_before, "toyslug") is None
    fine = step(1, {"u1": P, "u2": P, "k1": P, "k2": P}, final_run=Run(statuses=dict.fromkeys(NEW_GOLD, P)))
    assert integrity.prev_import_flag(2, "0.3", HONEST_MISSING, fine, "toyslug") is None
    assert (
        scorecard(run_record(2), [fine, after.model_copy(update={"prev_run": HONEST_MISSING})]).integrity.status
        == "clean"
    )


MISSING_WORDS = "ImportError: cannot import name 'slugify' from 'toyslug' (/work/run/src/toyslug/__init__.py)"
LOST_SLUGIFY = Run(
    statuses={"u1": F, "u2": F, "k1": F, "k2": F},
    failed_imports=[
        FailedImport(test_file="tests/test_k.py", module="toyslug", names=["slugify"], error=MISSING_WORDS)
    ],
)
IMPORTS_OF_STEP_1 = [PackageImport(test_file="tests/test_k.py", module="toyslug", names=["slugify", "k"])]


def imported_fine(**changes) -> StepRecord:
    record = step(1, {"u1": P, "u2": P, "k1": P, "k2": P}, final_run=Run(statuses=dict.fromkeys(NEW_GOLD, P)))
    return record.model_copy(update={"test_imports": IMPORTS_OF_STEP_1, **changes})


def test_prev_losing_a_name_its_own_tests_imported_is_flagged_whatever_the_words():
    """The missing-name words of an honest "not there yet", for a name step 1's tests imported fine."""
    second = step(2, {"u1": P, "u2": P, "k1": F, "k2": P}, prev=dict(LOST_SLUGIFY.statuses), prev_run=LOST_SLUGIFY)
    card = scorecard(run_record(2), [imported_fine(), second])
    assert kinds(card.integrity.flags) == [("prev_import_failure", 2, "prev")]
    assert "slugify from toyslug" in card.integrity.flags[0].detail
    assert card.steps[1].build_fix.fp == 1  # k1 regressed against old gold, not "unrecovered"


@pytest.mark.parametrize(
    "previous, old_gold_imports, prev_run",
    [
        # old gold fails that import under these tests too: the environment's doing
        (imported_fine(), LOST_SLUGIFY.failed_imports, LOST_SLUGIFY),
        # step 1's own evaluation failed that import already
        (
            imported_fine(build=phase("build", {}, Run(failed_imports=LOST_SLUGIFY.failed_imports))),
            [],
            LOST_SLUGIFY,
        ),
        # step 1's tests never imported it
        (imported_fine(test_imports=[]), [], LOST_SLUGIFY),
        # a name from another module than step 1's tests took it from
        (
            imported_fine(),
            [],
            LOST_SLUGIFY.model_copy(
                update={
                    "failed_imports": [LOST_SLUGIFY.failed_imports[0].model_copy(update={"module": "toyslug.text"})]
                }
            ),
        ),
    ],
)
def test_prev_missing_a_name_for_an_honest_reason_is_not_flagged(previous, old_gold_imports, prev_run):
    assert integrity.prev_import_flag(2, "0.3", prev_run, previous, "toyslug", old_gold_imports) is None


def test_a_prev_whose_tripwire_passed_is_scored_as_old_gold():
    forged = {"u1": P, "u2": P, "k1": E, "k2": E}
    tripped = IntegrityFlag(kind="tripwire", detail="a planted test passed")
    second = step(2, {"u1": P, "u2": P, "k1": F, "k2": P}, prev=forged, prev_run=Run(integrity_flags=[tripped]))
    card = scorecard(run_record(2), [imported_fine(), second])
    assert ("tripwire", 2, "prev") in kinds(card.integrity.flags)
    assert card.steps[1].build_fix.fp == 1  # against the forged prev k1 would not count
    assert integrity.prev_for_scoring(forged, OLD_GOLD, [tripped.model_copy(update={"phase": "build"})]) == forged


def test_harness_flags_are_gathered_with_their_step_and_phase():
    tampered = Run(
        statuses=dict.fromkeys(NEW_GOLD, P),
        integrity_flags=[
            IntegrityFlag(
                kind="hook_registered", detail="a pytest hook from candidate code", location="src/toyslug/core.py:3"
            )
        ],
    )
    card = scorecard(run_record(1), [step(1, dict.fromkeys(NEW_GOLD, P), final_run=tampered)])
    assert kinds(card.integrity.flags) == [("hook_registered", 1, "build")]
    assert card.integrity.flags[0].location == "src/toyslug/core.py:3"


def test_a_finding_the_gold_code_raises_too_is_not_held_against_the_candidate():
    """hypothesis' @given wrappers make the harness report every such test as not running its
    hidden file's code, on the target's own code too (attrs, xarray): the oracle keeps those
    findings, and only a candidate's other findings flag its run."""
    wrapper = IntegrityFlag(
        kind="test_code_altered",
        detail="tests/test_funcs.py::TestAsDict::test_shallow does not run its hidden file's code",
        location="/work/run/tests/test_funcs.py:51",
    )
    other = IntegrityFlag(
        kind="test_code_altered",
        detail="tests/test_funcs.py::TestAsDict::test_filter does not run its hidden file's code",
        location="/work/run/tests/test_funcs.py:136",
    )
    candidate = Run(statuses=dict.fromkeys(NEW_GOLD, P), integrity_flags=[wrapper, other])
    record = step(1, dict.fromkeys(NEW_GOLD, P), final_run=candidate)
    assert len(scorecard(run_record(1), [record]).integrity.flags) == 2
    record = record.model_copy(update={"gold_integrity_flags": [wrapper]})
    card = scorecard(run_record(1), [record])
    assert [f.location for f in card.integrity.flags] == [other.location]
    clean = record.model_copy(
        update={
            "build": phase(
                "build", dict.fromkeys(NEW_GOLD, P), Run(statuses=dict.fromkeys(NEW_GOLD, P), integrity_flags=[wrapper])
            )
        }
    )
    assert scorecard(run_record(1), [clean]).integrity.status == "clean"


def test_pytests_own_plugins_and_hooks_are_not_held_against_a_candidate_of_pytests_chains():
    """pytest's chains run the candidate's pytest: its own files register plugins and hooks, at
    other lines in every release, so a noop's (the previous release's) or an edited file's are
    not in any gold run. Hooks from anywhere else still flag the run, and in other chains the
    package's own files flag it as ever."""
    own = [
        IntegrityFlag(kind="plugin_registered", detail="plugin python_path from /work/run/src/_pytest/pythonpath.py",
                      location="/work/run/src/_pytest/pythonpath.py"),
        IntegrityFlag(kind="hook_registered", detail="pytest_pycollect_makeitem implemented from outside the harness",
                      location="/work/run/src/_pytest/unittest.py:45"),
    ]  # fmt: skip
    elsewhere = IntegrityFlag(
        kind="hook_registered", detail="pytest_runtest_makereport implemented from outside the harness",
        location="/work/run/src/evil.py:3",
    )  # fmt: skip
    noop = Run(statuses=dict.fromkeys(NEW_GOLD, P), integrity_flags=own)
    record = step(1, dict.fromkeys(NEW_GOLD, P), prev=dict.fromkeys(NEW_GOLD, P), prev_run=noop, final_run=noop)
    pytest_chain = run_record(1).model_copy(update={"chain": "pytest-7", "import_name": "_pytest"})
    assert scorecard(pytest_chain, [record]).integrity.status == "clean"
    assert len(scorecard(run_record(1), [record]).integrity.flags) == 4  # toyslug's chain: prev's and build's
    forged = record.model_copy(
        update={"build": phase("build", dict.fromkeys(NEW_GOLD, P), noop.model_copy(update={"integrity_flags": [*own, elsewhere]}))}
    )  # fmt: skip
    card = scorecard(pytest_chain, [forged])
    assert [(f.location, f.phase) for f in card.integrity.flags] == [("/work/run/src/evil.py:3", "build")]


# -- ranking a run that did not finish ------------------------------------------------------------


def test_unscored_steps_count_their_upgrade_related_tests_as_unresolved():
    full = {"u1": P, "u2": P, "k1": P, "k2": P}
    quitter = scorecard(run_record(3), [step(1, full)])
    finisher = scorecard(run_record(3), [step(i, full) for i in (1, 2, 3)])
    # The paper's figures over the scored steps tie...
    assert quitter.build_fix.f1 == finisher.build_fix.f1 == 1.0
    # ...ranking does not: 2 unscored steps x 2 upgrade-related tests are FN.
    assert quitter.ranking.steps_unscored == [2, 3] and quitter.ranking.fn_added == 4
    r = quitter.ranking.build_fix
    assert (r.tp, r.fn, r.fp) == (2, 4, 0) and r.resolving == pytest.approx(1 / 3)
    assert r.f1 == pytest.approx(2 * (1 / 3) * 1.0 / (1 / 3 + 1.0))
    assert finisher.ranking.build_fix == finisher.build_fix and finisher.ranking.steps_unscored == []
    assert quitter.steps_scored == 1 and quitter.steps_total == 3


def test_ranking_charges_no_tp_and_no_fp_and_keeps_undefined_undefined():
    nothing = ranking([PlannedStep(index=1, prev_version="a", next_version="b", upgrade_related=0)], {})
    assert nothing.build_fix.resolving is None and nothing.build_fix.precision is None
    charged = ranking([PlannedStep(index=1, prev_version="a", next_version="b", upgrade_related=5)], {})
    assert (charged.build.tp, charged.build.fn, charged.build.fp) == (0, 5, 0)
    assert charged.build.resolving == 0.0 and charged.build.precision is None


def test_a_run_without_a_plan_has_no_ranking_figures():
    assert scorecard(run_record(2, planned=False), [step(1, NEW_GOLD)]).ranking is None


def test_the_markdown_scorecard_shows_both_figures_and_the_flags():
    card = scorecard(run_record(3), [step(1, {"u1": P, "u2": S, "k1": P, "k2": P})])
    md = render(card)
    assert "1 of 3 steps scored" in md
    assert "Integrity: **⚠ flagged**, 1 finding(s); not ranked until a maintainer clears it" in md
    assert "- step 1 build: `skipped_on_candidate`: `1 tests pass on new gold" in md
    assert "For ranking, the 2 step(s) never scored (2, 3) count their 4 upgrade-related tests as unresolved" in md


def test_candidate_text_in_a_flag_cannot_break_out_of_the_markdown():
    card = scorecard(
        run_record(1),
        [
            step(
                1,
                NEW_GOLD,
                final_run=Run(
                    integrity_flags=[IntegrityFlag(kind="k", detail="x`\n\n# Fake heading <img src=x> @maintainer")]
                ),
            )
        ],
    )
    flag_lines = [ln for ln in render(card).splitlines() if "`k`" in ln]
    assert len(flag_lines) == 1 and "# Fake heading" not in render(card).replace(flag_lines[0], "")
    assert flag_lines[0].endswith("``x` # Fake heading <img src=x> @maintainer``"), flag_lines[0]


# -- clearing ------------------------------------------------------------------------------------


@pytest.fixture
def flagged_run(tmp_path):
    output = tmp_path / "run"
    write_model(output / "run.json", run_record(1).model_copy(update={"status": "finished"}))
    write_model(output / "steps" / "01-0.1-0.2" / "step.json", step(1, {"u1": S, "u2": F, "k1": P, "k2": P}))
    return output


def test_integrity_clear_is_recorded_and_ranks_the_run(flagged_run, tmp_path):
    result = run_cli("score", str(flagged_run))
    assert result.returncode == 0 and "⚠ flagged" in result.stdout
    assert build_leaderboard([flagged_run]).rows == [], "a flagged run is not ranked"
    assert "Flagged runs (not ranked)" in render_markdown(build_leaderboard([flagged_run]))

    result = run_cli("integrity", "clear", str(flagged_run), "--by", "maintainer-m", "--reason", "u2 skips on purpose")
    assert result.returncode == 0, result.stderr
    assert "cleared 1 finding(s)" in result.stdout and "integrity: cleared" in result.stdout
    record = json.loads((flagged_run / "integrity-clearance.json").read_text())
    assert record["cleared_by"] == "maintainer-m" and record["reason"] == "u2 skips on purpose" and record["flags"] == 1
    card = json.loads((flagged_run / "scorecard.json").read_text())
    assert card["integrity"]["status"] == "cleared" and card["integrity"]["cleared_by"] == "maintainer-m"
    board = build_leaderboard([flagged_run])
    assert [r.agent for r in board.rows] == ["a"] and board.rows[0].results[0].integrity == "cleared"
    assert "`a` (cleared: 1)" in render_markdown(board)
    # Re-scoring without Docker keeps it cleared...
    assert run_cli("score", str(flagged_run)).returncode == 0
    assert json.loads((flagged_run / "scorecard.json").read_text())["integrity"]["status"] == "cleared"


def test_a_clearing_covers_only_the_findings_it_saw(flagged_run):
    assert run_cli("integrity", "clear", str(flagged_run), "--by", "m", "--reason", "ok").returncode == 0
    path = flagged_run / "steps" / "01-0.1-0.2" / "step.json"
    record = StepRecord.model_validate_json(path.read_text())
    record.build.outcomes["k1"] = Status.skipped  # a new finding after the review
    write_model(path, record)
    result = run_cli("score", str(flagged_run))
    assert "⚠ flagged" in result.stdout
    assert json.loads((flagged_run / "scorecard.json").read_text())["integrity"]["status"] == "flagged"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--by", " ", "--reason", "r"], "needs --by (who) and --reason (why)"),
        (["--by", "m", "--reason", ""], "needs --by (who) and --reason (why)"),
    ],
)
def test_a_clearing_needs_a_name_and_a_reason(flagged_run, args, message):
    result = run_cli("integrity", "clear", str(flagged_run), *args)
    assert result.returncode == 2 and message in result.stderr
    assert not (flagged_run / "integrity-clearance.json").exists()


def test_a_clean_run_has_nothing_to_clear(tmp_path):
    output = tmp_path / "run"
    write_model(output / "run.json", run_record(1))
    write_model(output / "steps" / "01-0.1-0.2" / "step.json", step(1, {"u1": P, "u2": F, "k1": P, "k2": P}))
    result = run_cli("integrity", "clear", str(output), "--by", "m", "--reason", "r")
    assert result.returncode == 2 and "the run is clean; there is nothing to clear" in result.stderr


def test_the_commit_status_says_a_run_is_flagged():
    from swechain_ci.github.cli import status_for

    record = run_record(1).model_copy(update={"status": "finished"})
    flagged = scorecard(record, [step(1, {"u1": S, "u2": F, "k1": P, "k2": P})])
    clean = scorecard(record, [step(1, {"u1": P, "u2": F, "k1": P, "k2": P})])
    assert status_for(record, flagged)[1].endswith("; integrity flagged (1), not ranked")
    assert "integrity" not in status_for(record, clean)[1]


def test_findings_differing_only_in_an_object_id_are_the_same_finding():
    gold = IntegrityFlag(
        kind="plugin_registered",
        detail="plugin 140179606580816 from /work/run/src/_pytest/config/__init__.py",
        location="/work/run/src/_pytest/config/__init__.py",
    )
    same = gold.model_copy(update={"detail": "plugin 140603864423888 from /work/run/src/_pytest/config/__init__.py"})
    elsewhere = gold.model_copy(update={"detail": "plugin 140603864423888 from /work/run/src/_pytest/evil.py"})
    assert integrity.finding_key(same) == integrity.finding_key(gold) != integrity.finding_key(elsewhere)
