"""An independent packer for the tests: the bytes a kernel should receive for each value.

Written apart from launcher's struct-based packer, from the rules Triton's own launchers follow:
little-endian integers, IEEE half with round-half-even for fp16, fp32 rounded then truncated to
its upper 16 bits for bf16.
"""
import numpy as np

INT_TYPES = {"i1": (1, False), "u1": (1, False), "i8": (1, True), "u8": (1, False),
             "i16": (2, True), "u16": (2, False), "i32": (4, True), "u32": (4, False),
             "i64": (8, True), "u64": (8, False)}


def reference_bytes(ty: str, value) -> bytes:
    if ty.startswith("*"):
        return (0 if value is None else int(value)).to_bytes(8, "little")
    if ty in INT_TYPES:
        size, signed = INT_TYPES[ty]
        return int(value).to_bytes(size, "little", signed=signed)
    with np.errstate(over="ignore"):
        if ty == "fp16":
            return np.array([value], dtype=np.float64).astype(np.float16).tobytes()
        if ty == "bf16":
            bits = np.array([value], dtype=np.float64).astype(np.float32).view(np.uint32)[0]
            return int(bits >> 16).to_bytes(2, "little")
        if ty in ("fp32", "f32"):
            return np.array([value], dtype=np.float64).astype(np.float32).tobytes()
        if ty == "fp64":
            return np.array([value], dtype=np.float64).tobytes()
    raise ValueError(ty)
