"""One error hierarchy for everything secperf can anticipate; the CLI maps classes to exit codes.

- InputError (exit 2): something the user wrote or picked is wrong. The message names the option,
  key path, file or value and says what to do instead.
- SetupError (exit 1): the machine lacks something secperf needs (a package, a built tool, root,
  a TUN device). The message names what to install or run.
- InternalError (exit 1): secperf's own bug, found by its own checks (a Result it wrote that its
  readers would refuse, a combination of options secperf derived itself that its checks refuse).
  The message starts with "internal:" and names the check; the user's input is not blamed.
- MeasurementError (exit 1): the lab or an experiment failed as a whole (a server that never
  became ready, a token that cannot be initialised). A single failing sample is not an exception:
  it is recorded in the Result with its reason and the run goes on.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILURES, EXIT_BAD_INPUT = 0, 1, 2
EXIT_SIGINT, EXIT_SIGTERM = 130, 143


class SecperfError(Exception):
    """Base of every error secperf anticipates; never shown with a traceback."""

    exit_code = EXIT_FAILURES


class InputError(SecperfError, ValueError):
    """Bad input: the message says what was wrong and what to do; exit 2."""

    exit_code = EXIT_BAD_INPUT


class OutputError(InputError):
    """A file secperf was told to write cannot be written there (no space, no permission, a name too
    long, a read-only file system) or would destroy an input; exit 2, nothing half-written is left."""


class ResultError(InputError):
    """A Result document (or a field set on one) that cannot be read or is not valid; the message
    says what and where."""


class SetupError(SecperfError, RuntimeError):
    """Something to install, build or enable on this machine; exit 1."""

    exit_code = EXIT_FAILURES


class MeasurementError(SecperfError, RuntimeError):
    """The lab or an experiment failed as a whole (not one sample); exit 1."""

    exit_code = EXIT_FAILURES


class InternalError(SecperfError, RuntimeError):
    """secperf's own bug caught by its own checks (never the user's input): exit 1, the message
    starting with "internal:" and naming the check that failed."""

    exit_code = EXIT_FAILURES

    def __init__(self, message: str):
        super().__init__(message if message.startswith("internal:") else f"internal: {message}")
