"""toyslug - small, dependency-free utilities for turning text into URL slugs."""

from toyslug.checks import is_slug
from toyslug.text import shorten, slugify, unique_slug

__version__ = "0.3.0"

__all__ = ["__version__", "is_slug", "shorten", "slugify", "unique_slug"]
