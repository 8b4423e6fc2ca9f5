"""The failure taxonomy: one test per mode on real run outputs, and every rule row exercised.

The step records under tests/fixtures/failure_modes/ are real ``step.json`` files written by
``swechain-ci run`` on the toy chain (README there says which command wrote each).
"""

from __future__ import annotations

import pytest
from conftest import REPO

from swechain_ci.models import Category, StepRecord
from swechain_ci.models import TestRun as Run
from swechain_ci.scoring.failure_modes import (
    RULES,
    FailureMode,
    classify,
    classify_phase,
    evidence,
    matching_rule,
    tally,
)
from swechain_ci.scoring.score import score_step

FIXTURES = REPO / "tests" / "fixtures" / "failure_modes"


def step(name: str) -> StepRecord:
    return StepRecord.model_validate_json((FIXTURES / f"{name}.json").read_text())


def modes(name: str, phase: str = "build") -> dict[str, FailureMode]:
    record = getattr(step(name), phase)
    return classify_phase(record.run, record.categories)


def test_missing_name_from_tolerated_imports_and_missing_attributes():
    # noop on toy step 2: `from toyslug.text import shorten` failed (the harness bound it to None)
    found = modes("noop-step2")
    assert found["tests/test_text.py::test_shorten_short_text_unchanged"] == FailureMode.missing_name  # None()
    assert (
        found["tests/test_text.py::test_shorten_is_exported_at_top_level"] == FailureMode.missing_name
    )  # AttributeError
    # an undefined name in the candidate's code
    assert (
        modes("did-not-raise-name-error-step1")["tests/test_truncate.py::test_truncate_exact_output"]
        == FailureMode.missing_name
    )


def pyjwt_run() -> Run:
    return Run.model_validate_json((FIXTURES / "pyjwt-noop-step13-run.json").read_text())


def test_real_pyjwt_failures_of_noop_on_2_11_0():
    run = pyjwt_run()
    found = {test.rsplit("::", 1)[1]: classify(run, test) for test in run.statuses}
    assert found == {
        "test_ec_curve_validation_rejects_wrong_curve_for_es256": FailureMode.wrong_signature,  # __init__ arity
        "test_jwt_encode_decode_rejects_wrong_curve": FailureMode.wrong_exception,  # DID NOT RAISE InvalidKeyError
        "test_hmac_short_key_warns_by_default_hs256": FailureMode.missing_name,  # no check_key_length method
        "test_pyjwt_decode_enforces_short_hmac_key": FailureMode.wrong_exception,  # InvalidSignatureError escaped
    }


def test_wrong_signature_is_a_type_error_at_the_call():
    found = modes("noop-step2")
    for case in ("dot-sep", "underscore-sep", "wrong-sep"):
        assert found[f"tests/test_checks.py::test_is_slug_custom_sep[{case}]"] == FailureMode.wrong_signature


def test_wrong_exception_raised_or_expected_one_missing():
    raised = modes("wrong-exception-timeout-step1")  # KeyError where the test expects ValueError
    assert raised["tests/test_unique.py::test_unique_slug_rejects_unsluggable_text"] == FailureMode.wrong_exception
    none = modes("did-not-raise-name-error-step1")  # "Failed: DID NOT RAISE ValueError"
    assert none["tests/test_unique.py::test_unique_slug_rejects_unsluggable_text"] == FailureMode.wrong_exception


def test_assertion_mismatch_is_behaviour():
    found = modes("replay-step1")  # the truncate off-by-one the replay keeps
    assert set(found.values()) == {FailureMode.assertion} and len(found) == 3
    assert modes("noop-step2")["tests/test_package.py::test_version"] == FailureMode.assertion


def test_timeout_from_pytest_timeout():
    found = modes("wrong-exception-timeout-step1")  # unique_slug loops for ever on a taken counter
    assert found["tests/test_unique.py::test_unique_slug_skips_taken_counters"] == FailureMode.timeout


def test_collection_error_from_a_syntax_error():
    found = modes("replay-step2")  # `def shorten(...) -> str` without its colon
    assert len(found) == 39 and set(found.values()) == {FailureMode.collection}
    after_fix = modes("replay-step2", "fix")
    assert set(after_fix.values()) == {FailureMode.assertion}


def test_only_unresolved_and_regressed_tests_are_classified():
    record = step("did-not-raise-name-error-step1").build
    found = classify_phase(record.run, record.categories)
    expected = {t for t, c in record.categories.items() if c in (Category.unresolved, Category.regressed)}
    assert set(found) == expected and len(expected) == 6
    assert tally(found)[FailureMode.missing_name] == 5


def test_scorecard_counts_per_step_and_chain():
    score, _, _ = score_step(step("replay-step2"))
    assert score.failure_modes_build["collection"] == 39
    assert score.failure_modes_build_fix["assertion"] == 3 and score.failure_modes_build_fix["collection"] == 0
    assert sum(score.failure_modes_build_fix.values()) == score.build_fix.fn + score.build_fix.fp


# Every row of RULES, in order, with one piece of evidence it must be the first to match. Rows
# with a real fixture point at it; the rest are the records the harness writes in those cases
# (a whole-run time-out, a run without a trusted report, an import error at collection).
ROW_EXAMPLES: list[tuple[int, str, str, str]] = [
    (0, "wrong-exception-timeout-step1", "build", "tests/test_unique.py::test_unique_slug_skips_taken_counters"),
    (1, "", "", "run_timed_out"),
    (2, "", "", "execution_error"),
    (3, "", "", "collection_import"),
    (4, "replay-step2", "build", "tests/test_text.py::test_shorten_exact_output"),
    (5, "noop-step2", "build", "tests/test_text.py::test_shorten_is_exported_at_top_level"),
    (6, "noop-step2", "build", "tests/test_text.py::test_shorten_short_text_unchanged"),
    (7, "noop-step2", "build", "tests/test_checks.py::test_is_slug_custom_sep[dot-sep]"),
    (8, "did-not-raise-name-error-step1", "build", "tests/test_unique.py::test_unique_slug_rejects_unsluggable_text"),
    (9, "replay-step1", "build", "tests/test_truncate.py::test_truncate_exact_output"),
    (10, "wrong-exception-timeout-step1", "build", "tests/test_unique.py::test_unique_slug_rejects_unsluggable_text"),
    (11, "", "", "no_message"),
]

TEST = "tests/test_a.py::test_b"
CONSTRUCTED = {
    "run_timed_out": Run(statuses={}, timed_out=True),
    "execution_error": Run(execution_error="the report disagrees with pytest's exit code"),
    "collection_import": Run(
        collection_errors={
            "tests/test_a.py": "tests/test_a.py:3: in <module>\n    import pkg.gone\nE   ModuleNotFoundError: No module named 'pkg.gone'"
        }
    ),
    "no_message": Run(statuses={TEST: "failed"}),
}


def test_every_rule_row_has_an_example():
    assert sorted(row for row, *_ in ROW_EXAMPLES) == list(range(len(RULES)))


@pytest.mark.parametrize(("row", "fixture", "phase", "test"), ROW_EXAMPLES)
def test_rule_row_is_the_first_to_match_its_example(row, fixture, phase, test):
    if fixture:
        run = getattr(step(fixture), phase).run
    else:
        run, test = CONSTRUCTED[test], TEST
    assert matching_rule(evidence(run, test)) is RULES[row]
    assert classify(run, test) == RULES[row].mode
