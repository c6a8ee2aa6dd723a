"""Compare two pytest junit-xml reports test by test (.ci/h200.sh's third-party phase: a library's
own tests run stock and then with launcher installed).

    python3 .ci/compare_junit.py STOCK.xml LAUNCHER.xml [--names stock launcher]

Prints "same outcomes: N tests" (with the outcome counts) when every test in both reports ended
alike, else each test whose outcome differs, with both outcomes, then the tests only one report
has (a mode stopped by its timeout, for one). Outcomes: passed, failed, error, skipped. Exit 0
when the outcomes are the same, 1 when any differs or a report is missing or unreadable.
"""
from __future__ import annotations

import argparse
import collections
import sys
import xml.etree.ElementTree as ET


def outcomes(path: str) -> dict:
    """{test id: outcome} from a junit-xml file (the id is classname::name, as pytest writes them)."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        if "error" in tags:
            # a teardown error after a failure keeps "failed" (pytest writes both)
            outcome = "failed" if "failure" in tags else "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        out[name] = outcome
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--names", nargs=2, default=("stock", "launcher"))
    args = p.parse_args(argv)
    na, nb = args.names
    reports = {}
    for name, path in ((na, args.a), (nb, args.b)):
        try:
            reports[name] = outcomes(path)
        except (OSError, ET.ParseError) as e:
            print(f"no report for {name}: {path}: {e}")
    if len(reports) < 2:
        return 1
    a, b = reports[na], reports[nb]
    both = [t for t in a if t in b]
    differ = [t for t in both if a[t] != b[t]]
    only_a = [t for t in a if t not in b]
    only_b = [t for t in b if t not in a]
    if not differ:
        counts = collections.Counter(a[t] for t in both)
        print(f"same outcomes: {len(both)} tests ({', '.join(f'{n} {k}' for k, n in counts.most_common())})")
    else:
        print(f"different outcomes: {len(differ)} of {len(both)} tests")
        for t in differ:
            print(f"  {t}: {na} {a[t]}, {nb} {b[t]}")
    for name, only in ((na, only_a), (nb, only_b)):
        if only:
            print(f"only in {name}'s report: {len(only)} tests" + "".join(f"\n  {t}" for t in only[:20])
                  + (f"\n  ... {len(only) - 20} more" if len(only) > 20 else ""))
    return 1 if differ or only_a or only_b else 0


if __name__ == "__main__":
    sys.exit(main())
