"""chain compare: every test one side alone counts gets its cause, and every step a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swechain_ci.chain.definition import ReferenceArtifact, ReferenceSkip
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.compare import compare
from swechain_ci.models import ChainOracle, Status, StepOracle

P, F, E = Status.passed, Status.failed, Status.error
NET = "tests/test_net.py::test_fetch"


def reference_run(
    folder: Path, name: str, statuses: dict[str, str], collection_error: str = "", messages: dict | None = None
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    messages = messages or {}
    (folder / name).write_text(
        json.dumps(
            {
                "results": {
                    t: {"status": s, "duration": 0.1, "message": messages.get(t, "")} for t, s in statuses.items()
                },
                "collection_error": collection_error,
            }
        )
    )


def one_step(
    tmp_path: Path, ours: dict, theirs_new: dict, theirs_old: dict, their_old_collection: str = "", **step_fields
) -> tuple[StepOracle, list]:
    new_gold = {t: s for t, (s, _) in ours.items()}
    old_gold = {t: o for t, (_, o) in ours.items()}
    flaky = step_fields.pop("flaky", [])
    network = step_fields.pop("needs_network", [])
    related = sorted(t for t, s in new_gold.items() if s == P and old_gold[t] in (F, E) and t not in flaky + network)
    step = StepOracle(
        index=1,
        prev_version="1.0",
        next_version="1.1",
        new_gold=new_gold,
        old_gold=old_gold,
        upgrade_related=related,
        flaky=flaky,
        needs_network=network,
        **step_fields,
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", theirs_new)
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", theirs_old, their_old_collection)
    return compare(oracle, tmp_path / "ref")[0]


def test_equal_sets_agree(tmp_path):
    row = one_step(
        tmp_path,
        {"t::a": (P, F), "t::b": (P, P)},
        {"t::a": "passed", "t::b": "passed"},
        {"t::a": "failed", "t::b": "passed"},
    )
    assert (row.both, row.differences, row.verdict) == (["t::a"], [], "agree")


@pytest.mark.parametrize(
    ("ours", "theirs_new", "theirs_old", "fields", "collection", "side", "cause", "why"),
    [
        # the reference ran online; the test needs the internet here
        (
            {NET: (F, F)},
            {NET: "passed"},
            {NET: "failed"},
            {"needs_network": [NET], "excluded": {NET: "needs_network in 1.1: fetches a real URL"}},
            "",
            "only theirs",
            "needs_network",
            "excluded here: needs_network in 1.1: fetches a real URL",
        ),
        (
            {"t::a": (P, F)},
            {"t::a": "passed"},
            {"t::a": "failed"},
            {"flaky": ["t::a"]},
            "",
            "only theirs",
            "flaky",
            "flaky here",
        ),
        (
            {"t::a": (P, F)},
            {"t::a": "failed"},
            {"t::a": "failed"},
            {},
            "",
            "only ours",
            "reference failing",
            "failed in the reference's own run of 1.1",
        ),
        (
            {"t::a": (P, F)},
            {},
            {},
            {},
            "",
            "only ours",
            "collection error",
            "no result in the reference's new-gold run",
        ),
        (
            {"tests/test_x.py::a": (P, E)},
            {"tests/test_x.py::a": "passed"},
            {"tests/test_x.py::a": "passed"},
            {"old_gold_collection_errors": ["tests/test_x.py"]},
            "",
            "only ours",
            "collection error",
            "collection error in our old-gold run (tests/test_x.py)",
        ),
        (
            {"t::a": (P, P)},
            {"t::a": "passed"},
            {},
            {},
            "ImportError while importing test module",
            "only theirs",
            "collection error",
            "whose collection failed",
        ),
        (
            {"t::a": (P, P)},
            {"t::a": "passed"},
            {"t::a": "failed"},
            {},
            "",
            "only theirs",
            "old gold differs",
            "old code passed here, failed in the reference's old-gold run",
        ),
    ],
)
def test_each_difference_is_explained_by_its_cause(
    tmp_path, ours, theirs_new, theirs_old, fields, collection, side, cause, why
):
    row = one_step(tmp_path, ours, theirs_new, theirs_old, collection, **fields)
    [difference] = row.differences
    assert (difference.side, difference.cause) == (side, cause)
    assert why in difference.why
    if cause == "old gold differs":
        assert row.verdict == "differs: 1 of 1 unexplained"
    else:
        assert row.verdict == f"explained ({cause})"


# The message the reference recorded for Flask 2.1.0's test_scriptinfo on 2.0.3's code (abridged).
HOOK_TRACEBACK = (
    "E   flask.cli.NoAppException: While importing 'cliapp.wsgi', an ImportError was raised:\n"
    'E     File "/app/code/src/flask/cli.py", line 260, in locate_app\n'
    'E     File "/tmp/pytest-plugins/safe_import_plugin.py", line 35, in _patched_import\n'
    "E   ModuleNotFoundError: No module named 'cliapp.wsgi'"
)


def test_the_reference_import_hook_frame_explains_an_old_gold_failure(tmp_path):
    """Flask's locate_app reads the traceback depth; the reference's hook adds a frame in its
    old-code runs, so the test fails there and passes here."""
    test = "tests/test_cli.py::test_scriptinfo"
    new_gold, old_gold = {test: P}, {test: P}
    step = StepOracle(
        index=4, prev_version="1.0", next_version="1.1", new_gold=new_gold, old_gold=old_gold, upgrade_related=[]
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed"})
    reference_run(
        tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "failed"}, messages={test: HOOK_TRACEBACK}
    )
    [row] = compare(oracle, tmp_path / "ref")
    [difference] = row.differences
    assert (difference.side, difference.cause) == ("only theirs", "reference import hook")
    assert "here the old code passed" in difference.why
    assert row.verdict == "explained (reference import hook)"


def test_a_failure_without_the_hook_frame_stays_unexplained(tmp_path):
    test = "tests/test_cli.py::test_scriptinfo"
    row = one_step(tmp_path, {test: (P, P)}, {test: "passed"}, {test: "failed"})
    assert row.differences[0].cause == "old gold differs"


def test_the_folder_above_the_chain_is_found_by_paper_id(tmp_path):
    one_step(tmp_path, {"t::a": (P, F)}, {"t::a": "passed"}, {"t::a": "failed"})
    above = tmp_path / "swe-chain-oracle"
    above.mkdir()
    (tmp_path / "ref").rename(above / "demo_1.0_to_1.1")
    step = StepOracle(
        index=1,
        prev_version="1.0",
        next_version="1.1",
        new_gold={"t::a": P},
        old_gold={"t::a": F},
        upgrade_related=["t::a"],
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    [row] = compare(oracle, above, paper_id="demo_1.0_to_1.1")
    assert (row.both, row.verdict) == (["t::a"], "agree")
    with pytest.raises(SwechainError) as caught:
        compare(oracle, above, paper_id="other_1.0_to_1.1")
    assert str(caught.value) == (
        f"reference folder {above} has neither other_1.0_to_1.1/ nor 1.1/ (results of step 1.0 -> 1.1); "
        "it holds demo_1.0_to_1.1: give the chain's folder of the reference's oracle/, or the folder above it "
        "with the chain's paper_id set"
    )


def test_a_chain_declared_reference_artifact_explains_a_truncated_message(tmp_path):
    """The hook's frame is cut from some of the reference's messages; the chain names the symptom."""
    test = "tests/test_cli.py::test_no_command_echo_loading_error"
    step = StepOracle(
        index=4, prev_version="1.0", next_version="1.1", new_gold={test: P}, old_gold={test: P}, upgrade_related=[]
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed"})
    message = "E  assert 'FLASK_APP' in 'Error: While importing \\'wsgi\\', an ImportError was raised:...'"
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "failed"}, messages={test: message})
    artifact = ReferenceArtifact(signature="an ImportError was raised", reason="the hook's doing")
    [row] = compare(oracle, tmp_path / "ref", artifacts=[artifact])
    assert (row.differences[0].cause, row.verdict) == ("reference artifact", "explained (reference artifact)")
    assert row.differences[0].why == "the hook's doing (reference_artifacts in chain.yaml); here the old code passed"
    [row] = compare(oracle, tmp_path / "ref")
    assert row.verdict == "differs: 1 of 1 unexplained"


def test_a_chain_declared_skip_explains_a_test_only_the_reference_runs(tmp_path):
    """attrs' test_abc.py is skipped below Python 3.10 (ours 3.9, the reference's 3.10)."""
    test = "tests/test_abc.py::TestUpdateAbstractMethods::test_abc_implementation[False]"
    other = "tests/test_other.py::test_skipped_too"
    step = StepOracle(
        index=3,
        prev_version="1.0",
        next_version="1.1",
        new_gold={test: Status.skipped, other: Status.skipped},
        old_gold={test: Status.skipped, other: Status.skipped},
        upgrade_related=[],
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed", other: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "failed", other: "failed"})
    skip = ReferenceSkip(tests=["tests/test_abc.py::TestUpdateAbstractMethods"], reason="3.10+ only; ours is 3.9")
    [row] = compare(oracle, tmp_path / "ref", skips=[skip])
    causes = {d.test: (d.cause, d.why) for d in row.differences}
    assert causes[test] == (
        "environment",
        "skipped in our new-gold run: 3.10+ only; ours is 3.9 (reference_skips in chain.yaml)",
    )
    assert causes[other][0] == "new gold differs", "a skip the chain does not declare stays unexplained"
    assert row.verdict == "differs: 1 of 2 unexplained"


def test_a_partial_copy_of_the_reference_compares_the_steps_it_holds(tmp_path):
    steps = [
        StepOracle(
            index=i,
            prev_version=a,
            next_version=b,
            new_gold={"t::a": P},
            old_gold={"t::a": F},
            upgrade_related=["t::a"],
        )
        for i, (a, b) in enumerate([("1.0", "1.1"), ("1.1", "1.2")], start=1)
    ]
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1", "1.2"], environments={}, steps=steps, sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.2", "v1.2_test_results.json", {"t::a": "passed"})
    reference_run(tmp_path / "ref" / "1.2", "v1.1_cross_test_results.json", {"t::a": "failed"})
    assert [(r.index, r.verdict) for r in compare(oracle, tmp_path / "ref")] == [(2, "agree")]
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "1.2").mkdir()
    with pytest.raises(SwechainError, match="holds no step's results"):
        compare(oracle, tmp_path / "empty")


def test_a_declared_known_failure_explains_a_test_only_the_reference_counts(tmp_path):
    """poetry's tests that write into the read-only test tree fail here and pass in the reference."""
    test = "tests/test_builder.py::test_builds_in_its_fixture"
    other = "tests/test_other.py::test_fails_here_too"
    step = StepOracle(
        index=2,
        prev_version="1.0",
        next_version="1.1",
        new_gold={test: Status.failed, other: Status.failed},
        old_gold={test: Status.failed, other: Status.failed},
        upgrade_related=[],
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed", other: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "failed", other: "failed"})
    [row] = compare(oracle, tmp_path / "ref", known_failures={"1.1": [test], "1.0": [other]})
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {test: "environment", other: "new gold differs"}, "only the target version's declarations count"
    assert "a declared known failure of 1.1" in next(d.why for d in row.differences if d.test == test)
    assert row.verdict == "differs: 1 of 2 unexplained"


def test_a_test_importing_a_module_the_target_adds_is_explained_by_the_references_kept_modules(tmp_path):
    """jinja2-2 2.9 adds jinja2/idtracking.py, and urllib3 2.2.0's conftest imports urllib3.http2: the
    reference's old-code tree keeps the target's files, so its old-gold run of such tests passes; here
    the old code has no such module. Found in the two trees, for every chain alike."""
    from swechain_ci.evaluation.compare import added_module_importers, kept_modules_of

    for version, modules in {"1.0": ["__init__", "core"], "1.1": ["__init__", "core", "tracking", "http2"]}.items():
        for module in modules:
            path = tmp_path / version / "src" / "demo" / f"{module}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        tests = tmp_path / version / "tests"
        (tests / "sub").mkdir(parents=True, exist_ok=True)
        (tests / "test_core.py").write_text("from demo import core\n")
        (tests / "test_tracking.py").write_text("from demo.tracking import symbols\nimport os\n")
        (tests / "sub" / "conftest.py").write_text("import demo.http2\n")
        (tests / "sub" / "test_any.py").write_text("def test_it(): pass\n")
    (tmp_path / "1.1" / "tests" / "test_broken.py").write_text("def (:\n")  # unparsable: no imports read
    importers = added_module_importers(tmp_path / "1.0", tmp_path / "1.1", "src", "tests", "demo")
    assert importers == {"tests/sub/conftest.py": ["demo.http2"], "tests/test_tracking.py": ["demo.tracking"]}
    assert kept_modules_of("tests/sub/test_any.py::test_it", importers) == ["demo.http2"]
    assert kept_modules_of("tests/test_core.py::test_core", importers) == []
    assert added_module_importers(tmp_path / "1.0", tmp_path / "1.0", "src", "tests", "demo") == {}

    tracked, core = "tests/test_tracking.py::test_symbols", "tests/test_core.py::test_core"
    step = StepOracle(
        index=2,
        prev_version="1.0",
        next_version="1.1",
        new_gold={tracked: P, core: P},
        old_gold={tracked: F, core: F},
        upgrade_related=[tracked, core],
    )
    oracle = ChainOracle(
        chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[]
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {tracked: "passed", core: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {tracked: "passed", core: "passed"})
    [row] = compare(oracle, tmp_path / "ref", importers_of=lambda step: importers)
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {tracked: "reference kept modules", core: "old gold differs"}
    assert row.verdict == "differs: 1 of 2 unexplained"
    asked = []
    [row] = compare(oracle, tmp_path / "ref", importers_of=lambda step: asked.append(step.index) or {})
    assert asked == [2] and row.verdict == "differs: 2 of 2 unexplained"
