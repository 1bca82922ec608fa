"""`pytorch_model.bin` read without PyTorch, and without trusting the pickle.

A PyTorch (>= 1.6) checkpoint is a zip: `<root>/data.pkl` (the pickled state dict),
`<root>/data/<key>` (the raw bytes of each storage), `<root>/byteorder` ("little" when absent).
In the pickle a tensor is `torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, hooks)`, a storage the persistent id `("storage", torch.XStorage, key,
location, numel)`, the dict a `collections.OrderedDict`.

Unpickling runs whatever callables the pickle names, so a file from the internet could run
code. `TensorUnpickler` resolves only the globals above (the storage types by name, each to a
NumPy dtype; `_rebuild_tensor_v2` to a NumPy view builder of our own), and any other global
is refused with an error naming the file and the global, before anything is called. The
legacy (pre-1.6, non-zip) layout and TorchScript archives are refused in one line.
"""

import collections
import io
import math
import pickle
import zipfile

import numpy as np

from bert_tf.hf import HubError

# The storage classes a tensor checkpoint names ("torch FloatStorage"), and the dtypes that
# newer writers may put in their place ("torch float32"), -> (NumPy dtype, bytes).
# "bf16" has no NumPy dtype: its storages are widened to float32 (exact).
_STORAGES = {
    "DoubleStorage": ("f8", 8), "FloatStorage": ("f4", 4), "HalfStorage": ("f2", 2),
    "BFloat16Storage": ("bf16", 2), "LongStorage": ("i8", 8), "IntStorage": ("i4", 4),
    "ShortStorage": ("i2", 2), "CharStorage": ("i1", 1), "ByteStorage": ("u1", 1),
    "BoolStorage": ("?", 1),
}
_DTYPES = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage",
}


class _StorageType:
    """What a pickled `torch.XStorage` (or torch dtype) resolves to: just its element type."""

    def __init__(self, name):
        self.name = name
        self.code, self.itemsize = _STORAGES[name]


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class TensorUnpickler(pickle.Unpickler):
    """Unpickles a PyTorch state dict into {name: np.ndarray}, refusing every other global."""

    def __init__(self, data, archive, root, path):
        super().__init__(io.BytesIO(data))
        self._archive = archive
        self._root = root
        self._path = path
        self._storages = {}
        byteorder = f"{root}/byteorder"
        order = (archive.read(byteorder).decode().strip()
                 if byteorder in archive.namelist() else "little")
        if order not in ("little", "big"):
            raise HubError(f"{path}: {byteorder} says {order!r}, expected little or big")
        self._order = "<" if order == "little" else ">"

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self._rebuild_tensor
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return self._rebuild_parameter
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name in _DTYPES:
            return _StorageType(_DTYPES[name])
        raise HubError(
            f"{self._path}: refused the pickle global {module}.{name}: a PyTorch checkpoint "
            "needs only collections.OrderedDict, torch._utils._rebuild_tensor_v2 and torch "
            "storage types, and unpickling anything else can run code (nothing was run)")

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or not isinstance(pid[1], _StorageType) or not isinstance(pid[2], str)
                or not _is_int(pid[4]) or pid[4] < 0):
            raise HubError(f"{self._path}: unexpected persistent id {pid!r} (expected "
                           "('storage', torch.XStorage, key, location, numel))")
        storage_type, key, numel = pid[1], pid[2], pid[4]
        if key not in self._storages:
            entry = f"{self._root}/data/{key}"
            try:
                raw = self._archive.read(entry)
            except KeyError:
                raise HubError(f"{self._path}: storage {key} has no entry {entry}") from None
            size = numel * storage_type.itemsize
            if len(raw) < size:
                raise HubError(f"{self._path}: {entry} holds {len(raw)} bytes, storage of "
                               f"{numel} {storage_type.name} elements needs {size}")
            if storage_type.code == "bf16":
                bits = np.frombuffer(raw, dtype=self._order + "u2", count=numel)
                array = (bits.astype(np.uint32) << 16).view(np.float32)
            else:
                array = np.frombuffer(raw, dtype=self._order + storage_type.code, count=numel)
            self._storages[key] = array.astype(array.dtype.newbyteorder("="))
        return self._storages[key]

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None,
                        metadata=None):
        del requires_grad, hooks, metadata
        if (not isinstance(storage, np.ndarray) or not _is_int(offset) or offset < 0
                or not isinstance(size, tuple) or not isinstance(stride, tuple)
                or len(size) != len(stride)
                or not all(_is_int(d) and d >= 0 for d in size + stride)):
            raise HubError(f"{self._path}: a tensor record with offset {offset!r}, size "
                           f"{size!r}, stride {stride!r} is not a valid view of a storage")
        if 0 in size:
            return np.zeros(size, dtype=storage.dtype)
        # A state dict's tensors are views of at most their storage's size (an expanded
        # buffer such as position_ids has stride 0 but no more elements); more would let a
        # few bytes of file ask for any amount of memory.
        if math.prod(size) > storage.size:
            raise HubError(f"{self._path}: a tensor of size {list(size)} is larger than its "
                           f"storage of {storage.size} elements")
        last = offset + sum((d - 1) * s for d, s in zip(size, stride))
        if last >= storage.size:
            raise HubError(f"{self._path}: a tensor of size {list(size)}, stride {list(stride)} "
                           f"at offset {offset} overruns its storage of {storage.size} elements")
        view = np.lib.stride_tricks.as_strided(
            storage[offset:], shape=size, strides=[s * storage.itemsize for s in stride],
            writeable=False)
        return np.array(view)

    def _rebuild_parameter(self, data, requires_grad=False, hooks=None):
        del requires_grad, hooks
        return data


def read_state_dict(path):
    """{name: np.ndarray} of a zip `pytorch_model.bin`, in the file's order.

    Raises:
      HubError: not a zip checkpoint (legacy layout, TorchScript), a refused global, a
        storage or tensor record that does not fit, a value that is not a tensor.
    """
    path = str(path)
    if not zipfile.is_zipfile(path):
        raise HubError(
            f"{path}: not a zip archive; the legacy (PyTorch < 1.6) checkpoint layout is not "
            "read: load and re-save it with a recent PyTorch, or use model.safetensors")
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise HubError(f"{path}: expected one <root>/data.pkl in the zip, found "
                           f"{len(pickles)} (a TorchScript archive is not a state dict)")
        root = pickles[0].split("/")[0]
        unpickler = TensorUnpickler(archive.read(pickles[0]), archive, root, path)
        try:
            state = unpickler.load()
        except HubError:
            raise
        except Exception as e:  # a malformed pickle: any error of the pickle machine
            raise HubError(f"{path}: cannot unpickle {pickles[0]} ({type(e).__name__}: {e})") from None
    if not isinstance(state, dict):
        raise HubError(f"{path}: holds a {type(state).__name__}, expected a state dict")
    for name, value in state.items():
        if not isinstance(name, str) or not isinstance(value, np.ndarray):
            raise HubError(f"{path}: entry {name!r} is a {type(value).__name__}, not a tensor")
    return dict(state)
