"""DecompSynth on the toy chain's step 0.1.0 -> 0.2.0 against a scripted Messages API.

The real ``anthropic`` SDK talks real HTTP to tests/anthropic_server.py on 127.0.0.1;
only the model's answers are scripted. The step's code diff has three hunks:

- H1 ``src/toyslug/__init__.py``: the new export and the version bump;
- H2 ``src/toyslug/core.py``: the ``Iterable`` import and ``__all__``;
- H3 ``src/toyslug/core.py``: the ``truncate`` fix and the new ``unique_slug``.

The test diff has four: TH1 ``tests/conftest.py``, TH2 ``tests/test_package.py`` (the version),
TH3 ``tests/test_truncate.py`` and TH4 ``tests/test_unique.py``.

The release notes of 0.2.0 have two tasks, task_1 (``unique_slug``) and task_2 (the ``truncate``
fix), with the reference's ids. Each DecompSynth point where we follow the paper's reference
implementation has a test here: whole files batched largest first; the test diff divided and
matched per task; five requests per Divide batch; no Conquer for a task without matched hunks;
Complete shown the unmatched test hunks and the tasks; ids task_N / new_task_N; an unknown type
becomes OTHER.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from anthropic_server import (
    ScriptedServer,
    first_user_text,
    message,
    result_text,
    tool_results,
    tool_use,
    usage,
)
from typer.testing import CliRunner

from swechain_ci.chain.definition import load_chain
from swechain_ci.chain.diffs import read_diff
from swechain_ci.errors import SwechainError
from swechain_ci.records import read_model
from swechain_ci.specs.cli import specs_app
from swechain_ci.specs.decompsynth import (
    DecompSynthRecord,
    Usage,
    record_path,
    synth_chain,
)
from swechain_ci.specs.hunks import Hunk, batch_files, parse_hunks

MODEL = "claude-sonnet-4-6"
SCRIPTED_USAGE = usage(input_tokens=1000, output_tokens=200, cache_write=100, cache_read=500)
# claude-sonnet-4-6 in prices.yaml: $3 input, $15 output, $3.75 cache write, $0.30 cache read per million tokens.
# (1000 * 3 + 200 * 15 + 100 * 3.75 + 500 * 0.30) / 1e6 = (3000 + 3000 + 375 + 150) / 1e6
REQUEST_USD = 0.006525
LEVELS = ["L2", "L3", "L4", "L5"]
GOOD_ASSIGNMENT = [
    {"hunk": "H1", "targets": ["others"]},
    {"hunk": "H2", "targets": ["task_1"]},
    {"hunk": "H3", "targets": ["task_1", "task_2"]},
]
GOOD_TEST_ASSIGNMENT = [
    {"hunk": "TH1", "targets": ["others"]},
    {"hunk": "TH2", "targets": ["others"]},
    {"hunk": "TH3", "targets": ["task_2"]},
    {"hunk": "TH4", "targets": ["task_1"]},
]


@pytest.fixture
def project(project_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    return project_copy


def step_one():
    return load_chain("toy").select_steps("1")


# --------------------------------------------------------------------------- the scripted model


def spec(task_id: str, title: str, kind: str = "FEATURE") -> dict:
    return {
        "task_id": task_id,
        "title": title,
        "type": kind,
        "runtime_impact": True,
        "description": f"{title}, as the release notes describe it.",
        "synthesized_requirement": {
            "problem_statement": f"Ensure that {title.lower()}.",
            "expectation": {
                "grounded": f"grounded expectation of {task_id}",
                "conceptual": f"conceptual expectation of {task_id}",
            },
            "constraints": {
                "grounded": f"grounded constraints of {task_id}",
                "conceptual": f"conceptual constraints of {task_id}",
            },
            "behavior": [f"behaviour of {task_id}"],
            "acceptance_criteria": [f"When {task_id} is used, it should work."],
        },
        "significance": "medium",
        "confidence": "high",
        "difficulty": "easy",
    }


SPECS = {"task_1": spec("task_1", "Add unique_slug"), "task_2": spec("task_2", "Fix truncate length", "FIX")}


def stage(body: dict) -> str:
    return body["tool_choice"]["name"]


def rounds(body: dict) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def task_of(body: dict) -> str:
    return re.search(r'<release_note id="(task_\d+)"', first_user_text(body)).group(1)


def is_test_batch(body: dict) -> bool:
    return '<hunk id="TH' in first_user_text(body)


def answer(name: str, tool_input: dict) -> dict:
    return message([tool_use(name, tool_input)], usage_=SCRIPTED_USAGE)


def scripted(divide=None, conquer=None, complete=None, divide_tests=None):
    """A model: each stage answers from a function of (body, round), or the good answer."""

    def script(body: dict) -> dict:
        name, turn = stage(body), rounds(body)
        if name == "assign_hunks" and is_test_batch(body):
            return answer(name, divide_tests(body, turn) if divide_tests else {"assignments": GOOD_TEST_ASSIGNMENT})
        if name == "assign_hunks":
            return answer(name, divide(body, turn) if divide else {"assignments": GOOD_ASSIGNMENT})
        if name == "write_specification":
            task = task_of(body)
            return answer(name, conquer(body, turn, task) if conquer else SPECS[task])
        if name == "add_tasks":
            return answer(name, complete(body, turn) if complete else {"tasks": []})
        raise AssertionError(f"unexpected tool {name}")

    return script


def requests_of(server: ScriptedServer, name: str, task: str | None = None) -> list[dict]:
    found = [r.body for r in server.requests if stage(r.body) == name]
    if name == "assign_hunks":  # the code batches; divided_test_batches gives the others
        return [b for b in found if not is_test_batch(b)]
    return [b for b in found if task is None or task_of(b) == task]


def divided_test_batches(server: ScriptedServer) -> list[dict]:
    return [r.body for r in server.requests if stage(r.body) == "assign_hunks" and is_test_batch(r.body)]


def feedback(body: dict) -> str:
    results = tool_results(body)
    assert results and all(r["is_error"] for r in results)
    return "\n".join(result_text(r) for r in results)


def synth(server: ScriptedServer | None, levels=LEVELS, base_url: str | None = None, **kwargs):
    url = base_url or (server.url if server else None)
    return synth_chain(step_one(), levels, model=MODEL, base_url=url, interface=False, **kwargs)


def step_files(project: Path) -> Path:
    return project / "specs" / "toy" / "0.1.0-0.2.0"


# --------------------------------------------------------------------------- hunks and batches


def test_the_step_has_three_stable_hunks(project):
    hunks, bare = parse_hunks(read_diff(step_one(), "0.1.0", "0.2.0", "code"))
    assert bare == []
    assert [(h.id, h.file, h.header, h.lines, h.added, h.removed) for h in hunks] == [
        ("H1", "src/toyslug/__init__.py", "@@ -1,8 +1,8 @@", 12, 3, 3),  # @@ + 5 context + 3 - + 3 +
        ("H2", "src/toyslug/core.py", "@@ -3,8 +3,9 @@", 11, 2, 1),  # @@ + 7 context + 1 - + 2 +
        (
            "H3",
            "src/toyslug/core.py",
            '@@ -44,7 +45,31 @@ def truncate(text: str, length: int, ellipsis: str = "...") -> str:',
            33,
            25,
            1,
        ),
    ]
    assert hunks[2].text.startswith(hunks[2].header + "\n") and "+def unique_slug(" in hunks[2].text


def hunk(id: str, file: str, lines: int) -> Hunk:
    return Hunk(id=id, file=file, status="modified", header="@@ -1 +1 @@", text="", lines=lines, added=0, removed=0)


def ids(batches: list[list[Hunk]]) -> list[list[str]]:
    return [[h.id for h in batch] for batch in batches]


def test_whole_files_are_batched_largest_first():
    # Files, not hunks, are the units: a.py (2 hunks, 2000 lines), b.py 1500, c.py 1000, d.py 900,
    # e.py 600, f.py 100. Largest first into the first batch with room (3,000 lines): a opens #1;
    # b opens #2; c fills #1 to 3000; d and e fill #2 to 3000; f opens #3.
    hunks = [
        hunk("H1", "a.py", 1200),
        hunk("H2", "b.py", 1500),
        hunk("H3", "c.py", 1000),
        hunk("H4", "a.py", 800),
        hunk("H5", "d.py", 900),
        hunk("H6", "e.py", 600),
        hunk("H7", "f.py", 100),
    ]
    assert ids(batch_files(hunks)) == [["H1", "H3", "H4"], ["H2", "H5", "H6"], ["H7"]]
    # A file's hunks are never split, even when one of them alone would fit elsewhere.
    assert ids(batch_files([hunk("H1", "a.py", 2500), hunk("H2", "b.py", 400), hunk("H3", "b.py", 400)])) == [
        ["H1"],
        ["H2", "H3"],
    ]


def test_a_file_over_a_limit_gets_a_batch_of_its_own():
    hunks = [hunk("H1", "a.py", 10), hunk("H2", "b.py", 3500), hunk("H3", "c.py", 2990), hunk("H4", "d.py", 20)]
    # b (3500) opens #1 alone; c opens #2; d (20) fits neither and opens #3; a (10) fills #2 to 3000.
    assert ids(batch_files(hunks)) == [["H2"], ["H1", "H3"], ["H4"]]
    many = [hunk(f"H{i}", "one.py", 1) for i in range(1, 152)]  # 151 hunks in one file
    assert ids(batch_files(many)) == [[f"H{i}" for i in range(1, 152)]]
    assert batch_files([]) == []


def test_batches_hold_at_most_20_files_and_150_hunks():
    hunks = [hunk(f"H{n}", f"f{n}.py", 10) for n in range(1, 22)]
    assert ids(batch_files(hunks)) == [[f"H{n}" for n in range(1, 21)], ["H21"]]
    hunks = [hunk(f"H{i}", f"f{i % 2}.py", 1) for i in range(1, 201)]  # two files of 100 hunks
    assert [len(b) for b in batch_files(hunks)] == [100, 100]
    assert ids(batch_files(hunks[:3], max_files=1)) == [["H1", "H3"], ["H2"]]
    assert ids(batch_files(hunks[:3], max_hunks=1)) == [["H1", "H3"], ["H2"]]  # a file over a limit: alone
    assert ids(batch_files([hunk("H1", "a.py", 5), hunk("H2", "b.py", 4), hunk("H3", "c.py", 3)], max_lines=8)) == [
        ["H1", "H3"],
        ["H2"],
    ]


# --------------------------------------------------------------------------- Divide, Conquer, Complete


def test_hunks_are_assigned_and_each_task_is_specified_from_its_own_hunks(project):
    with ScriptedServer(scripted()) as server:
        [(record, written)] = synth(server, jobs=2)

    tasks = {t.spec.task_id: t for t in record.task_set.tasks}
    assert list(tasks) == ["task_1", "task_2"]  # the reference's ids
    assert tasks["task_1"].code_hunks == ["H2", "H3"] and tasks["task_2"].code_hunks == ["H3"]
    assert tasks["task_1"].spec.model_dump(mode="json") == SPECS["task_1"]
    assert tasks["task_2"].release_task.text.startswith("`truncate()` returned one character more")
    assert [(h.id, h.targets) for h in record.code_hunks] == [
        ("H1", ["others"]),
        ("H2", ["task_1"]),
        ("H3", ["task_1", "task_2"]),
    ]
    assert record.batches == [["H1", "H2", "H3"]] and record.test_batches == [["TH1", "TH2", "TH3", "TH4"]]
    assert record.unmatched_tasks == []

    [divide] = requests_of(server, "assign_hunks")
    assert [t["name"] for t in divide["tools"]] == ["assign_hunks"]
    assert divide["tool_choice"] == {"type": "tool", "name": "assign_hunks"}
    assert divide["model"] == MODEL
    prompt = first_user_text(divide)
    assert '<task id="task_1" category="Added">' in prompt and '<task id="task_2" category="Fixed">' in prompt
    assert re.findall(r'<hunk id="(H\d+)"', prompt) == ["H1", "H2", "H3"]

    # The test diff is divided the same way, and matched per task.
    [divide_tests] = divided_test_batches(server)
    assert re.findall(r'<hunk id="(TH\d+)"', first_user_text(divide_tests)) == ["TH1", "TH2", "TH3", "TH4"]
    assert "Test hunks of this batch (4 of the release's 4 test hunks" in first_user_text(divide_tests)
    assert [(h.id, h.file, h.targets) for h in record.test_hunks] == [
        ("TH1", "tests/conftest.py", ["others"]),
        ("TH2", "tests/test_package.py", ["others"]),
        ("TH3", "tests/test_truncate.py", ["task_2"]),
        ("TH4", "tests/test_unique.py", ["task_1"]),
    ]

    # Conquer sees only the task's own code hunks, and its own test hunks for reference.
    [t2] = requests_of(server, "write_specification", "task_2")
    prompt = first_user_text(t2)
    assert re.findall(r'<hunk id="(H\d+)"', prompt) == ["H3"]
    assert re.findall(r'<test_hunk file="([^"]+)"', prompt) == ["tests/test_truncate.py"]
    assert "for reference only" in prompt
    [t1] = requests_of(server, "write_specification", "task_1")
    assert re.findall(r'<hunk id="(H\d+)"', first_user_text(t1)) == ["H2", "H3"]
    assert re.findall(r'<test_hunk file="([^"]+)"', first_user_text(t1)) == ["tests/test_unique.py"]

    # Complete gets the code hunk that serves no task, the test hunks that serve none, and the
    # tasks already specified; it may answer "none".
    [complete] = requests_of(server, "add_tasks")
    prompt = first_user_text(complete)
    assert re.findall(r'<hunk id="(H\d+)"', prompt) == ["H1"]
    assert re.findall(r'<test_hunk file="([^"]+)"', prompt) == ["tests/conftest.py", "tests/test_package.py"]
    # The specifications already synthesized, whole, as the reference's synthesized_tasks.json.
    known = json.loads(prompt.split("keyed by task id (do not repeat them):\n", 1)[1].split("\n\nDecide", 1)[0])
    assert known == SPECS
    assert "version bumps, formatting, import order" in prompt
    assert len(server.requests) == 5

    folder = step_files(project)
    assert written == [folder / f"{level}.md" for level in LEVELS]
    l3 = (folder / "L3.md").read_text()
    assert l3.startswith("# Upgrade Specification from 0.1.0 to 0.2.0\n\n## New Features\n\n")
    assert "### Task 1 Add unique_slug\nEnsure that add unique_slug.\n\n" in l3
    assert "- **Expectation**: conceptual expectation of task_1\n" in l3 and "grounded" not in l3
    assert "### Task 2 Fix truncate length" in l3
    assert "- **Acceptance Criteria:**\n  - When task_2 is used, it should work.\n" in (folder / "L5.md").read_text()
    assert json.loads((folder / "L4.json").read_text())["tasks"][0]["expectation"] == "grounded expectation of task_1"
    saved = read_model(record_path(step_one(), "0.1.0", "0.2.0"), DecompSynthRecord)
    assert saved == record and saved.levels == LEVELS


def test_model_tokens_and_cost_are_recorded(project):
    with ScriptedServer(scripted()) as server:
        [(record, _)] = synth(server)
        url = server.url
    assert len(server.requests) == 5  # divide code and tests, conquer task_1 and task_2, complete
    one = Usage(
        requests=1,
        input_tokens=1000,
        output_tokens=200,
        cache_write_tokens=100,
        cache_read_tokens=500,
        cost_usd=REQUEST_USD,
    )
    two = Usage(
        requests=2,
        input_tokens=2000,
        output_tokens=400,
        cache_write_tokens=200,
        cache_read_tokens=1000,
        cost_usd=0.01305,
    )
    five = Usage(
        requests=5,
        input_tokens=5000,
        output_tokens=1000,
        cache_write_tokens=500,
        cache_read_tokens=2500,
        cost_usd=0.032625,
    )
    assert (record.usage.divide, record.usage.conquer, record.usage.complete, record.usage.total) == (
        two,
        two,
        one,
        five,
    )
    assert record.this_run == record.usage
    assert record.model == MODEL and record.base_url == url
    assert (record.price.input, record.price.output, record.price.cache_write, record.price.cache_read) == (
        3.0,
        15.0,
        3.75,
        0.30,
    )
    assert len(record.input_hash) == 64
    on_disk = json.loads(record_path(step_one(), "0.1.0", "0.2.0").read_text())
    assert on_disk["usage"]["total"]["cost_usd"] == 0.032625 and on_disk["model"] == MODEL


def test_a_rerun_makes_no_request_at_all(project, monkeypatch):
    with ScriptedServer(scripted()) as server:
        [(first, _)] = synth(server)
        before = {p.name: p.read_text() for p in step_files(project).iterdir()}
        [(second, _)] = synth(server)
        assert len(server.requests) == 5
    # Not even a client: no key, and an endpoint where nothing listens.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    [(third, _)] = synth(None, base_url="http://127.0.0.1:9")
    for again in (second, third):
        assert again.task_set == first.task_set and again.usage == first.usage
        assert again.this_run.total == Usage.zero() and again.input_hash == first.input_hash
    after = {p.name: p.read_text() for p in step_files(project).iterdir()}
    assert {k: v for k, v in after.items() if k != "decompsynth.json"} == {
        k: v for k, v in before.items() if k != "decompsynth.json"
    }
    cache = Path(project.parent / "home" / "decompsynth" / "toy" / "0.1.0-0.2.0")
    assert sorted(p.name.split("-")[0] + "-" + p.name.split("-")[1] for p in cache.iterdir()) == [
        "complete-others",
        "conquer-task_1",
        "conquer-task_2",
        "divide-b1",
        "divide-t1",
    ]


def test_a_skipped_hunk_is_named_in_a_correction_round(project):
    def divide(body, turn):
        if turn == 0:
            return {"assignments": [GOOD_ASSIGNMENT[0], GOOD_ASSIGNMENT[2]]}  # H2 skipped
        return {"assignments": [GOOD_ASSIGNMENT[1]]}

    with ScriptedServer(scripted(divide=divide)) as server:
        [(record, _)] = synth(server)
    first, second = requests_of(server, "assign_hunks")
    assert rounds(first) == 0 and rounds(second) == 1
    text = feedback(second)
    assert "Not assigned: H2. Every hunk of the batch must be assigned." in text
    assert "Not hunks" not in text
    assert [(h.id, h.targets) for h in record.code_hunks] == [
        ("H1", ["others"]),
        ("H2", ["task_1"]),
        ("H3", ["task_1", "task_2"]),
    ]
    assert record.usage.divide.requests == 3  # two for the code batch, one for the test batch


def test_invented_hunk_and_task_ids_are_rejected_and_corrected(project):
    def divide(body, turn):
        if turn == 0:
            return {
                "assignments": [
                    {"hunk": "H1", "targets": ["others"]},
                    {"hunk": "H2", "targets": ["task_9"]},  # no such task
                    {"hunk": "H4", "targets": ["task_1", "task_2"]},  # no such hunk (meant H3)
                ]
            }
        return {"assignments": [{"hunk": "H2", "targets": ["task_1"]}, {"hunk": "H3", "targets": ["task_1", "task_2"]}]}

    with ScriptedServer(scripted(divide=divide)) as server:
        [(record, _)] = synth(server)
    _, second = requests_of(server, "assign_hunks")
    text = feedback(second)
    assert "Not hunks of this batch (entries dropped): H4. The hunks of this batch are H1, H2, H3." in text
    assert "Unknown targets (entries dropped): H2 -> task_9. The targets are task_1, task_2, doc, others." in text
    assert "Not assigned: H2, H3." in text
    assert [(h.id, h.targets) for h in record.code_hunks] == [
        ("H1", ["others"]),
        ("H2", ["task_1"]),
        ("H3", ["task_1", "task_2"]),
    ]
    assert '"H4"' not in json.dumps(record.model_dump())


def test_divide_gives_up_after_five_requests(project):
    def divide(body, turn):
        return {"assignments": [GOOD_ASSIGNMENT[0], GOOD_ASSIGNMENT[2]]}

    with ScriptedServer(scripted(divide=divide)) as server, pytest.raises(SwechainError) as caught:
        synth(server, jobs=1)
    assert len(requests_of(server, "assign_hunks")) == 5  # the answer and four corrections, as the reference
    assert len(server.requests) == 5
    message_ = str(caught.value)
    assert "DecompSynth toy 0.1.0 -> 0.2.0, divide b1: no valid answer after 5 requests" in message_
    assert "Not assigned: H2." in message_
    assert not step_files(project).exists() or not list(step_files(project).glob("L*.md"))


def test_invalid_task_json_in_conquer_is_fed_back_and_retried(project):
    def conquer(body, turn, task):
        if task == "task_1" and turn == 0:
            broken = {**SPECS["task_1"], "runtime_impact": "yes", "notes": "extra"}
            del broken["difficulty"]
            return broken
        if task == "task_2" and turn == 0:
            return {
                **SPECS["task_2"],
                "task_id": "task_1",
                "synthesized_requirement": {**SPECS["task_2"]["synthesized_requirement"], "behavior": []},
            }
        return SPECS[task]

    with ScriptedServer(scripted(conquer=conquer)) as server:
        [(record, _)] = synth(server)
    _, second = requests_of(server, "write_specification", "task_1")
    text = feedback(second)
    assert "does not fit the schema of write_specification" in text
    assert "- field 'runtime_impact': Input should be a valid boolean" in text
    assert "- field 'difficulty': Field required" in text
    assert "- field 'notes': Extra inputs are not permitted" in text
    _, second = requests_of(server, "write_specification", "task_2")
    text = feedback(second)
    assert "- task_id is 'task_1'; it must be 'task_2'" in text
    assert "- synthesized_requirement.behavior is empty" in text
    assert [t.spec.model_dump(mode="json") for t in record.task_set.tasks] == [SPECS["task_1"], SPECS["task_2"]]
    assert record.usage.conquer.requests == 4


def test_conquer_gives_up_after_three_attempts(project):
    def conquer(body, turn, task):
        return {**SPECS[task], "confidence": "certain"} if task == "task_2" else SPECS[task]

    with (
        ScriptedServer(scripted(conquer=conquer)) as server,
        pytest.raises(SwechainError, match=r"conquer task_2: no valid answer after 3 requests.*'confidence'"),
    ):
        synth(server, jobs=1)
    assert len(requests_of(server, "write_specification", "task_2")) == 3


def test_complete_adds_tasks_only_from_others_hunks(project):
    extra = {k: v for k, v in spec("X", "Report the package version", "OTHER").items() if k != "task_id"}

    def complete(body, turn):
        return {"tasks": [{**extra, "hunks": ["H1", "H2"] if turn == 0 else ["H1"]}]}

    with ScriptedServer(scripted(complete=complete)) as server:
        [(record, _)] = synth(server)
    _, second = requests_of(server, "add_tasks")
    assert "- tasks.0 cites H2, which are not among the hunks shown (H1)" in feedback(second)
    added = record.task_set.tasks[-1]
    assert (added.spec.task_id, added.origin, added.code_hunks) == ("new_task_1", "complete", ["H1"])
    # As the reference lists Complete's tasks: under Additional Changes, problem statement only.
    l3 = (step_files(project) / "L3.md").read_text()
    assert l3.endswith("## Additional Changes\n- Ensure that report the package version.")
    assert "Task 3" not in l3 and "Report the package version" not in l3


def test_without_an_api_key_nothing_is_asked_or_written(project, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with ScriptedServer(scripted()) as server, pytest.raises(SwechainError, match="ANTHROPIC_API_KEY is not set"):
        synth(server)
    assert server.requests == []
    assert not (step_files(project) / "L3.md").exists() and not record_path(step_one(), "0.1.0", "0.2.0").exists()


def test_a_model_without_a_price_is_refused_before_any_request(project):
    with ScriptedServer(scripted()) as server, pytest.raises(SwechainError, match="no price for model claude-unknown"):
        synth_chain(step_one(), LEVELS, model="claude-unknown", base_url=server.url)
    assert server.requests == []


def test_hand_written_levels_are_not_overwritten(project):
    folder = step_files(project)
    (folder / "L3.md").write_text("# my own L3\n")
    with (
        ScriptedServer(scripted()) as server,
        pytest.raises(SwechainError, match=re.escape("L3.md: exists and was not written by")),
    ):
        synth(server)
    assert server.requests == [] and (folder / "L3.md").read_text() == "# my own L3\n"


def test_the_cli_synthesizes_and_lists_the_levels(project):
    runner = CliRunner()
    with ScriptedServer(scripted()) as server:
        result = runner.invoke(
            specs_app, ["synth", "toy", "--steps", "1", "--levels", "L3,l5", "--base-url", server.url, "--no-interface"]
        )
    assert result.exit_code == 0, result.output
    assert "| 0.1.0 → 0.2.0 | 2 + 0" in result.output and "5 / 5" in result.output and "$0.0326" in result.output
    assert sorted(p.name for p in step_files(project).iterdir()) == [
        "L3.json",
        "L3.md",
        "L5.json",
        "L5.md",
        "decompsynth.json",
        "manual.md",
    ]
    listed = runner.invoke(specs_app, ["list", "toy"])
    assert "| 0.1.0 → 0.2.0 | L3, L5, manual" in listed.output
    assert "L3: specs synth: DecompSynth (" in listed.output
    bad = runner.invoke(specs_app, ["synth", "toy", "--levels", "L1"])
    assert isinstance(bad.exception, SwechainError) and "unsupported level 'L1'" in str(bad.exception)


def test_a_task_without_any_matched_hunk_is_specified_and_listed_as_additional(project):
    # The reference specifies every release-note task; one without code is under Additional Changes.
    def divide(body, turn):  # nothing of the code for task_2 ...
        return {"assignments": [GOOD_ASSIGNMENT[0], GOOD_ASSIGNMENT[1], {"hunk": "H3", "targets": ["task_1"]}]}

    def divide_tests(body, turn):  # ... nor of the tests
        return {
            "assignments": [
                {**a, "targets": ["others"]} if a["targets"] == ["task_2"] else a for a in GOOD_TEST_ASSIGNMENT
            ]
        }

    with ScriptedServer(scripted(divide=divide, divide_tests=divide_tests)) as server:
        [(record, _)] = synth(server)
    [t2] = requests_of(server, "write_specification", "task_2")
    assert "No code hunk was matched to this task" in first_user_text(t2)
    assert "No test hunk was matched to this task" in first_user_text(t2)
    assert [t.spec.task_id for t in record.task_set.tasks] == ["task_1", "task_2"] and record.unmatched_tasks == [
        "task_2"
    ]
    [complete] = requests_of(server, "add_tasks")  # its test hunk is now in others: Complete sees it
    assert "tests/test_truncate.py" in first_user_text(complete)
    l3 = (step_files(project) / "L3.md").read_text()
    assert l3.endswith("## Additional Changes\n- Ensure that fix truncate length.") and "Task 2" not in l3


def test_a_task_matched_only_by_tests_is_conquered_and_listed_as_additional(project):
    def divide(body, turn):
        return {"assignments": [GOOD_ASSIGNMENT[0], GOOD_ASSIGNMENT[1], {"hunk": "H3", "targets": ["task_1"]}]}

    with ScriptedServer(scripted(divide=divide)) as server:
        [(record, _)] = synth(server)
    [t2] = requests_of(server, "write_specification", "task_2")
    assert "No code hunk was matched to this task" in first_user_text(t2)
    assert "tests/test_truncate.py" in first_user_text(t2)
    assert record.task_set.tasks[1].code_hunks == []
    l3 = (step_files(project) / "L3.md").read_text()
    assert l3.endswith("## Additional Changes\n- Ensure that fix truncate length.") and "Task 2" not in l3


def test_complete_sees_every_others_hunk_even_one_also_given_to_a_task(project):
    def divide(body, turn):  # H1 serves task_1 and is also filed under others
        return {"assignments": [{"hunk": "H1", "targets": ["task_1", "others"]}, *GOOD_ASSIGNMENT[1:]]}

    with ScriptedServer(scripted(divide=divide)) as server:
        synth(server)
    [complete] = requests_of(server, "add_tasks")
    assert re.findall(r'<hunk id="(H\d+)"', first_user_text(complete)) == ["H1"]


def test_the_field_rules_are_the_references(project):
    from swechain_ci.specs.decompsynth import FIELD_GUIDE

    grounded, conceptual = FIELD_GUIDE.split("expectation.grounded:")[1].split("expectation.conceptual:")
    # Grounded text may name public API and exception types, but no snippets, paths or exact messages.
    assert "public API" in grounded and "exception" in grounded
    assert all(word in grounded for word in ("no code snippets", "file paths", "exact messages"))
    # Conceptual text may name public API and the types raised, but no paths or internal identifiers.
    conceptual = conceptual.split("constraints.grounded")[0]
    assert "may name public API" in conceptual and "raised" in conceptual
    assert "no file paths, internal identifiers" in conceptual
    assert "not the tests" in FIELD_GUIDE and "not test assertions" in FIELD_GUIDE


def test_linked_issue_text_is_given_to_divide_and_conquer(project):
    from swechain_ci.specs.changelog import chain_release_notes
    from swechain_ci.specs.linked import LinkedText, store

    chain = step_one()
    notes = chain_release_notes(chain, "0.2.0")
    changelog = project / "chains" / "toy" / "versions" / "0.2.0" / "CHANGELOG.md"
    first = notes.tasks[0].text.splitlines()[0]
    changelog.write_text(
        changelog.read_text().replace(first, first + " ([#7](https://github.com/toy/toyslug/issues/7))", 1)
    )
    store(
        chain,
        LinkedText(
            repository="toy/toyslug",
            number=7,
            kind="issue",
            title="Slugs collide",
            body="Two titles give one slug.",
            url="https://github.com/toy/toyslug/issues/7",
            source="test",
        ),
    )
    with ScriptedServer(scripted()) as server:
        synth(server)
    [divide] = requests_of(server, "assign_hunks")
    linked = '<linked kind="issue" number="7" title="Slugs collide">\nTwo titles give one slug.\n</linked>'
    assert linked in first_user_text(divide)
    [t1] = requests_of(server, "write_specification", "task_1")
    assert linked in first_user_text(t1) and "text not available" not in first_user_text(t1)


def test_docs_hunks_are_no_code_and_file_changes_close_every_level(project, monkeypatch):
    from swechain_ci.specs import decompsynth

    real = decompsynth.read_diff
    extra = (
        "diff --git a/docs/conf.py b/docs/conf.py\n--- a/docs/conf.py\n+++ b/docs/conf.py\n"
        "@@ -1 +1 @@\n-version = '0.1'\n+version = '0.2'\n"
        "diff --git a/src/toyslug/extra.py b/src/toyslug/extra.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/src/toyslug/extra.py\n@@ -0,0 +1 @@\n+X = 1\n"
    )

    def read_diff(chain, prev, next_, kind):
        patch = real(chain, prev, next_, kind)
        return patch + extra if kind == "code" else patch

    def divide(body, turn):  # the new file's hunk is H4; docs/conf.py is never shown
        return {"assignments": [*GOOD_ASSIGNMENT, {"hunk": "H4", "targets": ["others"]}]}

    monkeypatch.setattr(decompsynth, "read_diff", read_diff)
    with ScriptedServer(scripted(divide=divide)) as server:
        [(record, _)] = synth(server)
    assert not any(h.file.startswith("docs/") for h in record.code_hunks)
    assert "docs/conf.py" not in first_user_text(requests_of(server, "assign_hunks")[0])
    assert record.file_changes == ["- Add file `src/toyslug/extra.py`"]
    for level in LEVELS:
        assert (
            (step_files(project) / f"{level}.md")
            .read_text()
            .endswith("## File Changes\n- Add file `src/toyslug/extra.py`")
        )


def test_an_unknown_type_becomes_other(project):
    extra = {k: v for k, v in spec("x", "Report the package version").items() if k != "task_id"}

    def conquer(body, turn, task):
        return {**SPECS[task], "type": "NEW_FEATURE"} if task == "task_1" else SPECS[task]

    def complete(body, turn):
        return {"tasks": [{**extra, "type": "Feature", "hunks": ["H1"]}]}

    with ScriptedServer(scripted(conquer=conquer, complete=complete)) as server:
        [(record, _)] = synth(server)
    assert len(requests_of(server, "write_specification", "task_1")) == 1  # accepted, not corrected
    assert [(t.spec.task_id, t.spec.type) for t in record.task_set.tasks] == [
        ("task_1", "OTHER"),
        ("task_2", "FIX"),
        ("new_task_1", "OTHER"),
    ]
