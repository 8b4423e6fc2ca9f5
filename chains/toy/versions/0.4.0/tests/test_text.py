"""Tests for toyslug.text.shorten."""

import pytest

import toyslug
from toyslug.text import shorten


def test_shorten_is_exported_at_top_level():
    assert toyslug.shorten is shorten


def test_shorten_short_text_unchanged():
    assert shorten("hello", 10) == "hello"
    assert shorten("hello", 5) == "hello"


def test_shorten_without_ellipsis():
    assert shorten("hello world", 5, ellipsis="") == "hello"


def test_shorten_appends_ellipsis():
    result = shorten("hello world", 8)
    assert result.startswith("hello")
    assert result.endswith("...")


def test_shorten_custom_ellipsis():
    result = shorten("hello world", 6, ellipsis="~")
    assert result.startswith("hello")
    assert result.endswith("~")


def test_shorten_rejects_negative_length():
    with pytest.raises(ValueError):
        shorten("hello", -1)


@pytest.mark.parametrize(
    ("length", "ellipsis"),
    [
        pytest.param(8, "...", id="dots"),
        pytest.param(6, "~", id="tilde"),
    ],
)
def test_shorten_result_fits_length(length, ellipsis):
    result = shorten("hello wonderful world", length, ellipsis=ellipsis)
    assert len(result) == length
    assert result.endswith(ellipsis)


def test_shorten_exact_output():
    assert shorten("hello world", 8) == "hello..."


def test_shorten_tiny_length_hard_cuts():
    assert shorten("hello world", 2) == "he"
