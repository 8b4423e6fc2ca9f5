"""The agent image: the start version's code and environment, plus what a manifest installs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from swechain_ci.agents.manifest import AgentManifest
from swechain_ci.agents.npm import npm_tree
from swechain_ci.agents.recipe import check_recipe
from swechain_ci.chain import environments as environments_of
from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.images import ChainImages, build_cached, wheelhouse
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.errors import SwechainError


def ensure_agent_image(sandbox: Sandbox, chain: Chain, images: ChainImages, manifest: AgentManifest) -> str:
    """The start version's code on the start version's environment, without tests, plus
    what the agent's manifest installs."""
    start = chain.versions[0]
    code = sources.materialize(chain, start).code
    image = build_cached(sandbox, chain, "agent", {"code": code}, {"DEPS": images.deps[start]}).id
    if manifest.install.pip:
        pins = environments_of.resolve(manifest.install.pip, chain.config.python)
        with tempfile.TemporaryDirectory(prefix="swechain-tools-") as tmp:
            req_file = Path(tmp) / "requirements.txt"
            req_file.write_text("\n".join(pins) + "\n")
            image = build_cached(
                sandbox,
                chain,
                "agent-tools",
                {"requirements.txt": req_file, "wheels": wheelhouse(pins, chain.config.python)},
                {"AGENT_IMAGE": image},
            ).id
    if manifest.install.dockerfile:
        own = manifest.folder / manifest.install.dockerfile
        if not own.is_file():
            raise SwechainError(f"agent {manifest.name}: install.dockerfile {own} does not exist")
        check_recipe(own)  # what reaches the builder is what the review saw: no URL, no other image, no secret
        files = manifest.folder / "files"  # what the recipe may COPY: configs, deny lists
        context = {"files": files} if files.is_dir() else {}
        if manifest.install.npm and manifest.cli_version:  # fetched on the host: the build needs no network
            context["npm"] = npm_tree(manifest.install.npm, manifest.cli_version)
        args = {"AGENT_IMAGE": image, **({"CLI_VERSION": manifest.cli_version} if manifest.cli_version else {})}
        # A recipe that fetches on its own needs SWECHAIN_BUILD_NETWORK=default (a registry within reach).
        image = build_cached(
            sandbox,
            chain,
            f"agent-{manifest.name}",
            context,
            args,
            recipe_path=own,
            network=os.environ.get("SWECHAIN_BUILD_NETWORK", "none"),
        ).id
    return image
