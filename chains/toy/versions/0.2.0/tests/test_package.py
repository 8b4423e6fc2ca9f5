"""Tests for the toyslug package itself."""

import toyslug


def test_version():
    assert toyslug.__version__ == "0.2.0"


def test_public_names_exist():
    for name in toyslug.__all__:
        assert hasattr(toyslug, name), name
