"""engine/io_errors.py: every sqlite3 error class and every built-in OSError subclass has a decided fate, and
exception groups of storage failures become one engine error."""

from __future__ import annotations

import builtins
import errno
import sqlite3

import pydantic
import pytest

from core.errors import ArtifactError, EndpointTimeout, UsageError
from core.models import PromptBundle
from engine.io_errors import (
    OS_NOT_STORAGE,
    SQLITE_BUGS,
    SQLITE_STORAGE,
    StorageError,
    as_engine_error,
    translate_storage_error,
)


def _subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    stack = [root]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def test_every_sqlite3_error_class_is_decided():
    classes = {sqlite3.Error, *_subclasses(sqlite3.Error)}
    decided = {sqlite3.Error, sqlite3.DatabaseError, *SQLITE_STORAGE, *SQLITE_BUGS}
    assert classes <= decided, f"undecided sqlite3 error classes: {classes - decided}"
    for cls in SQLITE_STORAGE + (sqlite3.DatabaseError,):
        assert isinstance(translate_storage_error(cls("boom")), StorageError), cls
    for cls in SQLITE_BUGS + (sqlite3.Error,):
        assert translate_storage_error(cls("boom")) is None, cls  # our own SQL bug: propagates loudly


def test_every_builtin_oserror_class_is_decided():
    builtin_oserrors = {obj for obj in vars(builtins).values()
                        if isinstance(obj, type) and issubclass(obj, OSError)}
    for cls in sorted(builtin_oserrors, key=lambda c: c.__name__):
        translated = translate_storage_error(cls(errno.EIO, "boom"))
        if issubclass(cls, OS_NOT_STORAGE):
            assert translated is None, cls
        else:
            assert isinstance(translated, StorageError) and translated.exit_code == 2, cls


@pytest.mark.parametrize("exc,fragment", [
    (sqlite3.OperationalError("database or disk is full"), "disk full"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
    (sqlite3.DatabaseError("file is not a database"), "corrupt"),
    (sqlite3.DatabaseError("database disk image is malformed"), "corrupt"),
    (OSError(errno.ENOSPC, "No space left on device", "/x/card.sqlite"), "/x/card.sqlite: no space left"),
    (OSError(errno.EROFS, "Read-only file system"), "read-only file system"),
    (OSError(errno.EFBIG, "File too large"), "file too large"),
    (OSError(errno.ENAMETOOLONG, "File name too long"), "file name too long"),
])
def test_messages_say_what_happened(exc: BaseException, fragment: str):
    error = translate_storage_error(exc)
    assert error is not None and fragment in str(error) and "\n" not in str(error)


def test_pydantic_validation_error_is_a_storage_error():
    with pytest.raises(pydantic.ValidationError) as info:
        PromptBundle(roles={"solver": ""})
    error = translate_storage_error(info.value)
    assert isinstance(error, StorageError) and "does not match its schema" in str(error)


def test_exception_groups_are_flattened():
    group = BaseExceptionGroup("tg", [ExceptionGroup("inner", [sqlite3.OperationalError("database or disk is full")])])
    error = as_engine_error(group)
    assert isinstance(error, StorageError) and "disk full" in str(error)
    mixed = ExceptionGroup("tg", [UsageError("bad flag"), OSError(errno.ENOSPC, "full")])
    assert isinstance(as_engine_error(mixed), UsageError)
    assert isinstance(as_engine_error(EndpointTimeout("slow")), EndpointTimeout)


def test_anything_else_propagates():
    assert as_engine_error(ExceptionGroup("tg", [OSError(errno.ENOSPC, "full"), KeyError("bug")])) is None
    assert as_engine_error(RuntimeError("bug")) is None
    assert as_engine_error(ConnectionResetError(errno.ECONNRESET, "reset")) is None
    assert as_engine_error(sqlite3.IntegrityError("UNIQUE constraint failed")) is None
    assert issubclass(StorageError, ArtifactError)
