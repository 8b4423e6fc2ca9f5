"""Tests for toyslug.unique_slug."""

import pytest

from toyslug import slugify, unique_slug


def test_unique_slug_when_free(existing_slugs):
    assert unique_slug("Release plan", existing_slugs) == "release-plan"


def test_unique_slug_appends_counter(existing_slugs):
    assert unique_slug("Release notes", existing_slugs) == "release-notes-2"


def test_unique_slug_skips_taken_counters(existing_slugs):
    assert unique_slug("Hello, World!", existing_slugs) == "hello-world-3"


def test_unique_slug_custom_sep():
    taken = iter(["hello_world"])
    assert unique_slug("Hello World", taken, sep="_") == "hello_world_2"


def test_unique_slug_rejects_unsluggable_text():
    with pytest.raises(ValueError):
        unique_slug("?!", [])


def test_existing_slugs_are_slugify_fixed_points(existing_slugs):
    for slug in existing_slugs:
        assert slugify(slug) == slug


def test_slugify_is_idempotent(titles):
    for title in titles:
        once = slugify(title)
        assert slugify(once) == once
