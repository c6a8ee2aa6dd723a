"""Which compiled variant of a bundled kernel runs a call, decided as Triton's JIT would.

Triton compiles one kernel per specialization of a call (launcher.specialization) and compile
options. A bundle holds the variants that were compiled; for a call, `Chooser.choose`:

1. applies the layers around the kernel, outermost first:
   - @triton.autotune: the config the bundle recorded for this call's autotune key (the values
     of the key arguments and the dtypes of the tensor arguments, as Triton's key, with dtypes
     by Triton name). A key never seen is an error naming it and the known keys, unless the
     caller passes the config itself (any of its constexprs or num_warps/num_stages/...).
   - @triton.heuristics: the constexprs it computes, where the caller passes none of them,
     come from what the bundle recorded for the same values of the arguments the heuristic
     read; otherwise the caller must pass them.
2. keeps the variants built for the device's architecture (none: an error naming both), then
   those whose assumptions all hold for the call (launcher.specialization.AssumptionCheck:
   types and dtypes, int ranges i32/i64/u64, divisibility by 16, ints equal to 1, None and
   every constexpr), and whose compile options are the call's: what it passes, else the
   defaults of the Triton release that compiled the variant (for num_warps, num_stages,
   num_ctas, maxnreg, launch_pdl, launch_cooperative_grid, enable_fp_fusion);
3. of those, picks the one whose assumptions include every other's (on a tie of equal
   assumptions, the first in the bundle). That is Triton's own choice when the bundle holds
   the variant of the call's exact specialization, and otherwise the most specialised one that
   is correct for it: an aligned pointer may run a kernel compiled for any alignment, never the
   reverse. If no single one includes the others, the variant a capture recorded for the same
   arguments is taken, or the call is refused, naming the argument and listing the variants.

Everything here is data and plain Python: no Triton, no driver.
"""
from __future__ import annotations

import operator

from launcher import spec as S
from launcher.specialization import (INT_TYPES, AssumptionCheck, AssumptionError, address_and_dtype, divisible,
                                     dtype_name, int_type)



class NoVariantError(AssumptionError):
    """No compiled variant of a bundled kernel may run this call; the message says why."""


class AmbiguousVariantError(NoVariantError):
    """Several variants fit a call and none is more specialised than the others."""


class _Missing:
    """A parameter the caller did not pass, whose value a layer or the variant supplies."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "<not passed>"

    def __reduce__(self):
        return (_Missing, ())


MISSING = _Missing()


class Encoded:
    """A constexpr value known only as data (a bundled default such as a dtype): it matches the
    variant that recorded the same encoded value."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __repr__(self):
        return f"Encoded({self.data!r})"

    def __eq__(self, other):
        return isinstance(other, Encoded) and S.same_constant(self.data, other.data)

    def __hash__(self):
        return hash(repr(self.data))


def decode_constant(data):
    """A bundled constant as a Python value where it is a plain one, else `Encoded(data)`."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, dict) and set(data) == {"tuple"} and isinstance(data["tuple"], list):
        return tuple(decode_constant(v) for v in data["tuple"])
    if isinstance(data, dict) and set(data) == {"float"} and data["float"] in ("inf", "-inf", "nan"):
        return float(data["float"])
    return Encoded(data)


def encode(value):
    return value.data if isinstance(value, Encoded) else S.encode_constant(value)


def constexpr_matches(value, recorded) -> bool:
    """Whether a call's constexpr value is the recorded one. A dtype constexpr may be given by
    any dtype Triton would name the same (torch.float16, "fp16", tl.float16)."""
    if S.same_constant(encode(value), recorded):
        return True
    if isinstance(recorded, dict) and set(recorded) == {"dtype"} and not isinstance(value, (bool, int, float)):
        try:
            return dtype_name(value) == recorded["dtype"]
        except Exception:
            return False
    return False


def call_form(value):
    """A call's argument as JSON data, for recorded calls and heuristics inputs: numbers, bools,
    strings and None as they are; tensors by Triton dtype and 16-byte alignment; tuples item by
    item; anything else as its encoded constant."""
    if value is None or value.__class__ in (bool, str):
        return value
    if value.__class__ is int:
        return {"int": value}
    if value.__class__ is float:
        return S.encode_constant(value) if value != value or value in (float("inf"), float("-inf")) else {"float": value}
    if isinstance(value, (tuple, list)):
        return {"tuple": [call_form(v) for v in value]}
    if isinstance(value, Encoded):
        return value.data
    try:
        found = address_and_dtype(value)
    except Exception:
        found = None
    if found is not None:
        return {"tensor": found[1], "aligned": divisible(found[0])}
    from launcher.specialization import _tensordesc_type

    desc = _tensordesc_type(value)
    if desc is not None:
        return {"tensordesc": desc}
    if isinstance(value, int):
        return {"int": operator.index(value)}  # the int's own value, not a subclass's __int__
    return S.encode_constant(value)


def autotune_key(key_names, param_names, passed: dict) -> dict:
    """Triton's autotune key of a call, normalized: the call forms of the key arguments the
    call passed (Triton leaves out defaults), then the Triton names of the dtypes of every
    passed argument that has one, in parameter order."""
    values = [call_form(passed[name]) for name in key_names if name in passed]
    dtypes = []
    for name in param_names:
        if name in passed:
            dtype = getattr(passed[name], "dtype", None)
            if dtype is not None:
                try:
                    dtypes.append(dtype_name(dtype))
                except TypeError:
                    dtypes.append(str(dtype))
    return {"values": values, "dtypes": dtypes}


def _describe_key(key) -> str:
    def show(form):
        if isinstance(form, dict) and len(form) == 1 and next(iter(form)) in ("int", "float"):
            return repr(next(iter(form.values())))
        return repr(form)

    return "(" + ", ".join([show(v) for v in key.get("values", [])] + list(key.get("dtypes", []))) + ")"


def _int_atoms(path, cls):
    """The atoms of an int of Triton's type `cls` (specialization.int_type): it fits that type
    and every wider one. None (beyond 64 bits) fits none."""
    return {("int<=", path, c) for c in INT_TYPES[INT_TYPES.index(cls):]} if cls is not None else set()


class _CallCheck(AssumptionCheck):
    """AssumptionCheck with the call's shape: constexprs not passed match any value (a layer
    supplies them) and dtype constexprs match by Triton name."""

    _constexpr_matches = staticmethod(constexpr_matches)  # dtypes by Triton name too

    def _check(self, arg, path, value):
        if value is MISSING:
            if arg.kind == "constexpr":
                return
            self._fail(path, S.describe_type(arg.type), "nothing (the argument was not passed)")
        super()._check(arg, path, value)


class Variant:
    """One compiled variant, as the chooser sees it."""

    def __init__(self, entry, params):
        self.entry = entry
        self.id = entry.id
        self.spec = entry.spec
        self.arch = entry.spec.arch
        self.options = entry.options
        self.defaults = entry.default_options
        self.check = _CallCheck(entry.spec, [p.annotation for p in params])
        self.atoms = frozenset(self._atoms())

    def _atoms(self):
        spec = self.spec
        aligned, constants = set(spec.aligned), dict(spec.constants)
        out = {("opt", k, repr(self.options.get(k))) for k in self.defaults}

        for path, a in S.leaves(spec.args):
            if a.kind == "constexpr":
                if path in constants:
                    v = constants[path]
                    out.add(("const", path, repr(S._constant_key(v))))
                    if type(v) is int:
                        out.update(_int_atoms(path, int_type(v)))
                        if divisible(v):
                            out.add(("div16", path))
                continue
            ty = a.type.replace("*k", "*") if isinstance(a.type, str) else a.type
            if a.kind == "scalar" and ty in INT_TYPES:
                out.update(_int_atoms(path, ty))
            else:
                out.add(("type", path, ty))
            if path in aligned:
                out.add(("div16", path))
        return out

    def describe(self) -> str:
        spec = self.spec
        parts = []
        constants = dict(spec.constants)
        aligned = set(spec.aligned)

        for path, a in S.leaves(spec.args):
            name = spec.arg_name(path)
            if a.kind == "constexpr":
                if path in constants:
                    parts.append(f"{name}={_show_constant(constants[path])}")
            else:
                parts.append(f"{name}: {a.type}" + (" (16-aligned)" if path in aligned else ""))
        opts = [f"{k}={self.options[k]!r}" for k in self.defaults if k in self.options
                and not S.same_value(self.options[k], self.defaults[k])]
        return f"{self.id} (sm_{self.arch}: " + ", ".join(parts + opts) + ")"


def _show_constant(data) -> str:
    value = decode_constant(data)
    return repr(value.data if isinstance(value, Encoded) else value)


class Chooser:
    """Chooses the variant of one bundled kernel for a call (see the module docstring).

    kernel: a launcher.bundle_format.KernelEntry; variants: its VariantEntry objects."""

    def __init__(self, kernel, variants):
        self.kernel = kernel
        self.name = kernel.name
        self.params = kernel.params
        self.names = tuple(p.name for p in kernel.params)
        self.variants = [Variant(v, kernel.params) for v in variants]
        self.by_id = {v.id: v for v in self.variants}
        self.option_names = set()
        for v in self.variants:
            self.option_names.update(v.options)
        self.config_names = set()  # what a caller passes to choose an autotune config itself
        for layer in kernel.layers:
            if layer.kind == "autotune":
                for c in layer.configs:
                    self.config_names.update(c["kwargs"])
                self.config_names.update(("num_warps", "num_stages", "num_ctas", "maxnreg"))
        self.positions = {}  # parameter name -> its first index (what names.index answers)
        for i, n in enumerate(self.names):
            self.positions.setdefault(n, i)

    def position(self, name) -> int:
        """self.names.index(name), in one lookup: the same index, or the same ValueError."""
        i = self.positions.get(name)
        return i if i is not None else self.names.index(name)

    # -- the layers --
    def apply_layers(self, values: list, options: dict):
        """Fill in what the autotune and heuristics layers decide: returns (values, options,
        wildcard) where wildcard says the compile options not given are open (the caller chose
        an autotune config itself, possibly in part). Each layer reads what was passed and what
        the layers before it set: parameters x layers, which the bundle bounds (MAX_LAYERS)."""
        values = list(values)
        options = dict(options)
        wildcard = False
        for layer in self.kernel.layers:
            passed = {n: v for n, v in zip(self.names, values) if v is not MISSING}
            if layer.kind == "autotune":
                chosen_by_caller = [n for n in self.config_names if n in passed or n in options]
                if chosen_by_caller:
                    wildcard = True
                    continue
                config = self._config_for(layer, passed)
                for name, data in config["kwargs"].items():
                    i = self.position(name)
                    if values[i] is MISSING:
                        values[i] = decode_constant(data)
                for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
                    if config.get(option) is not None:
                        options[option] = config[option]
            else:
                if all(values[self.position(n)] is not MISSING for n in layer.names):
                    continue  # the caller computed them all
                # Triton's Heuristics.run computes every name of the layer, over any the caller passed:
                # a recorded value of each, never one passed value beside others recorded for another
                found = self._heuristics_for(layer, passed, list(layer.names))
                for name in layer.names:
                    values[self.position(name)] = decode_constant(found[name])
        return values, options, wildcard

    def _config_for(self, layer, passed):
        if len(layer.configs) == 1:  # Triton does not tune a single config
            return layer.configs[0]
        key = autotune_key(layer.key, self.names, passed)
        for recorded, index in layer.choices:
            if recorded == key:
                return layer.configs[index]
        known = "; ".join(_describe_key(k) for k, _ in layer.choices) or "none"
        configs = "; ".join(_describe_config(c) for c in layer.configs)
        raise NoVariantError(
            f"kernel {self.name!r}: the autotune key {_describe_key(key)} (of {', '.join(layer.key)} and the "
            f"dtypes) was never tuned when the bundle was made; the bundle knows the keys {known}. Pass a "
            f"config's values to choose one (its configs: {configs})")

    def _heuristics_for(self, layer, passed, missing):
        matches = []
        for inputs, values in layer.records:
            if all(name in passed and call_form(passed[name]) == form for name, form in inputs.items()):
                if values not in matches:
                    matches.append(values)
        if len(matches) == 1:
            return matches[0]
        names = ", ".join(missing)
        if not matches:
            seen = "; ".join(", ".join(f"{k}={_show_constant(v)}" for k, v in values.items()) + " for "
                             + (", ".join(f"{k}={_show_form(f)}" for k, f in inputs.items()) or "any arguments")
                             for inputs, values in layer.records[:4]) or "none"
            raise NoVariantError(
                f"kernel {self.name!r}: {names} (computed by @triton.heuristics) were not recorded for these "
                f"arguments: pass {names} (the bundle recorded {seen})")
        raise NoVariantError(f"kernel {self.name!r}: the bundle recorded several values of {names} for these "
                             f"arguments; pass {names}")

    # -- the variants --
    def check_options(self, options):
        for k, v in options.items():
            S.check_nesting(v, f"kernel {self.name!r}: {k!r}")
            if k not in self.option_names:
                raise TypeError(f"kernel {self.name!r} got an unexpected keyword argument {k!r}: it is neither a "
                                f"parameter ({', '.join(self.names)}) nor a compile option")

    def fits(self, variant, values, options, wildcard):
        """None when the variant may run the call, else (why not, the path of the parameter at
        fault: None for the compile options). Nothing of one call is kept on the variant: calls
        from several threads each get their own answer."""
        for k, value in options.items():
            if k not in variant.options:
                return f"it records no compile option {k!r}", None
            if not S.same_value(value, variant.options[k]):
                return f"it was compiled with {k}={variant.options[k]!r}, the call asks for {k}={value!r}", None
        if not wildcard:
            for k, default in variant.defaults.items():
                if k not in options and k in variant.options and not S.same_value(variant.options[k], default):
                    return (f"it was compiled with {k}={variant.options[k]!r}; the call passes no {k}, and "
                            f"Triton's default is {default!r} (pass {k}={variant.options[k]!r})"), None
        try:
            variant.check(values)
        except AssumptionError as e:
            text = str(e)
            prefix = f"kernel {variant.spec.kernel!r}: "
            return (text[len(prefix):] if text.startswith(prefix) else text), e.path
        return None

    def choose(self, values, options, arch, *, wildcard=False, recorded=()):
        """The Variant to run `values` (one per parameter, MISSING where a layer or the variant
        decides) with `options` on a device of compute capability `arch` (None: any)."""
        self.check_options(options)
        pool = [v for v in self.variants if arch is None or v.arch == arch]
        if not pool:
            have = ", ".join(sorted({f"sm_{v.arch}" for v in self.variants}))
            raise NoVariantError(f"kernel {self.name!r}: the bundle has variants for {have} only; this device is "
                                 f"sm_{arch}. Export the kernel compiled for sm_{arch} too")
        fit, reasons = [], []
        for v in pool:
            why = self.fits(v, values, options, wildcard)
            if why is None:
                fit.append(v)
            else:
                reasons.append((v, *why))
        if not fit:
            raise NoVariantError(self._nothing_fits(reasons, arch))
        best = [v for v in fit if all(v.atoms >= w.atoms for w in fit)]
        if best:
            return best[0]
        for vid in recorded:
            if vid in (v.id for v in fit):
                return self.by_id[vid]
        listing = "\n".join(f"  {v.describe()}" for v in fit)
        raise AmbiguousVariantError(f"kernel {self.name!r}: several variants fit this call and none is more specialised "
                             f"than the others (pass the constexprs or compile options that tell them apart):\n"
                             f"{listing}")

    def _nothing_fits(self, reasons, arch) -> str:
        counts = {}
        for v, _why, path in reasons:
            name = v.spec.arg_name(path) if path is not None else "compile options"
            counts[name] = counts.get(name, 0) + 1
        ranked = sorted(counts, key=lambda n: -counts[n])
        if len(ranked) == 1 and ranked[0] != "compile options":
            head = f"parameter {ranked[0]!r} fits no variant"
        else:
            head = "no variant fits these arguments (" + ", ".join(
                f"{n if n == 'compile options' else 'parameter ' + repr(n)} rules out {counts[n]}" for n in ranked) + ")"
        listing = "\n".join(f"  {v.describe()}: {why}" for v, why, _path in reasons)
        where = f" for sm_{arch}" if arch is not None else ""
        return f"kernel {self.name!r}: {head}; the variants{where}:\n{listing}"


def _describe_config(config) -> str:
    parts = [f"{k}={_show_constant(v)}" for k, v in config["kwargs"].items()]
    parts += [f"{k}={config[k]}" for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if config.get(k) is not None]
    return ", ".join(parts)


def _show_form(form) -> str:
    if isinstance(form, dict) and len(form) == 1 and next(iter(form)) in ("int", "float"):
        return repr(next(iter(form.values())))
    return repr(form)
