"""``swechain-ci specs fetch``: the SWE-Chain dataset from the Hugging Face Hub, imported.

The dataset is the reference's (its ``load_dataset.py``: ``HF_REPO_ID``), a dataset repository
whose ``data/*.parquet`` (``data/specs_chain.parquet``) holds one row per step of every paper
chain. It is fetched with ``huggingface_hub``, the ecosystem's client: the dataset's info
(``api/datasets/<id>/revision/<rev>``) names the revision's commit and files, then each parquet
file is downloaded into the client's own cache (``HF_HUB_CACHE``, ``HF_HOME``; ``HF_ENDPOINT``
names the Hub, ``HF_HUB_OFFLINE=1`` keeps it off the network). When the Hub cannot be reached,
the cached copy of the revision is used, and the report says so.

Every chain in ``chains/`` whose ``paper_id`` the dataset covers is then imported
(``published.import_specs``), all of its steps or none; a chain that fails does not stop the others.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from swechain_ci.errors import SwechainError
from swechain_ci.models import Strict

DATASET = "For-Anonymous-Submission-90/SWE-Chain"  # the reference's load_dataset.py, HF_REPO_ID
FILES = "data/*.parquet"
DEFAULT_FILE = "data/specs_chain.parquet"


class Fetched(Strict):
    repo_id: str
    revision: str
    commit: str | None  # None: the Hub was not reached (the cached copy of the revision)
    endpoint: str
    files: list[str]  # local paths, in the client's cache
    offline_reason: str | None = None


def _endpoint() -> str:
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def fetch_dataset(repo_id: str = DATASET, revision: str = "main") -> Fetched:
    """The dataset's parquet files at ``revision``, downloaded (or found in the cache)."""
    import httpx2
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    endpoint = _endpoint()
    commit: str | None = None
    offline: str | None = None
    try:
        info = HfApi(endpoint=endpoint).dataset_info(repo_id, revision=revision)
        commit = info.sha
        names = sorted(s.rfilename for s in info.siblings or [] if fnmatch.fnmatch(s.rfilename, FILES))
        if not names:
            raise SwechainError(
                f"dataset {repo_id} at {revision} ({endpoint}) has no {FILES}; is --repo-id the SWE-Chain dataset?"
            )
    except RepositoryNotFoundError:
        raise SwechainError(
            f"dataset {repo_id} not found at {endpoint}; give the SWE-Chain dataset's id with --repo-id "
            "(or set HF_ENDPOINT to a Hub that has it)"
        ) from None
    except RevisionNotFoundError:
        raise SwechainError(f"dataset {repo_id} has no revision {revision} at {endpoint}; check --revision") from None
    except (httpx2.HTTPError, OfflineModeIsEnabled, HfHubHTTPError, OSError) as exc:
        offline = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}"
        names = [DEFAULT_FILE]  # the Hub cannot say which files; the dataset's own
    files = []
    for name in names:
        try:
            files.append(
                hf_hub_download(
                    repo_id,
                    name,
                    repo_type="dataset",
                    revision=revision,  # by name, so the cache maps it to its commit (for offline use)
                    endpoint=endpoint,
                    local_files_only=offline is not None,
                )
            )
        except EntryNotFoundError:
            if offline is not None:
                raise SwechainError(
                    f"cannot reach {endpoint} ({offline}) and {repo_id} {revision} is not in the Hugging Face cache "
                    "(HF_HUB_CACHE); fetch it once with the Hub in reach"
                ) from None
            raise SwechainError(f"dataset {repo_id} lists {name} but the Hub does not serve it") from None
        except (httpx2.HTTPError, HfHubHTTPError) as exc:
            raise SwechainError(f"cannot download {name} of {repo_id} from {endpoint}: {exc}") from None
    return Fetched(
        repo_id=repo_id, revision=revision, commit=commit, endpoint=endpoint, files=files, offline_reason=offline
    )


class ChainImport(Strict):
    chain: str
    paper_id: str
    file: str
    steps: int  # steps of the chain
    written: int = 0  # steps written
    levels: str = "-"
    missing_steps: list[str] = []
    error: str | None = None


def import_covered(
    path: Path, chains: list[str] | None = None, levels: list[str] | None = None, interface: bool = False
) -> tuple[list[ChainImport], list[str]]:
    """Import every chain of ``chains/`` (or of ``chains``) that ``path`` covers: (results, the
    paper chain ids it covers that no chain here has)."""
    from swechain_ci.chain.definition import Chain, available_chains, load_chain
    from swechain_ci.specs.published import chain_ids, import_specs

    covered = chain_ids(path)
    ours: dict[str, list[Chain]] = {}
    for name in chains or available_chains():
        chain = load_chain(name)
        if chain.config.paper_id:
            ours.setdefault(chain.config.paper_id, []).append(chain)
    if chains:
        missing = [c for c in chains if load_chain(c).config.paper_id not in covered]
        if missing:
            raise SwechainError(
                f"{path} covers no step of chain {', '.join(missing)} (its paper ids: {', '.join(covered) or 'none'})"
            )
    results = []
    for paper_id in covered:
        for chain in ours.get(paper_id, []):
            result = ChainImport(chain=chain.id, paper_id=paper_id, file=str(path), steps=len(chain.steps))
            try:
                report = import_specs(path, chain, None, interface=interface, levels=levels)
            except SwechainError as exc:
                result.error = str(exc)
            else:
                result.written = sum(1 for r in report.rows if r.status == "written")
                result.levels, result.missing_steps = report.level, report.missing_steps
            results.append(result)
    return results, [p for p in covered if p not in ours]
