"""TFRecord output: round-robin over several files, never a complete-looking partial file.

Records go to `<path>.incomplete` and are renamed to `<path>` only when everything has been
written; an error or an interrupt removes the temporary files instead.
"""

import os

from bert_tf.data.documents import DataError

INCOMPLETE_SUFFIX = ".incomplete"


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  return tf.io.gfile


def check_writable(paths, flag="--output_file"):
  """Raises DataError unless every path can be created (tries, then removes, its temp file)."""
  if not paths:
    raise DataError(f"{flag} is empty; expected a file or a comma list of files")
  if len(set(paths)) != len(paths):
    raise DataError(f"{flag} names the same file twice: {paths}")
  for path in paths:
    if not path:
      raise DataError(f"{flag} contains an empty file name: {paths}")
    temp = path + INCOMPLETE_SUFFIX
    try:
      if "://" in path:
        gfile = _gfile()
        if gfile.isdir(path):
          raise DataError(f"{flag}: {path!r} is a directory")
        with gfile.GFile(temp, "wb"):
          pass
        gfile.remove(temp)
      else:
        if os.path.isdir(path):
          raise DataError(f"{flag}: {path!r} is a directory")
        directory = os.path.dirname(path) or "."
        if not os.path.isdir(directory):
          raise DataError(f"{flag}: cannot write {path!r}: directory {directory!r} does not exist")
        with open(temp, "wb"):
          pass
        os.remove(temp)
    except DataError:
      raise
    except Exception as e:  # pylint: disable=broad-except  (OSError, tf.errors.*)
      raise DataError(f"{flag}: cannot write {path!r}: {e}") from None


class RoundRobinRecordWriter:
  """Writes serialized records round-robin to `paths` (record i to `paths[i % len(paths)]`).

  Use as a context manager: leaving it normally renames every `<path>.incomplete` to `<path>`;
  leaving it by an exception (including KeyboardInterrupt) deletes them.
  """

  def __init__(self, paths):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    self.paths = list(paths)
    self._temps = [p + INCOMPLETE_SUFFIX for p in self.paths]
    self._writers = []
    try:
      for temp in self._temps:
        self._writers.append(tf.io.TFRecordWriter(temp))
    except Exception:
      self.abort()
      raise
    self._next = 0
    self.num_written = 0

  def write(self, record):
    self._writers[self._next].write(record)
    self._next = (self._next + 1) % len(self._writers)
    self.num_written += 1

  def close(self, rename=True):
    """Finishes every file and gives it its final name (or leaves that to `rename_complete`)."""
    for writer in self._writers:
      writer.close()
    self._writers = []
    if rename:
      rename_complete(self.paths)

  def abort(self):
    """Closes and deletes the temporary files."""
    for writer in self._writers:
      try:
        writer.close()
      except Exception:  # pylint: disable=broad-except
        pass
    self._writers = []
    remove_incomplete(self.paths)

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.close()
    else:
      self.abort()
    return False


def rename_complete(paths):
  """Renames each `<path>.incomplete` to `<path>`."""
  gfile = _gfile()
  for path in paths:
    gfile.rename(path + INCOMPLETE_SUFFIX, path, overwrite=True)


def remove_incomplete(paths):
  """Deletes whichever `<path>.incomplete` files exist."""
  gfile = _gfile()
  for path in paths:
    try:
      if gfile.exists(path + INCOMPLETE_SUFFIX):
        gfile.remove(path + INCOMPLETE_SUFFIX)
    except Exception:  # pylint: disable=broad-except
      pass
