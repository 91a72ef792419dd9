"""The one exception the CLI turns into a one-line message and exit code 2."""


class UsageError(Exception):
    """What the user gave us is wrong; the message says what and how to fix it (one line)."""

    exit_code = 2
