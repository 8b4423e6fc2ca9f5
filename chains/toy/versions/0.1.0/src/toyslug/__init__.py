"""toyslug - small, dependency-free utilities for turning text into URL slugs."""

from toyslug.checks import is_slug
from toyslug.core import slugify, truncate

__version__ = "0.1.0"

__all__ = ["__version__", "is_slug", "slugify", "truncate"]
