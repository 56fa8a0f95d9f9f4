"""Errors the user can act on. The CLI prints them as one line and exits with their code."""

from __future__ import annotations


class MonitorError(Exception):
    """An error with a message meant for the user and a process exit code."""

    exit_code = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(MonitorError):
    """The configuration file or environment is unreadable or invalid."""

    exit_code = 2


class InputError(MonitorError):
    """A user-supplied file (seed, claim file, pairs, snapshot) is not in the expected format.

    The message names the file, the line and what was expected.
    """

    exit_code = 3

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class UsageError(MonitorError):
    """A command's arguments name something that does not exist, or options that cannot go together."""

    exit_code = 64  # EX_USAGE


class NotFound(UsageError):
    """A command's argument names a claim, line, assessment or proposal the store does not hold.

    Exit 64 like every usage error, so a script can tell "no such id" from a bad file (3) or a failed run.
    """


class DatabaseError(MonitorError):
    """The database cannot be reached, its URL is wrong, or it cannot be written (disk full)."""

    exit_code = 4


class FileWriteError(MonitorError):
    """An output file (a digest, the feed, an export) could not be written: no such folder, a path
    under a regular file, no permission, disk full. Nothing half-written is left under its name."""

    exit_code = 74  # EX_IOERR


class SourceError(MonitorError):
    """A paper source failed in a way retries did not fix."""

    exit_code = 5


class JudgeError(MonitorError):
    """The judge could not produce a valid assessment."""

    exit_code = 6


class LockHeld(MonitorError):
    """Another run holds the database's run lock."""

    exit_code = 75  # EX_TEMPFAIL: cron wrappers may retry later


class DatabaseBusy(LockHeld):
    """SQLite stayed locked by another process's write for longer than database.busy_timeout_seconds."""


class BudgetExhausted(MonitorError):
    """The run's token budget was spent; what was judged so far is kept."""

    exit_code = 7
