"""Cross-check our oracle with the reference implementation's published oracle results.

The reference layout, per step prev -> next, in a chain folder (``--reference`` may also name the
folder above it, which holds one folder per chain, named by the paper's chain id):
``<next>/v<next>_test_results.json`` (new gold) and
``<next>/v<prev>_cross_test_results.json`` (old gold), each mapping test node
ids to ``{status, ...}``. Upgrade-related = passed in new gold, and failed or
error (or absent) in old gold. Each test that one side alone counts is explained by the
first matching rule (``only_theirs_cause``, ``only_ours_cause``), and each step gets a verdict.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import TypeVar

from pydantic import BaseModel, Field

from swechain_ci.chain.definition import Chain, ReferenceArtifact, ReferenceEnvironment, ReferenceSkip, ReferenceTests
from swechain_ci.chain.sources import is_hidden, is_protected
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.change_scan import imported_modules
from swechain_ci.evaluation.outcomes import is_under
from swechain_ci.models import ChainOracle, Status, StepOracle, Strict

ReferenceTestsT = TypeVar("ReferenceTestsT", bound=ReferenceTests)

BROKEN_REFERENCE = {"failed", "error"}
# Differences with a known cause; any other leaves the step "unexplained".
EXPLAINED = {
    "needs_network",
    "flaky",
    "reference failing",
    "collection error",
    "reference import hook",
    "reference artifact",
    "reference kept modules",
    "reference old support code",
    "parameter ids",
    "environment",
}

# Frames of the reference's own import hook (its pytest plugin that tolerates a failed
# ``from X import Y``) as they show in a traceback it recorded. In its old-code runs every import
# passes through the hook, so one frame more sits between an importer and the import: code that
# reads the traceback's depth (Flask's locate_app tells "module not found" from "ImportError inside
# the module" by ``tb_next``) then fails there and passes here. Ordered; the first match names it.
REFERENCE_ARTIFACTS: tuple[tuple[str, str, str], ...] = (
    (
        "safe_import_plugin.py",
        "reference import hook",
        "the reference's old-gold run failed with its import hook's frame in the traceback "
        "(safe_import_plugin.py, _patched_import): an artifact of the reference's harness; "
        "here the old code {ours}",
    ),
    (
        "return _real_import(name, globals, locals, fromlist, level)",
        "reference import hook",
        "the reference's old-gold run failed with its import hook's call (_real_import) in the "
        "traceback: an artifact of the reference's harness; here the old code {ours}",
    ),
)


def package_modules(package_root: Path, import_name: str) -> set[str]:
    """Dotted names of the modules of ``import_name`` under ``package_root`` (the tree's source root)."""
    return {
        module_name(PurePosixPath(path.relative_to(package_root).as_posix()))
        for path in (package_root / import_name).rglob("*.py")
    }


def file_imports(path: Path) -> set[str]:
    """Every module a Python file imports (as the change scan reads an import), and each
    ``from X import y`` as ``X.y`` too (y may be a module)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        names.update(imported_modules(node))
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


class TreeChanges(Strict):
    """What the step's two source trees tell about the reference's old-code runs, which run in the
    target's tree with the old release's files copied over it: the target's test files (conftest.py
    included, by path from the tree's root) that import a module of the package the target adds (kept
    there, missing here), those that import a module the target turned from a file into a package (the
    target's package kept there shadows the old release's ``X.py``), and those that import protected
    support code outside the test folder that the target changed (the old release's there, the
    target's here, with the hidden tests). ``modules_added``: every module of the package the target
    adds, for a test whose parameter names one (pytest's test_meta walks the package's modules)."""

    added: dict[str, list[str]] = Field(default_factory=dict)
    shadowed: dict[str, list[str]] = Field(default_factory=dict)
    support: dict[str, list[str]] = Field(default_factory=dict)
    modules_added: list[str] = Field(default_factory=list)


def module_name(rel: PurePosixPath) -> str:
    parts = rel.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files_made_packages(prev_root: Path, next_root: Path, import_name: str) -> set[str]:
    """Modules that are a plain ``X.py`` under ``prev_root`` and a package ``X/__init__.py`` under
    ``next_root``: a tree holding both imports the package (a directory is found before the file)."""
    return {
        module_name(PurePosixPath(init.parent.relative_to(next_root).as_posix()) / "__init__.py")
        for init in (next_root / import_name).rglob("__init__.py")
        if (prev_root / init.parent.relative_to(next_root)).with_suffix(".py").is_file()
    }


def tree_changes(prev_tree: Path, next_tree: Path, chain: Chain) -> TreeChanges:
    config = chain.config
    prev_root, next_root = prev_tree / config.source_root, next_tree / config.source_root
    added = package_modules(next_root, config.import_name) - package_modules(prev_root, config.import_name)
    shadowed = module_files_made_packages(prev_root, next_root, config.import_name)
    support = set()
    for path in next_tree.rglob("*.py"):
        rel = PurePosixPath(path.relative_to(next_tree).as_posix())
        if is_hidden(rel, config.test_folder) or rel.name == "conftest.py" or not is_protected(rel, chain):
            continue
        before = prev_tree / rel
        if not before.is_file() or before.read_bytes() != path.read_bytes():
            support.add(module_name(rel))
    changes = TreeChanges(modules_added=sorted(added))
    for path in sorted((next_tree / config.test_folder).rglob("*.py")) if added | shadowed | support else []:
        imported = file_imports(path)
        file = path.relative_to(next_tree).as_posix()
        if found := sorted(imported & added):
            changes.added[file] = found
        if found := sorted(imported & shadowed):
            changes.shadowed[file] = found
        if found := sorted(imported & support):
            changes.support[file] = found
    return changes


def parameter_of(test: str) -> str | None:
    """The id in a parametrized test's brackets (``test_no_warnings[_pytest.python_path]``), else None."""
    _, bracket, rest = test.partition("[")
    return rest[:-1] if bracket and rest.endswith("]") else None


def imported_by(test: str, importers: Mapping[str, Sequence[str]]) -> list[str]:
    """The modules of ``importers`` that a test's own file, or a conftest.py in a folder above it, imports."""
    file = PurePosixPath(test.split("::", 1)[0])
    owners = [file.as_posix()] + [(folder / "conftest.py").as_posix() for folder in file.parents]
    return sorted({module for owner in owners for module in importers.get(owner, ())})


class Difference(Strict):
    test: str
    side: str  # "only ours" or "only theirs"
    cause: str  # one of EXPLAINED, or "old gold differs" / "new gold differs"
    why: str


class StepAgreement(Strict):
    index: int
    prev_version: str
    next_version: str
    both: list[str]
    only_ours: list[str]
    only_theirs: list[str]
    jaccard: float | None
    differences: list[Difference] = Field(default_factory=list)
    verdict: str = "agree"


class ReferenceRun(BaseModel):
    """One published run: per-test statuses and messages, and whether collection failed somewhere."""

    statuses: dict[str, str]
    collection_error: bool
    messages: dict[str, str] = {}


def load_run(path: Path) -> ReferenceRun:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SwechainError(f"{path}: cannot read reference results ({exc})") from None
    results = data.get("results", {}) if isinstance(data, dict) else {}
    if not isinstance(results, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("status"), str) for e in results.values()
    ):
        raise SwechainError(f"{path}: cannot read reference results ('results' is not test id -> {{status, ...}})")
    return ReferenceRun(
        statuses={test: entry["status"] for test, entry in results.items()},
        collection_error=bool(data.get("collection_error")),
        messages={t: str(e["message"]) for t, e in results.items() if e.get("message")},
    )


def reference_folder(
    reference: Path, paper_id: str | None, first_step: tuple[str, str], targets: Sequence[str] = ()
) -> Path:
    """The chain's own folder of published results: ``reference`` itself (it has a folder for one
    of the steps' ``targets``), or its subfolder named by the chain's paper id (``swe-chain-oracle/``
    holds ``pyjwt_2.0.0_to_2.12.1/``)."""
    if not reference.is_dir():
        raise SwechainError(f"reference folder {reference} does not exist")
    prev, next_ = first_step
    if any((reference / target).is_dir() for target in (next_, *targets)):
        return reference
    if paper_id and (reference / paper_id).is_dir():
        return reference / paper_id
    chains = sorted(p.name for p in reference.iterdir() if p.is_dir() and "_to_" in p.name)
    hint = f"; it holds {', '.join(chains)}" if chains else ""
    wanted = f"{paper_id}/ nor " if paper_id else ""
    raise SwechainError(
        f"reference folder {reference} has neither {wanted}{next_}/ (results of step {prev} -> {next_}){hint}: "
        "give the chain's folder of the reference's oracle/, or the folder above it with the chain's paper_id set"
    )


def load_results(path: Path) -> dict[str, str]:
    return load_run(path).statuses


def has_results(reference: Path, prev: str, next_: str) -> bool:
    """Whether the folder holds both of a step's published runs (a partial copy may hold some steps)."""
    return all(
        (reference / next_ / name).is_file()
        for name in (f"v{next_}_test_results.json", f"v{prev}_cross_test_results.json")
    )


def reference_runs(reference: Path, prev: str, next_: str) -> tuple[ReferenceRun, ReferenceRun]:
    return (
        load_run(reference / next_ / f"v{next_}_test_results.json"),
        load_run(reference / next_ / f"v{prev}_cross_test_results.json"),
    )


def related_in(new_gold: ReferenceRun, old_gold: ReferenceRun) -> set[str]:
    return {
        t
        for t, s in new_gold.statuses.items()
        if s == "passed" and old_gold.statuses.get(t, "failed") in BROKEN_REFERENCE
    }


def reference_related(reference: Path, prev: str, next_: str) -> set[str]:
    return related_in(*reference_runs(reference, prev, next_))


def renamed_parameters(test: str, here: Collection[str], there: Collection[str]) -> list[str]:
    """The other side's ids of ``test``'s function that this side lacks, when the function has as many
    ids only here as only there: the same parametrized cases under ids the two Pythons print
    differently (an IntEnum parameter: 3.11 prints its value, 3.10 its name). Else nothing."""
    function, bracket, _ = test.partition("[")
    if not bracket:
        return []
    prefix = function + "["
    only_here = {t for t in here if t.startswith(prefix)} - set(there)
    only_there = {t for t in there if t.startswith(prefix)} - set(here)
    return sorted(only_there) if only_here and len(only_here) == len(only_there) else []


def parameter_ids_why(others: list[str], side: str) -> str:
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return (
        f"the same parametrized test under another id: {side} has {shown} instead, as the two sides' Pythons "
        "print the parameter differently"
    )


def declaring(test: str, entries: Sequence[ReferenceTestsT]) -> ReferenceTestsT | None:
    """The first of a chain's declarations whose tests (node ids or their collectors) hold ``test``."""
    return next((e for e in entries if any(test == prefix or is_under(test, prefix) for prefix in e.tests)), None)


def only_theirs_cause(
    test: str,
    step: StepOracle,
    their_old: ReferenceRun,
    artifacts: Sequence[ReferenceArtifact] = (),
    skips: Sequence[ReferenceSkip] = (),
    known_failures: Mapping[str, Sequence[str]] = MappingProxyType({}),
    changes: TreeChanges | None = None,
    their_new: ReferenceRun | None = None,
) -> tuple[str, str]:
    """Why the reference counts a test that we do not: the first rule that matches (the chain's
    own ``reference_artifacts`` after the harness-wide ones; the support code the reference takes from
    the old release, in ``changes``; its ``reference_skips``; its declared ``known_failures`` of the
    target version, each a documented difference of environment)."""
    if test in step.needs_network:
        return "needs_network", f"excluded here: {step.excluded.get(test, 'needs_network')}"
    if test in step.flaky:
        return "flaky", f"excluded here: {step.excluded.get(test, 'flaky')}"
    if test not in step.new_gold:
        if their_new and (renamed := renamed_parameters(test, their_new.statuses, step.new_gold)):
            return "parameter ids", parameter_ids_why(renamed, "our new-gold run")
        return "collection error", "not collected in our new-gold run"
    if step.new_gold[test] == Status.skipped and (skip := declaring(test, skips)):
        return "environment", f"skipped in our new-gold run: {skip.reason} (reference_skips in chain.yaml)"
    if step.new_gold[test] != Status.passed:
        if test in known_failures.get(step.next_version, ()):
            return "environment", (
                f"{step.new_gold[test].value} in our new-gold run: a declared known failure of {step.next_version} "
                "here (oracle.known_failures in chain.yaml; the chain's README says why)"
            )
        return "new gold differs", f"{step.new_gold[test].value} in our new-gold run, passed in the reference's"
    ours = step.old_gold.get(test, Status.failed).value
    message = their_old.messages.get(test, "")
    for signature, cause, why in REFERENCE_ARTIFACTS:
        if signature in message:
            return cause, why.format(ours=ours)
    for artifact in artifacts:
        if artifact.signature in message:
            return (
                "reference artifact",
                f"{artifact.reason} (reference_artifacts in chain.yaml); here the old code {ours}",
            )
    if their_old.statuses.get(test) in BROKEN_REFERENCE and (
        support := imported_by(test, (changes or TreeChanges()).support)
    ):
        return "reference old support code", (
            f"this test's file or a conftest.py above it imports {', '.join(support)}, protected support code the "
            "target changed: the reference's old-code runs take it from the old release, here it comes with the "
            f"hidden tests; here the old code {ours}"
        )
    if test not in their_old.statuses and their_old.collection_error:
        return (
            "collection error",
            "no result in the reference's old-gold run, whose collection failed (counted as failed)",
        )
    return "old gold differs", (
        f"old code {step.old_gold.get(test, Status.failed).value} here, "
        f"{their_old.statuses.get(test, 'absent')} in the reference's old-gold run"
    )


def only_ours_cause(
    test: str,
    step: StepOracle,
    their_new: ReferenceRun,
    their_old: ReferenceRun,
    changes: TreeChanges | None = None,
    known_failures: Mapping[str, Sequence[str]] = MappingProxyType({}),
    environments: Sequence[ReferenceEnvironment] = (),
) -> tuple[str, str]:
    """Why we count a test that the reference does not: the first rule that matches (``changes``:
    what the step's two trees tell, see ``TreeChanges``; a declared known failure of the old version,
    whose failure here is the environment's; the chain's ``reference_environment``, a difference that
    hides the old code's failure in the reference's run). Support code the target changed explains
    a test either way: the old release's, in the reference's old-code run, may not yet exercise what
    the target's tests check (urllib3 2.6.3's dummyserver serves a compressed redirect)."""
    if test not in their_new.statuses:
        if theirs := renamed_parameters(test, step.new_gold, their_new.statuses):
            return "parameter ids", parameter_ids_why(theirs, "the reference's new-gold run")
        where = ", whose collection failed" if their_new.collection_error else ""
        return "collection error", f"no result in the reference's new-gold run{where}"
    if their_new.statuses[test] != "passed":
        return "reference failing", f"{their_new.statuses[test]} in the reference's own run of {step.next_version}"
    if any(is_under(test, c) for c in step.old_gold_collection_errors):
        collector = next(c for c in step.old_gold_collection_errors if is_under(test, c))
        return "collection error", f"collection error in our old-gold run ({collector})"
    trees = changes or TreeChanges()
    if their_old.statuses.get(test) == "passed" and (kept := imported_by(test, trees.added)):
        return "reference kept modules", (
            f"the target adds {', '.join(kept)}, which this test's file or a conftest.py above it imports: "
            f"the reference's old-code tree keeps the target's files, so its old-gold run imports them; "
            f"here the old code has no such module ({step.old_gold[test].value})"
        )
    if their_old.statuses.get(test) == "passed" and (module := parameter_of(test)) in trees.modules_added:
        return "reference kept modules", (
            f"this test's case is the module {module}, which the target adds (the test walks the package's "
            f"modules): the reference's old-code tree keeps the target's files, so its old-gold run has this "
            f"case and passes it; here the old code has no such module, so no such case "
            f"({step.old_gold.get(test, Status.failed).value})"
        )
    if their_old.statuses.get(test) == "passed" and (kept := imported_by(test, trees.shadowed)):
        return "reference kept modules", (
            f"the target turns {', '.join(kept)} from a module file into a package, which this test's file or "
            f"a conftest.py above it imports: the reference's old-code tree keeps the target's package, which "
            f"shadows the old release's file, so its old-gold run imports the target's code; here it imports "
            f"the old release's module ({step.old_gold[test].value})"
        )
    if their_old.statuses.get(test) == "passed" and (support := imported_by(test, trees.support)):
        return "reference old support code", (
            f"this test's file or a conftest.py above it imports {', '.join(support)}, protected support code the "
            "target changed: the reference's old-code run takes it from the old release, which does not yet "
            f"serve what the test asks of the old code; here it comes with the hidden tests "
            f"({step.old_gold[test].value} on the old code)"
        )
    if their_old.statuses.get(test) == "passed" and test in known_failures.get(step.prev_version, ()):
        return "environment", (
            f"old code {step.old_gold[test].value} here: a declared known failure of {step.prev_version} here "
            "(oracle.known_failures in chain.yaml; the chain's README says why), passed in the reference's old-gold run"
        )
    if their_old.statuses.get(test) == "passed" and (environment := declaring(test, environments)):
        return "environment", (
            f"old code {step.old_gold[test].value} here, passed in the reference's old-gold run: "
            f"{environment.reason} (reference_environment in chain.yaml)"
        )
    return "old gold differs", (
        f"old code {step.old_gold[test].value} here, {their_old.statuses.get(test)} in the reference's old-gold run"
    )


def verdict(differences: list[Difference]) -> str:
    if not differences:
        return "agree"
    unexplained = [d for d in differences if d.cause not in EXPLAINED]
    if not unexplained:
        causes = ", ".join(sorted({d.cause for d in differences}))
        return f"explained ({causes})"
    return f"differs: {len(unexplained)} of {len(differences)} unexplained"


def compare(
    oracle: ChainOracle,
    reference: Path,
    paper_id: str | None = None,
    artifacts: Sequence[ReferenceArtifact] = (),
    skips: Sequence[ReferenceSkip] = (),
    known_failures: Mapping[str, Sequence[str]] = MappingProxyType({}),
    changes_of: Callable[[StepOracle], TreeChanges] = lambda step: TreeChanges(),
    environments: Sequence[ReferenceEnvironment] = (),
) -> list[StepAgreement]:
    """Each step the reference holds, compared. ``changes_of``: a step's ``tree_changes`` (its two
    source trees read where they can be had), asked only for a step with differences."""
    if not oracle.steps:
        return []
    first = oracle.steps[0]
    targets = [s.next_version for s in oracle.steps]
    reference = reference_folder(reference, paper_id, (first.prev_version, first.next_version), targets)
    present = [s for s in oracle.steps if has_results(reference, s.prev_version, s.next_version)]
    if not present:
        step = first
        raise SwechainError(
            f"reference folder {reference} holds no step's results (for step {step.index}: "
            f"{step.next_version}/v{step.next_version}_test_results.json and "
            f"{step.next_version}/v{step.prev_version}_cross_test_results.json); give the reference's oracle folder"
        )
    rows = []
    for step in present:
        their_new, their_old = reference_runs(reference, step.prev_version, step.next_version)
        theirs = related_in(their_new, their_old)
        changes = changes_of(step) if theirs != set(step.upgrade_related) else TreeChanges()
        ours = set(step.upgrade_related)
        union = ours | theirs
        differences = [
            Difference(
                test=t,
                side="only ours",
                **dict(
                    zip(
                        ("cause", "why"),
                        only_ours_cause(t, step, their_new, their_old, changes, known_failures, environments),
                        strict=True,
                    )
                ),
            )
            for t in sorted(ours - theirs)
        ] + [
            Difference(
                test=t,
                side="only theirs",
                **dict(
                    zip(
                        ("cause", "why"),
                        only_theirs_cause(t, step, their_old, artifacts, skips, known_failures, changes, their_new),
                        strict=True,
                    )
                ),
            )
            for t in sorted(theirs - ours)
        ]
        rows.append(
            StepAgreement(
                index=step.index,
                prev_version=step.prev_version,
                next_version=step.next_version,
                both=sorted(ours & theirs),
                only_ours=sorted(ours - theirs),
                only_theirs=sorted(theirs - ours),
                jaccard=len(ours & theirs) / len(union) if union else None,
                differences=differences,
                verdict=verdict(differences),
            )
        )
    return rows
