"""Release notes (specification level L1): a version's section of its own changelog, as tasks.

Deterministic and offline. The changelog is the one shipped in the version's release
tree (``CHANGELOG.rst``, ``CHANGELOG.md``, ...; see :data:`CANDIDATES`). The section
of a version is found by its heading (``v2.10.0``, ``[0.2.0] - 2024-03-04``,
```v2.10.0 <https://…/compare/2.9.0...2.10.0>`__``), or, when no heading names the
version, by a heading whose compare link ends at it (PyJWT 2.5.0 shipped its section
under a heading that reads ``v2.4.0``).

A section is split into tasks: one per top-level bullet, with its sub-bullets and
continuation lines; a sub-heading below the category level (PyJWT 2.0.0's
"Highlights") is one task with its body. The category is the heading the task sits
under (Added, Changed, Fixed, ...). Issue, pull-request, commit and advisory
references are kept as data; what they link to is not fetched.

A version without a section is reported as such (``found=False`` with the reason);
nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from swechain_ci.errors import SwechainError
from swechain_ci.models import StrictTyped

# Preference order; each entry is matched case-insensitively against the release tree.
CANDIDATES: tuple[str, ...] = (
    "CHANGELOG.rst",
    "CHANGELOG.md",
    "CHANGES.rst",
    "CHANGES.md",
    "CHANGELOG.txt",
    "CHANGELOG",
    "CHANGES.txt",
    "CHANGES",
    "HISTORY.*",
    "docs/changelog.rst",
    "docs/changelog.md",
    "NEWS*",
)

Format = Literal["rst", "markdown"]
ReferenceKind = Literal["pull", "issue", "issue_or_pull", "commit", "advisory", "cve", "link"]


class Reference(StrictTyped):
    """A linked issue, pull request, commit, advisory or URL in a release note."""

    kind: ReferenceKind
    id: str | None = None  # "975", a commit hash, "GHSA-…", "CVE-…"; None for a plain link
    label: str  # as written: "#975", "GHSA-75c5-…", or the URL itself
    url: str | None = None  # None when the note names it without a link (e.g. "(#550)")
    repository: str | None = None  # "owner/name" when the URL is on GitHub


class ReleaseTask(StrictTyped):
    id: str  # T1, T2, ... in the order of the notes
    category: str | None  # the heading the item sits under: Added, Changed, Fixed, ...
    kind: Literal["bullet", "heading", "paragraph"]
    text: str  # as written (source markup), bullet marker removed, continuation dedented
    line: int  # 1-based line of the item in the changelog
    references: list[Reference]


class ReleaseNotes(StrictTyped):
    version: str
    found: bool
    source_file: str | None  # relative to the release tree; None when no changelog was shipped
    source_format: Format | None
    heading: str | None  # the section's heading as written
    heading_label: str | None  # its text without link markup, e.g. "v2.10.0"
    line: int | None  # 1-based line of that heading
    matched_by: Literal["heading", "compare_link"] | None
    note: str | None  # why nothing was found, or how the section was matched
    taken_from: str | None = None  # the later release whose changelog holds this section (its own has none)
    linked_text_fetched: bool = False  # the text behind the references is never fetched here
    tasks: list[ReleaseTask]


# --------------------------------------------------------------------------- finding the file


def find_changelog(root: Path) -> Path | None:
    """The preferred changelog file in a release tree, or None."""
    for pattern in CANDIDATES:
        folder_part, _, name_pattern = pattern.rpartition("/")
        folder = root / folder_part if folder_part else root
        if not folder.is_dir():
            continue
        regex = re.compile(re.escape(name_pattern).replace(r"\*", ".*"), re.IGNORECASE)
        matches = sorted(
            (p for p in folder.iterdir() if p.is_file() and regex.fullmatch(p.name)),
            key=lambda p: (_extension_rank(p.name), p.name),
        )
        if matches:
            return matches[0]
    return None


def _extension_rank(name: str) -> int:
    lower = name.lower()
    for rank, suffix in enumerate((".rst", ".md", ".markdown", ".txt")):
        if lower.endswith(suffix):
            return rank
    return 4


def detect_format(path: Path | str, text: str) -> Format:
    name = str(path).lower()
    if name.endswith(".rst"):
        return "rst"
    if name.endswith((".md", ".markdown")):
        return "markdown"
    if re.search(r"^#{1,6}\s", text, re.MULTILINE):
        return "markdown"
    return "rst"


# --------------------------------------------------------------------------- headings

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_BULLET = re.compile(r"^(\s*)([-*+•]|\d+[.)])(\s+|$)")
_FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_LINK_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*(\S+)")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<([^<>`\s]+)>`_{0,2}")
_MD_INLINE = re.compile(r"\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_MD_REF = re.compile(r"\[([^\]]+)\]\[([^\]]*)\]")
_VERSION_LABEL = re.compile(
    r"^[\s\[(`*_]*(?:(?:version|release)\s+)?v?(\d+(?:\.\d+)*(?:(?:a|b|rc|alpha|beta|\.?post|\.?dev)\.?\d*)*)"
    r"(?![\w.]*\w)",
    re.IGNORECASE,
)
_COMPARE = re.compile(r"/compare/[^/\s]*?\.{2,3}v?([0-9][^/?#\s>]*)")


@dataclass
class Heading:
    index: int  # 0-based line of the title
    end: int  # 0-based line after the heading (after its underline)
    level: int
    title: str
    label: str  # link text if the title is a link, else the title
    url: str | None


@dataclass
class Document:
    lines: list[str]
    fmt: Format
    headings: list[Heading]
    code_lines: set[int]  # lines inside fenced code (markdown)
    link_defs: dict[str, str]  # markdown reference-link definitions, keys lowercased


def _clean_title(title: str, fmt: Format, defs: dict[str, str]) -> tuple[str, str | None]:
    """The label and URL of a heading title that is (or starts with) a link."""
    if fmt == "rst":
        m = _RST_LINK.search(title)
        if m and title[: m.start()].strip() == "":
            label = m.group(1) or m.group(2)
            rest = title[m.end() :]
            return (label + rest).strip(), m.group(2)
        return title.strip(), None
    m = _MD_INLINE.match(title.strip())
    if m:
        return (m.group(1) + title.strip()[m.end() :]).strip(), m.group(2)
    m = _MD_REF.match(title.strip())
    if m:
        key = (m.group(2) or m.group(1)).lower()
        return (m.group(1) + title.strip()[m.end() :]).strip(), defs.get(key)
    m = re.match(r"\[([^\]]+)\](?![\[(])", title.strip())
    if m:
        return (m.group(1) + title.strip()[m.end() :]).strip(), defs.get(m.group(1).lower())
    return title.strip(), None


def parse_document(text: str, fmt: Format) -> Document:
    lines = text.splitlines()
    code: set[int] = set()
    defs: dict[str, str] = {}
    raw: list[tuple[int, int, int, str]] = []  # (index, end, level, title)
    if fmt == "markdown":
        fence: str | None = None
        for i, line in enumerate(lines):
            m = _FENCE.match(line)
            if fence is not None:
                code.add(i)
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if m:
                fence = m.group(1)
                code.add(i)
                continue
            d = _LINK_DEF.match(line)
            if d:
                defs.setdefault(d.group(1).lower(), d.group(2).strip("<>"))
        i = 0
        while i < len(lines):
            line = lines[i]
            if i in code:
                i += 1
                continue
            m = _ATX.match(line)
            if m:
                raw.append((i, i + 1, len(m.group(1)), m.group(2)))
                i += 1
                continue
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            s = _SETEXT.match(nxt) if i + 1 not in code else None
            if (
                s
                and line.strip()
                and not line.startswith((" " * 4, "\t"))
                and not _BULLET.match(line)
                and not _LINK_DEF.match(line)
                and (i == 0 or not lines[i - 1].strip())
            ):
                raw.append((i, i + 2, 1 if s.group(1)[0] == "=" else 2, line.strip()))
                i += 2
                continue
            i += 1
        return Document(lines, fmt, _headings(raw, fmt, defs), code, defs)

    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        third = lines[i + 2] if i + 2 < len(lines) else ""
        over = _ADORNMENT.match(line)
        if over and nxt.strip() and _ADORNMENT.match(third) and third.strip()[0] == line.strip()[0]:
            style = (line.strip()[0], True)
            title, end = nxt.strip(), i + 3
        elif (
            line.strip()
            and not line[0].isspace()
            and not _ADORNMENT.match(line)
            and not _BULLET.match(line)
            and _ADORNMENT.match(nxt)
            and len(nxt.strip()) >= min(len(line.strip()), 3)
            and (i == 0 or not lines[i - 1].strip())
        ):
            style = (nxt.strip()[0], False)
            title, end = line.strip(), i + 2
        else:
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        raw.append((i, end, styles.index(style) + 1, title))
        i = end
    return Document(lines, fmt, _headings(raw, fmt, defs), code, defs)


def _headings(raw: list[tuple[int, int, int, str]], fmt: Format, defs: dict[str, str]) -> list[Heading]:
    return [Heading(index, end, level, title, *_clean_title(title, fmt, defs)) for index, end, level, title in raw]


def _normalize(version: str) -> str:
    from swechain_ci.chain.sources import normalize_version

    return normalize_version(version)


def heading_version(heading: Heading) -> str | None:
    """The version a heading names, if it starts with one (``v2.10.0``, ``[0.2.0] - …``)."""
    m = _VERSION_LABEL.match(heading.label)
    return m.group(1) if m else None


def compare_target(heading: Heading) -> str | None:
    """The version a heading's compare link ends at (``…/compare/2.9.0...2.10.0``)."""
    for url in filter(None, (heading.url, heading.title)):
        m = _COMPARE.search(url)
        if m:
            return m.group(1).rstrip(".")
    return None


def _is_version_heading(heading: Heading) -> bool:
    return heading_version(heading) is not None or heading.label.lower().startswith("unreleased")


def section_headings(doc: Document) -> list[Heading]:
    """Headings that open a version's section (including "Unreleased")."""
    return [h for h in doc.headings if _is_version_heading(h)]


# --------------------------------------------------------------------------- references

_URL = re.compile(r"https?://[^\s<>`'\"\])]+")
_HASH = re.compile(r"(?<![\w/&#])#(\d+)\b")
_GHSA = re.compile(r"\bGHSA(?:-[0-9a-z]{4}){3}\b", re.IGNORECASE)
_CVE = re.compile(r"\bCVE-\d{4}-\d{4,}\b", re.IGNORECASE)
# Sphinx roles of sphinx-issues and similar extensions (Jinja2: ":issue:`1426`", ":pr:`1418`").
_ROLE = re.compile(r":(issue|pr|pull|ghsa|cve):`#?([^`\s]+)`", re.IGNORECASE)
_ROLE_KINDS: dict[str, ReferenceKind] = {
    "issue": "issue",
    "pr": "pull",
    "pull": "pull",
    "ghsa": "advisory",
    "cve": "cve",
}
_GITHUB_PATHS: tuple[tuple[str, ReferenceKind], ...] = (
    (r"^/pull/(\d+)", "pull"),
    (r"^/issues/(\d+)", "issue"),
    (r"^/commit/([0-9a-f]{7,40})", "commit"),
    (r"^/security/advisories/(GHSA[-0-9a-z]+)", "advisory"),
)
_IDS: tuple[tuple[re.Pattern[str], ReferenceKind], ...] = ((_GHSA, "advisory"), (_CVE, "cve"))
_GITHUB = re.compile(r"^https?://github\.com/([^/\s]+/[^/\s#?]+)(/.*)?$")


def classify_url(url: str, label: str) -> Reference:
    label = " ".join(label.split())  # link text wrapped over lines (xarray's "By `Spencer\n  Clark <…>`_")
    m = _GITHUB.match(url)
    repository = m.group(1) if m else None
    rest = (m.group(2) or "") if m else ""
    for pattern, kind in _GITHUB_PATHS:
        found = re.match(pattern, rest, re.IGNORECASE)
        if m and found:
            return Reference(kind=kind, id=found.group(1), label=label or url, url=url, repository=repository)
    return Reference(kind="link", id=None, label=label or url, url=url, repository=repository)


def without_code(text: str, fmt: Format = "rst") -> str:
    """``text`` with code blocks and inline code blanked out (same length, same lines)."""
    lines = text.split("\n")
    out: list[str] = []
    fence: str | None = None
    literal_indent: int | None = None
    for line in lines:
        m = _FENCE.match(line)
        if fence is not None:
            out.append(" " * len(line))
            if m and m.group(1)[0] == fence[0]:
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(" " * len(line))
            continue
        if literal_indent is not None:
            if not line.strip() or _indent(line) > literal_indent:
                out.append(" " * len(line))
                continue
            literal_indent = None
        if line.rstrip().endswith("::"):
            literal_indent = _indent(line)
            out.append(" " * len(line) if line.lstrip().startswith("..") else line)
            continue
        out.append(line)
    blanked = "\n".join(out)
    inline = r"``[^`]+``" if fmt == "rst" else r"`[^`\n]+`"
    return re.sub(inline, lambda m: " " * len(m.group(0)), blanked)


def extract_references(text: str, link_defs: dict[str, str] | None = None, fmt: Format = "rst") -> list[Reference]:
    """Every issue, pull request, commit, advisory and URL a note mentions outside code, in order, once each."""
    link_defs = link_defs or {}
    text = without_code(text, fmt)
    found: list[tuple[int, Reference]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for m in _RST_LINK.finditer(text):
        found.append((m.start(), classify_url(m.group(2), m.group(1).strip())))
        taken.append(m.span())
    for m in _MD_INLINE.finditer(text):
        if free(*m.span()) and re.match(r"https?://", m.group(2)):
            found.append((m.start(), classify_url(m.group(2), m.group(1).strip())))
            taken.append(m.span())
    for m in _MD_REF.finditer(text):
        url = link_defs.get((m.group(2) or m.group(1)).lower())
        if url and free(*m.span()):
            found.append((m.start(), classify_url(url, m.group(1).strip())))
            taken.append(m.span())
    for m in _URL.finditer(text):
        if free(*m.span()):
            url = m.group(0).rstrip(".,;:")
            found.append((m.start(), classify_url(url, url)))
            taken.append((m.start(), m.start() + len(url)))
    for m in _ROLE.finditer(text):
        if free(*m.span()):
            kind = _ROLE_KINDS[m.group(1).lower()]
            ident = m.group(2).upper() if kind in ("advisory", "cve") else m.group(2)
            found.append((m.start(), Reference(kind=kind, id=ident, label=m.group(0))))
            taken.append(m.span())
    for pattern, kind in _IDS:
        for m in pattern.finditer(text):
            if free(*m.span()):
                found.append((m.start(), Reference(kind=kind, id=m.group(0).upper(), label=m.group(0))))
                taken.append(m.span())
    for m in _HASH.finditer(text):
        if free(*m.span()):
            found.append((m.start(), Reference(kind="issue_or_pull", id=m.group(1), label=m.group(0))))
            taken.append(m.span())
    result: list[Reference] = []
    seen: set[tuple] = set()
    for _, ref in sorted(found, key=lambda pair: pair[0]):
        key = (ref.kind, ref.id, ref.url)
        if key not in seen:
            seen.add(key)
            result.append(ref)
    return result


# --------------------------------------------------------------------------- items


@dataclass
class _Item:
    kind: str
    category: str | None
    line: int
    content_col: int
    lines: list[str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _dedent(line: str, col: int) -> str:
    return line[col:] if _indent(line) >= col else line.lstrip()


def split_tasks(doc: Document, start: int, end: int, version: str) -> list[ReleaseTask]:
    """The tasks in lines ``start:end`` of a document (one version's section body)."""
    inner = [h for h in doc.headings if start <= h.index < end]
    category_level = min((h.level for h in inner), default=None)
    by_line = {h.index: h for h in inner}
    items: list[_Item] = []
    current: _Item | None = None
    category: str | None = None
    blank_before = True
    i = start
    while i < end:
        line = doc.lines[i]
        heading = by_line.get(i)
        if heading is not None:
            if heading.level == category_level:
                category, current = _plain(heading.label), None
            else:
                current = _Item("heading", category, i + 1, 0, [heading.label])
                items.append(current)
            i, blank_before = heading.end, True
            continue
        if i in doc.code_lines:  # fenced code belongs to the item it follows
            if current is None:
                current = _Item("paragraph", category, i + 1, 0, [])
                items.append(current)
            current.lines.append(_dedent(line, current.content_col))
            i, blank_before = i + 1, False
            continue
        if not line.strip():
            if current is not None:
                current.lines.append("")
            i, blank_before = i + 1, True
            continue
        if doc.fmt == "markdown" and _LINK_DEF.match(line):
            i += 1
            continue
        indent = _indent(line)
        bullet = _BULLET.match(line)
        if current is not None and (current.kind == "heading" or indent >= current.content_col > 0):
            current.lines.append(_dedent(line, current.content_col))
        elif bullet:
            col = bullet.end() if bullet.group(3) else len(line)
            current = _Item("bullet", category, i + 1, col, [line[bullet.end() :].rstrip()])
            items.append(current)
        elif (current is not None and not blank_before) or (
            current is not None and current.kind == "paragraph" and indent > 0
        ):  # lazy continuation
            current.lines.append(line.strip())
        else:
            current = _Item("paragraph", category, i + 1, 0, [line.rstrip()])
            items.append(current)
        blank_before = False
        i += 1
    tasks: list[ReleaseTask] = []
    subheading: tuple[str | None, str] | None = None  # (the category it sits in, its text)
    for item in items:
        while item.lines and not item.lines[-1].strip():
            item.lines.pop()
        text = "\n".join(line.rstrip() for line in item.lines).strip("\n")
        if not text.strip() or (item.kind == "paragraph" and _RELEASED.match(text.strip())):
            continue  # a release date is not a change
        if item.kind == "paragraph" and _SUBHEADING.match(text.strip()):
            subheading = (item.category, _plain(text.strip()))  # a plain-text heading: the category of what follows
            continue
        category = subheading[1] if subheading and subheading[0] == item.category else item.category
        tasks.append(
            ReleaseTask(
                id=f"T{len(tasks) + 1}",
                category=category,
                kind=item.kind,  # type: ignore[arg-type]
                text=text,
                line=item.line,
                references=extract_references(text, doc.link_defs, doc.fmt),
            )
        )
    return tasks


# "Released 2021-05-18", "Released: 2024-01-10", "Unreleased" (Jinja2's, Flask's sections open with one).
_RELEASED = re.compile(r"^(?:released(?:\s+on)?:?\s+.*\d{4}.*|unreleased)$", re.IGNORECASE)
# A one-line paragraph of up to five capitalised words, optionally ending in ":" ("Bug Fixes",
# "Enhancements:", "**New features**"): a heading written as plain text, not a change.
_SUBHEADING = re.compile(r"^[*_]*[A-Z][\w-]*(?: [A-Za-z][\w-]*){0,4}:?[*_]*:?$")


def _plain(label: str) -> str:
    """A heading label without emphasis markers or trailing colons."""
    return re.sub(r"[*_`]+", "", label).strip().rstrip(":").strip()


# --------------------------------------------------------------------------- sections


def find_section(
    doc: Document, version: str
) -> tuple[Heading | None, Literal["heading", "compare_link"] | None, str | None]:
    """The heading of ``version``'s section, how it was matched, and a note."""
    wanted = _normalize(version)
    named = [h for h in doc.headings if (v := heading_version(h)) is not None and _normalize(v) == wanted]
    if named:
        agreeing = [h for h in named if (t := compare_target(h)) is None or _normalize(t) == wanted]
        return (agreeing or named)[0], "heading", None
    linked = [
        h
        for h in doc.headings
        if _is_version_heading(h) and (t := compare_target(h)) is not None and _normalize(t) == wanted
    ]
    if linked:
        h = linked[0]
        return (
            h,
            "compare_link",
            (f"the heading reads '{h.label}' but its compare link ends at {version}; matched by the link"),
        )
    return None, None, None


def section_end(doc: Document, heading: Heading) -> int:
    for h in doc.headings:
        if h.index > heading.index and h.level <= heading.level:
            return h.index
    return len(doc.lines)


def extract_release_notes(
    text: str,
    version: str,
    source_file: str = "CHANGELOG.md",
    fmt: Format | None = None,
    package: str | None = None,
) -> ReleaseNotes:
    """The release notes of ``version`` in a changelog's text. With ``package``, a heading may
    name it before the version (pytest's ``pytest 8.0.1 (2024-02-16)``)."""
    fmt = fmt or detect_format(source_file, text)
    doc = parse_document(text, fmt)
    if package:
        prefix = package.lower() + " "
        for h in doc.headings:
            if h.label.lower().startswith(prefix):
                h.label = h.label[len(prefix) :]
    heading, matched_by, note = find_section(doc, version)
    if heading is None:
        sections = [h.label for h in section_headings(doc)]
        shown = ", ".join(sections[:4]) + (", ..." if len(sections) > 4 else "") if sections else "none"
        return ReleaseNotes(
            version=version,
            found=False,
            source_file=source_file,
            source_format=fmt,
            heading=None,
            heading_label=None,
            line=None,
            matched_by=None,
            note=f"{source_file} has no section for {version} (its sections: {shown})",
            tasks=[],
        )
    tasks = split_tasks(doc, heading.end, section_end(doc, heading), version)
    return ReleaseNotes(
        version=version,
        found=True,
        source_file=source_file,
        source_format=fmt,
        heading=heading.title,
        heading_label=heading.label,
        line=heading.index + 1,
        matched_by=matched_by,
        note=note,
        tasks=tasks,
    )


def release_notes(root: Path, version: str, changelog: str | None = None, package: str | None = None) -> ReleaseNotes:
    """The release notes of ``version`` in the changelog shipped in the release tree ``root``:
    the file ``changelog`` names (relative to ``root``), else the first of :data:`CANDIDATES`."""
    path = find_changelog(root) if changelog is None else root / changelog
    if path is None or not path.is_file():
        looked_for = changelog or ", ".join(CANDIDATES)
        return ReleaseNotes(
            version=version,
            found=False,
            source_file=None,
            source_format=None,
            heading=None,
            heading_label=None,
            line=None,
            matched_by=None,
            note=f"the release tree ships no changelog (looked for {looked_for})",
            tasks=[],
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SwechainError(f"{path}: cannot read the changelog ({exc}); check the release tree") from None
    return extract_release_notes(text, version, path.relative_to(root).as_posix(), package=package)


def chain_release_notes(chain, version: str) -> ReleaseNotes:
    """``version``'s notes from the changelog in its own release tree (fetched if needed).

    When that tree ships no changelog, or one without a section for ``version``, the section
    comes from the nearest later release of the chain whose changelog has it, and the notes
    say so (``taken_from``).
    """
    from swechain_ci.chain.sources import materialize

    own = release_notes(materialize(chain, version).root, version, chain.config.changelog, chain.config.package)
    if own.found:
        return own
    later = chain.versions[chain.versions.index(version) + 1 :] if version in chain.versions else []
    for candidate in later:
        notes = release_notes(materialize(chain, candidate).root, version, chain.config.changelog, chain.config.package)
        if notes.found:
            why = "ships no changelog" if own.source_file is None else f"has no section for it in {own.source_file}"
            taken = f"the {version} release {why}; this section is from the changelog shipped in {candidate}"
            return notes.model_copy(
                update={
                    "taken_from": candidate,
                    "note": taken + (f"; {notes.note}" if notes.note else ""),
                }
            )
    if later:
        return own.model_copy(
            update={
                "note": f"{own.note}; no later release of the chain "
                f"({later[0]} .. {later[-1]}) has a section for {version} either"
            }
        )
    return own
