"""What Triton's JIT concludes about an argument, and whether an argument fits what a compiled
kernel assumed. Prepared launches, bundles and the fast dispatch share these rules.

Triton compiles one kernel per *specialization* of its arguments (its `native_specialize_impl`,
reproduced here without Triton): a pointer is typed by its tensor's dtype and marked divisible
by 16 when its address is; an integer is typed i32, i64 or u64 by its range, marked divisible
by 16 when it is, and becomes a constexpr when it equals 1; a float is fp32, a bool u1, None a
constexpr; tuples are specialized element by element (fully); `do_not_specialize` parameters
keep only their type, `do_not_specialize_on_alignment` ones drop the divisibility mark.

`AssumptionCheck(spec, annotations)` holds a call's arguments against one compiled kernel: it
refuses, with an `AssumptionError` naming the parameter, what the kernel assumed and what it
got, every argument for which that kernel would compute something else than Triton's choice
would (an int where a bool was compiled, an int below 2**63 for a u64 kernel, a list for a
tuple). An argument that merely allows a more specialised kernel (an aligned pointer for a
kernel compiled for any alignment, a 1 for an i32 parameter, a small int for an i64 one) is
accepted. A parameter annotated with a type takes what Triton packs as that type.
"""
from __future__ import annotations

import operator

from launcher import spec as S

# Triton's canonical dtype names (triton._utils.type_canonicalisation_dict, as facts).
_DTYPE_NAMES = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15", "float8_e4m3fn": "fp8e4nv",
    "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5",
    "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
    "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32",
    "double": "fp64", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "void": "void",
}
_DTYPE_NAMES.update({v: v for v in list(_DTYPE_NAMES.values())})
# __cuda_array_interface__ typestrs (CuPy, Numba): kind and bytes -> Triton's name.
_TYPESTRS = {("f", 2): "fp16", ("f", 4): "fp32", ("f", 8): "fp64", ("i", 1): "i8", ("i", 2): "i16",
             ("i", 4): "i32", ("i", 8): "i64", ("u", 1): "u8", ("u", 2): "u16", ("u", 4): "u32",
             ("u", 8): "u64", ("b", 1): "u1"}

_TYPE_NAMES = frozenset(_DTYPE_NAMES.values())


def annotated_type(annotation: str) -> str:
    """The type Triton's JIT takes from a parameter's annotation (its KernelParam.annotation_type,
    e.g. "i64", "fp32", "u1", "*fp16"), or "" where the annotation names no type: the argument
    of such a parameter is then packed as that type, whatever Triton would have made of it."""
    a = annotation[2:] if annotation.startswith("*k") else annotation[1:] if annotation.startswith("*") else annotation
    return annotation if a in _TYPE_NAMES else ""


_I32 = S.INT_RANGES["i32"]
_I64 = S.INT_RANGES["i64"]
_U64 = S.INT_RANGES["u64"]

# ---- the one rule for an integer argument (the guard, bundles, prepared launches and
# triton_type all classify ints here) ----
DIVISIBILITY = 16  # Triton marks an int or a pointer divisible by 16 (tt.divisibility)
DIVISIBILITY_MASK = DIVISIBILITY - 1  # hot code tests `not v & DIVISIBILITY_MASK` (generated inline)
INT_TYPES = ("i32", "i64", "u64")  # Triton's types of a Python int, most specialised first


def int_type(v: int) -> str | None:
    """Triton's type of the Python int `v` (its JIT): i32, i64 or u64 by range, the first that
    holds it; None beyond 64 bits (Triton refuses it)."""
    if _I32[0] <= v <= _I32[1]:
        return "i32"
    if _I64[0] <= v <= _I64[1]:
        return "i64"
    if 0 <= v <= _U64[1]:
        return "u64"
    return None


def divisible(v: int) -> bool:
    """Whether Triton would mark the int or address `v` divisible by 16."""
    return v % DIVISIBILITY == 0


# (specialize, align) -> {int: int_key(int, specialize, align)}: the ints calls have passed (sizes,
# strides, flags), filled by int_key up to a bound, so that hot code can look an int up first.
INT_KEYS = {(s, a): {} for s in (True, False) for a in (True, False)}
_INT_KEYS_MAX = 8192
_INT_TYPE_BASE = {"i32": 8, "i64": 16, "u64": 24}
_INT_ATTR_CODE = {None: 0, "": 1, "D": 2}  # triton_type's attribute: not looked at, not divisible, divisible


def int_key(v: int, specialize: bool = True, align: bool = True) -> int | None:
    """Everything the choice of a compiled kernel depends on in an int argument, as one small
    int (a key the guard and bundles hash), from what Triton makes of it (triton_type, the one
    statement of that rule): 1 where Triton makes it the constexpr 1; else its type's base (i32 8,
    i64 16, u64 24), plus 4 when it is negative (an unsigned annotation refuses it), plus 0 where
    Triton does not look at its divisibility, 2 where it marks it divisible by 16, 1 where it
    looks and does not. None beyond 64 bits. specialize / align: not do_not_specialize / not
    do_not_specialize_on_alignment."""
    try:
        ty, attr = triton_type(v, specialize=specialize, align=align)
    except OverflowError:
        return None
    key = 1 if ty == "constexpr" else _INT_TYPE_BASE[ty] + (4 if v < 0 else 0) + _INT_ATTR_CODE[attr]
    table = INT_KEYS[specialize, align]
    if len(table) < _INT_KEYS_MAX:
        table[v] = key
    return key


_FULL = INT_KEYS[True, True]


def item_key(v, tensor=None):
    """The key of a value Triton specializes fully (an item of a tuple argument), for the kinds
    every front door keys alike: an instance of `tensor` (torch.Tensor, or the caller's stand-in)
    by its dtype and whether data_ptr() is divisible by 16; an exact int by int_key's code (None
    beyond 64 bits); a float, a bool or None by its class. NotImplemented for anything else,
    which each front door keys its own way (the guard: fast_dispatch.classify; bundles:
    bundle_kernel.key_of). The one statement of that rule: launcher._call.GuardKey carries it out
    in C for the items of exact tuples (gk_item_key)."""
    cls = v.__class__
    if cls is tensor:
        return (v.dtype, not v.data_ptr() & DIVISIBILITY_MASK)
    if cls is int:
        key = _FULL.get(v)  # int_key's table first (no code is None)
        return key if key is not None else int_key(v)
    if cls is float or cls is bool or v is None:
        return cls
    return NotImplemented


class AssumptionError(ValueError):
    """An argument breaks an assumption of the compiled kernel it would be launched with; `path`
    is the argument's path in the kernel's parameters (LaunchSpec.arg_name names it), None where
    no one argument is at fault."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


def dtype_name(dtype) -> str:
    """Triton's name of a dtype: a torch or numpy dtype, a triton.language dtype, or a name."""
    text = str(dtype).split(".")[-1]
    try:
        return _DTYPE_NAMES[text]
    except KeyError:
        raise TypeError(f"no Triton type for dtype {dtype!r}") from None


def address_and_dtype(value, strict: bool = False):
    """(address, Triton dtype name) of a tensor-like argument: anything with data_ptr() and a
    dtype (torch), or with __cuda_array_interface__ (CuPy, Numba). None for other values.
    data_ptr() may answer anything with __index__; strict: only an int in the u64 range, as
    Triton's JIT takes it (TypeError, OverflowError: its errors)."""
    read = "data_ptr"
    try:
        data_ptr = getattr(value, "data_ptr", None)
        read = "dtype"
        tensor_like = data_ptr is not None and hasattr(value, "dtype")
        if tensor_like:
            read = "data_ptr()"
            address = data_ptr()
            read = "dtype"
            dtype = value.dtype
    except Exception as e:  # the user's reader raised: Triton's JIT lets it through; launcher's checks name it
        if strict:
            raise
        raise TypeError(f"{type(value).__name__}.{read} raised {type(e).__name__}: {e}") from e
    if not tensor_like:
        return array_address_and_dtype(value)
    if strict:
        if not isinstance(address, int):
            raise TypeError(f"{type(value).__name__}.data_ptr() returned {type(address).__name__}: "
                            "an integer is required")
        if not 0 <= address < 1 << 64:
            raise OverflowError(f"{type(value).__name__}.data_ptr() returned {address}, outside the u64 range")
    if address.__class__ is not int:
        try:
            address = operator.index(address)
        except Exception:
            raise TypeError(f"{type(value).__name__}.data_ptr() returned {type(address).__name__}, "
                            "expected an int") from None
    return address, dtype_name(dtype)


def array_address_and_dtype(value):
    """(address, Triton dtype name) of `value`'s __cuda_array_interface__; None where it has none."""
    found = array_interface(value)
    if found is None:
        return None
    address, typestr = found
    return address, _typestr_dtype(typestr)


def _typestr_dtype(typestr: str) -> str:
    size = typestr[2:]
    name = _TYPESTRS.get((typestr[1:2], int(size))) if size.isascii() and size.isdigit() and len(size) <= 2 else None
    if name is None:
        raise TypeError(f"no Triton type for __cuda_array_interface__ typestr {typestr[:16]!r}"
                        f"{'...' if len(typestr) > 16 else ''}")
    return name


def array_interface(value):
    """(address, typestr) of `value`'s __cuda_array_interface__ (CuPy, Numba), checked: None
    where it has none, TypeError where it is malformed (no int address, a big-endian type)."""
    found = _checked_interface(value)
    return None if found is None else (found[0]["data"][0], found[0]["typestr"])


def array_layout(value):
    """(address, Triton dtype name, shape, strides in bytes or None for C order) of `value`'s
    __cuda_array_interface__, read once (an object whose interface is a property answers once);
    None where it has none, TypeError where any of it is malformed."""
    found = _checked_interface(value)
    if found is None:
        return None
    cai, what = found
    shape, strides = _ints(cai.get("shape")), cai.get("strides")
    if shape is None or any(s < 0 for s in shape):
        raise TypeError(f"{what}: 'shape' must be a tuple of non-negative ints, got {cai.get('shape')!r}")
    if strides is not None:
        strides = _ints(strides)
        if strides is None or len(strides) != len(shape):
            raise TypeError(f"{what}: 'strides' must be None or one int per dimension (bytes), "
                            f"got {cai.get('strides')!r}")
    return cai["data"][0], _typestr_dtype(cai["typestr"]), shape, strides


def _ints(values):
    """`values` (a tuple or list of integers, numpy's included) as a tuple of ints, else None."""
    if not isinstance(values, (tuple, list)):
        return None
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        return None


def _checked_interface(value):
    """(value's __cuda_array_interface__, the words naming it), its address and type checked;
    None where it has none."""
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is None:
        return None
    what = f"the __cuda_array_interface__ of a {type(value).__name__}"
    if not isinstance(cai, dict):
        raise TypeError(f"{what} is not a dict")
    data, typestr = cai.get("data"), cai.get("typestr")
    if not isinstance(data, (tuple, list)) or not data or data[0].__class__ is not int:
        raise TypeError(f"{what}: 'data' must be (address, read_only) with an int address, got {data!r}")
    if not isinstance(typestr, str) or len(typestr) < 3 or typestr[0] not in "<|=":
        raise TypeError(f"{what}: 'typestr' must be a little-endian type string such as '<f4', got {typestr!r}")
    return cai, what


def _tensordesc_type(value) -> str | None:
    block = getattr(value, "block_shape", None)
    base = getattr(value, "base", None)
    if block is None or base is None or not hasattr(value, "strides"):
        return None
    found = address_and_dtype(base)
    if found is None:
        return None
    layout = getattr(value, "layout", None)
    inner = f"{found[1]}[{', '.join(str(int(b)) for b in block)}]"
    return f"tensordesc<{inner}{',' + repr(layout) if layout is not None else ''}>"


def triton_type(value, *, specialize: bool = True, align: bool = True):
    """(type, attribute) as Triton's JIT specializes `value`: attribute "D" for divisible by 16,
    "" for not, None where Triton does not look (floats, bools, do_not_specialize); for a
    constexpr the attribute is the value. Tuples give tuples. Raises TypeError for a value
    Triton cannot specialize, OverflowError for an int beyond u64/i64."""
    if value is None:
        return ("constexpr", None)
    cls = value.__class__
    if cls is bool:
        return ("u1", None)
    if cls is int or isinstance(value, int) and not isinstance(value, bool):
        v = operator.index(value)  # the int's own value, as Triton reads and the launch packs it: never a subclass's __int__
        if specialize and v == 1:
            return ("constexpr", 1)
        ty = int_type(v)
        if ty is None:
            raise OverflowError("integer to be specialized too large to represent")
        return (ty, None if not specialize else ("D" if align and divisible(v) else ""))
    if cls is float or isinstance(value, float):
        return ("fp32", None)
    if isinstance(value, tuple):  # Triton specializes the items fully, whatever the flags say
        parts = [triton_type(v) for v in value]
        return (tuple(p[0] for p in parts), tuple(p[1] for p in parts))
    found = address_and_dtype(value, strict=True)
    if found is not None:
        address, name = found
        return ("*" + name, None if not specialize else ("D" if align and divisible(address) else ""))
    desc = _tensordesc_type(value)
    if desc is not None:
        return (desc, None)
    if type(value).__name__ == "constexpr" or callable(value):  # tl.constexpr, a JIT function
        return ("constexpr", value)
    raise TypeError(f"failed to specialize argument of type: {type(value).__name__}")


def compiled_int_range(ty: str, typed: bool) -> tuple:
    """(lo, hi) of the ints a kernel compiled with integer type `ty` takes: its type's range,
    except for an unannotated u64 (typed: annotated with a type), which Triton compiles only for
    ints above the i64 range; a smaller int it types as the signed i32 or i64, and an unsigned
    kernel computes something else with it (an int for an i64 kernel computes the same)."""
    lo, hi = S.INT_RANGES[ty]
    return (_I64[1] + 1, hi) if ty == "u64" and not typed else (lo, hi)


def _describe(value) -> str:
    from launcher.arguments import show

    return show(value)


class AssumptionCheck:
    """Whether a call's arguments fit one compiled kernel (see the module docstring)."""

    def __init__(self, spec, annotations=()):
        """annotations: each parameter's annotation as Triton normalizes it ("" for none): a
        parameter whose annotation names a type takes what that type packs (an int for a float
        or a bool, any int in range), as Triton's JIT does."""
        self.typed = frozenset(i for i, a in enumerate(annotations) if annotated_type(a))
        if spec.aligned is None or spec.constants is None:
            raise AssumptionError(f"kernel {spec.kernel!r}: what the compiler assumed about its arguments "
                                  "is not known (an IR source), so new arguments cannot be checked")
        self.spec = spec
        self.aligned = frozenset(spec.aligned)
        self.constants = dict(spec.constants)

    def __call__(self, args) -> None:
        spec = self.spec
        if len(args) != spec.arity:
            raise TypeError(f"kernel {spec.kernel!r} takes {spec.arity} arguments "
                            f"({', '.join(spec.arg_names)}), got {len(args)}")
        for i, (arg, value) in enumerate(zip(spec.args, args)):
            self._check(arg, (i,), value)

    @staticmethod
    def _constexpr_matches(value, recorded) -> bool:
        """Whether a constexpr value is the recorded one (launcher.spec.encode_constant's data)."""
        return S.same_constant(S.encode_constant(value), recorded)

    def _fail(self, path, assumed, got):
        raise AssumptionError(f"kernel {self.spec.kernel!r}: parameter {self.spec.arg_name(path)!r}: the kernel "
                              f"was compiled for {assumed}, got {got}", path)

    def _check(self, arg, path, value):
        kind, ty = arg.kind, arg.type
        if kind == "tuple":  # a tuple (Triton refuses lists), of the kernel's length
            if not isinstance(value, tuple) or len(value) != len(arg.children):
                self._fail(path, f"a tuple of {len(arg.children)}", _describe(value))
            for j, (child, item) in enumerate(zip(arg.children, value)):
                self._check(child, path + (j,), item)
            return
        if kind == "constexpr":
            S.check_nesting(value, f"kernel {self.spec.kernel!r}: parameter {self.spec.arg_name(path)!r}")
            recorded = self.constants.get(path)
            if path not in self.constants:
                return  # not recorded: the compiler did not see it as a value (nothing to hold)
            if not self._constexpr_matches(value, recorded):
                self._fail(path, f"the constexpr {S.show_constant(recorded)}",
                           S.show_constant(S.encode_constant(value)) if callable(value) else _describe(value))
            return
        if kind == "pointer":
            self._pointer(path, ty, value)
        elif kind == "scalar":
            self._scalar(path, ty, value)
        elif kind == "tensordesc":
            got = _tensordesc_type(value)
            if got is None or got.split("]")[0] != ty.split("]")[0]:  # dtype and block shape; not the layout
                self._fail(path, ty, got or _describe(value))
        # nvTmaDesc: a CUtensorMap carries no assumption the kernel could check

    def _pointer(self, path, ty, value):
        if value.__class__ is int:
            address, dtype = value, None  # an address: its dtype is the caller's business
        else:
            try:
                found = address_and_dtype(value)
            except TypeError as e:
                self._fail(path, f"a {ty} tensor", str(e))
            if found is None:
                self._fail(path, f"a {ty} tensor", _describe(value) if value is not None else "None")
            address, dtype = found
        if dtype is not None and "*" + dtype != ty.replace("*k", "*"):
            self._fail(path, f"a {ty[1:]} tensor (pointer type {ty})", f"a {dtype} tensor")
        if path in self.aligned and not divisible(address):
            self._fail(path, "a pointer divisible by 16", f"{address:#x}")

    def _scalar(self, path, ty, value):
        typed = path[0] in self.typed  # by its annotation: Triton packs the value as that type
        if ty in S.BOOLS:
            if value.__class__ is not bool and not (typed and value.__class__ is int and value in (0, 1)):
                self._fail(path, f"a bool ({ty}; Triton types an int as an integer)" if not typed else
                           f"a bool or 0/1 ({ty})", _describe(value))
            return
        if ty in S.INT_RANGES:
            if value.__class__ is bool or not isinstance(value, int):
                self._fail(path, f"an integer ({ty})", _describe(value))
            lo, hi = compiled_int_range(ty, typed)
            value = operator.index(value)  # the int's own value (what is packed), not a subclass's __int__
            if not lo <= value <= hi:
                self._fail(path, f"an integer in the {ty} range" if lo == S.INT_RANGES[ty][0] else
                           "an integer above the i64 range (u64; Triton types smaller ones as the signed i32 "
                           "or i64)", _describe(value))
            if path in self.aligned and not divisible(value):
                self._fail(path, "an integer divisible by 16", _describe(value))
            return
        if ty in S.FLOATS:
            if typed and isinstance(value, (int, float)) and not isinstance(value, bool):
                return  # an int for a parameter annotated as a float: Triton converts it
            if not isinstance(value, float):
                self._fail(path, f"a float ({ty}; Triton types an int as an integer)", _describe(value))
