"""The hidden-test harness in real containers: tolerance, quirks, limits, time-outs, floods."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain, PytestQuirks, load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import has_execution_error, resolve
from swechain_ci.models import Status

pytestmark = pytest.mark.docker
LABELS = {"swechain-ci.test": "harness"}


@pytest.fixture(scope="module")
def toy(docker_engine):
    chain = load_chain("toy")
    sandbox = DockerSandbox()
    return chain, sandbox, images.ensure_images(sandbox, chain)


def with_config(chain: Chain, **changes) -> Chain:
    return Chain(chain.config.model_copy(update=changes), chain.folder)


def code_of(chain: Chain, version: str, dest: Path) -> Path:
    shutil.copytree(sources.materialize(chain, version).code, dest, symlinks=True)
    return dest


def test_gold_runs_as_non_root_with_only_loopback(toy, tmp_path):
    chain, sandbox, built = toy
    code = code_of(chain, "0.2.0", tmp_path / "code")
    init = code / "src" / "toyslug" / "__init__.py"
    init.write_text(
        "import os as _os\n"
        "if _os.getuid() == 0: raise RuntimeError('running as root')\n"
        "if sorted(_os.listdir('/sys/class/net')) != ['lo']: raise RuntimeError('has a network')\n" + init.read_text()
    )
    run = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None
    assert not run.collection_errors
    assert set(run.statuses.values()) == {Status.passed}
    assert len(run.statuses) == 35


def test_the_chain_hosts_resolve_in_the_test_container_and_nothing_else_does(toy, tmp_path):
    """`pytest.hosts` (urllib3's 'localhost.', as the reference's image maps it) resolves in the run's
    container; an unmapped name does not, and the network stays loopback only."""
    chain, sandbox, built = toy
    mapped = with_config(chain, pytest=chain.config.pytest.model_copy(update={"hosts": {"localhost.": "127.0.0.1"}}))
    code = code_of(chain, "0.2.0", tmp_path / "code")
    init = code / "src" / "toyslug" / "__init__.py"
    init.write_text(
        "import socket as _socket\n"
        "if _socket.gethostbyname('localhost.') != '127.0.0.1': raise RuntimeError('localhost. unmapped')\n"
        "try:\n    _socket.gethostbyname('example.com')\nexcept OSError:\n    pass\n"
        "else:\n    raise RuntimeError('example.com resolved')\n" + init.read_text()
    )
    run = evaluate(sandbox, mapped, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None and not run.collection_errors
    assert set(run.statuses.values()) == {Status.passed}
    plain = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    assert Status.passed not in set(plain.statuses.values())  # without the mapping the import fails


def test_the_loopback_has_its_ipv6_address_only_when_the_chain_asks(toy, tmp_path):
    """`pytest.ipv6_loopback` (urllib3 2.3.0 on binds its test servers to ::1 as well, as the reference's
    containers allow): a socket binds ::1 in the run's container; without it Docker's network-less
    container has no IPv6 address, and either way the only interface is the loopback."""
    chain, sandbox, built = toy
    ipv6 = with_config(chain, pytest=chain.config.pytest.model_copy(update={"ipv6_loopback": True}))
    code = code_of(chain, "0.2.0", tmp_path / "code")
    init = code / "src" / "toyslug" / "__init__.py"
    init.write_text(
        "import os as _os, socket as _socket\n"
        "if sorted(_os.listdir('/sys/class/net')) != ['lo']: raise RuntimeError('has a network')\n"
        "_socket.socket(_socket.AF_INET6).bind(('::1', 0))\n" + init.read_text()
    )
    run = evaluate(sandbox, ipv6, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None and not run.collection_errors
    assert set(run.statuses.values()) == {Status.passed}
    plain = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    assert Status.passed not in set(plain.statuses.values())  # no ::1 to bind: the import fails


def test_a_failed_name_import_fails_only_the_tests_that_use_it(toy, tmp_path):
    chain, sandbox, built = toy
    run = evaluate(sandbox, chain, built.versions["0.2.0"], code_of(chain, "0.1.0", tmp_path / "c"), LABELS)
    unique = {t: s for t, s in run.statuses.items() if t.startswith("tests/test_unique.py::")}
    assert not run.collection_errors
    assert unique["tests/test_unique.py::test_slugify_is_idempotent"] == Status.passed
    assert unique["tests/test_unique.py::test_existing_slugs_are_slugify_fixed_points"] == Status.passed
    assert sorted(t for t, s in unique.items() if s == Status.failed) == [
        "tests/test_unique.py::test_unique_slug_appends_counter",
        "tests/test_unique.py::test_unique_slug_custom_sep",
        "tests/test_unique.py::test_unique_slug_rejects_unsluggable_text",
        "tests/test_unique.py::test_unique_slug_skips_taken_counters",
        "tests/test_unique.py::test_unique_slug_when_free",
    ]
    assert [(f.test_file, f.module, f.names) for f in run.failed_imports] == [
        ("tests/test_unique.py", "toyslug", ["unique_slug"])
    ]
    assert has_execution_error(run, resolve(run, run.statuses))


def test_an_option_the_chain_does_not_remove_breaks_the_run_and_is_never_a_pass(toy, tmp_path):
    chain, sandbox, built = toy
    unquirked = with_config(chain, pytest=PytestQuirks())  # keeps --cov, whose plugin is absent
    run = evaluate(sandbox, unquirked, built.versions["0.2.0"], code_of(chain, "0.2.0", tmp_path / "c"), LABELS)
    assert run.execution_error is not None
    assert "--cov" in run.output_tail
    gold_tests = ["tests/test_package.py::test_version", "tests/test_slugify.py::test_slugify_basic[spaces]"]
    assert set(resolve(run, gold_tests).values()) == {Status.error}


def hang_in_unique_slug(code: Path) -> None:
    """The candidate's unique_slug never returns."""
    init = code / "src" / "toyslug" / "__init__.py"
    init.write_text(init.read_text() + "\n\ndef unique_slug(*args, **kwargs):\n    while True:\n        pass\n")


def test_a_hanging_test_hits_its_own_time_limit(toy, tmp_path):
    chain, sandbox, built = toy
    code = code_of(chain, "0.2.0", tmp_path / "c")
    hang_in_unique_slug(code)
    quick = with_config(chain, timeouts=chain.config.timeouts.model_copy(update={"test_s": 1}))
    run = evaluate(sandbox, quick, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None and not run.timed_out
    assert run.statuses["tests/test_unique.py::test_unique_slug_when_free"] == Status.failed
    assert "Timeout" in run.error_messages["tests/test_unique.py::test_unique_slug_when_free"]
    assert run.statuses["tests/test_slugify.py::test_slugify_basic[spaces]"] == Status.passed


def test_a_run_past_its_time_limit_is_killed_and_unreached_tests_are_errors(toy, tmp_path):
    chain, sandbox, built = toy
    code = code_of(chain, "0.2.0", tmp_path / "c")
    hang_in_unique_slug(code)
    short = with_config(chain, timeouts=chain.config.timeouts.model_copy(update={"run_s": 4, "test_s": 600}))
    gold = evaluate(sandbox, chain, built.versions["0.2.0"], code_of(chain, "0.2.0", tmp_path / "g"), LABELS)
    run = evaluate(sandbox, short, built.versions["0.2.0"], code, LABELS)
    assert run.timed_out
    assert run.execution_error is None
    outcomes = resolve(run, gold.statuses)
    assert outcomes["tests/test_unique.py::test_unique_slug_when_free"] == Status.error
    # Tests that finished before the kill keep their results.
    assert outcomes["tests/test_package.py::test_version"] == Status.passed
    assert has_execution_error(run, outcomes)


def test_an_output_flood_does_not_break_the_harness(toy, tmp_path):
    chain, sandbox, built = toy
    code = code_of(chain, "0.2.0", tmp_path / "c")
    init = code / "src" / "toyslug" / "__init__.py"
    # About 80 MB on import, then 5 MB more from every is_slug call.
    init.write_text("import os as _os\nfor _ in range(64): _os.write(1, b'flood ' * 200_000)\n" + init.read_text())
    checks = code / "src" / "toyslug" / "checks.py"
    checks.write_text(
        checks.read_text().replace(
            "def is_slug(text: str) -> bool:\n", "def is_slug(text: str) -> bool:\n    print('x' * 5_000_000)\n", 1
        )
    )
    run = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None
    assert len(run.statuses) == 35 and set(run.statuses.values()) == {Status.passed}
    assert len(run.output_tail) <= 8000


def test_a_candidate_that_kills_pytest_costs_only_the_file_it_kills(toy, tmp_path):
    chain, sandbox, built = toy
    code = code_of(chain, "0.2.0", tmp_path / "c")
    checks = code / "src" / "toyslug" / "checks.py"
    checks.write_text(
        checks.read_text().replace(
            "def is_slug(text: str) -> bool:\n", "def is_slug(text: str) -> bool:\n    import os; os._exit(0)\n", 1
        )
    )
    gold = evaluate(sandbox, chain, built.versions["0.2.0"], code_of(chain, "0.2.0", tmp_path / "g"), LABELS)
    run = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    assert run.execution_error is None and not run.timed_out
    outcomes = resolve(run, gold.statuses)
    # Both modules that call is_slug kill pytest, also when retried alone; the rest is unharmed.
    killed = {t for t in gold.statuses if t.split("::")[0] in ("tests/test_checks.py", "tests/test_slugify.py")}
    assert killed and {outcomes[t] for t in killed} == {Status.failed}
    assert {s for t, s in outcomes.items() if t not in killed} == {Status.passed}
