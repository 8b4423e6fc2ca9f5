"""Start pytest so that nothing in the code under test can stand in for it.

Run as ``python -s launch_pytest.py CODE_PATH... RUN_FOLDER -- PYTEST_ARGS`` in an environment the
supervisor builds whole. ``-s`` keeps the user site (``usercustomize``) out; a script's
run puts only its own folder (the harness, root's) first on ``sys.path``, never the
working folder; no ``PYTHONPATH`` reaches start-up, so ``sitecustomize`` and every
installed name resolve in the image only. (``-I`` would do the same but also ignore
``PYTHONHASHSEED``, which the runs pin.) The candidate's folders go *after*
site-packages and the harness, so an importable name is always the installed one; the
guard is imported before any code under test runs. Subprocesses that tests start get the
CODE_PATHs (not the run folder) as PYTHONPATH.
"""

import os
import sys

HARNESS = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    separator = sys.argv.index("--")
    code_paths, args = sys.argv[1:separator], sys.argv[separator + 1 :]
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != os.getcwd()]
    sys.path += [p for p in (HARNESS, *code_paths) if p not in sys.path]
    # For the subprocesses some tests start: they import the candidate's code too.
    os.environ["PYTHONPATH"] = os.pathsep.join([HARNESS, *code_paths[:-1]])  # xdist workers load the guard
    # Bytecode only from beside its source (root's folders: the image, the run folder without the
    # candidate's compiled files), never written; the guard keeps it so (swechain_guard.BYTECODE).
    os.environ.pop("PYTHONPYCACHEPREFIX", None)
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.pycache_prefix, sys.dont_write_bytecode = None, True
    import pytest
    import swechain_guard

    return pytest.main(args, plugins=[swechain_guard.Guard()])


if __name__ == "__main__":
    sys.exit(main())
