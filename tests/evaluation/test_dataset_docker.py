"""`chain build --verify`: a rebuild on a fresh state home is checked against the committed
oracle, and a committed oracle that the rebuild does not reproduce is a one-line error."""

from __future__ import annotations

import json

from conftest import REPO, run_cli


def test_a_fresh_rebuild_reproduces_the_committed_toy_oracle_and_a_tampered_one_fails(
    docker_engine, tmp_path, project_copy
):
    home = {"SWECHAIN_HOME": str(tmp_path / "fresh-home")}
    committed = (REPO / "chains" / "toy" / "oracle.json").read_text()
    result = run_cli("chain", "build", "toy", "--verify", env=home)
    assert result.returncode == 0, result.stderr
    assert f"the rebuild of steps 1-3 reproduces {REPO}/chains/toy/oracle.json" in result.stdout
    assert (REPO / "chains" / "toy" / "oracle.json").read_text() == committed  # verifying writes nothing

    tampered = project_copy / "chains" / "toy" / "oracle.json"
    data = json.loads(tampered.read_text())
    step = data["steps"][1]
    moved = sorted(step["upgrade_related"])[0]
    del step["upgrade_related"][moved]
    step["pass_to_pass"] = sorted([*step["pass_to_pass"], moved])
    tampered.write_text(json.dumps(data, indent=1) + "\n")
    result = run_cli("chain", "build", "toy", "--verify", env={**home, "SWECHAIN_ROOT": str(project_copy)})
    assert result.returncode == 2
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.stderr.strip().endswith(line)
    assert line == (
        f"error: chain toy: the rebuild does not reproduce {tampered}: step 2 "
        f"({step['prev_version']} -> {step['next_version']}): upgrade_related gains {moved}; "
        f"pass_to_pass loses {moved}"
    )
