"""Vendor recipes as data: every install.dockerfile is parsed (dockerfile-parse) and allowed only
what an agent image needs; a refusal is one line naming the instruction."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_cli

from swechain_ci.agents import recipe
from swechain_ci.errors import SwechainError

HEAD = "ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\n"
# One refused recipe per rule of recipe.RULES, in order, with the words its error names.
RULE_CASES = {
    "known instruction": (
        HEAD + "ONBUILD RUN curl http://x\n",
        "line 3 `ONBUILD RUN curl http://x`: ONBUILD is not allowed",
    ),
    "before FROM": (
        "ARG AGENT_IMAGE=swechain-ci/toy-version:py3.11-x\nFROM ${AGENT_IMAGE}\n",
        "line 1 `ARG AGENT_IMAGE=swechain-ci/toy-version",
    ),
    "one stage on the agent image": (
        "FROM swechain-ci/toy-version:py3.11-0123\n",
        "must build on `FROM ${AGENT_IMAGE}`",
    ),
    "files from the context only": (
        HEAD + "ADD http://127.0.0.1:8000/secret /s\n",
        "line 3 `ADD http://127.0.0.1:8000/secret /s`: ADD of http://127.0.0.1:8000/secret: the builder would fetch it on the host's network",
    ),
    "no secrets or mounts": (
        HEAD + "RUN --mount=type=secret,id=tok cat /run/secrets/tok\n",
        "RUN --mount=type=secret is not allowed",
    ),
}
MORE = [
    (HEAD + "FROM busybox\n", "a second FROM"),
    (
        HEAD + "COPY --from=swechain-ci/toy-version:py3.11-0 /tests /t\n",
        "COPY --from=swechain-ci/toy-version:py3.11-0 copies from another image",
    ),
    (HEAD + "COPY --from=0 / /x\n", "copies from another image or stage"),
    (HEAD + "RUN --mount=type=ssh git clone git@github.com:x/y\n", "RUN --mount=type=ssh is not allowed"),
    (HEAD + "RUN --network=host curl x\n", "RUN --network=host is not allowed"),
    (HEAD + 'ADD ["https://example.com/x.tar.gz", "/x"]\n', "ADD of https://example.com/x.tar.gz"),
    (HEAD + "add git@github.com:x/y.git /y\n", "ADD of git@github.com:x/y.git"),
    (HEAD + "ARG U=http://127.0.0.1/s\nADD ${U} /s\n", "a variable could name a URL"),
    (HEAD + "ADD --checksum=sha256:00 https://x/y /y\n", "ADD --checksum is not allowed"),
    ("# syntax=evil/frontend:1\n" + HEAD, "parser directives are not allowed"),
    ("ARG AGENT_IMAGE\nFROM --platform=linux/arm64 ${AGENT_IMAGE}\n", "must build on `FROM ${AGENT_IMAGE}`"),
    ("ARG AGENT_IMAGE\n", "line 1: no FROM"),
    (HEAD + 'ENTRYPOINT ["/bin/sh"]\n', "ENTRYPOINT is not allowed"),
]


def refusal(text: str, tmp_path) -> str:
    path = tmp_path / "x.Dockerfile"
    path.write_text(text)
    with pytest.raises(SwechainError) as caught:
        recipe.check_recipe(path, "agents/x.Dockerfile")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("agents/x.Dockerfile line ")
    return message


def test_every_rule_has_a_case():
    assert [name for name, _ in recipe.RULES] == list(RULE_CASES)


@pytest.mark.parametrize("rule", list(RULE_CASES))
def test_each_rule_refuses_its_case_in_one_line(rule, tmp_path):
    text, words = RULE_CASES[rule]
    assert words in refusal(text, tmp_path)


@pytest.mark.parametrize(("text", "words"), MORE)
def test_what_an_agent_image_does_not_need_is_refused(text, words, tmp_path):
    assert words in refusal(text, tmp_path)


def test_the_shipped_recipes_and_an_offline_install_pass(tmp_path):
    for path in sorted((REPO / "agents").glob("*.Dockerfile")):
        recipe.check_recipe(path)
    offline = tmp_path / "ok.Dockerfile"
    offline.write_text(
        HEAD + "ARG CLI_VERSION\nUSER 0\nCOPY --chown=1000:1000 files/cli.tgz /opt/cli.tgz\n"
        "ADD files/tools.tar.gz /opt/tools/\nRUN npm install -g --offline /opt/cli.tgz \\\n && rm /opt/cli.tgz\n"
        "ENV NO_UPDATE_NOTIFIER=1\nWORKDIR /app\nUSER 1000\n"
    )
    recipe.check_recipe(offline)


def test_agents_validate_names_the_refused_instruction(tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "lazy.yaml").write_text(
        "schema_version: 1\nname: lazy\nkind: cli\ninstall: {dockerfile: lazy.Dockerfile}\n"
        "commands: {build: 'true', fix: 'true'}\n"
    )
    (agents / "lazy.Dockerfile").write_text(HEAD + "ADD http://127.0.0.1:9/secret /s\n")
    result = run_cli("agents", "validate", str(agents / "lazy.yaml"), "--report", str(tmp_path / "r.json"))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert re.search(r"lazy\.Dockerfile line 3 `ADD http://127\.0\.0\.1:9/secret /s`: ADD of", line), line
    by_dockerfile = run_cli("agents", "validate", str(agents / "lazy.Dockerfile"))
    assert by_dockerfile.returncode == 2 and "line 3" in by_dockerfile.stderr
