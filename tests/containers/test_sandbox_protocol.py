"""DockerSandbox and its AgentContainer implement the sandbox protocols member by member, and
the stages are typed against the protocols, never against the Docker implementation."""

from __future__ import annotations

import ast
import inspect

import pytest
from conftest import REPO

from swechain_ci.containers import protocol
from swechain_ci.containers.sandbox import AgentContainer, DockerSandbox


def parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def mismatches(interface: type, implementation: type) -> list[str]:
    """Each protocol member the implementation lacks, or has with other parameters."""
    found = []
    for name, member in vars(interface).items():
        if not inspect.isfunction(member) or name.startswith("_"):
            continue
        implemented = getattr(implementation, name, None)
        if implemented is None:
            found.append(f"{name}: missing")
        elif parameters(implemented) != parameters(member):
            found.append(f"{name}: {inspect.signature(implemented)} is not {inspect.signature(member)}")
    return found


@pytest.mark.parametrize(
    ("interface", "implementation"), [(protocol.Sandbox, DockerSandbox), (protocol.Container, AgentContainer)]
)
def test_the_docker_backend_implements_the_protocol(interface, implementation):
    assert mismatches(interface, implementation) == []


def test_the_check_catches_a_missing_or_different_member():
    class Partial:
        def exec(self, command, user=0): ...

    found = mismatches(protocol.Container, Partial)
    assert "run_command: missing" in found
    assert any(f.startswith("exec: ") for f in found)


def test_no_stage_is_typed_against_the_docker_implementation():
    offenders = []
    for path in sorted((REPO / "swechain_ci").rglob("*.py")):
        if path.parent.name == "containers" and path.name in ("sandbox.py", "protocol.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
            if isinstance(annotation, ast.expr) and "DockerSandbox" in ast.unparse(annotation):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []
