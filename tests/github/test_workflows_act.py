"""The GitHub Actions layer: the workflows lint clean, and run as they are under `act`.

Jobs run on the host (`-P self-hosted=-self-hosted`, `-P ubuntu-latest=-self-hosted`)
in a copy of this repository whose origin is a local bare repository; GitHub's API is
the local stand-in in tests/github_server.py, reached by the real PyGithub client
through GITHUB_API_URL. Docker, git and the CLI are real.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO, assert_inert, load_json
from github_server import FakeGitHub

VENV_BIN = Path(sys.executable).parent
PLATFORMS = ["-P", "self-hosted=-self-hosted", "-P", "ubuntu-latest=-self-hosted"]
TOKEN = "act-token"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_workflows_lint_clean():
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    zizmor = subprocess.run(
        [str(VENV_BIN / "zizmor"), "--offline", *map(str, workflows)], capture_output=True, text=True
    )
    assert zizmor.returncode == 0, zizmor.stdout + zizmor.stderr
    schema = subprocess.run(
        [str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, workflows)],
        capture_output=True,
        text=True,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr


TRUSTED_TRIGGERS = {"workflow_dispatch", "schedule", "issue_comment"}


def test_zizmor_auditor_finds_no_persisted_credentials_and_only_explained_self_hosted_jobs():
    import yaml

    audit = subprocess.run(
        [
            str(VENV_BIN / "zizmor"),
            "--offline",
            "--persona",
            "auditor",
            "--format",
            "json",
            str(REPO / ".github" / "workflows"),
        ],
        capture_output=True,
        text=True,
    )
    findings = json.loads(audit.stdout)
    assert not [f for f in findings if f["ident"] in ("artipacked", "undocumented-permissions")]
    readme = (REPO / "README.md").read_text()
    self_hosted = [f for f in findings if f["ident"] == "self-hosted-runner"]
    assert self_hosted
    for finding in self_hosted:
        where = finding["locations"][0]["symbolic"]
        path = Path(where["key"]["Local"]["verbatim_path"])
        job = [step["Key"] for step in where["route"]["route"]][1]
        triggers = set(yaml.safe_load((REPO / path).read_text())[True])
        assert triggers <= TRUSTED_TRIGGERS, f"{path.name}:{job} runs self-hosted on {triggers - TRUSTED_TRIGGERS}"
        assert f"`{path.name}` `{job}`" in readme, f"README explains {path.name}:{job} on the self-hosted runner"


def test_every_job_is_bounded_and_least_privileged():
    import yaml

    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        workflow = yaml.safe_load(path.read_text())
        assert workflow["permissions"] == {"contents": "read"}, path.name
        assert "concurrency" in workflow, path.name
        for name, job in workflow["jobs"].items():
            assert job.get("timeout-minutes"), f"{path.name}:{name}"
            for step in job["steps"]:
                if "uses" in step:
                    ref = step["uses"].split("@", 1)[1]
                    assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), f"{path.name}: {step['uses']}"


@pytest.fixture
def act_repo(tmp_path: Path):
    """A copy of this repository (as it is now) with a bare origin, and a shared folder for act's jobs."""
    origin = tmp_path / "origin.git"
    work = tmp_path / "work"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    git("clone", "-q", str(REPO), str(work))
    for path in git("ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).splitlines():
        source = REPO / path
        if source.is_file():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, work / path)
    git("checkout", "-q", "-B", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "under test", cwd=work)
    git("remote", "set-url", "origin", str(origin), cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    shared = tmp_path / "shared"
    (shared / "smoke").mkdir(parents=True)
    return work, origin, shared


def other_copy(work: Path) -> Path:
    """A second working copy of the same repository (act runs jobs in the working tree)."""
    copy = work.parent / f"{work.name}-2"
    if not copy.exists():
        shutil.copytree(work, copy, symlinks=True, ignore=shutil.ignore_patterns(".venv", "runs"))
    return copy


def offline_actions(work: Path) -> list[str]:
    """act fetches every remote action a job names, even in steps that do not run under act.
    The artifact steps are all guarded with `!env.ACT`; an empty local stand-in for each
    satisfies the fetch and is never run."""
    import yaml

    stub = work.parent / "stub-action"
    stub.mkdir(exist_ok=True)
    (stub / "action.yml").write_text("name: not run under act\nruns:\n  using: composite\n  steps: []\n")
    remote = set()
    for path in sorted((work / ".github" / "workflows").glob("*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                uses = step.get("uses", "")
                if uses and not uses.startswith("actions/checkout@"):
                    assert "!env.ACT" in step.get("if", ""), f"{path.name}: {uses} must not run under act"
                    remote.add(uses)
    return [option for uses in sorted(remote) for option in ("--local-repository", f"{uses}={stub}")]


def act_command(work: Path, shared: Path, event: str, workflow: str, payload: dict, api: str, *extra: str) -> list[str]:
    event_file = work.parent / f"{work.name}-{event}.json"  # one per working copy: two acts may run at once
    event_file.write_text(json.dumps(payload))
    return [
        str(VENV_BIN / "act"),
        event,
        "-W",
        f".github/workflows/{workflow}",
        "-e",
        str(event_file),
        *PLATFORMS,
        *offline_actions(work),
        "-s",
        f"GITHUB_TOKEN={TOKEN}",
        "--env",
        f"GITHUB_API_URL={api}",
        "--env",
        "GITHUB_REPOSITORY=acme/bench",
        "--env",
        f"SWECHAIN_ACT_SHARED={shared}",
        *extra,
    ]


def act(
    work: Path,
    shared: Path,
    event: str,
    workflow: str,
    payload: dict,
    api: str,
    *extra: str,
    act_cache: Path | None = None,
):
    """``act_cache``: act's own cache folder (XDG_CACHE_HOME), for a second act at the same time: act
    runs a job in a folder named after the workflow and job, which two processes would share."""
    return subprocess.run(
        act_command(work, shared, event, workflow, payload, api, *extra),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "XDG_CACHE_HOME": str(act_cache)} if act_cache else None,
    )


REPLAY = "replay:tests/fixtures/replay_toy"  # the same name here and in act's copy: the scorecards name it
PHASE_COMMITS = [
    "start",
    "step 1 build",
    "step 1 evaluate",
    "step 2 build",
    "step 2 evaluate",
    "step 2 fix",
    "step 2 evaluate fix",
    "step 3 build",
    "step 3 evaluate",
    "finished",
]


def comparable(card: dict) -> dict:
    """A scorecard without the agents' wall clock, the one thing two runs of one agent may differ in."""
    return {**card, "steps": [{k: v for k, v in step.items() if k != "wall_s"} for step in card["steps"]]}


def step_outcomes(show) -> list:
    """Per step, what the records say the hidden tests did, from ``show(path)`` of .swechain files."""
    found = []
    for index, folder in enumerate(("01-0.1.0-0.2.0", "02-0.2.0-0.3.0", "03-0.3.0-0.4.0"), start=1):
        step = json.loads(show(f"steps/{folder}/step.json"))
        found.append(
            (
                index,
                step["prev_outcomes"],
                *[
                    (p["code_sha256"], p["outcomes"], p["categories"], p["execution_error"]) if p else None
                    for p in (step["build"], step["fix"])
                ],
                step["fix_report"],
            )
        )
    return found


@pytest.fixture(scope="module")
def local_replay_run(tmp_path_factory, toy_oracle) -> Path:
    """The replay agent's toy chain run locally: the run the jobs must reproduce."""
    from conftest import run_cli

    output = tmp_path_factory.mktemp("local") / "run"
    result = run_cli("run", "--chain", "toy", "--agent", REPLAY, "--output", str(output))
    assert result.returncode == 0, result.stderr
    return output


def jobs_that_ran(act_output: str) -> list[str]:
    return re.findall(r"^\[Chain run/([\w-]+)\s*\] .*Job succeeded", act_output, flags=re.M)


def dispatch_until_done(work: Path, shared: Path, github, inputs: dict) -> list[str]:
    """Dispatch the run, then every dispatch its hand-on jobs make, as GitHub would; the act outputs."""
    outputs, pending = [], [inputs]
    while pending:
        ran = act(
            work,
            shared,
            "workflow_dispatch",
            "chain-run.yml",
            {"inputs": pending.pop(), "ref": "refs/heads/main"},
            github.url,
        )
        assert ran.returncode == 0, ran.stdout[-6000:]
        outputs.append(ran.stdout)
        made = github.state.dispatches[len(outputs) - 1 :]
        assert len(made) <= 1 and len(outputs) <= 5, "one dispatch per workflow run, and the run ends"
        pending += [d["inputs"] for d in made]
    return outputs


@pytest.mark.docker
def test_a_dispatched_chain_run_is_a_job_per_phase_and_scores_as_the_local_run(local_replay_run, act_repo):
    work, origin, shared = act_repo
    branch = "runs/replay-tests-fixtures-replay_toy/toy/r42"
    inputs = {"agent": REPLAY, "chain": "toy", "spec_level": "", "steps": "", "run_id": "r42"}
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        outputs = dispatch_until_done(work, shared, github, inputs)
        statuses = list(github.state.statuses)
        dispatches = list(github.state.dispatches)
    # One workflow run per step; the Fix job only at step 2, whose Build breaks collection.
    assert [jobs_that_ran(out) for out in outputs] == [
        ["build", "evaluate", "hand-on"],
        ["build", "evaluate", "fix", "hand-on"],
        ["build", "evaluate", "hand-on"],
    ]
    assert dispatches == [{"workflow": "chain-run.yml", "ref": "main", "inputs": inputs}] * 2
    # One commit per phase on the run branch.
    subjects = git("--git-dir", str(origin), "log", "--format=%s", branch).splitlines()
    assert [s.split(":")[0] for s in reversed(subjects)] == PHASE_COMMITS
    # A job summary per job: what the agent did, the step's table, the Fix report, the scorecard.
    step2 = outputs[1]
    for job, text in [
        ("build", "| diff "),
        ("evaluate", "the one Fix is granted"),
        ("fix", "SyntaxError"),
        ("fix", "Build+Fix"),
        ("hand-on", "Hand-on: dispatched chain-run.yml"),
    ]:
        assert re.search(rf"^\[Chain run/{job}\s*\].*Summary.*{re.escape(text)}", step2, flags=re.M | re.S), (job, text)
    assert "Summary - # Scorecard: `replay:tests/fixtures/replay_toy` on `toy`" in outputs[-1]
    head = git("--git-dir", str(origin), "rev-parse", branch)
    assert [s.state for s in statuses] == ["pending", "pending", "success"] and statuses[-1].sha == head
    # The same records and scorecard as the local run of the same agent.
    card = json.loads(git("--git-dir", str(origin), "show", f"{branch}:.swechain/scorecard.json"))
    assert comparable(card) == comparable(load_json(local_replay_run / "scorecard.json"))
    assert (card["build_fix"]["tp"], card["build_fix"]["fn"], card["build_fix"]["fp"]) == (24, 6, 1)
    on_branch = step_outcomes(lambda path: git("--git-dir", str(origin), "show", f"{branch}:.swechain/{path}"))
    assert on_branch == step_outcomes(lambda path: (local_replay_run / path).read_text())


@pytest.mark.docker
def test_a_run_whose_evaluate_job_is_killed_resumes_there_with_the_same_scorecard(toy_oracle, act_repo, tmp_path):
    from conftest import run_cli

    from swechain_ci.chain import trees

    work, origin, shared = act_repo
    # Step 2 alone keeps this short: a Build that breaks collection on 0.2.0's code, and a Fix
    # that mends it. The local run of the same agent is the reference. The Build's code also
    # sleeps on import, so its hidden tests run long enough to be caught running (a poll can
    # miss an evaluation of a second or two, and the whole run would then finish unkilled).
    before, after = tmp_path / "before", tmp_path / "after"
    trees.copy_tree(REPO / "chains/toy/versions/0.2.0", before, exclude=lambda rel: rel.parts[0] == "tests")
    shutil.copytree(before, after)
    (after / "src/toyslug/broken.py").write_text("def broken(:\n")
    with open(after / "src/toyslug/__init__.py", "a") as init:
        init.write("import time\ntime.sleep(10)\nfrom toyslug import broken\n")
    (work / "replay_kill").mkdir()
    (work / "replay_kill/step-2.build.patch").write_text(trees.diff(before, after))
    (work / "replay_kill/step-2.fix.patch").write_text(trees.diff(after, before))
    git("add", "replay_kill", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "Replay patches", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    local = tmp_path / "local"
    result = run_cli(
        "run", "--chain", "toy", "--agent", "replay:replay_kill", "--steps", "2-2", "--output", str(local), cwd=work
    )
    assert result.returncode == 0, result.stderr
    branch = "runs/replay-replay_kill/toy/r7"
    inputs = {"agent": "replay:replay_kill", "chain": "toy", "spec_level": "", "steps": "2-2", "run_id": "r7"}

    def subjects() -> list[str]:
        listed = subprocess.run(
            ["git", "--git-dir", str(origin), "log", "--format=%s", branch], capture_output=True, text=True
        )
        return [s.split(":")[0] for s in reversed(listed.stdout.splitlines())]

    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        command = act_command(
            work, shared, "workflow_dispatch", "chain-run.yml", {"inputs": inputs, "ref": "refs/heads/main"}, github.url
        )
        with open(tmp_path / "killed.log", "w") as log:
            killed = subprocess.Popen(command, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 900
            evaluating = ""
            while not evaluating:
                assert killed.poll() is None and time.monotonic() < deadline, (tmp_path / "killed.log").read_text()[
                    -4000:
                ]
                time.sleep(0.5)
                if subjects()[-1:] == ["step 2 build"]:
                    run_id = json.loads(git("--git-dir", str(origin), "show", f"{branch}:.swechain/run.json"))["run_id"]
                    evaluating = subprocess.run(
                        [
                            "docker",
                            "ps",
                            "-q",
                            "--filter",
                            "label=swechain-ci=eval",
                            "--filter",
                            f"label=swechain-ci.run={run_id}",
                        ],
                        capture_output=True,
                        text=True,
                    ).stdout.strip()
        finally:
            if killed.poll() is None:
                os.killpg(killed.pid, signal.SIGKILL)  # the evaluate job dies midway, its hidden tests running
            killed.wait()
        assert subjects() == ["start", "step 2 build"], "a killed job pushes nothing: the branch ends at a whole phase"
        outputs = dispatch_until_done(work, shared, github, inputs)
    # Dispatched again, the run resumes at its first unfinished phase: the build job finds its phase done.
    assert jobs_that_ran(outputs[0]) == ["build", "evaluate", "fix", "hand-on"] and len(outputs) == 1
    assert "step 2 build: already done" in outputs[0]
    assert subjects() == ["start", "step 2 build", "step 2 evaluate", "step 2 fix", "step 2 evaluate fix", "finished"]
    card = json.loads(git("--git-dir", str(origin), "show", f"{branch}:.swechain/scorecard.json"))
    assert comparable(card) == comparable(load_json(local / "scorecard.json"))
    assert [s["fix_ran"] for s in card["steps"]] == [True] and card["steps_scored"] == 1


@pytest.mark.docker
def test_two_runs_of_the_same_agent_and_chain_with_different_run_ids_both_finish(toy_oracle, act_repo):
    """The concurrency group is the run id (act does not enforce groups: the expression is checked,
    and the two dispatches run at the same time, each in its own working copy, as two runners would)."""
    import yaml

    from swechain_ci.settings import state_home

    work, origin, shared = act_repo
    group = yaml.safe_load((work / ".github" / "workflows" / "chain-run.yml").read_text())["concurrency"]["group"]
    assert "inputs.run_id" in group and "inputs.agent" not in group and "inputs.chain" not in group
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        with ThreadPoolExecutor(2) as pool:
            runs = [
                pool.submit(
                    act,
                    copy,
                    shared,
                    "workflow_dispatch",
                    "chain-run.yml",
                    {
                        "inputs": {
                            "agent": "oracle",
                            "chain": "toy",
                            "spec_level": "",
                            "steps": "3-3",
                            "run_id": run_id,
                        },
                        "ref": "refs/heads/main",
                    },
                    github.url,
                    "--env",
                    f"SWECHAIN_HOME={state_home()}",
                    act_cache=cache,
                )
                for copy, run_id, cache in ((work, "a1", None), (other_copy(work), "b2", work.parent / "act-cache"))
            ]
            results = [run.result() for run in runs]
    for result in results:
        assert result.returncode == 0, result.stdout[-5000:]
    for run_id in ("a1", "b2"):
        assert git("--git-dir", str(origin), "log", "-1", "--format=%s", f"runs/oracle/toy/{run_id}").startswith(
            "finished"
        )


INJECTION = "# Owned ![x](http://evil.example/x.png) @maintainers [click](http://evil.example) <b>bold</b>"


def job_summaries(stdout: str) -> str:
    """The job summaries act prints: each starts on a "Summary - " line and runs until act's next
    "[workflow/job]" line."""
    kept, inside = [], False
    for line in stdout.splitlines():
        if "Summary - " in line:
            inside = True
            kept.append(line.split("Summary - ", 1)[1])
        elif line.startswith("["):
            inside = False
        elif inside:
            kept.append(line)
    return "\n".join(kept)


def commit_agent(work: Path, name: str, manifest: str) -> str:
    (work / "agents" / f"{name}.yaml").write_text(manifest)
    git("add", f"agents/{name}.yaml", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"Register {name}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def fork_pull(work: Path, number: int, head: str) -> dict:
    base = git("rev-parse", "HEAD~1", cwd=work)
    return {
        "number": number,
        "labels": [{"name": "run-smoke"}],
        "head": {"ref": "add-agent", "sha": head, "repo": {"full_name": "fork/bench", "fork": True}},
        "base": {"ref": "main", "sha": base, "repo": {"full_name": "acme/bench", "fork": False}},
    }


def test_no_workflow_a_pull_request_triggers_has_a_self_hosted_job():
    import yaml

    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        workflow = yaml.safe_load(path.read_text())
        triggers = workflow[True]
        if isinstance(triggers, dict) and {"pull_request", "pull_request_target"} & set(triggers):
            for name, job in workflow["jobs"].items():
                assert "self-hosted" not in json.dumps(job.get("runs-on")), f"{path.name}:{name}"


def test_a_fork_pull_request_schedules_nothing_self_hosted_and_a_token_asking_manifest_fails_in_one_line(act_repo):
    """Self-hosted jobs would run on an image that does not exist: any such job fails loudly."""
    work, _origin, shared = act_repo
    head = commit_agent(
        work,
        "leak",
        "schema_version: 1\nname: leak\nkind: cli\nenv: [GITHUB_TOKEN]\n"
        "commands: {build: 'env > /app/code/leak.txt', fix: 'true'}\n",
    )
    payload = {"pull_request": fork_pull(work, 7, head), "number": 7, "repository": {"full_name": "acme/bench"}}
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        result = act(
            work,
            shared,
            "pull_request",
            "agent-pr.yml",
            payload,
            github.url,
            "-P",
            "self-hosted=swechain/no-such-image:never",
        )
    assert result.returncode != 0, "validation fails"
    assert "no-such-image" not in result.stdout + result.stderr, "no job was scheduled on self-hosted"
    errors = [line for line in result.stdout.splitlines() if "error: " in line and "GITHUB_TOKEN" in line]
    assert len(errors) == 1 and "env lists GITHUB_TOKEN, which an agent may not ask for" in errors[0]
    assert not (shared / "validation").exists(), "the run hands nothing on: the comment workflow validates by itself"


def test_the_comment_workflow_validates_the_prs_files_itself_and_ignores_any_artifact(act_repo):
    """A fork's validation run can report anything (here, an artifact saying all is well, for
    another PR): the comment and status come from the default branch's code on the PR's files at
    its head SHA, read through the API, on the PR the API names."""
    from swechain_ci.models import ManifestCheck, ValidationReport
    from swechain_ci.records import write_model

    work, _origin, shared = act_repo
    head = "f" * 40
    (shared / "validation").mkdir()
    (shared / "validation" / "pr.txt").write_text("9\n")
    write_model(
        shared / "validation" / "report.json",
        ValidationReport(
            checks=[ManifestCheck(file="agents/lazy.yaml", because="agents/lazy.yaml", agent="lazy", ok=True)]
        ),
    )
    event = {
        "workflow_run": {
            "id": 99,
            "event": "pull_request",
            "conclusion": "success",
            "head_sha": head,
            "head_repository": {"full_name": "fork/bench"},
            "html_url": "http://results.example/99",
        }
    }
    lazy = (
        "schema_version: 1\nname: lazy\nkind: cli\ninstall: {dockerfile: lazy.Dockerfile}\n"
        "commands: {build: 'cat /secret', fix: 'true'}\n"
    )
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        github.state.add_pull(7, head, "fork/bench", files=["agents/lazy.yaml", "agents/lazy.Dockerfile"])
        github.state.add_pull(9, "9" * 40, "acme/bench", files=["agents/victim.yaml"])
        github.state.add_file(head, "agents/lazy.yaml", lazy.encode())
        github.state.add_file(
            head,
            "agents/lazy.Dockerfile",
            b"ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\nADD http://evil.example/Owned/![x](http://evil.example/x.png)@maintainers<b> /s\n",
        )
        result = act(work, shared, "workflow_run", "agent-pr-comment.yml", event, github.url)
        assert result.returncode == 0, result.stdout[-5000:]
        assert github.state.comments_on(9) == [], "the PR the artifact names gets nothing"
        [comment] = github.state.comments_on(7)
        statuses = [(s.sha, s.state) for s in github.state.statuses]
        # a run of another event (e.g. a fork's look-alike workflow run by `push`) is not reported at all
        event["workflow_run"]["event"] = "push"
        other = act(work, shared, "workflow_run", "agent-pr-comment.yml", event, github.url)
        assert other.returncode == 0 and len(github.state.comments) == 1
    assert "0 of 1 manifests valid" in comment.body and "lazy.Dockerfile line 3" in comment.body
    assert_inert(comment.body)
    assert statuses == [(head, "failure")], "the artifact's ok decides nothing"


@pytest.mark.docker
def test_a_maintainers_smoke_comment_runs_the_pr_agent_as_data_and_reports_inertly(toy_oracle, act_repo):
    """/smoke from a maintainer: the PR's manifest is read at its head SHA through the API, the
    run has no token and no secrets, and the agent's Markdown (in stop_reason) renders inert
    in the comment and the job summary; a status lands on the PR head."""
    work, _origin, shared = act_repo
    head = "e" * 40
    lazy = (
        f"schema_version: 1\nname: lazy\nkind: cli\ncommands: {{build: 'echo \"{INJECTION}\"; exit 3', fix: 'true'}}\n"
    )
    event = {
        "issue": {"number": 7, "pull_request": {"url": "http://api.example/pulls/7"}},
        "comment": {"body": f"/smoke {head}", "user": {"login": "maint"}, "author_association": "MEMBER"},
    }
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        github.state.permissions["maint"] = "write"
        github.state.add_pull(7, head, "fork/bench", files=["agents/lazy.yaml"])
        github.state.add_file(head, "agents/lazy.yaml", lazy.encode())
        result = act(work, shared, "issue_comment", "agent-smoke.yml", event, github.url)
        assert "Agent smoke run/report] \U0001f3c1  Job succeeded" in result.stdout, result.stdout[-5000:]
        [comment] = github.state.comments_on(7)
        statuses = [(s.sha, s.state, s.context) for s in github.state.statuses]
    assert "Scorecard: `lazy` on `toy`" in comment.body and "stopped" in comment.body
    assert_inert(comment.body)
    summary = job_summaries(result.stdout)
    assert "Owned" in summary
    assert_inert(summary)
    assert statuses == [(head, "failure", "swechain-ci/smoke/lazy")]
    assert not (work / "agents" / "lazy.yaml").exists(), (
        "the checkout has no such agent: its manifest came from the API"
    )
    assert list((Path.home() / ".cache" / "swechain-ci-smoke" / "oracles").glob("toy*")), "its own state folder"


@pytest.mark.docker
def test_the_weekly_refresh_publishes_a_leaderboard_of_two_agents(toy_oracle, act_repo):
    work, origin, shared = act_repo
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        result = act(
            work,
            shared,
            "schedule",
            "weekly.yml",
            {"schedule": "17 3 * * 1", "repository": {"default_branch": "main"}},
            github.url,
            "--var",
            "WEEKLY_CHAINS=toy",
        )
    assert result.returncode == 0, result.stdout[-5000:]
    assert "swechain-ci run --chain" in result.stdout, "the first refresh runs every pair"
    assert git("--git-dir", str(origin), "log", "-1", "--format=%s", "main") == "Leaderboard: weekly refresh"
    board = json.loads(git("--git-dir", str(origin), "show", "main:reports/leaderboard.json"))
    assert {row["agent"] for row in board["rows"]} == {"oracle", "noop"}
    markdown = git("--git-dir", str(origin), "show", "main:reports/leaderboard.md")
    assert "oracle" in markdown and "noop" in markdown
    from swechain_ci.site.history import this_week

    snapshots = git("--git-dir", str(origin), "ls-tree", "--name-only", "main:reports/history").splitlines()
    assert f"{this_week()}.json" in snapshots, snapshots
    site = (shared / "site" / "index.html").read_text()  # built for Pages (the upload is not run under act)
    assert site.count('class="agent"') >= 2 and list((shared / "site" / "runs").glob("*.html"))
    record = json.loads(git("--git-dir", str(origin), "show", "main:reports/refresh.json"))
    ran = sorted((p["pair"]["agent"], p["pair"]["chain"], [r["repeat"] for r in p["runs"]]) for p in record["pairs"])
    assert ran == [("noop", "toy", [1]), ("oracle", "toy", [1])], "the record is committed with the leaderboard"

    # A week later, nothing changed: no agent runs, and the leaderboard keeps both agents (unchanged).
    git("pull", "-q", "--ff-only", "origin", "main", cwd=work)
    shutil.rmtree(shared / "weekly")
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        again = act(
            work,
            shared,
            "schedule",
            "weekly.yml",
            {"schedule": "17 3 * * 1", "repository": {"default_branch": "main"}},
            github.url,
            "--var",
            "WEEKLY_CHAINS=toy",
        )
    assert again.returncode == 0, again.stdout[-5000:]
    assert "nothing to run" in again.stdout + again.stderr
    assert "swechain-ci run --chain" not in again.stdout, "no agent run started"
    assert "2 kept runs of unchanged pairs written back" in again.stdout
    assert "leaderboard unchanged" in again.stdout


def only_job(work: Path, workflow: str, job: str) -> str:
    """A workflow file holding one job of ``workflow`` exactly as written, without its `needs`
    (act's -j runs the needed jobs too): the job alone, on inputs the test hands it."""
    import yaml

    data = yaml.safe_load((work / ".github" / "workflows" / workflow).read_text())
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as true
    alone = {**data["jobs"][job]}
    alone.pop("needs", None)
    alone.pop("if", None)
    data["jobs"] = {job: alone}
    name = f"{Path(workflow).stem}-{job}-alone.yml"
    (work / ".github" / "workflows" / name).write_text(yaml.safe_dump(data, sort_keys=False))
    return name


def test_the_weekly_publish_survives_a_moved_main_and_commits_nothing_unchanged(act_repo, tmp_path):
    """The publishing job alone, on scorecards as the run jobs hand them on."""
    from swechain_ci.models import Metrics, Scorecard
    from swechain_ci.records import write_model

    work, origin, shared = act_repo
    workflow = only_job(work, "weekly.yml", "leaderboard")
    metrics = Metrics(resolving=0.5, precision=1.0, f1=2 / 3, tp=1, fn=1, fp=0)
    for agent in ("oracle", "noop"):
        write_model(
            shared / "weekly" / agent / "toy" / "scorecard.json",
            Scorecard(
                chain="toy",
                step_range="1-3",
                agent=agent,
                spec_level="L1",
                steps_total=3,
                steps_scored=3,
                build=metrics,
                build_fix=metrics,
                steps=[],
                stop_reason=INJECTION if agent == "noop" else None,
            ),
        )
    # main moves on after the schedule fired: someone else's commit lands on origin
    other = tmp_path / "other"
    git("clone", "-q", str(origin), str(other))
    (other / "MOVED").write_text("a commit made while the weekly runs ran\n")
    git("add", "MOVED", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q", "-m", "moved main", cwd=other)
    git("push", "-q", "origin", "main", cwd=other)
    moved = git("rev-parse", "HEAD", cwd=other)
    event = {"schedule": "17 3 * * 1", "repository": {"default_branch": "main"}}
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        first = act(work, shared, "schedule", workflow, event, github.url)
        assert first.returncode == 0, first.stdout[-5000:]
        published = git("--git-dir", str(origin), "rev-parse", "main")
        second = act(work, shared, "schedule", workflow, event, github.url)
        assert second.returncode == 0, second.stdout[-5000:]
    assert git("--git-dir", str(origin), "rev-parse", "main^") == moved, "published on top of the moved main"
    assert git("--git-dir", str(origin), "log", "-1", "--format=%s", "main") == "Leaderboard: weekly refresh"
    assert "MOVED" in git("--git-dir", str(origin), "ls-tree", "--name-only", "main")
    board = json.loads(git("--git-dir", str(origin), "show", "main:reports/leaderboard.json"))
    assert {row["agent"] for row in board["rows"]} == {"oracle", "noop"}
    assert "Summary - # Leaderboard" in first.stdout
    assert_inert(git("--git-dir", str(origin), "show", "main:reports/leaderboard.md"))
    summary = job_summaries(first.stdout)
    assert_inert(summary)
    # a week later with the same results: a new generated_at, the same content, no commit
    assert git("--git-dir", str(origin), "rev-parse", "main") == published
    assert "leaderboard unchanged" in second.stdout


def test_a_smoke_request_for_a_commit_that_is_not_the_head_runs_nothing(act_repo):
    """The vendor pushed after the maintainer's review: `/smoke <reviewed sha>` no longer names the
    head, so the plan refuses with a comment and no job reaches the self-hosted runner."""
    work, _origin, shared = act_repo
    reviewed, pushed = "e" * 40, "d" * 40
    event = {
        "issue": {"number": 7, "pull_request": {"url": "http://api.example/pulls/7"}},
        "comment": {"body": f"/smoke {reviewed}", "user": {"login": "maint"}, "author_association": "MEMBER"},
    }
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        github.state.permissions["maint"] = "write"
        github.state.add_pull(7, pushed, "fork/bench", files=["agents/lazy.yaml"])
        github.state.add_file(
            pushed, "agents/lazy.yaml", b"name: lazy\nkind: cli\ncommands: {build: 'true', fix: 'true'}\n"
        )
        result = act(
            work,
            shared,
            "issue_comment",
            "agent-smoke.yml",
            event,
            github.url,
            "-P",
            "self-hosted=swechain/no-such-image:never",
        )
        [comment] = github.state.comments_on(7)
        statuses = [(s.sha, s.state, s.context) for s in github.state.statuses]
        reads = github.state.requests_matching("GET", r"/contents/")
    assert result.returncode != 0
    assert "no-such-image" not in result.stdout + result.stderr, "no job was scheduled on self-hosted"
    assert "Smoke run not started" in comment.body and f"the head of pull request #7 is {pushed[:12]}" in comment.body
    assert statuses == [(pushed, "failure", "swechain-ci/smoke")]
    assert reads == [], "nothing of the pushed commit was read"


def test_only_smoke_requests_join_the_smoke_runs_concurrency_group(act_repo):
    """GitHub keeps one pending run per group: were every comment in the PR's group, any commenter
    would displace a pending smoke run. act evaluates the workflow's own group expression here, on
    each kind of event (act does not enforce groups, so a job prints what the group evaluates to)."""
    import yaml

    work, _origin, shared = act_repo
    workflow = yaml.safe_load((work / ".github" / "workflows" / "agent-smoke.yml").read_text())
    probe = {
        "name": "Agent smoke run",
        "on": workflow[True],
        "permissions": {"contents": "read"},
        "jobs": {
            "probe": {
                "runs-on": "ubuntu-latest",
                "timeout-minutes": 5,
                "env": {"GROUP": workflow["concurrency"]["group"]},
                "steps": [{"run": 'echo "group=[$GROUP]"'}],
            }
        },
    }
    (work / ".github" / "workflows" / "smoke-group-probe.yml").write_text(yaml.safe_dump(probe, sort_keys=False))

    def group(event: str, payload: dict) -> str:
        ran = act(work, shared, event, "smoke-group-probe.yml", payload, "http://127.0.0.1:9")
        assert ran.returncode == 0, ran.stdout[-3000:]
        [value] = {g for g in re.findall(r"group=\[([^\]]*)\]", ran.stdout) if g != "$GROUP"}  # not the step's name
        return value

    def comment(body: str, association: str) -> dict:
        return {
            "issue": {"number": 7, "pull_request": {"url": "http://api.example/pulls/7"}},
            "comment": {"body": body, "user": {"login": "someone"}, "author_association": association},
        }

    assert group("issue_comment", comment(f"/smoke {'e' * 40}", "MEMBER")) == "agent-smoke-7"
    assert group("workflow_dispatch", {"inputs": {"pr": "7", "sha": "e" * 40}}) == "agent-smoke-7"
    assert group("issue_comment", comment("looks good, thanks", "NONE")).startswith("agent-smoke-ignored-")
    assert group("issue_comment", comment("/smoke " + "e" * 40, "CONTRIBUTOR")).startswith("agent-smoke-ignored-")
    assert group("issue_comment", comment("+1", "MEMBER")).startswith("agent-smoke-ignored-")


@pytest.mark.docker
def test_an_agent_tree_with_its_own_records_folder_and_workflows_runs_to_the_end(toy_oracle, act_repo, tmp_path):
    """The agent's Build leaves `.swechain` as a file and adds `.github/workflows/evil.yml`: the
    dispatched run finishes, its branch carries the harness's records and no workflow file, and
    each commit that left something out says what and why."""
    from swechain_ci.chain import trees

    work, origin, shared = act_repo
    before, after = tmp_path / "before", tmp_path / "after"
    trees.copy_tree(REPO / "chains/toy/versions/0.1.0", before, exclude=lambda rel: rel.parts[0] == "tests")
    shutil.copytree(before, after)
    (after / ".swechain").write_text("the agent's own file\n")
    (after / ".github" / "workflows").mkdir(parents=True)
    (after / ".github" / "workflows" / "evil.yml").write_text(
        "on: push\njobs: {x: {runs-on: self-hosted, steps: []}}\n"
    )
    (work / "replay_tree").mkdir()
    (work / "replay_tree/step-1.build.patch").write_text(trees.diff(before, after))
    git("add", "replay_tree", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "Replay patches", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    branch = "runs/replay-replay_tree/toy/r9"
    inputs = {"agent": "replay:replay_tree", "chain": "toy", "spec_level": "", "steps": "1-1", "run_id": "r9"}
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        outputs = dispatch_until_done(work, shared, github, inputs)
    assert "Traceback" not in "".join(outputs)
    subjects = git("--git-dir", str(origin), "log", "--format=%s", branch).splitlines()
    assert subjects[0].startswith("finished"), subjects
    for ref in (branch, f"{branch}~1", f"{branch}~2"):
        files = git("--git-dir", str(origin), "ls-tree", "-r", "--name-only", ref).splitlines()
        assert not [f for f in files if f.startswith(".github/")] and ".swechain/run.json" in files, ref
    build = next(
        line
        for line in git("--git-dir", str(origin), "log", "--format=%H %s", branch).splitlines()
        if " step 1 build" in line
    )
    message = git("--git-dir", str(origin), "log", "-1", "--format=%B", build.split()[0])
    assert (
        "Left out of this tree" in message
        and ".github (workflow files" in message
        and ".swechain (the harness" in message
    )
    # the agent's whole tree is still in the records
    card = json.loads(git("--git-dir", str(origin), "show", f"{branch}:.swechain/scorecard.json"))
    assert card["steps_scored"] == 1


def runner_hook_shim(tmp_path: Path) -> Path:
    """The installed job-started hook, run before every step under act (act has no runner hooks):
    bash sources BASH_ENV before each `run:`, and a refusal ends the step, as the runner's hook
    ends the job. The hook itself is the one scripts/install-runner-hook installs."""
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    done = subprocess.run(
        [str(REPO / "scripts" / "install-runner-hook"), "--runner-dir", str(runner), "--repository", "acme/bench"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    shim = tmp_path / "hook-shim.sh"
    # once per step (not in the bash processes the step starts), its lines on stderr
    shim.write_text(
        'if [ -z "${SWECHAIN_HOOK_RAN:-}" ]; then export SWECHAIN_HOOK_RAN=1\n'
        f'  env -u BASH_ENV bash -e "{runner}/swechain-hook/job-started.sh" >&2 || exit 97\nfi\n'
    )
    return shim


def hooked(shim: Path, workflow_ref: str) -> list[str]:
    """act options: the shim, the runner's .env, and GITHUB_WORKFLOW_REF as GitHub sets it (act does not)."""
    return [
        "--env",
        f"BASH_ENV={shim}",
        "--env",
        "SWECHAIN_RUNNER_REPOSITORY=acme/bench",
        "--env",
        "SWECHAIN_RUNNER_DEFAULT_BRANCH=main",
        "--env",
        f"GITHUB_WORKFLOW_REF={workflow_ref}",
    ]


def test_a_forks_workflow_edited_to_run_self_hosted_is_refused_by_the_runner(act_repo, tmp_path):
    """The fork changes ci.yml to `runs-on: self-hosted` (a pull_request run uses the PR's own
    workflow files): the runner's hook refuses the job before its step runs."""
    import yaml

    work, _origin, shared = act_repo
    ci = work / ".github" / "workflows" / "ci.yml"
    workflow = yaml.safe_load(ci.read_text())
    workflow["on"] = workflow.pop(True)
    workflow["jobs"]["test"]["runs-on"] = "self-hosted"
    workflow["jobs"]["test"]["steps"] = [{"run": f"echo owned > {tmp_path / 'owned'}"}]
    ci.write_text(yaml.safe_dump(workflow, sort_keys=False))
    payload = json.loads((REPO / "tests/fixtures/runner_events/pull_request_fork.json").read_text())["event"]
    shim = runner_hook_shim(tmp_path)
    with FakeGitHub() as github:
        result = act(
            work,
            shared,
            "pull_request",
            "ci.yml",
            payload,
            github.url,
            *hooked(shim, "acme/bench/.github/workflows/ci.yml@refs/pull/7/merge"),
        )
    assert result.returncode != 0
    assert not (tmp_path / "owned").exists(), "the fork's step never ran"
    assert "job refused: a pull_request job of pull request #7 from mallory/bench" in result.stdout


@pytest.mark.docker
def test_the_runner_hook_lets_a_dispatch_from_main_run_and_refuses_one_from_another_branch(
    toy_oracle, act_repo, tmp_path
):
    work, _origin, shared = act_repo
    shim = runner_hook_shim(tmp_path)
    event = {"inputs": {"chain": "toy", "steps": "1-1", "force": "false"}, "ref": "refs/heads/main"}
    event["repository"] = {"full_name": "acme/bench", "default_branch": "main"}
    with FakeGitHub() as github:
        other = act(
            work,
            shared,
            "workflow_dispatch",
            "chain-build.yml",
            {**event, "ref": "refs/heads/maint/try"},
            github.url,
            *hooked(shim, "acme/bench/.github/workflows/chain-build.yml@refs/heads/maint/try"),
        )
        main = act(
            work,
            shared,
            "workflow_dispatch",
            "chain-build.yml",
            event,
            github.url,
            *hooked(shim, "acme/bench/.github/workflows/chain-build.yml@refs/heads/main"),
        )
    assert other.returncode != 0 and "not on the default branch" in other.stdout
    assert main.returncode == 0, main.stdout[-4000:]
    assert "job accepted: chain-build.yml (workflow_dispatch) from refs/heads/main" in main.stdout


def test_a_smoke_request_for_a_recipe_that_adds_a_url_is_refused_before_any_build(act_repo):
    """The review's proof of concept: the vendor's Dockerfile ADDs a URL on the host's loopback
    (the legacy builder would fetch it inside the daemon, whatever the build's network). The plan
    refuses it, naming the instruction, and nothing reaches the self-hosted runner or the URL."""
    import http.server
    import threading

    hits: list[str] = []

    class Secret(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"the runner's secret\n")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Secret)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work, _origin, shared = act_repo
    head = "c" * 40
    event = {
        "issue": {"number": 7, "pull_request": {"url": "http://api.example/pulls/7"}},
        "comment": {"body": f"/smoke {head}", "user": {"login": "maint"}, "author_association": "MEMBER"},
    }
    try:
        with FakeGitHub() as github:
            github.state.add_token(TOKEN, None)
            github.state.permissions["maint"] = "write"
            github.state.add_pull(7, head, "fork/bench", files=["agents/leak.yaml", "agents/leak.Dockerfile"])
            github.state.add_file(
                head,
                "agents/leak.yaml",
                b"name: leak\nkind: cli\ninstall: {dockerfile: leak.Dockerfile}\ncommands: {build: 'cat /s', fix: 'true'}\n",
            )
            github.state.add_file(
                head,
                "agents/leak.Dockerfile",
                f"ARG AGENT_IMAGE\nFROM ${{AGENT_IMAGE}}\nADD http://127.0.0.1:{server.server_port}/secret /s\n".encode(),
            )
            result = act(
                work,
                shared,
                "issue_comment",
                "agent-smoke.yml",
                event,
                github.url,
                "-P",
                "self-hosted=swechain/no-such-image:never",
            )
            [comment] = github.state.comments_on(7)
            statuses = [(s.sha, s.state) for s in github.state.statuses]
    finally:
        server.shutdown()
    assert result.returncode != 0
    assert "no-such-image" not in result.stdout + result.stderr, "no job was scheduled on self-hosted"
    assert "agents/leak.Dockerfile line 3" in comment.body and "the builder would fetch it on the host" in comment.body
    assert statuses == [(head, "failure")] and hits == []
