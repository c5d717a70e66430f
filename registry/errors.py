"""User-facing errors: each names what is wrong and what would be right.

Tools catch `FocalppError` and print its message without a traceback (unless `--debug`).
Everything else that escapes is a bug in focalpp and keeps its traceback.
"""

from __future__ import annotations


class FocalppError(Exception):
    """Base of every error a user can cause by what they ask for."""

    def __reduce__(self):
        # raised in a worker process (a dataset block, a shard), it reaches the parent whole:
        # pickle's default calls the class with the message alone, which a subclass whose
        # __init__ takes other arguments refuses, and the parent never learns of the error
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[FocalppError], args: tuple, state: dict) -> FocalppError:
    """An error as it was raised, without calling its __init__ again."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class UnknownKindError(FocalppError, ValueError):
    """A component kind that `registry.kinds.KINDS` does not declare."""


class UnknownComponentError(FocalppError, LookupError):
    """A component name that is not registered (the message lists the closest names)."""


class DuplicateComponentError(FocalppError, ValueError):
    """The same kind and name registered twice."""


class RecipeError(FocalppError, ValueError):
    """A recipe that cannot be read, parsed or bound (the message names file and line)."""


class PluginError(FocalppError, ImportError):
    """A plugin module or file that cannot be found or imported."""


class WriteError(FocalppError):
    """A file that could not be written (a full disk, a lost permission, a folder replaced by a
    file): the message names the path and the cause; what the file held before is intact."""

    def __init__(self, path, cause: OSError, kept: str = ""):
        import errno as codes

        name = codes.errorcode.get(cause.errno or 0, "")
        reason = f"{cause.strerror or cause}{f' ({name})' if name else ''}"
        if cause.errno is None:  # a short write some libraries report without a code
            reason += " (a short write: the disk is full or a file-size limit was reached)"
        super().__init__(
            f"cannot write {path}: {reason}. {kept or 'Nothing was half-written.'} Make room or "
            "repair the folder, then run the command again"
        )
        self.path, self.cause = path, cause
