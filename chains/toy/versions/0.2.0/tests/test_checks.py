"""Tests for toyslug.is_slug."""

import pytest

from toyslug import is_slug


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("hello", id="word"),
        pytest.param("a1-b2-c3", id="words"),
    ],
)
def test_is_slug_accepts(text):
    assert is_slug(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("Hello", id="uppercase"),
        pytest.param("hello--world", id="double-dash"),
        pytest.param("hello_world", id="underscore"),
    ],
)
def test_is_slug_rejects(text):
    assert not is_slug(text)
