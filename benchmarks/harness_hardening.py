"""The cost of the hardened hidden-test harness (issue 9), against the harness before it; and
the cost of tripwires (issue 22), against the same evaluation without them.

Usage: .venv/bin/python benchmarks/harness_hardening.py [repeats] [--old-commit SHA] [--tripwires-only]

How "old" is run, honestly: the old harness files (``run_hidden_tests.py``,
``swechain_guard.py``, ``empty.ini``) are taken with ``git show`` from the commit
before the hardening and copied into a layer on top of the *same* version image,
with /work and /out handed back to the runner as the old image had them. The old
harness then runs as the runner exactly as it did (one process, pytest-json-report
writing into /out). The new one runs as it does now (a root supervisor, pytest as the
runner through the isolated launcher, results over a pipe). Both are parsed by the
current host code, which costs the same for either. Old and new runs alternate, so
load on a shared machine hits both alike; the figure is the ratio of medians.

Measured: the toy chain's 0.2.0 suite on 0.2.0's code, and PyJWT's 2.12.0 -> 2.12.1
step (the 2.12.1 suite on 2.12.0's code, i.e. prev of that step).

Tripwires: one evaluation as a candidate's is evaluated today (planting chosen afresh, the run
judged and scrubbed on the host: ``tripwires.for_step``'s work, with the step's pool taken
straight from the hidden tests, which costs what the oracle's verified pool costs), against the
same evaluation without any; alternating, ratio of medians. Same code, same image.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import tarfile
import time
from pathlib import Path

from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.runner import run_limits, runner_size
from swechain_ci.containers.sandbox import RUNNER_UID, DockerSandbox, single_file_tar
from swechain_ci.evaluation import evaluate as evaluation
from swechain_ci.evaluation import tripwires

REPO = Path(__file__).resolve().parent.parent
OLD_COMMIT = "4dd5fe6"  # main before the hardening of issue 9
HARNESS_FILES = ("run_hidden_tests.py", "swechain_guard.py", "empty.ini")
LABELS = {"swechain-ci.benchmark": "hardening"}
OLD_LAYER = """FROM {image}
USER root
RUN chown 1001:1001 /work /out
COPY old-harness /opt/swechain/old-harness
USER 1001
"""


def old_image(sandbox: DockerSandbox, image: str, commit: str) -> str:
    """The version image with the old harness and the old ownership of /work and /out."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = OLD_LAYER.format(image=image).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for name in HARNESS_FILES:
            data = subprocess.run(
                ["git", "show", f"{commit}:swechain_ci/evaluation/harness/{name}"],
                cwd=REPO,
                capture_output=True,
                check=True,
            ).stdout
            info = tarfile.TarInfo(f"old-harness/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    tag = f"swechain-ci/benchmark-old-harness:{image.split(':')[-1][:16]}"
    sandbox.client.images.build(fileobj=context, custom_context=True, tag=tag, network_mode="none", rm=True)
    return tag


def run_old(sandbox: DockerSandbox, chain, image: str, code: Path):
    config = chain.config
    settings = {
        "test_folder": config.test_folder,
        "source_root": config.source_root,
        "protected": config.protected_files,
        "remove_options": [o.model_dump() for o in config.pytest.remove_options],
        "rename_sections": [r.model_dump() for r in config.pytest.rename_sections],
        "extra_args": config.pytest.extra_args,
        "test_timeout_s": config.timeouts.test_s,
        "run_timeout_s": config.timeouts.run_s,
    }
    result = sandbox.run_once(
        image,
        ["/opt/venv/bin/python", "/opt/swechain/old-harness/run_hidden_tests.py"],
        [
            ("/work", trees.pack(code, "candidate", uid=RUNNER_UID, gid=RUNNER_UID)),
            ("/work", single_file_tar("eval.json", json.dumps(settings).encode(), RUNNER_UID)),
        ],
        collect="/out",
        limits=run_limits(chain, runner_size()),
        timeout_s=config.timeouts.run_s + 60,
        labels=LABELS,
    )
    return evaluation.parse(result.files, result.exit_code, result.timed_out, result.logs_tail)


def measure(name: str, chain_id: str, step: str, tests_of: str, code_of: str, repeats: int, commit: str) -> float:
    chain = load_chain(chain_id).select_steps(step)
    sandbox = DockerSandbox()
    built = images.ensure_images(sandbox, chain)
    new_image = built.versions[tests_of]
    old = old_image(sandbox, new_image, commit)
    code = sources.materialize(chain, code_of).code
    times: dict[str, list[float]] = {"old": [], "new": []}
    statuses = {}
    for _ in range(repeats):
        for kind in ("old", "new"):
            started = time.perf_counter()
            if kind == "old":
                run = run_old(sandbox, chain, old, code)
            else:
                run = evaluation.evaluate(sandbox, chain, new_image, code, LABELS)
            times[kind].append(time.perf_counter() - started)
            statuses[kind] = run.statuses
            assert run.execution_error is None, (kind, run.execution_error)
    assert statuses["old"] == statuses["new"], "old and new harness disagree on a test's status"
    old_s, new_s = statistics.median(times["old"]), statistics.median(times["new"])
    print(
        f"{name}: old {old_s:.2f} s, new {new_s:.2f} s (medians of {repeats}), "
        f"ratio new/old {new_s / old_s:.3f}; {len(statuses['new'])} tests, same statuses"
    )
    return new_s / old_s


def measure_tripwires(name: str, chain_id: str, step: str, tests_of: str, code_of: str, repeats: int) -> float:
    chain = load_chain(chain_id).select_steps(step)
    sandbox = DockerSandbox()
    image = images.ensure_images(sandbox, chain).versions[tests_of]
    code = sources.materialize(chain, code_of).code
    hidden = sources.materialize(chain, tests_of).hidden
    pool = tripwires.pool(hidden, chain.config.test_folder, chain.config.import_name)
    times: dict[str, list[float]] = {"without": [], "with": []}
    statuses, planted = {}, 0
    for _ in range(repeats):
        for kind in ("without", "with"):
            started = time.perf_counter()
            planting = None
            if kind == "with":
                planting = tripwires.plant(hidden, chain.config.test_folder, pool, tripwires.fresh_rng())
                planted = len(planting.planted)
            run = evaluation.evaluate(sandbox, chain, image, code, LABELS, planting=planting)
            times[kind].append(time.perf_counter() - started)
            statuses[kind] = run.statuses
            assert run.execution_error is None, (kind, run.execution_error)
    assert statuses["without"] == statuses["with"], "tripwires changed a hidden test's status"
    without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
    print(
        f"{name}: without tripwires {without:.2f} s, with {planted} tripwires {with_:.2f} s (medians of {repeats}), "
        f"ratio {with_ / without:.3f}; {len(statuses['with'])} tests, same statuses"
    )
    return with_ / without


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repeats", type=int, nargs="?", default=5)
    parser.add_argument("--old-commit", default=OLD_COMMIT)
    parser.add_argument("--tripwires-only", action="store_true", help="only the cost of tripwires")
    args = parser.parse_args()
    if not args.tripwires_only:
        measure("toy 0.2.0 suite on 0.2.0", "toy", "1", "0.2.0", "0.2.0", args.repeats, args.old_commit)
        measure("PyJWT 2.12.1 suite on 2.12.0", "pyjwt", "15", "2.12.1", "2.12.0", args.repeats, args.old_commit)
    measure_tripwires("tripwires, toy 0.2.0 suite on 0.2.0", "toy", "1", "0.2.0", "0.2.0", args.repeats)
    measure_tripwires("tripwires, PyJWT 2.12.1 suite on 2.12.0", "pyjwt", "15", "2.12.1", "2.12.0", args.repeats)


if __name__ == "__main__":
    main()
