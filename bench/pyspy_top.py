"""Summarise a py-spy raw (collapsed-stack) profile: where the samples' own time was spent.

    python bench/pyspy_top.py pyspy.txt
"""
import collections
import sys


def main(path):
    own = collections.Counter()
    total = 0
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        own[stack.split(";")[-1]] += n
    print(f"{total} samples; top frames by own time:")
    for frame, n in own.most_common(25):
        print(f"{100 * n / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main(sys.argv[1])
