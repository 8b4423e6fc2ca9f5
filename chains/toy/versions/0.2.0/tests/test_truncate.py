"""Tests for toyslug.truncate."""

import pytest

from toyslug import truncate


def test_truncate_short_text_unchanged():
    assert truncate("hello", 10) == "hello"
    assert truncate("hello", 5) == "hello"


def test_truncate_without_ellipsis():
    assert truncate("hello world", 5, ellipsis="") == "hello"


def test_truncate_appends_ellipsis():
    result = truncate("hello world", 8)
    assert result.startswith("hello")
    assert result.endswith("...")


def test_truncate_custom_ellipsis():
    result = truncate("hello world", 6, ellipsis="~")
    assert result.startswith("hello")
    assert result.endswith("~")


def test_truncate_rejects_negative_length():
    with pytest.raises(ValueError):
        truncate("hello", -1)


@pytest.mark.parametrize(
    ("length", "ellipsis"),
    [
        pytest.param(8, "...", id="dots"),
        pytest.param(6, "~", id="tilde"),
    ],
)
def test_truncate_result_fits_length(length, ellipsis):
    result = truncate("hello wonderful world", length, ellipsis=ellipsis)
    assert len(result) == length
    assert result.endswith(ellipsis)


def test_truncate_exact_output():
    assert truncate("hello world", 8) == "hello..."


def test_truncate_tiny_length_hard_cuts():
    assert truncate("hello world", 2) == "he"
