"""Regression alerts on GitHub: a comment on a standing issue, or a new issue, through PyGithub."""

from __future__ import annotations

from swechain_ci.github.reporting import GitHubReporter, fit_comment


def post_alerts(reporter: GitHubReporter, markdown: str, issue: int | None, title: str | None) -> str:
    """Comment on ``issue`` if given, else open an issue titled ``title``; returns its URL."""
    body = fit_comment(markdown)
    if issue is not None:
        target = reporter._call(f"read issue #{issue}", reporter.repo.get_issue, issue)
        comment = reporter._call(f"comment on issue #{issue}", target.create_comment, body)
        return comment.html_url or comment.url
    created = reporter._call(
        "open an alert issue", reporter.repo.create_issue, title=title or "Leaderboard alerts", body=body
    )
    return created.html_url or created.url
