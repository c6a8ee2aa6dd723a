"""Call sites as users write them (torch-free, checked on the CPU): every timed path of the suite
calls its launch the way a user's code does, `kernel[grid](x, y, out, n, BLOCK=1024)`, with
the positional arguments as names and the keywords written out, in a loop generated for
the case. Calling through `lambda *a: kernel[grid](*a, **kw)` instead would add, to every path
alike, a frame, an argument tuple and a keywords dict that no user's call has; the C floor has
none of them either.

    run = batch(head, ns, args, kwargs, count)   # count calls with the same arguments
    run = each(head, ns, todo, kwargs, nargs)    # one call per argument tuple of the list todo
    one = sequence([(head, ns, args, kwargs), ...])  # the calls one after another, once

`head` is the expression before the call's parentheses, over the names of `ns`: "k[grid]"
(kernel[grid] taken in every call, as users write it), "p", or "run(gx, gy, gz, s," for a call
whose leading arguments are fixed (a trailing comma or an open argument list is completed).
"""
from __future__ import annotations

import keyword

# what a result's `call_sites` says where its paths were called this way (launcher.bench.report)
WRITTEN = "written out"


# the generated code's own names start with this; a head's names must not
_OWN = "_site_"


def _names(prefix: str, n: int) -> list:
    return [f"{prefix}{i}" for i in range(n)]


def _call(head: str, args: list, kwargs: dict, kw_prefix: str) -> str:
    """`head(args..., k=<kw_prefix>k...)` as source; head may end in an open argument list."""
    for k in kwargs:
        if not k.isidentifier() or keyword.iskeyword(k):
            raise ValueError(f"keyword {k!r} cannot be written in a call")
    parts = list(args) + [f"{k}={kw_prefix}{k}" for k in kwargs]
    if head.endswith("(") or head.endswith(","):
        return head + (" " if head.endswith(",") and parts else "") + ", ".join(parts) + ")"
    return f"{head}({', '.join(parts)})"


def _scope(ns: dict, kwargs: dict, kw_prefix: str) -> dict:
    own = [k for k in ns if k.startswith(_OWN)]
    if own:
        raise ValueError(f"names {own} are the generated code's own")
    scope = dict(ns)
    scope.update({f"{kw_prefix}{k}": v for k, v in kwargs.items()})
    return scope


def _compile(source: str, scope: dict, name: str):
    exec(compile(source, f"<launcher.bench call site: {name}>", "exec"), scope)
    return scope[name]


def batch(head: str, ns: dict, args, kwargs: dict, count: int):
    """run(): `count` calls of head(*args, **kwargs), written out, the arguments names bound once
    (variables of the enclosing function, as a user's loop reads its locals)."""
    a = _names(_OWN + "a", len(args))
    unpack = f"    {', '.join(a)}, = _site_args\n" if a else ""
    source = (f"def _site_make(_site_args, _site_count):\n{unpack}"
              f"    def _site_run():\n"
              f"        for _ in range(_site_count):\n"
              f"            {_call(head, a, kwargs, _OWN + 'kw_')}\n"
              f"    return _site_run\n")
    return _compile(source, _scope(ns, kwargs, _OWN + "kw_"), "_site_make")(tuple(args), count)


def each(head: str, ns: dict, todo: list, kwargs: dict, nargs: int):
    """run(): one call head(*a, **kwargs) per tuple `a` of the list `todo` (of `nargs` arguments
    each), read when run() runs (the caller may refill it between batches)."""
    a = _names(_OWN + "a", nargs)
    target = f"{', '.join(a)}," if a else "_"
    source = (f"def _site_make(_site_todo):\n"
              f"    def _site_run():\n"
              f"        for {target} in _site_todo:\n"
              f"            {_call(head, a, kwargs, _OWN + 'kw_')}\n"
              f"    return _site_run\n")
    return _compile(source, _scope(ns, kwargs, _OWN + "kw_"), "_site_make")(todo)


def sequence(calls: list):
    """one(): the calls [(head, ns, args, kwargs), ...] one after another, each written out; the
    calls' `ns` must not share a name (the arguments are bound as names of the generated code)."""
    scope, lines = {}, []
    for i, (head, ns, args, kwargs) in enumerate(calls):
        if scope.keys() & ns.keys():
            raise ValueError(f"call {i}: names {sorted(scope.keys() & ns.keys())} are another call's")
        scope.update(_scope(ns, kwargs, f"{_OWN}{i}_kw_"))
        a = _names(f"{_OWN}{i}_a", len(args))
        scope.update(zip(a, args))
        lines.append("    " + _call(head, a, kwargs, f"{_OWN}{i}_kw_"))
    source = "def _site_one():\n" + ("\n".join(lines) if lines else "    pass") + "\n"
    return _compile(source, scope, "_site_one")
