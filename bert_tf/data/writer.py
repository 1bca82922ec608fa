"""TFRecord output without TensorFlow: framing, CRC32-C, round-robin, temp-then-rename.

A TFRecord file is a sequence of
  uint64 length (little endian) | uint32 masked_crc32c(length bytes) |
  data | uint32 masked_crc32c(data)
with masked_crc(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32). Writing it needs no
TensorFlow: `TFRecordFile` buffers records and computes their CRC32-C (Castagnoli) in batches
with numpy (all records of a batch side by side, 4 bytes per step through two 64K-entry
tables), so the data pipeline does not pay TensorFlow's ~0.6 GB import. Files are readable by
`tf.data.TFRecordDataset` (tests check this and compare bytes with `tf.io.TFRecordWriter`).

Records go to `<path>.incomplete`, renamed to `<path>` only when everything has been written;
an error or an interrupt removes the temporary files instead, and a full disk becomes a
`files.OutputError` naming the file and its directory. Paths with a scheme (`gs://...`) go
through `tf.io.gfile` (`bert_tf.files`).
"""

import os
import struct

import numpy as np

from bert_tf import files
from bert_tf.data.documents import DataError

INCOMPLETE_SUFFIX = ".incomplete"
_CASTAGNOLI = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _byte_table():
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_CASTAGNOLI), table >> 1)
    return table.astype(np.uint32)


_TABLE = _byte_table()
_TABLE_LIST = _TABLE.tolist()


def _four_zero_bytes(register):
    for _ in range(4):
        register = _TABLE[register & 0xFF] ^ (register >> 8)
    return register


# The reflected CRC register after 4 more bytes is f(register ^ word), f linear: split the
# 32-bit argument into two 16-bit halves, one table each.
_HALVES = np.arange(1 << 16, dtype=np.uint32)
_F_LOW = _four_zero_bytes(_HALVES)
_F_HIGH = _four_zero_bytes(_HALVES << 16)
del _HALVES


class _ZeroRegisters:
    """Register after n zero bytes from the initial 0xFFFFFFFF, for the right-aligned batches."""

    def __init__(self):
        self.values = np.array([0xFFFFFFFF], dtype=np.uint32)

    def get(self, lengths):
        need = int(lengths.max()) + 1
        if need > len(self.values):
            size = max(need, 2 * len(self.values))
            values = self.values.tolist()
            c = values[-1]
            table = _TABLE_LIST
            while len(values) < size:
                c = table[c & 0xFF] ^ (c >> 8)
                values.append(c)
            self.values = np.array(values, dtype=np.uint32)
        return self.values[lengths]


_ZERO_REGISTERS = _ZeroRegisters()


def crc32c(data):
    """CRC32-C of one bytes object (pure Python; for tests and short data)."""
    c = 0xFFFFFFFF
    table = _TABLE_LIST
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32c_batch(records):
    """CRC32-C of each bytes object in `records` -> uint32 array.

    The records are right-aligned in a zero-padded matrix: leading zero bytes leave a zero CRC
    register at zero, so one pass from register 0 over all columns, then xor with the register
    that `len(record)` zero bytes would give from the standard initial value, is each record's
    CRC (the CRC register is affine in its initial value).
    """
    count = len(records)
    if not count:
        return np.zeros(0, np.uint32)
    lengths = np.fromiter(map(len, records), np.int64, count)
    width = (int(lengths.max()) + 3) // 4 * 4
    matrix = np.zeros((count, width), np.uint8)
    for row, record in zip(matrix, records):
        if record:
            row[width - len(record):] = np.frombuffer(record, np.uint8)
    words = np.ascontiguousarray(matrix.view("<u4").T)
    register = np.zeros(count, np.uint32)
    halves = register.view("<u2").reshape(count, 2)
    low, high = halves[:, 0], halves[:, 1]
    f_low, f_high = _F_LOW, _F_HIGH
    from_low = np.empty(count, np.uint32)
    from_high = np.empty(count, np.uint32)
    for column in words:
        register ^= column
        np.take(f_low, low, out=from_low)
        np.take(f_high, high, out=from_high)
        np.bitwise_xor(from_low, from_high, out=register)
    return register ^ _ZERO_REGISTERS.get(lengths) ^ np.uint32(0xFFFFFFFF)


def masked_crc32c(crc):
    """TFRecord's masking of a CRC (int or uint32 array)."""
    if isinstance(crc, np.ndarray):
        crc = crc.astype(np.uint64)
        return (((crc >> 15) | (crc << 17)) + _MASK_DELTA).astype(np.uint32)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame_each(records, header_cache=None):
    """The TFRecord bytes of each of a list of serialized records (a list, same order)."""
    crcs = masked_crc32c(crc32c_batch(records)).astype("<u4").tobytes()
    header_cache = {} if header_cache is None else header_cache
    out = []
    append = out.append
    for i, record in enumerate(records):
        n = len(record)
        header = header_cache.get(n)
        if header is None:
            length = struct.pack("<Q", n)
            header = header_cache[n] = length + struct.pack("<I", masked_crc32c(crc32c(length)))
        append(header + record + crcs[4 * i:4 * i + 4])
    return out


def frame_records(records, header_cache=None):
    """The TFRecord bytes of a list of serialized records."""
    return b"".join(frame_each(records, header_cache))


class TFRecordFile:
    """Appends records to one TFRecord file, framing them in batches of `batch_size`.

    `name`: the file's final name when `path` is a temporary one, for the message of a full
    disk (a `files.OutputError`)."""

    def __init__(self, path, batch_size=2048, *, name=None):
        self.path = path
        self.name = name or path
        self._file = files.open_for_write(path, "wb")
        self._pending = []
        self._batch_size = batch_size
        self._header_crcs = {}
        self.bytes_written = 0

    def write(self, record):
        self._pending.append(record)
        if len(self._pending) >= self._batch_size:
            self.flush()

    def write_many(self, records):
        self._pending.extend(records)
        if len(self._pending) >= self._batch_size:
            self.flush()

    def write_framed(self, data):
        """Appends bytes already framed as TFRecords (after the pending records)."""
        self.flush()
        self._file.write(data)

    def flush(self):
        if not self._pending:
            return
        records, self._pending = self._pending, []
        data = frame_records(records, self._header_crcs)
        try:
            self._file.write(data)
        except Exception as e:  # pylint: disable=broad-except  (OSError, tf.errors.*)
            self._raise_output_error(e)
        self.bytes_written += len(data)

    def close(self):
        try:
            self.flush()
        finally:
            try:
                self._file.close()
            except Exception as e:  # pylint: disable=broad-except  (buffered bytes hit the disk)
                self._raise_output_error(e)

    def _raise_output_error(self, error):
        out = files.output_error(self.name, error, written=self.bytes_written)
        if out is None:
            raise error
        raise out from None


def check_writable(paths, flag="--output_file"):
    """Raises DataError unless every path can be created (creates, then removes, its temp file)."""
    if not paths or not any(paths):
        raise DataError(f"{flag} is empty; expected a file or a comma list of files")
    if len(set(paths)) != len(paths):
        raise DataError(f"{flag} names the same file twice: {paths}")
    for path in paths:
        if not path:
            raise DataError(f"{flag} contains an empty file name: {paths}")
        temp = path + INCOMPLETE_SUFFIX
        try:
            if files.is_remote(path):
                gfile = files.tf_gfile()
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

    As a context manager: leaving normally renames every `<path>.incomplete` to `<path>`;
    leaving by an exception (including KeyboardInterrupt) deletes them.
    """

    def __init__(self, paths):
        self.paths = list(paths)
        self._files = []
        try:
            for path in self.paths:
                self._files.append(TFRecordFile(path + INCOMPLETE_SUFFIX, name=path))
        except Exception:
            self.abort()
            raise
        self._next = 0
        self.num_written = 0
        self._header_crcs = {}

    def write(self, record):
        self._files[self._next].write(record)
        self._next += 1
        if self._next == len(self._files):
            self._next = 0
        self.num_written += 1

    def write_many(self, records):
        """`write` for each record, in order."""
        files = self._files
        n = len(files)
        if n == 1:
            files[0].write_many(records)
        else:
            # one CRC pass over the whole batch: per file, batches would be n times smaller
            framed = frame_each(records, self._header_crcs)
            for j in range(min(n, len(records))):
                files[(self._next + j) % n].write_framed(b"".join(framed[j::n]))
            self._next = (self._next + len(records)) % n
        self.num_written += len(records)

    def close(self, rename=True):
        """Finishes every file and gives it its final name (or leaves that to `rename_complete`)."""
        for f in self._files:
            f.close()
        self._files = []
        if rename:
            rename_complete(self.paths)

    def abort(self):
        """Closes and deletes the temporary files."""
        for f in self._files:
            try:
                f.close()
            except Exception:  # pylint: disable=broad-except
                pass
        self._files = []
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
    for path in paths:
        files.replace(path + INCOMPLETE_SUFFIX, path)


def remove_incomplete(paths):
    """Deletes whichever `<path>.incomplete` files exist."""
    for path in paths:
        files.remove(path + INCOMPLETE_SUFFIX)
