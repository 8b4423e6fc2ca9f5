"""Tests for toyslug.slugify."""

import pytest

from toyslug import is_slug, slugify


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Hello World", "hello-world", id="spaces"),
        pytest.param("Hello, World!", "hello-world", id="punctuation"),
        pytest.param("Python 3.11 release", "python-3-11-release", id="digits"),
        pytest.param("snake_case_name", "snake-case-name", id="underscores"),
        pytest.param("  many --- dashes  ", "many-dashes", id="dash-runs"),
    ],
)
def test_slugify_basic(text, expected):
    assert slugify(text) == expected


def test_slugify_empty():
    assert slugify("") == ""
    assert slugify("?!") == ""


def test_slugify_custom_sep():
    assert slugify("Hello big World", sep="_") == "hello_big_world"


def test_slugify_rejects_empty_sep():
    with pytest.raises(ValueError):
        slugify("hello", sep="")


def test_slugify_drops_accents():
    assert slugify("café") == "caf"
    assert slugify("Crème brûlée") == "cr-me-br-l-e"


def test_slugify_drops_non_latin():
    assert slugify("Привет мир") == ""
    assert slugify("hello мир") == "hello"


@pytest.mark.slow
def test_slugify_titles_are_valid_slugs(titles):
    for title in titles:
        assert is_slug(slugify(title)), title
