"""Errors that reach the user, and the exit codes they map to.

Every error a user can cause carries enough to fix it: the file, the field, what is wrong.
The CLI turns these into one readable message and an exit code, never a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2  # bad command line or bad spec: nothing ran
EXIT_INFRA = 3  # authentication, permanent provider error, disk, lock: the run is incomplete


class SimlabError(Exception):
    """Base class of errors shown to the user as one message."""

    exit_code = EXIT_USAGE


class SpecError(SimlabError):
    """A spec file (YAML) or a reference in it is wrong.

    ``problems`` holds one line per problem, each already naming file, line and field.
    """

    exit_code = EXIT_USAGE

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class UsageError(SimlabError):
    """The command line asks for something impossible."""

    exit_code = EXIT_USAGE


class InfraError(SimlabError):
    """The lab could not do its job: a provider refused us, the disk is full, a lock is held."""

    exit_code = EXIT_INFRA
