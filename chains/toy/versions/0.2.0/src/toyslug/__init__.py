"""toyslug - small, dependency-free utilities for turning text into URL slugs."""

from toyslug.checks import is_slug
from toyslug.core import slugify, truncate, unique_slug

__version__ = "0.2.0"

__all__ = ["__version__", "is_slug", "slugify", "truncate", "unique_slug"]
