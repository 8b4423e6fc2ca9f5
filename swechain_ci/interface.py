"""The interface section of a specification: how the public API changed between two versions.

Computed from the gold code trees with :mod:`ast` only: nothing is imported or run.

- **Modules** are the ``.py`` files of the import package (``source_root/import_name``);
  a module is public when no part of its dotted name starts with ``_``.
- **Public names** of a module are its module-level names that do not start with ``_``:
  the names in ``__all__`` when the module defines it as a literal list or tuple; else
  the functions, classes and variables it defines, and (in a package's ``__init__``)
  what it imports from its own package. Definitions under ``if``/``try`` at module level
  count; those under ``if TYPE_CHECKING:`` do not. Re-exported names are followed to the
  module that defines them, for their kind and signature.
- **Signatures** are rendered without annotations: ``name(a, b=1, *, c)``; ``self``/``cls``
  are left out, a class's is its ``__init__``'s (found through base classes in the
  package, or built from a ``@dataclass``'s fields), or unknown when inherited from
  outside the package.
- **Renames**: a removed and an added name of the same module with the same kind and
  signature (one-to-one); a module is renamed when it is removed, another is added, they
  share at least one name and every other name of the removed one is renamed in the new.
- **Exception classes** derive, directly or through classes of the package, from
  ``Exception``, ``BaseException`` or a class named ``*Error``, ``*Warning`` or ``*Exception``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from swechain_ci.errors import SwechainError

NameKind = Literal["function", "class", "variable", "module", "unknown"]
# Base classes that take no constructor arguments, so a class without __init__ has "()".
_NO_ARG_BASES = {"object", "ABC", "Generic", "Protocol"}
_MAX_DEPTH = 25


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ApiName(Strict):
    module: str
    name: str  # "decode", or "Class.method" for a member
    kind: NameKind | Literal["method", "property"]
    parameters: str | None  # "(a, b=1, *, c)"; None for variables, properties and unknown signatures
    bases: list[str] = []  # classes only, as written
    defined_in: str | None = None  # the module that defines it, when it is re-exported from another


class ModuleRename(Strict):
    old: str
    new: str


class NameRename(Strict):
    kind: NameKind
    old_module: str
    old_name: str
    new_module: str
    new_name: str
    parameters: str | None


class SignatureChange(Strict):
    module: str
    name: str  # "slugify", or "Class.method"
    kind: Literal["function", "class", "method"]
    old: str  # "slugify(text, sep='-')"
    new: str


class ExceptionClass(Strict):
    module: str
    name: str
    bases: list[str]


class InterfaceChanges(Strict):
    package: str
    prev_version: str
    next_version: str
    added_modules: list[str] = []
    removed_modules: list[str] = []
    renamed_modules: list[ModuleRename] = []
    added_names: list[ApiName] = []
    removed_names: list[ApiName] = []
    renamed_names: list[NameRename] = []
    changed_signatures: list[SignatureChange] = []
    added_members: list[ApiName] = []  # public methods and properties of classes in both versions
    removed_members: list[ApiName] = []
    new_exceptions: list[ExceptionClass] = []
    removed_exceptions: list[ExceptionClass] = []
    notes: list[str] = []  # files that could not be parsed, and the like

    @property
    def empty(self) -> bool:
        return not any(
            getattr(self, name)
            for name in type(self).model_fields
            if name not in ("package", "prev_version", "next_version", "notes")
        )


# --------------------------------------------------------------------------- scanning


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


def _top_level(body: list[ast.stmt]):
    """Module-level statements, looking into ``if`` (not ``if TYPE_CHECKING``) and ``try``."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _top_level(stmt.body)
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
                module=module, name=name, kind="class", parameters=self.class_parameters(where, definition.cls),
                bases=[ast.unparse(b) for b in definition.cls.bases], defined_in=defined_in,
            )
        kind = "function" if definition.kind == "function" else "variable"
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
                if definition.kind == "class" and definition.cls and not name.startswith("_"):
                    if self.is_exception(module_name, definition.cls):
                        found.append(ExceptionClass(
                            module=module_name, name=name, bases=[ast.unparse(b) for b in definition.cls.bases]
                        ))
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


def _signature_key(api: ApiName) -> tuple | None:
    """What must be equal for a removed and an added name to be one renamed name."""
    if api.kind == "function" and api.parameters is not None:
        return ("function", api.parameters)
    if api.kind == "class":
        return ("class", api.parameters, tuple(api.bases))
    return None


def _pair_renames(removed: list[ApiName], added: list[ApiName]) -> list[tuple[ApiName, ApiName]]:
    """One-to-one pairs with the same kind and signature (ambiguous keys are left unpaired)."""
    by_key_removed: dict[tuple, list[ApiName]] = {}
    by_key_added: dict[tuple, list[ApiName]] = {}
    for api in removed:
        if (key := _signature_key(api)) is not None:
            by_key_removed.setdefault(key, []).append(api)
    for api in added:
        if (key := _signature_key(api)) is not None:
            by_key_added.setdefault(key, []).append(api)
    pairs = []
    for key, olds in by_key_removed.items():
        news = by_key_added.get(key, [])
        if len(olds) == 1 and len(news) == 1:
            pairs.append((olds[0], news[0]))
    return sorted(pairs, key=lambda p: (p[0].module, p[0].name))


def _rendered(name: str, parameters: str | None) -> str:
    return name if parameters is None else f"{name}{parameters}"


def _compare_members(
    name: str, ca: ClassDef, cb: ClassDef, old_module: str, new_module: str
) -> tuple[list[ApiName], list[ApiName], list[SignatureChange]]:
    """Public methods and properties of one class in both versions: added, removed, changed."""
    added: list[ApiName] = []
    removed: list[ApiName] = []
    changed: list[SignatureChange] = []
    for member in sorted(set(ca.members) | set(cb.members)):
        ma, mb = ca.members.get(member), cb.members.get(member)
        qual = f"{name}.{member}"
        if ma is not None and mb is not None and (ma.kind, ma.parameters) == (mb.kind, mb.parameters):
            continue
        if ma is not None and mb is not None and ma.kind == mb.kind == "method":
            changed.append(SignatureChange(
                module=new_module, name=qual, kind="method",
                old=_rendered(qual, ma.parameters), new=_rendered(qual, mb.parameters),
            ))
            continue
        if ma is not None:  # gone, or a property that became a method (or back)
            removed.append(ApiName(module=old_module, name=qual, kind=ma.kind, parameters=ma.parameters))
        if mb is not None:
            added.append(ApiName(module=new_module, name=qual, kind=mb.kind, parameters=mb.parameters))
    return added, removed, changed


def compare_scans(prev: PackageScan, next_: PackageScan, prev_version: str, next_version: str) -> InterfaceChanges:
    old, new = Resolver(prev), Resolver(next_)
    old_modules = sorted(m for m in prev.modules if is_public_module(m))
    new_modules = sorted(m for m in next_.modules if is_public_module(m))
    old_names = {m: {n: old.describe(m, n) for n in old.public_names(m)} for m in old_modules}
    new_names = {m: {n: new.describe(m, n) for n in new.public_names(m)} for m in new_modules}
    removed_modules = [m for m in old_modules if m not in next_.modules or not is_public_module(m)]
    added_modules = [m for m in new_modules if m not in prev.modules or not is_public_module(m)]

    # Module renames: removed module whose names all reappear (same name or renamed) in one added module.
    module_map = {m: m for m in old_modules if m in new_names}
    renamed_modules: list[ModuleRename] = []
    free_added = list(added_modules)
    for gone in removed_modules:
        names = old_names[gone]
        best: tuple[int, str] | None = None
        for candidate in free_added:
            cand = new_names[candidate]
            overlap = set(names) & set(cand)
            if not names or not overlap:
                continue
            leftover_old = [names[n] for n in sorted(set(names) - set(cand))]
            leftover_new = [cand[n] for n in sorted(set(cand) - set(names))]
            paired = {p[0].name for p in _pair_renames(leftover_old, leftover_new)}
            if all(api.name in paired for api in leftover_old):
                if best is None or len(overlap) > best[0]:  # most shared names; ties: first by name
                    best = (len(overlap), candidate)
        if best is not None:
            module_map[gone] = best[1]
            free_added.remove(best[1])
            renamed_modules.append(ModuleRename(old=gone, new=best[1]))
    renamed_old = {r.old for r in renamed_modules}
    renamed_new = {r.new for r in renamed_modules}
    removed_modules = [m for m in removed_modules if m not in renamed_old]
    added_modules = [m for m in added_modules if m not in renamed_new]

    added_names: list[ApiName] = []
    removed_names: list[ApiName] = []
    renamed_names: list[NameRename] = []
    changed: list[SignatureChange] = []
    added_members: list[ApiName] = []
    removed_members: list[ApiName] = []

    for module in added_modules:
        added_names.extend(new_names[module].values())
    for module in removed_modules:
        removed_names.extend(old_names[module].values())
    for old_module, new_module in sorted(module_map.items()):
        before, after = old_names[old_module], new_names[new_module]
        gone = [before[n] for n in sorted(set(before) - set(after))]
        came = [after[n] for n in sorted(set(after) - set(before))]
        pairs = _pair_renames(gone, came)
        for a, b in pairs:
            renamed_names.append(NameRename(
                kind=a.kind, old_module=a.module, old_name=a.name,  # type: ignore[arg-type]
                new_module=b.module, new_name=b.name, parameters=b.parameters,
            ))
        paired_old = {id(a) for a, _ in pairs}
        paired_new = {id(b) for _, b in pairs}
        removed_names.extend(a for a in gone if id(a) not in paired_old)
        added_names.extend(b for b in came if id(b) not in paired_new)
        for name in sorted(set(before) & set(after)):
            a, b = before[name], after[name]
            if a.defined_in is not None or b.defined_in is not None:
                continue  # re-exports: reported where they are defined
            if a.kind in ("function", "class") and b.kind in ("function", "class"):
                if (a.kind, a.parameters) != (b.kind, b.parameters):
                    changed.append(SignatureChange(
                        module=new_module, name=name, kind=b.kind,  # type: ignore[arg-type]
                        old=_rendered(name, a.parameters), new=_rendered(name, b.parameters),
                    ))
            if a.kind == "class" and b.kind == "class":
                ca = prev.modules[old_module].defs[name].cls
                cb = next_.modules[new_module].defs[name].cls
                if ca is not None and cb is not None:
                    plus, minus, moved = _compare_members(name, ca, cb, old_module, new_module)
                    added_members += plus
                    removed_members += minus
                    changed += moved

    old_exc = old.exception_classes()
    new_exc = new.exception_classes()
    old_exc_names = {e.name for e in old_exc}
    new_exc_names = {e.name for e in new_exc}
    class_renames = {(r.old_name, r.new_name) for r in renamed_names if r.kind == "class"}
    renamed_to = {b for a, b in class_renames if a in old_exc_names}
    renamed_from = {a for a, b in class_renames if b in new_exc_names}
    new_exceptions = [e for e in new_exc if e.name not in old_exc_names and e.name not in renamed_to]
    removed_exceptions = [e for e in old_exc if e.name not in new_exc_names and e.name not in renamed_from]

    order = lambda api: (api.module, api.name)  # noqa: E731
    return InterfaceChanges(
        package=prev.package,
        prev_version=prev_version,
        next_version=next_version,
        added_modules=added_modules,
        removed_modules=removed_modules,
        renamed_modules=renamed_modules,
        added_names=sorted(added_names, key=order),
        removed_names=sorted(removed_names, key=order),
        renamed_names=renamed_names,
        changed_signatures=sorted(changed, key=lambda c: (c.module, c.name)),
        added_members=sorted(added_members, key=order),
        removed_members=sorted(removed_members, key=order),
        new_exceptions=sorted(new_exceptions, key=order),
        removed_exceptions=sorted(removed_exceptions, key=order),
        notes=[*prev.notes, *next_.notes],
    )


def compare_trees(
    prev_code: Path, next_code: Path, source_root: str, package: str, prev_version: str = "prev",
    next_version: str = "next",
) -> InterfaceChanges:
    """Interface changes between two code trees (each holding ``source_root/package``)."""
    return compare_scans(
        scan_package(prev_code, source_root, package, prev_version),
        scan_package(next_code, source_root, package, next_version),
        prev_version,
        next_version,
    )


def chain_interface_changes(chain, prev: str, next_: str) -> InterfaceChanges:
    """Interface changes of one step of a chain, from the gold code of both versions."""
    from swechain_ci.sources import materialize

    config = chain.config
    return compare_trees(
        materialize(chain, prev).code, materialize(chain, next_).code, config.source_root, config.import_name,
        prev, next_,
    )


# --------------------------------------------------------------------------- Markdown


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _codes(items: list[str]) -> str:
    return ", ".join(_code(item) for item in items)


def _describe_api(api: ApiName) -> str:
    if api.kind == "class":
        shown = _rendered(api.name, api.parameters)
        base = f", bases {_codes(api.bases)}" if api.bases else ""
        text = f"class {_code(api.module + '.' + shown)}{base}"
    elif api.kind in ("function", "method"):
        text = f"{api.kind} {_code(api.module + '.' + _rendered(api.name, api.parameters))}"
    else:
        text = f"{api.kind} {_code(api.module + '.' + api.name)}"
    if api.defined_in:
        text += f" (re-exported from {_code(api.defined_in)})"
    return text


def render_interface(changes: InterfaceChanges, heading_level: int = 2) -> str:
    """The interface section as Markdown; it can be appended to a specification of any level."""
    h = "#" * heading_level
    sub = "#" * (heading_level + 1)
    lines = [
        f"{h} Interface changes",
        "",
        f"Computed from the code of {_code(changes.package)} {changes.prev_version} and {changes.next_version} with "
        "Python's `ast` (nothing imported or run). Public names are module-level names not starting with "
        "`_`, as listed in `__all__` where a module defines it; signatures are shown without annotations.",
        "",
    ]
    if changes.empty:
        lines += ["No changes to the public interface were found.", ""]
    sections: list[tuple[str, list[str]]] = [
        ("New modules", [f"- {_code(m)}" for m in changes.added_modules]),
        ("Removed modules", [f"- {_code(m)}" for m in changes.removed_modules]),
        ("Renamed modules", [f"- {_code(r.old)} → {_code(r.new)}" for r in changes.renamed_modules]),
        ("New exception classes", [
            f"- {_code(e.module + '.' + e.name)}" + (f" (bases {_codes(e.bases)})" if e.bases else "")
            for e in changes.new_exceptions
        ]),
        ("Removed exception classes", [f"- {_code(e.module + '.' + e.name)}" for e in changes.removed_exceptions]),
        ("Renamed names", [
            f"- {r.kind} {_code(r.old_module + '.' + r.old_name)} → {_code(r.new_module + '.' + r.new_name)}"
            + (f", signature {_code(r.new_name + r.parameters)}" if r.parameters else "")
            for r in changes.renamed_names
        ]),
        ("Changed signatures", [
            f"- {c.kind} in {_code(c.module)}: {_code(c.old)} → {_code(c.new)}" for c in changes.changed_signatures
        ]),
        ("Added names", [f"- {_describe_api(a)}" for a in changes.added_names]),
        ("Removed names", [f"- {_describe_api(a)}" for a in changes.removed_names]),
        ("Added methods and properties", [f"- {_describe_api(a)}" for a in changes.added_members]),
        ("Removed methods and properties", [f"- {_describe_api(a)}" for a in changes.removed_members]),
    ]
    for title, items in sections:
        if items:
            lines += [f"{sub} {title}", "", *items, ""]
    if changes.notes:
        lines += [f"{sub} Notes", "", *[f"- {n}" for n in changes.notes], ""]
    return "\n".join(lines).rstrip() + "\n"
