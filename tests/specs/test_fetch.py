"""``specs fetch``: the real huggingface_hub client against a local stand-in of the Hub's file API
(tests/hub_server.py), serving a small dataset built from the reference samples; the real CLI."""

from __future__ import annotations

import io
import json

import pytest
from conftest import REPO, run_cli
from hub_server import Dataset, FakeHub

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

SHARED = next(
    (p for p in (REPO.parent / "shared", REPO.parent.parent / "shared") if (p / "reference").is_dir()),
    REPO.parent / "shared",
)
SAMPLES = SHARED / "reference" / "published-specs" / "pyjwt_2.0.0_to_2.12.1"
if not SAMPLES.is_dir():  # the project's own fixture in the same layout
    SAMPLES = REPO / "tests" / "fixtures" / "published_specs" / "pyjwt_2.0.0_to_2.12.1"
PYJWT = ["2.0.0", "2.0.1", "2.1.0", "2.2.0", "2.3.0", "2.4.0", "2.5.0", "2.6.0", "2.7.0", "2.8.0", "2.9.0", "2.10.0"]
REPO_ID = "For-Anonymous-Submission-90/SWE-Chain"
# Texts in the reference's shape, the project's own words: a step with only Additional Changes
# (as PyJWT 2.12.0 -> 2.12.1), a Flask step, and a chain no chain.yaml here names.
ADDITIONAL_ONLY = (
    "# Upgrade Specification from 2.12.0 to 2.12.1\n\n## Additional Changes\n"
    "- Ensure that the package declares the typing helper it imports on older Pythons."
)
FLASK = (
    "# Upgrade Specification from 2.0.0 to 2.0.1\n\n## Bug Fixes\n\n### Task 1 Keep blueprint names unique\n"
    "Ensure that registering two blueprints under one name is reported.\n\n"
    "- **Expectation**: Registering a second blueprint with a taken name fails clearly.\n\n"
    "- **Constraints**: Registering distinct blueprints behaves as before.\n"
)


def sample(version: str) -> str:
    return (SAMPLES / version / "synthetic" / f"v{version}_specs.md").read_text()


def dataset_rows() -> list[dict]:
    versions = sorted((d.name for d in SAMPLES.iterdir() if d.is_dir()), key=lambda v: PYJWT.index(v))
    rows = [
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": PYJWT.index(v),
            "package": "pyjwt",
            "prev_ver": PYJWT[PYJWT.index(v) - 1],
            "next_ver": v,
            "specs": sample(v),
        }
        for v in versions
    ]
    rows.append(
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": 15,
            "package": "pyjwt",
            "prev_ver": "2.12.0",
            "next_ver": "2.12.1",
            "specs": ADDITIONAL_ONLY,
        }
    )
    rows.append(
        {
            "chain_id": "flask_2.0.0_to_2.3.3",
            "step_id": 1,
            "package": "flask",
            "prev_ver": "2.0.0",
            "next_ver": "2.0.1",
            "specs": FLASK,
        }
    )
    rows.append(
        {
            "chain_id": "requests_2.0.0_to_2.1.0",
            "step_id": 1,
            "package": "requests",
            "prev_ver": "2.0.0",
            "next_ver": "2.1.0",
            "specs": ADDITIONAL_ONLY,
        }
    )
    return rows


def parquet_bytes(rows: list[dict]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    return buffer.getvalue()


@pytest.fixture
def env(project_copy, tmp_path):
    for path in (project_copy / "specs").rglob("L[2-5]*"):  # a worktree may hold imported files
        path.unlink()
    return {
        "SWECHAIN_ROOT": str(project_copy),
        "SWECHAIN_HOME": str(tmp_path / "home"),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_TOKEN": "",
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    }


def hub(rows: list[dict]) -> FakeHub:
    server = FakeHub()
    server.state.add(Dataset(REPO_ID, {"README.md": b"# SWE-Chain\n", "data/specs_chain.parquet": parquet_bytes(rows)}))
    return server


def test_fetch_downloads_the_dataset_and_imports_every_chain_it_covers(env, project_copy, tmp_path):
    rows = dataset_rows()
    with hub(rows) as server:
        url = server.url
        result = run_cli("specs", "fetch", env={**env, "HF_ENDPOINT": url})
        requests = list(server.state.requests)
        sha = server.state.datasets[REPO_ID].sha
    assert result.returncode == 0, result.stderr + result.stdout
    assert f"{REPO_ID} main from {url}: commit {sha}" in result.stdout
    # The client's own protocol: the revision's info, then HEAD and GET of the file.
    assert requests[0] == ("GET", f"/api/datasets/{REPO_ID}/revision/main")
    assert ("HEAD", f"/datasets/{REPO_ID}/resolve/main/data/specs_chain.parquet") in requests
    assert ("GET", f"/datasets/{REPO_ID}/resolve/main/data/specs_chain.parquet") in requests
    assert not any("README" in path for _, path in requests), "only the parquet files are fetched"
    cached = list((tmp_path / "hf" / "hub").glob("datasets--*/snapshots/*/data/specs_chain.parquet"))
    assert len(cached) == 1, "in the client's cache"

    specs = project_copy / "specs"
    for row in rows[:-1]:
        chain = "pyjwt" if row["package"] == "pyjwt" else "flask"
        step = specs / chain / f"{row['prev_ver']}-{row['next_ver']}"
        assert (step / "L3.md").read_bytes() == row["specs"].encode(), step  # what the agent reads
        record = json.loads((step / "L3.json").read_text())
        assert record["markdown"] == "published" and record["source"].startswith(
            "published SWE-Chain specifications specs_chain.parquet row "
        )
    last = specs / "pyjwt" / "2.12.0-2.12.1"
    assert [(last / f"{lv}.md").read_text() for lv in ("L2", "L3", "L4", "L5")] == [ADDITIONAL_ONLY] * 4
    assert "| pyjwt   | pyjwt_2.0.0_to_2.12.1 | imported |" in result.stdout
    assert "| flask   | flask_2.0.0_to_2.3.3  | imported |" in result.stdout
    assert "not a chain here (no chains/*/chain.yaml with that paper_id): requests_2.0.0_to_2.1.0" in result.stdout

    # Again with the Hub out of reach: the cached copy is used and said to be.
    again = run_cli("specs", "fetch", env={**env, "HF_ENDPOINT": url})
    assert again.returncode == 0, again.stderr + again.stdout
    assert "the cached copy (Hub not reached:" in again.stdout
    offline = run_cli("specs", "fetch", env={**env, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "1"})
    assert offline.returncode == 0 and "the cached copy" in offline.stdout


def one_line_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr + result.stdout
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_fetch_errors_are_one_line(env, project_copy, tmp_path):
    with hub(dataset_rows()) as server:
        wrong = one_line_error(
            run_cli("specs", "fetch", "--repo-id", "someone/else", env={**env, "HF_ENDPOINT": server.url})
        )
        revision = one_line_error(run_cli("specs", "fetch", "--revision", "v9", env={**env, "HF_ENDPOINT": server.url}))
    assert "dataset someone/else not found at http://127.0.0.1:" in wrong and "--repo-id" in wrong
    assert "has no revision v9" in revision
    never = one_line_error(run_cli("specs", "fetch", env={**env, "HF_ENDPOINT": "http://127.0.0.1:9"}))
    assert "cannot reach http://127.0.0.1:9" in never and "not in the Hugging Face cache" in never


def test_a_bad_row_fails_its_chain_only(env, project_copy):
    rows = dataset_rows()
    bad = next(i for i, r in enumerate(rows) if r["next_ver"] == "2.12.1")
    rows[bad] = {**rows[bad], "specs": "# Upgrade Specification from 2.12.0 to 2.12.1\n\n## Misc\n- x"}
    with hub(rows) as server:
        result = run_cli("specs", "fetch", env={**env, "HF_ENDPOINT": server.url})
    line = one_line_error(result)
    assert (
        f"row {bad + 1} (pyjwt_2.0.0_to_2.12.1 2.12.0 -> 2.12.1), field specs: line 3: unknown section 'Misc'" in line
    )
    assert not list((project_copy / "specs" / "pyjwt").rglob("L3.md")), "nothing of the failed chain is written"
    assert (project_copy / "specs" / "flask" / "2.0.0-2.0.1" / "L3.md").read_text() == FLASK, "the others are"


def test_import_without_a_chain_takes_every_chain_of_the_parquet(env, project_copy, tmp_path):
    path = tmp_path / "specs_chain.parquet"
    path.write_bytes(parquet_bytes(dataset_rows()))
    result = run_cli("specs", "import", str(path), env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    assert (project_copy / "specs" / "flask" / "2.0.0-2.0.1" / "L3.md").read_text() == FLASK
    assert (project_copy / "specs" / "pyjwt" / "2.12.0-2.12.1" / "L5.md").read_text() == ADDITIONAL_ONLY
