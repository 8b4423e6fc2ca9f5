"""Dollars per million tokens (``prices.yaml``) and token counts, for agents and DecompSynth."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from swechain_ci.errors import SwechainError, describe_validation
from swechain_ci.models import Strict

PRICES_FILE = Path(__file__).resolve().with_name("prices.yaml")

# ---------------------------------------------------------------------------------------------
# prices and cost


class Price(Strict):
    """Dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_write_tokens * self.cache_write
            + usage.cache_read_tokens * self.cache_read
        ) / 1_000_000


@dataclass
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    @classmethod
    def of(cls, usage: Any) -> TokenUsage:
        """From an SDK ``Usage`` (missing or null counts are 0)."""
        return cls(
            input_tokens=getattr(usage, "input_tokens", None) or 0,
            output_tokens=getattr(usage, "output_tokens", None) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
        )

    def add(self, other: TokenUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.cache_read_tokens += other.cache_read_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
        }


DATE_KEY = "as_of"


def prices_date() -> str:
    """When the list prices of ``prices.yaml`` were checked."""
    return str((yaml.safe_load(PRICES_FILE.read_text()) or {}).get(DATE_KEY, "unknown"))


def price_for(model: str | None, prices: dict[str, Price]) -> Price | None:
    """The price of a model named as a CLI names it: ``claude-sonnet-4-5`` or ``anthropic/claude-sonnet-4-5``."""
    if not model:
        return None
    return prices.get(model) or prices.get(model.rpartition("/")[2])


def load_prices(overrides: dict[str, Any] | None = None, source: str = "options.prices") -> dict[str, Price]:
    """The price table of ``prices.yaml``, extended or overridden by ``overrides``."""
    table: dict[str, Price] = {}
    for origin, entries in (
        (str(PRICES_FILE), yaml.safe_load(PRICES_FILE.read_text()) or {}),
        (source, overrides or {}),
    ):
        if not isinstance(entries, dict):
            raise SwechainError(f"{origin}: expected a mapping of model -> {{input, output, cache_write, cache_read}}")
        for model, entry in entries.items():
            if model == DATE_KEY:
                continue
            try:
                table[str(model)] = Price.model_validate(entry)
            except ValidationError as exc:
                raise SwechainError(describe_validation(f"{origin}: {model}", exc)) from None
    return table
