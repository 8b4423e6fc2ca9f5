"""Shared fixtures for the toyslug test suite."""

import pytest


@pytest.fixture
def titles():
    """Realistic ASCII article titles."""
    return [
        "Hello, World!",
        "  Leading and trailing spaces  ",
        "Python 3.11 is out",
        "Ten tips for faster tests",
        "What's new in toyslug?",
    ]


@pytest.fixture
def existing_slugs():
    """Slugs already taken on an imaginary blog."""
    return ["hello-world", "hello-world-2", "release-notes"]
