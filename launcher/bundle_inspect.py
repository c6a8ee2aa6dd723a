"""`python -m launcher inspect [--format text|json] BUNDLE`: what a bundle holds.

Lists the kernels (qualified names, signatures), their variants (target, versions, compile
options, what each assumes of the arguments, sizes), the autotune choices and heuristics
records, and the calls a capture recorded. A bundle that cannot be read exits with status 2
and one line naming the entry; nothing is printed as a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys

from launcher import bundle_format as BF
from launcher import variants as V


def describe(data: BF.BundleData) -> dict:
    """The bundle as JSON data (what --format json prints)."""
    kernels = []
    for k in data.kernels.values():
        variants = []
        for vid in k.variants:
            v = data.variants[vid]
            spec = v.spec
            variants.append({
                "id": vid, "symbol": spec.kernel, "arch": spec.arch, "target": v.target,
                "triton_version": v.triton_version, "ptx_isa": v.ptx_isa, "ptxas_version": v.ptxas_version,
                "signature": {spec.arg_names[i]: _unfreeze(a.type) for i, a in enumerate(spec.args)},
                "divisible_by_16": [spec.arg_name(p) for p in spec.aligned],
                "constexprs": {spec.arg_name(p): c for p, c in spec.constants},
                "options": {o: v.options[o] for o in sorted(v.options) if o in v.default_options},
                "num_warps": spec.num_warps, "num_ctas": spec.num_ctas, "shared": spec.shared,
                "sizes": {"cubin": len(v.cubin), "ptx": len(v.ptx.encode()) if v.ptx is not None else None,
                          "ttgir": len(v.ttgir.encode()) if v.ttgir is not None else None},
                "fence_check_at_export": v.fence,
            })
        layers = []
        for layer in k.layers:
            if layer.kind == "autotune":
                layers.append({"kind": "autotune", "key": list(layer.key), "configs": list(layer.configs),
                               "choices": [{"key": key, "config": index} for key, index in layer.choices]})
            else:
                layers.append({"kind": "heuristics", "names": list(layer.names),
                               "records": [{"inputs": i, "values": v} for i, v in layer.records]})
        kernels.append({"name": k.name, "function": k.function, "module": k.module, "file": k.file, "line": k.line,
                        "params": [p.to_json() for p in k.params], "variants": variants, "layers": layers,
                        "calls": len(k.calls)})
    return {"format": BF.FORMAT, "version": BF.VERSION, "writer": data.writer, "kernels": kernels}


def _unfreeze(ty):
    return [_unfreeze(t) for t in ty] if isinstance(ty, tuple) else ty


def _signature(k) -> str:
    parts = []
    for i, p in enumerate(k.params):
        if p.keyword_only and (i == 0 or not k.params[i - 1].keyword_only):
            parts.append("*")  # what follows is keyword-only, as in the kernel's own signature
        text = p.name + (": constexpr" if p.constexpr else (f": {p.annotation}" if p.annotation else ""))
        if p.has_default:
            text += f" = {V._show_constant(p.default)}"
        parts.append(text)
    return f"{k.function}({', '.join(parts)})"


def format_text(data: BF.BundleData) -> str:
    lines = [f"bundle format {BF.FORMAT} v{BF.VERSION}, written by {data.writer}: {len(data.kernels)} kernels, "
             f"{len(data.variants)} variants"]
    for k in data.kernels.values():
        where = f"{k.file}:{k.line}" if k.file else k.module
        lines.append("")
        lines.append(f"{k.name}   {_signature(k)}   [{where}]")
        for vid in k.variants:
            v = data.variants[vid]
            chooser_variant = V.Variant(v, k.params)
            lines.append(f"  variant {chooser_variant.describe()}")
            ptx = f"{len(v.ptx.encode())} B PTX" if v.ptx is not None else "no PTX"
            if v.fence is not None:
                ptx += ", fence check clean" if v.fence["clean"] else ", FENCE CHECK FOUND A MISSING FENCE"
            lines.append(f"    {v.target or 'sm_' + str(v.arch)}, Triton {v.triton_version}, PTX ISA {v.ptx_isa or '?'}, "
                         f"ptxas {v.ptxas_version or '?'}; {v.spec.num_warps} warps, {v.spec.shared} B shared; "
                         f"cubin {len(v.cubin)} B, {ptx}")
        for layer in k.layers:
            if layer.kind == "autotune":
                lines.append(f"  autotune on {', '.join(layer.key) or '(no key)'}: {len(layer.configs)} configs")
                for key, index in layer.choices:
                    lines.append(f"    key {V._describe_key(key)} -> config {index}: "
                                 f"{V._describe_config(layer.configs[index])}")
            else:
                lines.append(f"  heuristics compute {', '.join(layer.names)}")
                for inputs, values in layer.records:
                    given = ", ".join(f"{n}={V._show_form(f)}" for n, f in inputs.items()) or "any arguments"
                    got = ", ".join(f"{n}={V._show_constant(c)}" for n, c in values.items())
                    lines.append(f"    {given} -> {got}")
        if k.calls:
            lines.append(f"  {len(k.calls)} recorded calls")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m launcher inspect", description="List what a kernel bundle holds.")
    ap.add_argument("bundle")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    try:
        data = BF.read_bundle(args.bundle)
    except BF.BundleError as e:
        print(f"launcher inspect: {e}".splitlines()[0], file=sys.stderr)
        return 2
    text = json.dumps(describe(data), indent=2) if args.format == "json" else format_text(data)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `inspect ... | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
