"""pytest plugin loaded in every hidden-test run (``launch_pytest.py`` registers it).

1. Import tolerance, as the reference implementation does it: a failed
   ``from X import Y`` in a test module or conftest, while it is collected,
   binds the missing names to None and records the failure, so only the tests
   that use Y fail instead of the whole module.
2. Every observation goes, as it happens, down a pipe to the supervisor
   (``run_hidden_tests.py``, another user): collection, each test's stages,
   the end of the session. Each line carries a token read before any code
   under test ran, so lines written blindly by that code are told apart.
3. Tamper checks that Python cannot prevent, only see: hooks and plugins from
   outside the image and the target's files, hidden test modules whose code is
   not the hidden file's, builtins replaced. Each becomes a ``flag`` line.
4. A failed test's garbage is released when the test ends (``release_garbage``).
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import inspect
import json
import os
import sys
import sysconfig
import types

import pytest

HARNESS = os.path.dirname(os.path.abspath(__file__))
TEXT_CHARS = 4000
# Builtins the harness itself swaps (import tolerance) or Python sets (the last result).
OWN_BUILTINS = {"__import__", "_"}
_real_import = builtins.__import__
# Where Python reads and writes bytecode, as launch_pytest.py set it: read only beside each source
# (root's folders), never written. The code under test may not steer it (a crafted assertion-rewrite
# cache under a prefix of its own would stand in for a hidden test module): undone and reported.
BYTECODE: tuple[tuple[str, object], ...] = (("pycache_prefix", None), ("dont_write_bytecode", True))
BYTECODE_ENV: tuple[tuple[str, str | None], ...] = (("PYTHONPYCACHEPREFIX", None), ("PYTHONDONTWRITEBYTECODE", "1"))


def pin_bytecode() -> list[str]:
    """The bytecode settings the code under test changed, each set back."""
    changed = []
    for name, value in BYTECODE:
        now = getattr(sys, name, value)
        if now != value:
            changed.append(f"sys.{name} was {now!r}"[:200])
            setattr(sys, name, value)
    for name, value in BYTECODE_ENV:
        now = os.environ.get(name)
        if now != value:
            changed.append(f"${name} was {now!r}"[:200])
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return changed


class _MissingNames(types.ModuleType):
    """Stands in for a module in one ``from X import ...``: missing names are None."""

    def __init__(self, real: types.ModuleType | None, name: str) -> None:
        super().__init__(name)
        self.__real = real

    def __getattr__(self, attribute: str):
        if self.__real is not None and hasattr(self.__real, attribute):
            return getattr(self.__real, attribute)
        return None


def _realpath(path: str) -> str:
    return os.path.realpath(path) if path else ""


def release_garbage() -> None:
    """Collect a failed test's reference cycles (its traceback's frames) as it ends, outside any
    test, with what they hold that cannot be finalized quietly (a coroutine never awaited) dropped.

    Left to the collector, they are freed at a moment no test chooses: pytest then fails whichever
    test runs at that moment with the "unraisable exception" (a ``filterwarnings = error`` suite
    turns the warning into a failure), a test that passes otherwise. Flask 2.0.1's code under 2.0.2's
    tests lost ``test_templates_and_static`` in one build and ``test_session_stored_last`` in the
    next, so the oracle's ground truth, and any candidate's score, changed from run to run."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):  # pytest keeps them for pdb
        with contextlib.suppress(AttributeError):
            delattr(sys, name)
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


class Tolerance:
    """Import tolerance for hidden test code; ``failed_import`` says where a failure goes."""

    failed_here = False  # a phase of the test now running failed

    def __init__(self) -> None:
        self.run_root = _realpath(os.environ.get("SWECHAIN_RUN", "/work/run"))
        self.tests_root = _realpath(os.environ["SWECHAIN_TESTS_ROOT"])
        with open(os.environ["SWECHAIN_TRUSTED"], encoding="utf-8") as handle:
            self.target_files = {os.path.join(self.run_root, rel) for rel in json.load(handle)}

    def is_hidden_test_code(self, globals_: dict | None) -> bool:
        filename = (globals_ or {}).get("__file__") or ""
        real = _realpath(filename)
        return bool(filename) and (real.startswith(self.tests_root + os.sep) or real in self.target_files)

    def tolerant_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        __tracebackhide__ = True  # keep the harness out of the tracebacks agents read
        if not fromlist or not self.is_hidden_test_code(globals):
            return _real_import(name, globals, locals, fromlist, level)
        shown = "." * level + name
        try:
            module = _real_import(name, globals, locals, fromlist, level)
        except ImportError as exc:
            self.failed_import(globals, shown, [n for n in fromlist if n != "*"], f"{type(exc).__name__}: {exc}")
            return _MissingNames(None, shown)
        missing = [n for n in fromlist if n != "*" and not hasattr(module, n)]
        if not missing:
            return module
        error = f"ImportError: cannot import name {', '.join(map(repr, missing))} from {shown!r}"
        self.failed_import(globals, shown, missing, error)
        return _MissingNames(module, getattr(module, "__name__", shown))

    def import_record(self, globals_: dict, module: str, names: list[str], error: str) -> dict:
        test_file = os.path.relpath(_realpath(globals_["__file__"]), os.path.dirname(self.tests_root))
        return {"test_file": test_file, "module": module, "names": names, "error": error}

    def failed_import(self, globals_: dict, module: str, names: list[str], error: str) -> None:
        raise NotImplementedError

    def bytecode_pinned(self, when: str) -> None:
        """Bytecode settings set back before and after each import of test code (a worker, which has
        no pipe, only sets them back)."""
        pin_bytecode()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_load_initial_conftests(self, early_config, parser, args):
        """Tolerance only while test code is imported: at run time imports are untouched, so
        code that inspects import tracebacks sees them as they are."""
        builtins.__import__ = self.tolerant_import
        try:
            yield
        finally:
            builtins.__import__ = _real_import

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        self.bytecode_pinned(f"before collecting {collector.nodeid}")
        builtins.__import__ = self.tolerant_import
        try:
            yield
        finally:
            builtins.__import__ = _real_import
            self.bytecode_pinned(f"while collecting {collector.nodeid}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.failed_here = False
        yield
        if self.failed_here:
            release_garbage()

    def pytest_runtest_logreport(self, report) -> None:
        self.failed_here = self.failed_here or report.failed


class WorkerGuard(Tolerance):
    """In a pytest-xdist worker, which has no pipe: failed imports ride on the worker's next
    test report (``user_properties``) to the controller's Guard."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[dict] = []

    def failed_import(self, globals_: dict, module: str, names: list[str], error: str) -> None:
        self.pending.append(self.import_record(globals_, module, names, error))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if self.pending:
            outcome.get_result().user_properties.append((WORKER_IMPORTS, self.pending))
            self.pending = []


WORKER_IMPORTS = "swechain_failed_imports"
_worker: WorkerGuard | None = None


def _in_xdist_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


# Module-level hooks: active only when the module is loaded by name in an xdist worker.
@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config, parser, args):
    global _worker
    if _in_xdist_worker() and _worker is None:
        _worker = WorkerGuard()
        pin_bytecode()  # the controller's code under test may have set $PYTHONPYCACHEPREFIX for its workers
        early_config.pluginmanager.register(_worker, "swechain-worker-guard")
        builtins.__import__ = _worker.tolerant_import
        try:
            yield
        finally:
            builtins.__import__ = _real_import
    else:
        yield


class Guard(Tolerance):
    def __init__(self) -> None:
        # Read, then removed from the environment, before any code under test runs.
        self.fd = int(os.environ.pop("SWECHAIN_STREAM_FD"))
        token_fd = int(os.environ.pop("SWECHAIN_TOKEN_FD"))
        self.token = os.read(token_fd, 64).decode()
        os.close(token_fd)
        os.set_inheritable(self.fd, False)
        super().__init__()
        self.collected_sent = False
        paths = sysconfig.get_paths()
        # The image's installed files: the standard library and site-packages (root's; never the candidate's).
        self.installed_roots = tuple(
            _realpath(p) + os.sep for p in {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
        )
        self.image_roots = (*self.installed_roots, _realpath(HARNESS) + os.sep)
        self.builtins = dict(vars(builtins))
        self.machinery = machinery_snapshot()
        self.deselected = 0
        self.flagged: set[tuple[str, str]] = set()
        self.checked_modules: set[str] = set()

    # the pipe ---------------------------------------------------------------

    def send(self, record: dict) -> None:
        with contextlib.suppress(OSError):  # the supervisor sees the missing end of the session
            os.write(self.fd, (json.dumps({**record, "k": self.token}) + "\n").encode())

    def flag(self, kind: str, detail: str, location: str | None = None) -> None:
        if (kind, location or detail) not in self.flagged:
            self.flagged.add((kind, location or detail))
            self.send({"t": "flag", "kind": kind, "detail": detail[:400], "location": location})

    # origins ----------------------------------------------------------------

    def trusted_file(self, filename: str) -> bool:
        """Whether code from ``filename`` comes from the image or the target version."""
        real = _realpath(filename)
        return real.startswith(self.image_roots) or real in self.target_files

    def failed_import(self, globals_: dict, module: str, names: list[str], error: str) -> None:
        self.send({"t": "import", **self.import_record(globals_, module, names, error)})

    def bytecode_pinned(self, when: str) -> None:
        changed = pin_bytecode()
        if changed:
            self.flag("bytecode_steered", f"{when[:150]}: {'; '.join(changed)}; set back"[:400], "sys.pycache_prefix")

    # 2. the stream ----------------------------------------------------------

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.send({"t": "collector", "nodeid": report.nodeid, "longrepr": str(report.longrepr)[-TEXT_CHARS:]})

    def pytest_deselected(self, items) -> None:
        self.deselected += len(items)

    def guarded(self, check, *args) -> None:
        """A check that breaks on what the code under test did is a finding, never a broken session."""
        try:
            check(*args)
        except Exception as exc:
            self.flag("guard_check_failed", f"{check.__name__}: {type(exc).__name__}: {exc}"[:300])

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session) -> None:
        if session.config.pluginmanager.has_plugin("dsession"):
            return  # an xdist controller collects nothing: its workers report what they collected
        for item in session.items:
            self.guarded(self.check_test_code, item)
        self.send({"t": "collected", "count": len(session.items) + self.deselected, "deselected": self.deselected})
        self.collected_sent = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        if not self.collected_sent:
            self.send({"t": "collected", "count": len(ids), "deselected": 0})
            self.collected_sent = True

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.send({"t": "begin", "nodeid": nodeid})

    def pytest_runtest_logreport(self, report) -> None:
        super().pytest_runtest_logreport(report)
        for key, records in getattr(report, "user_properties", ()):
            if key == WORKER_IMPORTS and isinstance(records, list):
                for record in records:
                    self.send({**record, "t": "import"} if isinstance(record, dict) else {"t": "import"})
        category = report_category(report)
        message = ""
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else " ".join(str(report.longrepr).strip().splitlines()[-1:])
        self.send(
            {
                "t": "test",
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "category": category,
                "xfail": hasattr(report, "wasxfail"),
                "message": message[:TEXT_CHARS],
            }
        )
        if report.when == "teardown":  # after the test's own fixtures (monkeypatch) are undone
            self.guarded(self.check_builtins)
            self.guarded(self.bytecode_pinned, f"after {report.nodeid}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.guarded(self.bytecode_pinned, "at the end of the session")
        self.guarded(self.check_builtins)
        self.guarded(self.check_machinery)
        self.guarded(self.check_registry, session.config)
        self.send({"t": "finish", "exitstatus": int(exitstatus)})

    # 3. tamper checks -------------------------------------------------------

    def check_machinery(self) -> None:
        """pytest's own plugins patch pytest too (legacypath does); a replacement must come from the image."""
        for (owner, name), value in self.machinery.items():
            now = vars(owner).get(name)
            if now is not value and not self.trusted_file(code_file(now)):
                label = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", "?")
                self.flag(
                    "test_machinery_replaced", f"{label}.{name} was replaced during the run", code_file(now) or None
                )

    def check_builtins(self) -> None:
        for name, value in self.builtins.items():
            now = vars(builtins).get(name)
            if name not in OWN_BUILTINS and now is not value and not self.trusted_file(code_file(now)):
                self.flag("builtins_replaced", f"builtins.{name} was replaced during the run", code_file(now) or None)

    def check_registry(self, config) -> None:
        """Every registered plugin and hook implementation must come from the image or the target."""
        manager = config.pluginmanager
        for name, plugin in manager.list_name_plugin():
            origin = plugin_origin(plugin)
            if plugin is not None and not self.trusted_file(origin):
                self.flag("plugin_registered", f"plugin {str(name)[:80]} from {origin or 'nowhere'}", origin or None)
        for hook_name in dir(manager.hook):
            caller = getattr(manager.hook, hook_name, None)
            get_impls = getattr(caller, "get_hookimpls", None)
            for impl in get_impls() if get_impls else []:
                code = getattr(inspect.unwrap(impl.function), "__code__", None)
                filename = code.co_filename if code else plugin_origin(impl.plugin)
                if not self.trusted_file(filename):
                    where = f"{filename}:{code.co_firstlineno}" if code else filename
                    self.flag("hook_registered", f"{hook_name} implemented from outside the harness", where)

    def check_test_code(self, item) -> None:
        """A hidden test's code must be its hidden file's, compiled as pytest compiles it."""
        module_node = item.getparent(pytest.Module)
        if module_node is None:
            return
        path = _realpath(str(getattr(module_node, "path", None) or module_node.fspath))  # pytest < 7: fspath
        module = module_node.obj
        if path not in self.checked_modules and _realpath(getattr(module, "__file__", "") or "") != path:
            self.flag("test_module_replaced", f"{module.__name__} was not loaded from its hidden file", path)
        self.checked_modules.add(path)
        function = getattr(item.obj, "__func__", item.obj)
        problem = self.test_code_problem(function, path, item.config)
        if problem:
            code = getattr(inspect.unwrap(function), "__code__", None)
            line = f":{code.co_firstlineno}" if isinstance(code, types.CodeType) and code.co_filename == path else ""
            self.flag("test_code_altered", f"{item.nodeid[:200]} {problem}", f"{path}{line}")

    def is_hidden(self, filename: str, path: str) -> bool:
        return filename == path or filename in self.target_files

    def test_code_problem(self, function, path: str, config) -> str | None:
        """What is wrong with the code a test runs, layer by layer, or None.

        A layer compiled from the hidden file (or another hidden file) must be that file's code.
        A layer that claims the hidden file but is not its code may still be a forwarding
        trampoline (hypothesis' ``@given`` makes one): its only call passes its arguments to the
        one function it closes over. A layer from the image's installed files (hypothesis' wrapper,
        ``unittest.mock.patch``) must be exactly what that file compiles to (the candidate cannot
        write there), and the layer under it is the function it wraps (``__wrapped__``, or the hidden
        test reachable from its closure and attributes). Other layers are followed through
        ``__wrapped__``, as ``inspect.unwrap`` does.
        """
        layer, seen = function, set()
        for _ in range(MAX_WRAPPER_LAYERS):
            if id(layer) in seen:
                return "wraps itself without reaching its hidden file's code"
            seen.add(id(layer))
            code = getattr(layer, "__code__", None)
            if not isinstance(code, types.CodeType):
                return None  # a builtin or an object pytest calls: nothing to compare
            filename = _realpath(code.co_filename)
            if self.is_hidden(filename, path):
                if compiled_from(code, filename, config, exact=False):
                    return None
                inner = forwarded_to(layer)
                if inner is None:
                    return "does not run its hidden file's code"
            elif filename.startswith(self.installed_roots) and os.path.isfile(filename):
                if not compiled_from(code, filename, config, exact=True):
                    return f"runs code that claims {code.co_filename[:100]} but is not that file's"
                inner = getattr(layer, "__wrapped__", None) or self.wrapped_hidden_test(layer, path, config)
                if inner is None:
                    return None  # installed code that wraps no hidden test (a test imported from a library)
            elif not os.path.isfile(code.co_filename):
                return f"runs code from {code.co_filename[:100]}"
            else:
                inner = getattr(layer, "__wrapped__", None)
                if inner is None:
                    return None
            layer = inner
        return f"is wrapped more than {MAX_WRAPPER_LAYERS} times"

    def wrapped_hidden_test(self, wrapper, path: str, config):
        """A function of the hidden file held in ``wrapper``'s closure or attributes (hypothesis
        keeps the test as ``wrapper.hypothesis.inner_test``), a few objects deep; or None."""
        pending: list[tuple[object, int]] = [(wrapper, 0)]
        seen: set[int] = set()
        while pending:
            value, depth = pending.pop(0)
            if id(value) in seen or len(seen) > MAX_REACHABLE:
                continue
            seen.add(id(value))
            code = getattr(value, "__code__", None) if isinstance(value, types.FunctionType) else None
            filename = _realpath(code.co_filename) if code is not None else ""
            # Only the hidden file's own code: the wrapper may also hold what claims the file's name
            # (hypothesis' closure holds its own trampoline, which claims the test's place).
            if (
                value is not wrapper
                and code is not None
                and self.is_hidden(filename, path)
                and compiled_from(code, filename, config, exact=False)
            ):
                return value
            if depth >= MAX_REACH_DEPTH:
                continue
            held = [c.cell_contents for c in (getattr(value, "__closure__", None) or ()) if _filled(c)]
            with contextlib.suppress(AttributeError, TypeError):
                held += list(object.__getattribute__(value, "__dict__").values())
            pending += [(h, depth + 1) for h in held if callable(h) or hasattr(h, "__dict__")]
        return None


# hypothesis' @given forwards to its wrapper, which holds the test: three layers; mock.patch adds more.
MAX_WRAPPER_LAYERS = 8
MAX_REACH_DEPTH = 3
MAX_REACHABLE = 200
# What a trampoline may do: load its arguments and the one function it closes over, call, return.
FORWARDING_OPCODES = {
    "RESUME",
    "NOP",
    "CACHE",
    "EXTENDED_ARG",
    "COPY_FREE_VARS",
    "MAKE_CELL",
    "LOAD_DEREF",
    "LOAD_CLOSURE",
    "LOAD_FAST",
    "LOAD_FAST_CHECK",
    "LOAD_FAST_LOAD_FAST",
    "LOAD_CONST",
    "PUSH_NULL",
    "PRECALL",
    "KW_NAMES",
    "CALL",
    "CALL_KW",
    "CALL_FUNCTION",
    "CALL_FUNCTION_KW",
    "CALL_FUNCTION_EX",
    "BUILD_TUPLE",
    "BUILD_LIST",
    "BUILD_MAP",
    "LIST_EXTEND",
    "LIST_TO_TUPLE",
    "DICT_MERGE",
    "DICT_UPDATE",
    "RETURN_VALUE",
}


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def forwarded_to(function):
    """The one function a trampoline passes its arguments to, or None if ``function`` does more."""
    import dis

    code = getattr(function, "__code__", None)
    closure: tuple[types.CellType, ...] = getattr(function, "__closure__", None) or ()
    if not isinstance(code, types.CodeType) or len(code.co_freevars) != 1 or len(closure) != 1 or code.co_names:
        return None
    if any(i.opname not in FORWARDING_OPCODES for i in dis.get_instructions(code)):
        return None
    inner = closure[0].cell_contents if _filled(closure[0]) else None
    return inner if isinstance(inner, types.FunctionType) else None


MACHINERY_PACKAGES = ("_pytest", "pytest", "pluggy", "pytest_timeout")


def machinery_snapshot() -> dict[tuple[object, str], object]:
    """The functions and classes of pytest, pluggy and the plugins, and those classes' members,
    as loaded before any code under test ran."""
    snapshot: dict[tuple[object, str], object] = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in MACHINERY_PACKAGES:
            continue
        for attribute, value in list(vars(module).items()):
            if isinstance(value, (types.FunctionType, type)) and getattr(value, "__module__", None) == name:
                snapshot[(module, attribute)] = value
                if isinstance(value, type):
                    for member, item in list(vars(value).items()):
                        if isinstance(item, (types.FunctionType, property, staticmethod, classmethod)):
                            snapshot[(value, member)] = item
    return snapshot


def report_category(report) -> str:
    """pytest's own word for a stage's outcome (passed, failed, error, skipped, xfailed, xpassed, or '')."""
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else ("xpassed" if report.passed else "failed")
    if report.when != "call" and report.passed:
        return ""
    return report.outcome


def code_file(value) -> str:
    """The file a function (or a method, property, wrapper of one) was compiled from, or ''."""
    try:
        value = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        code = getattr(inspect.unwrap(value), "__code__", None) if callable(value) else None
    except Exception:  # whatever the code under test put there
        return ""
    return code.co_filename if isinstance(code, types.CodeType) else ""


def plugin_origin(plugin) -> str:
    if isinstance(plugin, types.ModuleType):
        return getattr(plugin, "__file__", "") or ""
    owner = plugin if isinstance(plugin, type) else type(plugin)  # a class is a plugin too (legacypath's)
    module = sys.modules.get(getattr(owner, "__module__", "") or "")
    return getattr(module, "__file__", "") or ""


_compiled: dict[str, dict[tuple[str, int], list[types.CodeType]]] = {}


def expected_code(path: str, config) -> dict[tuple[str, int], list[types.CodeType]]:
    """Every function compiled from a file, plain and as pytest rewrites asserts, by name and line."""
    if path not in _compiled:
        from _pytest.assertion import rewrite

        with open(path, "rb") as handle:
            source = handle.read()
        found: dict[tuple[str, int], list[types.CodeType]] = {}
        tops = [compile(source, path, "exec", dont_inherit=True)]
        try:
            tree = rewrite.ast.parse(source, filename=path)
            rewrite.rewrite_asserts(tree, source, path, config)
            tops.append(compile(tree, path, "exec", dont_inherit=True))
        except Exception:  # a pytest without this internal: the plain compile still checks
            pass
        pending = list(tops)
        while pending:
            code = pending.pop()
            found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
            pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        _compiled[path] = found
    return _compiled[path]


def compiled_from(code: types.CodeType, path: str, config, exact: bool) -> bool:
    """Whether ``code`` is what ``path`` compiles to: its bytecode, or (``exact``) the whole code
    object, constants and names too (an installed file's function, taken only if it is that)."""
    try:
        candidates = expected_code(path, config).get((code.co_name, code.co_firstlineno), [])
    except (OSError, SyntaxError, ValueError):
        return False
    return any((c == code) if exact else (c.co_code == code.co_code) for c in candidates)
