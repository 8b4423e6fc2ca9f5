"""The one escaping module: untrusted text renders inert, checked with a real CommonMark/GFM renderer."""

from __future__ import annotations

import pytest

from swechain_ci.markdown import block, cell, inline, plain

INJECTIONS = [
    "# Heading\n\n![img](http://evil.example/x.png) [click](http://evil.example) @maintainer #1",
    "<img src=x onerror=alert(1)> <!-- hidden --> </details>",
    "`` ` `` ``` backticks ``` `",
    "| a | b |\n|---|---|\n| c | d |",
    "text\u202eevil\u200b\x1b[31m\x00",
    "www.evil.example https://evil.example",
    "`",
    " padded ",
]


def render(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like").render(markdown)


@pytest.mark.parametrize("text", INJECTIONS)
def test_an_inline_code_span_shows_the_text_literally_and_nothing_else(text):
    html = render(f"before {inline(text, limit=None)} after")
    assert html.count("<code>") == 1 and "<a " not in html and "<img" not in html and "<h1" not in html
    shown = html.split("<code>", 1)[1].split("</code>", 1)[0]
    assert "\n" not in shown and "\x00" not in shown and "\u202e" not in shown
    assert html.startswith("<p>before <code>") and html.rstrip().endswith("</code> after</p>")


@pytest.mark.parametrize("text", INJECTIONS)
def test_a_table_cell_stays_one_cell(text):
    html = render(f"| a | b |\n|---|---|\n| {cell(text, limit=None)} | x |\n")
    assert html.count("<td>") == 2 and html.count("<code>") == 1 and "<a " not in html and "<img" not in html


def test_a_block_holds_many_lines_literally():
    text = "line 1\n```\n# not a heading\n![x](y)"
    html = render("intro\n\n" + block(text) + "\n\nafter")
    assert html.count("<pre>") == 1 and "<h1" not in html and "<img" not in html
    assert "# not a heading" in html and html.rstrip().endswith("<p>after</p>")


def test_plain_text_is_one_bounded_line():
    assert plain("a\n\n b\t\x07c", 100) == "a b \N{REPLACEMENT CHARACTER}c"
    assert plain("x" * 200, 140) == "x" * 139 + "…"
    assert len(inline("y" * 1000, limit=50)) <= 52
