"""`.safetensors` files: the header checked entry by entry, tensors read and written with the
`safetensors` package's NumPy API.

Layout: 8 bytes little-endian header length N, N bytes of JSON
`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`, then the
data section (offsets count from its start). A file from the internet is untrusted: before a
byte of data is read, every entry's dtype, shape and offsets are checked against the file's
size, and a bad one is a one-line `HubError` naming the file and the tensor.
"""

import json
import math
import os

import numpy as np

from bert_tf.hf import HubError

# safetensors dtype -> (NumPy dtype, bytes per element); BF16 has no NumPy dtype and is
# widened to float32 here (exact: bfloat16 is the top half of a float32).
DTYPES = {
    "F64": (np.float64, 8),
    "F32": (np.float32, 4),
    "F16": (np.float16, 2),
    "BF16": (None, 2),
    "I64": (np.int64, 8),
    "I32": (np.int32, 4),
    "I16": (np.int16, 2),
    "I8": (np.int8, 1),
    "U8": (np.uint8, 1),
    "BOOL": (np.bool_, 1),
}
# A header larger than this is not a BERT checkpoint's (BERT-large's is ~40 kB).
_MAX_HEADER_BYTES = 100 << 20


def _fail(path, what):
    raise HubError(f"{path}: {what}")


class SafetensorsFile:
    """The checked header of a `.safetensors` file; `read(name)` returns a tensor.

    Attributes:
      path: the file.
      entries: {tensor name: (dtype string, shape tuple)} in the header's order.
      metadata: the header's `__metadata__` dict (or {}).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            size = os.path.getsize(self.path)
            with open(self.path, "rb") as f:
                head = f.read(8)
                if len(head) < 8:
                    _fail(self.path, f"{size} bytes, too short for a safetensors header")
                n = int.from_bytes(head, "little")
                if n > size - 8 or n > _MAX_HEADER_BYTES:
                    _fail(self.path, f"header length {n} overruns the file ({size} bytes): not a "
                                     "safetensors file, or truncated")
                raw = f.read(n)
        except OSError as e:
            raise HubError(f"{self.path}: cannot read ({e.strerror or e})") from None
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise HubError(f"{self.path}: the safetensors header is not valid JSON ({e})") from None
        if not isinstance(header, dict):
            _fail(self.path, "the safetensors header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        self.metadata = metadata if isinstance(metadata, dict) else {}
        data_size = size - 8 - n
        self._data_start = 8 + n
        self.entries = {}
        self._offsets = {}
        for name, entry in header.items():
            self._check_entry(name, entry, data_size)

    def _check_entry(self, name, entry, data_size):
        where = f"tensor {name}"
        if not isinstance(entry, dict):
            _fail(self.path, f"{where}: header entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype not in DTYPES:
            _fail(self.path, f"{where}: dtype {dtype!r} is not one we convert (expected one of "
                             f"{', '.join(DTYPES)})")
        if (not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            _fail(self.path, f"{where}: shape {shape!r} is not a list of non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
            _fail(self.path, f"{where}: data_offsets {offsets!r} is not [begin, end]")
        begin, end = offsets
        if not 0 <= begin <= end or end > data_size:
            _fail(self.path, f"{where}: data_offsets [{begin}, {end}] overrun the data section "
                             f"({data_size} bytes)")
        expected = math.prod(shape) * DTYPES[dtype][1]
        if end - begin != expected:
            _fail(self.path, f"{where}: data_offsets [{begin}, {end}] hold {end - begin} bytes, "
                             f"shape {shape} of {dtype} needs {expected}")
        self.entries[name] = (dtype, tuple(shape))
        self._offsets[name] = (begin, end)

    def read_all(self):
        """{name: np.ndarray} of every tensor; BF16 widened to float32."""
        from safetensors import SafetensorError, safe_open

        out = {}
        try:
            with safe_open(self.path, framework="numpy") as f:
                for name, (dtype, shape) in self.entries.items():
                    if dtype == "BF16":
                        out[name] = self._read_bf16(name, shape)
                    else:
                        out[name] = f.get_tensor(name)
        except SafetensorError as e:
            raise HubError(f"{self.path}: the safetensors package refuses it ({e})") from None
        return out

    def _read_bf16(self, name, shape):
        begin, end = self._offsets[name]
        with open(self.path, "rb") as f:
            f.seek(self._data_start + begin)
            raw = np.frombuffer(f.read(end - begin), dtype="<u2")
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)


def write_file(path, tensors, metadata=None):
    """Writes {name: np.ndarray} as a `.safetensors` file (the header in sorted name order)."""
    from safetensors.numpy import save_file

    save_file({name: np.ascontiguousarray(value) for name, value in tensors.items()},
              os.fspath(path), metadata=metadata)
