"""What this CPU computes natively, read from /proc/cpuinfo (Linux); does not import TensorFlow.

bfloat16 and float16 pay off on a CPU only where it has instructions for them: AVX512_BF16 or
AMX-BF16 (Intel Cooper Lake, Sapphire Rapids and later; AMD Zen 4 and later has AVX512_BF16),
AVX512_FP16 or AMX-FP16 for float16. Elsewhere the CPU has no 16-bit arithmetic: TensorFlow
computes in float32 and converts operands and results, so a 16-bit matmul runs at the float32
rate or below, plus the conversions (measured: docs/performance.md). Used by
`bert_tf.training.precision` to choose and warn, and by the benchmarks to name their CPU.
"""

import dataclasses

CPUINFO_PATH = "/proc/cpuinfo"

# Flags (as Linux spells them in /proc/cpuinfo) that make each 16-bit type native.
NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16"), "fp16": ("avx512_fp16", "amx_fp16")}

# The flags that decide which kernels TensorFlow (Eigen, oneDNN) can use, in the order shown.
RELEVANT_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16",
                  "avx512_fp16", "amx_fp16")


@dataclasses.dataclass(frozen=True)
class CpuInfo:
    """The CPU's model name (None if unknown) and its flags (None if they could not be read,
    e.g. not on Linux)."""

    model_name: str | None
    flags: frozenset | None

    def native(self, kind):
        """True if the CPU has an instruction set for `kind` ('bf16' or 'fp16'), False if not,
        None if its flags are unknown."""
        if self.flags is None:
            return None
        return any(flag in self.flags for flag in NATIVE_FLAGS[kind])

    def describe(self):
        """One line: the model name and the relevant flags, each marked present or absent,
        e.g. 'AMD EPYC; avx2 fma -avx512f -avx512_bf16 ...'."""
        name = self.model_name or "unknown CPU"
        if self.flags is None:
            return f"{name}; flags unknown ({CPUINFO_PATH} not readable)"
        marks = [f if f in self.flags else f"-{f}" for f in RELEVANT_FLAGS]
        return f"{name}; {' '.join(marks)}"


def parse_cpuinfo(text):
    """CpuInfo of the text of /proc/cpuinfo (its first processor: all cores of a Linux machine
    list the same x86 flags)."""
    model_name, flags = None, None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model_name is None:
            model_name = value.strip()
        elif key == "flags" and flags is None:
            flags = frozenset(value.split())
    return CpuInfo(model_name, flags)


def read_cpu_info(path=CPUINFO_PATH):
    """CpuInfo of this machine; flags None where `path` cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return CpuInfo(None, None)
