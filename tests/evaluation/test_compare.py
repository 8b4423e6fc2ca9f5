"""chain compare: every test one side alone counts gets its cause, and every step a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swechain_ci.chain.definition import ReferenceArtifact, ReferenceEnvironment, ReferenceSkip
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.compare import TreeChanges, compare
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


def demo_oracle(step: StepOracle) -> ChainOracle:
    """A chain of versions 1.0 and 1.1 whose one step is ``step``."""
    return ChainOracle(chain="demo", inputs_hash="x", versions=["1.0", "1.1"], environments={}, steps=[step], sanity=[])


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
    oracle = demo_oracle(step)
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
            {"flaky": ["t::a"], "excluded": {"t::a": "flaky: its outcome changed between new-gold runs"}},
            "",
            "only theirs",
            "flaky",
            "excluded here: flaky: its outcome changed between new-gold runs",
        ),
        (
            {"t::a": (P, F)},
            {"t::a": "passed"},
            {"t::a": "failed"},
            {"flaky": ["t::a"], "excluded": {"t::a": "flaky in 1.1 (oracle.flaky): thread idents are reused"}},
            "",
            "only theirs",
            "flaky",
            "excluded here: flaky in 1.1 (oracle.flaky): thread idents are reused",
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
    oracle = demo_oracle(step)
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
    oracle = demo_oracle(step)
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
    oracle = demo_oracle(step)
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
    oracle = demo_oracle(step)
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
    oracle = demo_oracle(step)
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed", other: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "failed", other: "failed"})
    [row] = compare(oracle, tmp_path / "ref", known_failures={"1.1": [test], "1.0": [other]})
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {test: "environment", other: "new gold differs"}, "only the target version's declarations count"
    assert "a declared known failure of 1.1" in next(d.why for d in row.differences if d.test == test)
    assert row.verdict == "differs: 1 of 2 unexplained"


def demo_chain(tmp_path: Path):
    from swechain_ci.chain.definition import Chain, ChainConfig

    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "demo",
            "import_name": "demo",
            "source_root": "src",
            "protected_files": ["pyproject.toml", "support/**"],
            "versions": [{"version": v, "source": {"kind": "pypi"}} for v in ("1.0", "1.1")],
        }
    )
    return Chain(config, tmp_path)


def write_trees(tmp_path: Path) -> None:
    """1.1 adds demo.tracking and demo.http2, and changes the protected test server support/server.py."""
    files = {
        "1.0": {"src/demo/__init__.py": "", "src/demo/core.py": "", "support/server.py": "def start(): ...\n"},
        "1.1": {
            "src/demo/__init__.py": "",
            "src/demo/core.py": "",
            "src/demo/tracking.py": "",
            "src/demo/http2.py": "",
            "support/server.py": "def start(quit_event=None): ...\n",
            "support/__init__.py": "",
        },
    }
    tests = {
        "tests/test_core.py": "from demo import core\n",
        "tests/test_tracking.py": "from demo.tracking import symbols\nimport os\n",
        "tests/sub/conftest.py": "import demo.http2\n",
        "tests/sub/test_any.py": "def test_it(): pass\n",
        "tests/test_socket.py": "from support.server import start\n",
    }
    for version, tree in files.items():
        for rel, text in {**tree, **tests}.items():
            path = tmp_path / version / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    (tmp_path / "1.1" / "tests" / "test_broken.py").write_text("def (:\n")  # unparsable: no imports read


def test_the_two_trees_show_the_modules_the_target_adds_and_the_support_code_it_changes(tmp_path):
    """The reference's old-code runs run in the target's tree with the old release copied over it: a
    module the target adds is still there (jinja2-2 2.9's idtracking, urllib3 2.2.0's http2, imported by
    its conftest), and protected support code outside the test folder is the old release's (urllib3
    2.2.2's dummyserver.testcase)."""
    from swechain_ci.evaluation.compare import imported_by, tree_changes

    write_trees(tmp_path)
    changes = tree_changes(tmp_path / "1.0", tmp_path / "1.1", demo_chain(tmp_path))
    assert changes.added == {"tests/sub/conftest.py": ["demo.http2"], "tests/test_tracking.py": ["demo.tracking"]}
    assert changes.support == {"tests/test_socket.py": ["support.server"]}
    assert imported_by("tests/sub/test_any.py::test_it", changes.added) == ["demo.http2"]
    assert imported_by("tests/test_core.py::test_core", changes.added) == []
    same = tree_changes(tmp_path / "1.0", tmp_path / "1.0", demo_chain(tmp_path))
    assert (same.added, same.support) == ({}, {})


def test_differences_from_the_references_tree_overlay_are_explained_from_the_two_trees(tmp_path):
    from swechain_ci.evaluation.compare import tree_changes

    write_trees(tmp_path)
    changes = tree_changes(tmp_path / "1.0", tmp_path / "1.1", demo_chain(tmp_path))
    tracked, core, socket = (
        "tests/test_tracking.py::test_symbols",
        "tests/test_core.py::test_core",
        "tests/test_socket.py::t",
    )
    step = StepOracle(
        index=2,
        prev_version="1.0",
        next_version="1.1",
        new_gold={tracked: P, core: P, socket: P},
        old_gold={tracked: F, core: F, socket: P},
        upgrade_related=[tracked, core],
    )
    oracle = demo_oracle(step)
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", dict.fromkeys([tracked, core, socket], "passed"))
    reference_run(
        tmp_path / "ref" / "1.1",
        "v1.0_cross_test_results.json",
        {tracked: "passed", core: "passed", socket: "failed"},
        messages={socket: "TypeError: start() got an unexpected keyword argument 'quit_event'"},
    )
    [row] = compare(oracle, tmp_path / "ref", changes_of=lambda step: changes)
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {tracked: "reference kept modules", core: "old gold differs", socket: "reference old support code"}
    assert row.verdict == "differs: 1 of 3 unexplained"
    asked = []
    [row] = compare(oracle, tmp_path / "ref", changes_of=lambda step: asked.append(step.index) or TreeChanges())
    assert asked == [2] and row.verdict == "differs: 3 of 3 unexplained"


def test_old_support_code_also_explains_a_test_only_we_count(tmp_path):
    """urllib3 2.6.3's dummyserver serves a compressed redirect, which 2.6.2's code decompresses (the
    bug 2.6.3 fixes): here the test fails on the old code; the reference's old-code run takes 2.6.2's
    dummyserver, which serves no such redirect, so it passes there."""
    from swechain_ci.evaluation.compare import tree_changes

    write_trees(tmp_path)
    changes = tree_changes(tmp_path / "1.0", tmp_path / "1.1", demo_chain(tmp_path))
    socket, core = "tests/test_socket.py::test_redirect", "tests/test_core.py::test_core"
    step = StepOracle(
        index=12,
        prev_version="1.0",
        next_version="1.1",
        new_gold={socket: P, core: P},
        old_gold={socket: F, core: F},
        upgrade_related=[socket, core],
    )
    oracle = demo_oracle(step)
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {socket: "passed", core: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {socket: "passed", core: "passed"})
    [row] = compare(oracle, tmp_path / "ref", changes_of=lambda step: changes)
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {socket: "reference old support code", core: "old gold differs"}
    assert "imports support.server" in next(d.why for d in row.differences if d.test == socket)


def test_a_case_named_after_a_module_the_target_adds_exists_in_the_references_old_code_tree(tmp_path):
    """pytest 7.0.1 adds _pytest/python_path.py, and test_meta's test_no_warnings has a case per module it
    finds in the package: the reference's old-code tree keeps the target's file, so its old-gold run has
    the [_pytest.python_path] case and passes it; on 7.0.0's own tree there is no such case (failed)."""
    from swechain_ci.evaluation.compare import tree_changes

    write_trees(tmp_path)
    changes = tree_changes(tmp_path / "1.0", tmp_path / "1.1", demo_chain(tmp_path))
    assert changes.modules_added == ["demo.http2", "demo.tracking"]
    added, old = (
        "tests/test_meta.py::test_no_warnings[demo.tracking]",
        "tests/test_meta.py::test_no_warnings[demo.core]",
    )
    step = StepOracle(
        index=1,
        prev_version="1.0",
        next_version="1.1",
        new_gold={added: P, old: P},
        old_gold={old: F},
        upgrade_related=[added, old],
    )
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {added: "passed", old: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {added: "passed", old: "passed"})
    [row] = compare(demo_oracle(step), tmp_path / "ref", changes_of=lambda step: changes)
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {added: "reference kept modules", old: "old gold differs"}, "a module the old code has too"
    assert "the module demo.tracking, which the target adds" in next(d.why for d in row.differences if d.test == added)


def test_a_module_the_target_turns_into_a_package_is_the_targets_in_the_references_old_code_tree(tmp_path):
    """poetry 1.6.0 turns poetry/utils/env.py into the package poetry/utils/env/: copied over 1.6.0's
    tree, 1.5.1's env.py sits beside the package, which Python imports first, so the reference's old
    code runs 1.6.0's MockEnv (test_installer's [amd64] case passes there, fails here)."""
    from swechain_ci.evaluation.compare import tree_changes

    trees = {
        "1.0": {"src/demo/__init__.py": "", "src/demo/env.py": "", "src/demo/sub/__init__.py": ""},
        "1.1": {
            "src/demo/__init__.py": "",
            "src/demo/env/__init__.py": "from demo.env.mock_env import MockEnv\n",
            "src/demo/env/mock_env.py": "",
            "src/demo/sub/__init__.py": "",
        },
    }
    tests = {"tests/test_installer.py": "from demo.env import MockEnv\n", "tests/test_sub.py": "import demo.sub\n"}
    for version, tree in trees.items():
        for rel, text in {**tree, **tests}.items():
            (tmp_path / version / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / version / rel).write_text(text)
    changes = tree_changes(tmp_path / "1.0", tmp_path / "1.1", demo_chain(tmp_path))
    assert changes.shadowed == {"tests/test_installer.py": ["demo.env"]}, "demo.sub was a package before too"
    assert changes.added == {}, "the package's new submodule is not imported by a test"
    installer, sub = "tests/test_installer.py::test_amd64", "tests/test_sub.py::test_sub"
    step = StepOracle(
        index=2,
        prev_version="1.0",
        next_version="1.1",
        new_gold={installer: P, sub: P},
        old_gold={installer: F, sub: F},
        upgrade_related=[installer, sub],
    )
    oracle = demo_oracle(step)
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {installer: "passed", sub: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {installer: "passed", sub: "passed"})
    [row] = compare(oracle, tmp_path / "ref", changes_of=lambda step: changes)
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {installer: "reference kept modules", sub: "old gold differs"}
    assert "turns demo.env from a module file into a package" in row.differences[0].why


def test_a_parametrized_case_printed_differently_by_the_two_pythons_is_the_same_test(tmp_path):
    """poetry 1.8.2's IntEnum parameter: Python 3.11 prints its value (`[-2-2]`), the reference's 3.10
    its name (`[NegativeOffsetFailure.one_more-2]`). The function's ids missing on each side pair up, as
    many here as there; an id with no counterpart stays a collection difference."""
    chunk = "tests/test_lazy.py::test_chunk"
    ours_ids, their_ids = (
        [f"{chunk}[-1-1]", f"{chunk}[-2-2]"],
        [f"{chunk}[Failure.as_positive-1]", f"{chunk}[Failure.one_more-2]"],
    )
    lone = "tests/test_lazy.py::test_lone[x]"
    step = StepOracle(
        index=7,
        prev_version="1.0",
        next_version="1.1",
        new_gold={**dict.fromkeys(ours_ids, P), f"{chunk}[0-0]": P, lone: P},
        old_gold={**dict.fromkeys(ours_ids, F), f"{chunk}[0-0]": F, lone: F},
        upgrade_related=[*ours_ids, f"{chunk}[0-0]", lone],
    )
    oracle = demo_oracle(step)
    reference_run(
        tmp_path / "ref" / "1.1", "v1.1_test_results.json", dict.fromkeys([*their_ids, f"{chunk}[0-0]"], "passed")
    )
    reference_run(
        tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", dict.fromkeys([*their_ids, f"{chunk}[0-0]"], "failed")
    )
    [row] = compare(oracle, tmp_path / "ref")
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {**dict.fromkeys([*ours_ids, *their_ids], "parameter ids"), lone: "collection error"}
    assert row.both == [f"{chunk}[0-0]"]
    why = next(d.why for d in row.differences if d.test == ours_ids[0])
    assert "the reference's new-gold run has" in why and their_ids[0] in why


def test_a_declared_known_failure_of_the_old_version_explains_a_test_only_we_count(tmp_path):
    """poetry 1.6.0's code fails 1.7.0's test_run_installs_with_local_setuptools_directory here (it
    writes egg-info into the read-only test tree), passes it in the reference: not the upgrade's doing."""
    test, other = "tests/test_installer.py::test_local_setuptools", "tests/test_other.py::test_changed"
    step = StepOracle(
        index=3,
        prev_version="1.0",
        next_version="1.1",
        new_gold={test: P, other: P},
        old_gold={test: F, other: F},
        upgrade_related=[test, other],
    )
    oracle = demo_oracle(step)
    reference_run(tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed", other: "passed"})
    reference_run(tmp_path / "ref" / "1.1", "v1.0_cross_test_results.json", {test: "passed", other: "passed"})
    [row] = compare(oracle, tmp_path / "ref", known_failures={"1.0": [test], "1.1": [other]})
    causes = {d.test: d.cause for d in row.differences}
    assert causes == {test: "environment", other: "old gold differs"}, "only the old version's declarations count"
    assert "a declared known failure of 1.0 here" in next(d.why for d in row.differences if d.test == test)


def test_a_declared_reference_environment_explains_a_test_only_we_count(tmp_path):
    """pytest 8.2.0's code crashes on a directory without permissions here (8.2.1 fixes it); the
    reference runs as root, whom chmod(0) does not stop, so its old-gold run passes the test."""
    test = "testing/test_collection.py::TestCollectFS::test_missing_permissions_on_unselected_directory_doesnt_crash"
    other, broken_there = "testing/test_other.py::test_changed", "testing/test_collection.py::TestCollectFS::test_x"
    step = StepOracle(
        index=6,
        prev_version="1.0",
        next_version="1.1",
        new_gold={test: P, other: P, broken_there: P},
        old_gold={test: F, other: F, broken_there: F},
        upgrade_related=[test, other, broken_there],
    )
    oracle = demo_oracle(step)
    reference_run(
        tmp_path / "ref" / "1.1", "v1.1_test_results.json", {test: "passed", other: "passed", broken_there: "passed"}
    )
    reference_run(
        tmp_path / "ref" / "1.1",
        "v1.0_cross_test_results.json",
        {test: "passed", other: "passed", broken_there: "failed"},
    )
    root = ReferenceEnvironment(
        tests=["testing/test_collection.py::TestCollectFS"], reason="the reference runs its tests as root"
    )
    [row] = compare(oracle, tmp_path / "ref", environments=[root])
    causes = {d.test: d.cause for d in row.differences}
    # broken_there failed in the reference's old gold too: both count it, nothing to explain
    assert causes == {test: "environment", other: "old gold differs"}, "only the declared tests, where it passed"
    why = next(d.why for d in row.differences if d.test == test)
    assert "runs its tests as root (reference_environment in chain.yaml)" in why
    assert row.verdict == "differs: 1 of 2 unexplained"
