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

from pathlib import Path
from typing import Literal

from pydantic import Field

from swechain_ci.models import StrictTyped
from swechain_ci.specs.api_scan import (
    ApiName,
    ClassDef,
    ExceptionClass,
    NameKind,
    PackageScan,
    Resolver,
    is_public_module,
    scan_package,
)


class ModuleRename(StrictTyped):
    old: str
    new: str


class NameRename(StrictTyped):
    kind: NameKind | Literal["method", "property"]  # the old name's
    old_module: str
    old_name: str
    new_module: str
    new_name: str
    parameters: str | None


class SignatureChange(StrictTyped):
    module: str
    name: str  # "slugify", or "Class.method"
    kind: Literal["function", "class", "method"]
    old: str  # "slugify(text, sep='-')"
    new: str


class InterfaceChanges(StrictTyped):
    package: str
    prev_version: str
    next_version: str
    added_modules: list[str] = Field(default_factory=list)
    removed_modules: list[str] = Field(default_factory=list)
    renamed_modules: list[ModuleRename] = Field(default_factory=list)
    added_names: list[ApiName] = Field(default_factory=list)
    removed_names: list[ApiName] = Field(default_factory=list)
    renamed_names: list[NameRename] = Field(default_factory=list)
    changed_signatures: list[SignatureChange] = Field(default_factory=list)
    added_members: list[ApiName] = Field(
        default_factory=list
    )  # public methods and properties of classes in both versions
    removed_members: list[ApiName] = Field(default_factory=list)
    new_exceptions: list[ExceptionClass] = Field(default_factory=list)
    removed_exceptions: list[ExceptionClass] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # files that could not be parsed, and the like

    @property
    def empty(self) -> bool:
        return not any(
            getattr(self, name)
            for name in type(self).model_fields
            if name not in ("package", "prev_version", "next_version", "notes")
        )


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
            changed.append(
                SignatureChange(
                    module=new_module,
                    name=qual,
                    kind="method",
                    old=_rendered(qual, ma.parameters),
                    new=_rendered(qual, mb.parameters),
                )
            )
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
    for removed in removed_modules:
        names = old_names[removed]
        best: tuple[int, str] | None = None
        for candidate in free_added:
            cand = new_names[candidate]
            overlap = set(names) & set(cand)
            if not names or not overlap:
                continue
            leftover_old = [names[n] for n in sorted(set(names) - set(cand))]
            leftover_new = [cand[n] for n in sorted(set(cand) - set(names))]
            paired = {p[0].name for p in _pair_renames(leftover_old, leftover_new)}
            # Most shared names; ties: first by name.
            if all(api.name in paired for api in leftover_old) and (best is None or len(overlap) > best[0]):
                best = (len(overlap), candidate)
        if best is not None:
            module_map[removed] = best[1]
            free_added.remove(best[1])
            renamed_modules.append(ModuleRename(old=removed, new=best[1]))
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
            renamed_names.append(
                NameRename(
                    kind=a.kind,
                    old_module=a.module,
                    old_name=a.name,
                    new_module=b.module,
                    new_name=b.name,
                    parameters=b.parameters,
                )
            )
        paired_old = {id(a) for a, _ in pairs}
        paired_new = {id(b) for _, b in pairs}
        removed_names.extend(a for a in gone if id(a) not in paired_old)
        added_names.extend(b for b in came if id(b) not in paired_new)
        for name in sorted(set(before) & set(after)):
            a, b = before[name], after[name]
            if a.defined_in is not None or b.defined_in is not None:
                continue  # re-exports: reported where they are defined
            callables = ("function", "class")
            if a.kind in callables and b.kind in callables and (a.kind, a.parameters) != (b.kind, b.parameters):
                changed.append(
                    SignatureChange(
                        module=new_module,
                        name=name,
                        kind=b.kind,  # type: ignore[arg-type]
                        old=_rendered(name, a.parameters),
                        new=_rendered(name, b.parameters),
                    )
                )
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
    prev_code: Path,
    next_code: Path,
    source_root: str,
    package: str,
    prev_version: str = "prev",
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
    from swechain_ci.chain.sources import materialize

    config = chain.config
    return compare_trees(
        materialize(chain, prev).code,
        materialize(chain, next_).code,
        config.source_root,
        config.import_name,
        prev,
        next_,
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
        (
            "New exception classes",
            [
                f"- {_code(e.module + '.' + e.name)}" + (f" (bases {_codes(e.bases)})" if e.bases else "")
                for e in changes.new_exceptions
            ],
        ),
        ("Removed exception classes", [f"- {_code(e.module + '.' + e.name)}" for e in changes.removed_exceptions]),
        (
            "Renamed names",
            [
                f"- {r.kind} {_code(r.old_module + '.' + r.old_name)} → {_code(r.new_module + '.' + r.new_name)}"
                + (f", signature {_code(r.new_name + r.parameters)}" if r.parameters else "")
                for r in changes.renamed_names
            ],
        ),
        (
            "Changed signatures",
            [f"- {c.kind} in {_code(c.module)}: {_code(c.old)} → {_code(c.new)}" for c in changes.changed_signatures],
        ),
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
