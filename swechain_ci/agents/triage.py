"""Infrastructure failures are not agent failures: an ordered table of signatures.

When an agent phase fails (a CLI exits non-zero or reports an error; the reference agent's
API call fails), the text of the failure is matched against ``SIGNATURES`` in order, the
way SWE-bench keeps its infrastructure-failure signatures. The first row that matches
names the failure: the phase is then ``infra_error``, its step is not scored, and the run
pauses so that it can be resumed from that step. No match: the agent failed (a crash).

Only failure text is triaged (the CLI's error events and the tail of its output after a
failed exit, or the API error), never a phase that ended well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    name: str
    pattern: re.Pattern[str]
    advice: str


def _row(name: str, pattern: str, advice: str) -> Signature:
    return Signature(name, re.compile(pattern, re.IGNORECASE), advice)


# Order matters: the more specific rows first (a refused proxy is also a refused connection;
# an unreachable API is reported by Claude Code 2.1.332 as an "api_error" of "connection_failed").
SIGNATURES: tuple[Signature, ...] = (
    _row(
        "egress_proxy",
        r"proxy ?error|tunneling socket could not be established|407 proxy|proxy authentication required"
        r"|connect tunnel failed|unable to connect to proxy|proxyconnect",
        "the egress proxy is missing or refused the connection: check SWECHAIN_EGRESS_NETWORK and its proxy "
        "(README, Network)",
    ),
    _row("overloaded", r"\b529\b|overloaded_error|\boverloaded\b", "the provider is overloaded; resume later"),
    _row(
        "rate_limited",
        r"\b429\b|rate_limit_error|rate[ -]limit(ed)?\b|too many requests|insufficient_quota|quota exceeded",
        "the provider's rate limit or quota was hit; resume later or raise the limit",
    ),
    _row(
        "network",
        r"econnrefused|econnreset|etimedout|enotfound|eai_again|getaddrinfo|network is unreachable"
        r"|connection (error|refused|reset)|apiconnectionerror|stream disconnected|error sending request"
        r"|failed to connect|could not resolve host|temporary failure in name resolution|socket hang up|connection_failed",
        "the API could not be reached: check the runner's network and egress proxy; resume when it works",
    ),
    _row(
        "server_error",
        r"\b(500|502|503|504)\b.*\b(error|unavailable|gateway)\b|internal server error|service unavailable"
        r"|bad gateway|gateway time-?out|\bapi_error\b",
        "the provider had a server error; resume later",
    ),
)


def classify(text: str) -> Signature | None:
    """The first signature that matches ``text``, or None (an agent failure)."""
    for signature in SIGNATURES:
        if signature.pattern.search(text):
            return signature
    return None


class InfraFailure(Exception):
    """Raised by the run when a phase ended in ``infra_error``: the step is not scored."""

    def __init__(self, step: int, phase: str, signature: str | None, detail: str) -> None:
        super().__init__(f"step {step} {phase}: {signature or 'infra'}: {detail}")
        self.step, self.phase, self.signature, self.detail = step, phase, signature, detail
