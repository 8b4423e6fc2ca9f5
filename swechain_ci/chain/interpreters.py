"""The Pythons a chain can run on: each with the Debian suite its base image comes from.

One row per interpreter (``python:`` in chain.yaml). The suite is what the base image is
bootstrapped from when it cannot be pulled; its glibc decides which manylinux wheels the
wheelhouse and the resolution may pick (pip does not expand a ``manylinux_2_N`` platform
to older glibc tags itself).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

from swechain_ci.errors import SwechainError


@dataclass(frozen=True)
class Interpreter:
    python: str
    debian_suite: str
    glibc: tuple[int, int]
    full_version: str  # the suite's patch release, for environment markers

    @property
    def marker_environment(self) -> dict[str, str]:
        """PEP 508 marker values of the image's interpreter (they differ from the host's)."""
        return {
            "python_version": self.python,
            "python_full_version": self.full_version,
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "implementation_version": self.full_version,
            "sys_platform": "linux",
            "os_name": "posix",
            "platform_system": "Linux",
            "platform_machine": platform.machine(),
        }

    @property
    def platforms(self) -> list[str]:
        machine = platform.machine()
        return [f"manylinux_2_{minor}_{machine}" for minor in range(self.glibc[1], 4, -1)] + [
            f"manylinux{legacy}_{machine}" for legacy in ("2014", "2010", "1")
        ]

    def platform_options(self) -> list[str]:
        return [option for p in self.platforms for option in ("--platform", p)]


INTERPRETERS: dict[str, Interpreter] = {
    row.python: row
    for row in (
        Interpreter("3.9", "bullseye", (2, 31), "3.9.2"),
        Interpreter("3.11", "bookworm", (2, 36), "3.11.2"),
        Interpreter("3.13", "trixie", (2, 41), "3.13.5"),
    )
}


def interpreter(python: str) -> Interpreter:
    if python not in INTERPRETERS:
        raise SwechainError(
            f"Python {python} has no base image recipe; use one of {', '.join(INTERPRETERS)} "
            "(add a row to swechain_ci/chain/interpreters.py for another Debian suite)"
        )
    return INTERPRETERS[python]
