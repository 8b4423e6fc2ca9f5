"""The public API of one code tree, found with :mod:`ast` only (nothing is imported or run):
modules, their public names, kinds and signatures (rules in :mod:`swechain_ci.specs.interface`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from swechain_ci.errors import SwechainError
from swechain_ci.models import StrictTyped

NameKind = Literal["function", "class", "variable", "module", "unknown"]

# Base classes that take no constructor arguments, so a class without __init__ has "()".
_NO_ARG_BASES = {"object", "ABC", "Generic", "Protocol"}
_MAX_DEPTH = 25


class ApiName(StrictTyped):
    module: str
    name: str  # "decode", or "Class.method" for a member
    kind: NameKind | Literal["method", "property"]
    parameters: str | None  # "(a, b=1, *, c)"; None for variables, properties and unknown signatures
    bases: list[str] = Field(default_factory=list)  # classes only, as written
    defined_in: str | None = None  # the module that defines it, when it is re-exported from another


class ExceptionClass(StrictTyped):
    module: str
    name: str
    bases: list[str]


@dataclass
class Member:
    kind: Literal["method", "property"]
    parameters: str | None


@dataclass
class ClassDef:
    name: str
    bases: list[ast.expr]
    init: str | None  # parameters of its own __init__ (or dataclass fields), if any
    members: dict[str, Member]


@dataclass
class Definition:
    kind: Literal["function", "class", "variable", "import", "module_import"]
    parameters: str | None = None
    cls: ClassDef | None = None
    target: tuple[str, str | None] | None = None  # imports: (absolute module, name or None)


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    defs: dict[str, Definition] = field(default_factory=dict)
    all_names: list[str] | None = None
    star_imports: list[str] = field(default_factory=list)
    reexports: set[str] = field(default_factory=set)  # ``from x import name as name``


@dataclass
class PackageScan:
    package: str
    modules: dict[str, Module]
    notes: list[str]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runs_at_import(test: ast.expr) -> tuple[bool, bool]:
    """(body runs, else runs) of an ``if`` when the package is imported normally.

    ``TYPE_CHECKING`` is False at runtime, so ``if TYPE_CHECKING or X:`` runs its body only
    when ``X`` holds, which a normal import cannot be assumed to satisfy (PyJWT 2.11.0's
    ``if TYPE_CHECKING or bool(os.getenv("SPHINX_BUILD", ""))``); ``TYPE_CHECKING and X``
    never runs it. Both branches count when the test does not involve ``TYPE_CHECKING``.
    """
    if _is_type_checking(test):
        return False, True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_type_checking(test.operand):
        return True, False
    if isinstance(test, ast.BoolOp) and any(_is_type_checking(v) or not all(_runs_at_import(v)) for v in test.values):
        return False, True
    return True, True


def _top_level(body: list[ast.stmt]):
    """Module-level statements, looking into ``try`` and into ``if`` branches that run at import."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            body_runs, else_runs = _runs_at_import(stmt.test)
            if body_runs:
                yield from _top_level(stmt.body)
            if else_runs:
                yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            yield from _top_level(stmt.body)
            for handler in stmt.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(stmt.orelse)
            yield from _top_level(stmt.finalbody)
        else:
            yield stmt


def render_parameters(args: ast.arguments, drop_first: bool = False) -> str:
    """``(a, b=1, /, c, *args, d, e=2, **kw)`` without annotations."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    n_posonly = len(args.posonlyargs)
    if drop_first and positional:
        positional, defaults = positional[1:], defaults[1:]
        n_posonly = max(0, n_posonly - 1)
    parts: list[str] = []
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        parts.append(arg.arg if default is None else f"{arg.arg}={ast.unparse(default)}")
        if i == n_posonly - 1:
            parts.append("/")
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parts.append(arg.arg if default is None else f"{arg.arg}={ast.unparse(default)}")
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return "(" + ", ".join(parts) + ")"


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def _functions_by_name(body: list[ast.stmt]) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Each function's implementation: the first definition that is not an ``@overload``
    (a property's getter, not its setter); an ``@overload`` only when there is nothing else."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for stmt in _top_level(body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            previous = found.get(stmt.name)
            replaces_overload = previous is not None and "overload" in _decorator_names(previous)
            if previous is None or (replaces_overload and "overload" not in _decorator_names(stmt)):
                found[stmt.name] = stmt
    return found


def _dataclass_init(node: ast.ClassDef) -> str | None:
    if "dataclass" not in _decorator_names(node):
        return None
    parts = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            name = stmt.target.id
            parts.append(name if stmt.value is None else f"{name}={ast.unparse(stmt.value)}")
    return "(" + ", ".join(parts) + ")"


def _scan_class(node: ast.ClassDef) -> ClassDef:
    members: dict[str, Member] = {}
    init = _dataclass_init(node)
    for name, fn in _functions_by_name(node.body).items():
        decorators = _decorator_names(fn)
        if name == "__init__":
            init = render_parameters(fn.args, drop_first=True)
            continue
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if decorators & {"property", "cached_property", "setter", "deleter"}:
            members[name] = Member("property", None)
        else:
            members[name] = Member("method", render_parameters(fn.args, drop_first="staticmethod" not in decorators))
    return ClassDef(node.name, list(node.bases), init, dict(sorted(members.items())))


def _literal_names(value: ast.expr) -> list[str] | None:
    if isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return [e.value for e in value.elts]  # type: ignore[attr-defined]
    return None


def _resolve_relative(module: Module, level: int, name: str | None) -> str:
    parts = module.name.split(".")
    base = parts if module.is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def scan_module(module: Module, tree: ast.Module) -> None:
    defs = module.defs
    all_names: list[str] | None = None
    all_computed = False
    functions = _functions_by_name(tree.body)
    for stmt in _top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if functions.get(stmt.name) is stmt:
                defs[stmt.name] = Definition("function", render_parameters(stmt.args))
        elif isinstance(stmt, ast.ClassDef):
            defs.setdefault(stmt.name, Definition("class", cls=_scan_class(stmt)))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if "__all__" in names and stmt.value is not None:
                literal = _literal_names(stmt.value)
                if literal is None:
                    all_computed = True
                elif isinstance(stmt, ast.AugAssign):
                    all_names = (all_names or []) + literal
                else:
                    all_names = literal
                continue
            for name in names:
                defs.setdefault(name, Definition("variable"))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if (
                isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "__all__"
                and call.func.attr in ("extend", "append")
                and call.args
            ):
                arg = call.args[0]
                literal = (
                    _literal_names(arg)
                    if call.func.attr == "extend"
                    else ([arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None)
                )
                if literal is None:
                    all_computed = True
                else:
                    all_names = (all_names or []) + literal
        elif isinstance(stmt, ast.ImportFrom):
            source = _resolve_relative(module, stmt.level, stmt.module) if stmt.level else (stmt.module or "")
            for alias in stmt.names:
                if alias.name == "*":
                    module.star_imports.append(source)
                    continue
                if alias.asname == alias.name:
                    module.reexports.add(alias.name)
                defs.setdefault(alias.asname or alias.name, Definition("import", target=(source, alias.name)))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    defs.setdefault(alias.asname, Definition("module_import", target=(alias.name, None)))
                else:
                    top = alias.name.split(".")[0]
                    defs.setdefault(top, Definition("module_import", target=(top, None)))
    module.all_names = None if all_computed else all_names


def module_name_for(path: Path, package_dir: Path, package: str) -> tuple[str, bool]:
    rel = path.relative_to(package_dir).with_suffix("")
    parts = [package, *rel.parts]
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def scan_package(code_root: Path, source_root: str, package: str, version: str = "") -> PackageScan:
    """Every module of the import package ``package`` under ``code_root/source_root``."""
    base = code_root / source_root if source_root not in ("", ".") else code_root
    package_dir = base / package
    notes: list[str] = []
    if package_dir.is_dir():
        files = sorted(p for p in package_dir.rglob("*.py") if p.is_file())
        names = [module_name_for(p, package_dir, package) for p in files]
    elif (base / f"{package}.py").is_file():
        files, names = [base / f"{package}.py"], [(package, False)]
    else:
        raise SwechainError(
            f"{package_dir}: no package '{package}' in the code of version {version or '?'}; "
            "check import_name and source_root in the chain's chain.yaml"
        )
    modules: dict[str, Module] = {}
    for path, (name, is_package) in zip(files, names, strict=True):
        if any(not part.isidentifier() for part in name.split(".")):
            continue  # not importable (e.g. a folder with a dash)
        module = Module(name, path, is_package)
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError) as exc:
            notes.append(f"{version}: {name} ({path.name}) could not be parsed: {exc.__class__.__name__}: {exc}")
            modules[name] = module
            continue
        scan_module(module, tree)
        modules[name] = module
    return PackageScan(package, modules, notes)


# --------------------------------------------------------------------------- resolving names


def is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


class Resolver:
    """Public names, their kinds and signatures, and exception classes of one scanned package."""

    def __init__(self, scan: PackageScan) -> None:
        self.scan = scan
        self.modules = scan.modules

    def in_package(self, module: str) -> bool:
        return module == self.scan.package or module.startswith(self.scan.package + ".")

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple[str, str, Definition | None]:
        """Follow imports within the package to ``(module, name, definition)``; None if external."""
        if depth > _MAX_DEPTH or module not in self.modules:
            if f"{module}.{name}" in self.modules:
                return f"{module}.{name}", "", Definition("module_import", target=(f"{module}.{name}", None))
            return module, name, None
        definition = self.modules[module].defs.get(name)
        if definition is None:
            if f"{module}.{name}" in self.modules:  # a submodule
                return f"{module}.{name}", "", Definition("module_import", target=(f"{module}.{name}", None))
            for source in self.modules[module].star_imports:
                if self.in_package(source) and source in self.modules and name in self.public_names(source, depth + 1):
                    return self.resolve(source, name, depth + 1)
            return module, name, None
        if definition.kind == "import" and definition.target:
            source, imported = definition.target
            if self.in_package(source):
                return self.resolve(source, imported or name, depth + 1)
            return source, imported or name, None
        return module, name, definition

    def public_names(self, module: str, depth: int = 0) -> list[str]:
        info = self.modules[module]
        if info.all_names is not None:
            names = info.all_names
        else:
            names = []
            for name, definition in info.defs.items():
                if definition.kind in ("function", "class", "variable"):
                    names.append(name)
                elif definition.kind == "import" and definition.target:
                    source, _ = definition.target
                    if (info.is_package and self.in_package(source)) or name in info.reexports:
                        names.append(name)
            if info.is_package and depth <= _MAX_DEPTH:
                for source in info.star_imports:
                    if self.in_package(source) and source in self.modules:
                        names.extend(self.public_names(source, depth + 1))
        return sorted({n for n in names if not n.startswith("_")})

    def describe(self, module: str, name: str) -> ApiName:
        where, _, definition = self.resolve(module, name)
        defined_in = where if where != module else None
        if definition is None:
            return ApiName(module=module, name=name, kind="unknown", parameters=None, defined_in=defined_in)
        if definition.kind == "module_import":
            return ApiName(module=module, name=name, kind="module", parameters=None, defined_in=None)
        if definition.kind == "class" and definition.cls is not None:
            return ApiName(
                module=module,
                name=name,
                kind="class",
                parameters=self.class_parameters(where, definition.cls),
                bases=[ast.unparse(b) for b in definition.cls.bases],
                defined_in=defined_in,
            )
        kind: NameKind = "function" if definition.kind == "function" else "variable"
        return ApiName(module=module, name=name, kind=kind, parameters=definition.parameters, defined_in=defined_in)

    def base_class(self, module: str, base: ast.expr) -> tuple[str, ClassDef] | None:
        """The package class a base expression refers to, if any."""
        target = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(target, ast.Name):
            where, _, definition = self.resolve(module, target.id)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            owner = self.modules[module].defs.get(target.value.id) if module in self.modules else None
            if owner is None or owner.target is None:
                return None
            source = owner.target[0] if owner.kind == "module_import" else f"{owner.target[0]}.{owner.target[1]}"
            if not self.in_package(source):
                return None
            where, _, definition = self.resolve(source, target.attr)
        else:
            return None
        if definition is not None and definition.kind == "class" and definition.cls is not None:
            return where, definition.cls
        return None

    def class_parameters(self, module: str, cls: ClassDef, depth: int = 0) -> str | None:
        if cls.init is not None:
            return cls.init
        if depth > _MAX_DEPTH:
            return None
        outside = []
        for base in cls.bases:
            found = self.base_class(module, base)
            if found is not None:
                params = self.class_parameters(found[0], found[1], depth + 1)
                if params is not None:
                    return params
                outside.append("?")
            else:
                outside.append(_last_name(base))
        return "()" if all(b in _NO_ARG_BASES for b in outside) else None

    def is_exception(self, module: str, cls: ClassDef, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        for base in cls.bases:
            found = self.base_class(module, base)
            if found is not None:
                if self.is_exception(found[0], found[1], depth + 1):
                    return True
            else:
                last = _last_name(base)
                if last in ("Exception", "BaseException") or last.endswith(("Error", "Warning", "Exception")):
                    return True
        return False

    def exception_classes(self) -> list[ExceptionClass]:
        found = []
        for module_name, module in sorted(self.modules.items()):
            for name, definition in module.defs.items():
                cls = definition.cls
                if (
                    definition.kind == "class"
                    and cls
                    and not name.startswith("_")
                    and self.is_exception(module_name, cls)
                ):
                    found.append(
                        ExceptionClass(module=module_name, name=name, bases=[ast.unparse(b) for b in cls.bases])
                    )
        return found


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return ast.unparse(expr)


# --------------------------------------------------------------------------- comparing
