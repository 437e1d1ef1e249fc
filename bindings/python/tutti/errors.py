"""tutti.Error and one subclass per tutti_result_t, raised with the library's own sentence."""
import builtins

from ._lib import lib


class Error(Exception):
    """A tutti call failed. ``code`` is the tutti_result_t value, ``message`` the sentence the
    library gave (tutti_comm_last_error) or the Python-side check that refused the call."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    code = 1


class InvalidUsageError(Error):
    code = 2


class SystemCallError(Error, OSError):
    code = 3


class RemoteError(Error):
    code = 4


class TimeoutExpiredError(Error, builtins.TimeoutError):
    code = 5


class AbortedError(Error):
    code = 6


class InternalError(Error):
    code = 7


_BY_CODE = {cls.code: cls for cls in (InvalidArgumentError, InvalidUsageError, SystemCallError,
                                       RemoteError, TimeoutExpiredError, AbortedError,
                                       InternalError)}


def result_string(code):
    s = lib.tutti_result_string(code)
    return s.decode() if s else "unknown result %d" % code


def error_for(code, message=""):
    """The exception for result `code`; message falls back to the result's name. A timeout's
    sentence starts with "Timed out", as torch's own backends word it (callers match on it)."""
    cls = _BY_CODE.get(code, Error)
    text = message or result_string(code)
    if code == TimeoutExpiredError.code and message and "Timed out" not in text:
        text = "Timed out: " + text
    return cls(text, code)


def check(code, comm_handle=None, what=""):
    """Raises the matching Error unless code is TUTTI_SUCCESS."""
    if code == 0:
        return
    message = ""
    if comm_handle:
        raw = lib.tutti_comm_last_error(comm_handle)
        message = raw.decode(errors="replace") if raw else ""
    if not message:
        message = "%s: %s" % (what, result_string(code)) if what else result_string(code)
    raise error_for(code, message)


def check_init(code, what):
    """check() for a call that makes a communicator: on failure there is none to ask, so the
    sentence is this thread's tutti_last_init_error()."""
    if code == 0:
        return
    raw = lib.tutti_last_init_error()
    message = raw.decode(errors="replace") if raw else ""
    if not message:
        message = "%s: %s" % (what, result_string(code))
    elif what and not message.startswith(what.split(" ")[0]):
        message = "%s: %s" % (what, message)
    raise error_for(code, message)


def bad_argument(what, reason):
    return InvalidArgumentError("%s: %s" % (what, reason), 1)
