"""The one exception family of wdn-explain: the CLI turns it into one line and exit code 1."""

from __future__ import annotations


class WdnExplainError(Exception):
    """Base class of every error raised on bad input; the message names the bad value."""


class ConfigError(WdnExplainError, ValueError):
    """A configuration value or file is invalid."""


class DataError(WdnExplainError, ValueError):
    """A data file or folder is missing, corrupt or does not match what is asked."""


class ExplainError(WdnExplainError, ValueError):
    """A graph, model or option cannot be explained as asked."""


class WdnExplainWarning(UserWarning):
    """A result computed from doubtful input; the CLI prints each as one ``warning:`` line."""
