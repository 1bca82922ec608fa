"""Files written whole: under a temporary name in the same directory, renamed when complete.

Every file bert_tf writes (records and their sidecars, predictions, results, configs,
checkpoints, exports) goes through here, so that a full disk, an error or an interrupt never
leaves a half-written file under its final name: the temporary is removed, the file that was
there before (if any) stays as it was, and a full disk becomes an `OutputError` whose one line
names the file, its directory and the space needed.

Local paths use `os` (no TensorFlow import: the data pipeline does not pay for it); paths with
a scheme (`gs://...`) go through `tf.io.gfile`.
"""

import contextlib
import errno
import os
import re
import shutil
import uuid

# Disk full (ENOSPC) and quota exceeded (EDQUOT): either way, space must be freed.
_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
# How TensorFlow's file systems word the same conditions (as a ResourceExhaustedError, or
# another OpError on some file systems).
_SPACE_MESSAGES = ("no space left on device", "disk quota exceeded")


class OutputError(ValueError):
    """A file that could not be written; the message names it, its directory and, for a full
    disk, the space needed."""


def is_remote(path):
    """Whether `path` has a scheme (`gs://...`): such paths go through `tf_gfile()`, local
    ones through `os`."""
    return "://" in os.fspath(path)


def tf_gfile():
    """`tf.io.gfile`, imported on first use (local paths never import TensorFlow)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote paths, TF errors)

    return tf.io.gfile


def is_file(path):
    """Whether `path` is an existing file (remote: whether it exists)."""
    return tf_gfile().exists(path) if is_remote(path) else os.path.isfile(path)


def temporary_name(path):
    """`<path>.tmp-<pid>-<random>`: beside `path` (a rename within one file system), unique
    per writer, and recognisable as an interrupted write's leftover (`is_temporary_name`)."""
    return f"{os.fspath(path)}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def is_temporary_name(path):
    """Whether `path` is a `temporary_name` (what a process killed mid-write leaves)."""
    return re.search(r"\.tmp-\d+-[0-9a-f]{8}$", os.fspath(path)) is not None


def remove(path):
    """Deletes the file or directory tree `path` if it exists; never raises."""
    path = os.fspath(path)
    try:
        if is_remote(path):
            gfile = tf_gfile()
            if gfile.isdir(path):
                gfile.rmtree(path)
            elif gfile.exists(path):
                gfile.remove(path)
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    except Exception:  # pylint: disable=broad-except  (cleanup must not hide the first error)
        pass


def size(path):
    """Bytes in the file or directory tree `path` (0 when it does not exist)."""
    path = os.fspath(path)
    try:
        if is_remote(path):
            gfile = tf_gfile()
            if gfile.isdir(path):
                return sum(gfile.stat(os.path.join(d, f)).length
                           for d, _, files in gfile.walk(path) for f in files)
            return gfile.stat(path).length if gfile.exists(path) else 0
        if os.path.isdir(path):
            return sum(os.path.getsize(os.path.join(d, f))
                       for d, _, files in os.walk(path) for f in files)
        return os.path.getsize(path) if os.path.exists(path) else 0
    except Exception:  # pylint: disable=broad-except
        return 0


def free_bytes(directory):
    """Free bytes on the file system of local `directory` (None if unknown, e.g. gs://)."""
    directory = os.fspath(directory)
    if is_remote(directory):
        return None
    try:
        return shutil.disk_usage(directory or ".").free
    except OSError:
        return None


def format_bytes(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def is_out_of_space(error):
    """Whether `error` (an OSError or a tf.errors.OpError) says the disk or quota is full."""
    if isinstance(error, OSError) and error.errno in _SPACE_ERRNOS:
        return True
    if type(error).__module__.startswith("tensorflow"):
        message = str(getattr(error, "message", error)).lower()
        return any(m in message for m in _SPACE_MESSAGES)
    return False


def out_of_space_message(what, directory, needed=None, written=None):
    """One line: `cannot write WHAT: no space left in DIRECTORY (it needs about N; M free)`."""
    directory = os.fspath(directory) or "."
    parts = []
    if needed:
        parts.append(f"it needs about {format_bytes(needed)}")
    elif written:
        parts.append(f"it needs more than the {format_bytes(written)} written before the disk "
                     "filled")
    free = free_bytes(directory)
    if free is not None:
        parts.append(f"{format_bytes(free)} free")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"cannot write {what}: no space left on the device of {directory}{detail}"


def output_error(path, error, needed=None, written=None):
    """The `OutputError` of `error` raised while writing `path`, or None when `error` is not a
    write failure a user can act on (it is then re-raised as it is)."""
    path = os.fspath(path)
    if is_out_of_space(error):
        return OutputError(out_of_space_message(
            path, os.path.dirname(path), needed=needed, written=written))
    return None


def replace(temp, path):
    """Renames `temp` to `path`, replacing a file (or, for a directory, the tree) there."""
    temp, path = os.fspath(temp), os.fspath(path)
    if is_remote(path):
        gfile = tf_gfile()
        if gfile.isdir(temp):
            if gfile.exists(path):
                gfile.rmtree(path)
            gfile.rename(temp, path)
        else:
            gfile.rename(temp, path, overwrite=True)
        return
    if os.path.isdir(temp) and os.path.isdir(path):
        # Two renames: a moment without `path`, but never a half-written tree under its name.
        old = temporary_name(path)
        os.replace(path, old)
        os.replace(temp, path)
        remove(old)
        return
    os.replace(temp, path)


@contextlib.contextmanager
def atomic_path(path, needed=None):
    """Yields a temporary name beside `path` to write (a file or a directory); renames it to
    `path` when the block ends normally. When it ends by an exception (an interrupt too) the
    temporary is removed and `path` is untouched; a full disk is re-raised as `OutputError`.

    Args:
      path: the final name.
      needed: bytes the write needs, if known (said in the full-disk message).
    """
    path = os.fspath(path)
    temp = temporary_name(path)
    try:
        yield temp
        replace(temp, path)
    except BaseException as e:
        written = size(temp)
        remove(temp)
        error = output_error(path, e, needed=needed, written=written) if isinstance(
            e, Exception) else None
        if error is not None:
            raise error from None
        raise


def open_for_write(path, mode="w"):
    """`path` opened to write: "w" UTF-8 text with \\n line ends, or "wb"."""
    if is_remote(path):
        return tf_gfile().GFile(path, mode)
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding="utf-8", newline="\n")


@contextlib.contextmanager
def atomic_open(path, mode="w", needed=None):
    """`open(path, mode)` ("w": UTF-8 text with \\n line ends, or "wb") through `atomic_path`:
    the file appears under `path` whole, once the block has ended and it is closed."""
    with atomic_path(path, needed=needed) as temp:
        with open_for_write(temp, mode) as f:
            yield f


def write_atomic(path, data):
    """Writes `data` (str or bytes) to `path` whole or not at all."""
    needed = len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", needed=needed) as f:
        f.write(data)
    return os.fspath(path)
