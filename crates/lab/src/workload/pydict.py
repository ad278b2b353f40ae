"""swaplab's pydict program: builds a dict (and a list of its keys) from a
generated file, probes it with a second file (half of the keys absent),
then walks the list in a strided order and updates every value.

usage: python3 pydict.py ROWS PROBES STEP
prints: entries hits probe_total value_total (one line)
"""
import sys


def main():
    rows, probes, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
    d = {}
    keys = []
    with open(rows, encoding="ascii") as f:
        for line in f:
            k, v = line.split()
            d[k] = int(v)
            keys.append(k)
    hits = 0
    total = 0
    with open(probes, encoding="ascii") as f:
        for line in f:
            v = d.get(line[:-1])
            if v is not None:
                hits += 1
                total += v
    n = len(keys)
    i = 0
    for _ in range(n):
        d[keys[i]] += 1
        i += step
        if i >= n:
            i -= n
    print(len(d), hits, total, sum(d.values()))


main()
