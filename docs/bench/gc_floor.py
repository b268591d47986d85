#!/usr/bin/env python3
"""gc_floor.py - the arithmetic behind docs/BENCHMARKS.md "Background GC": how many
bytes a collector must read and copy to end gc-bench's churn at a given space
amplification, whatever its implementation.

Model: N keys loaded, then N uniform random overwrites (gc-bench's defaults: 200,000
records of 1,064 B, 16 MiB segments). Collecting a segment reads all of it and copies
its live records to the head; space amplification is log records / N. Three
collectors, each greedy (highest garbage ratio first):
  end      nothing during the churn, then at its last put, instantly, until <= TARGET:
           the least any collector can read and copy (a record's garbage ratio only
           grows, so later is never dearer);
  cap H    never above H during the churn (the worker held to a high mark);
  rate r   from a fraction t0 of the churn on, r copied records per record written
           (a worker of bounded speed).

    python3 docs/bench/gc_floor.py [--keys N] [--seed S]
"""
import argparse
import random

REC = 1064
SEG_RECS = (16 << 20) // REC


class Log:
    def __init__(self, n):
        self.n, self.segs, self.size, self.seg_of = n, {}, {}, [0] * n
        self.cur = self.next_id = 0
        self.copied = self.scanned = 0
        self._new()
        for k in range(n):
            self.append(k)

    def _new(self):
        self.next_id += 1
        self.cur = self.next_id
        self.segs[self.cur], self.size[self.cur] = set(), 0

    def append(self, k):
        if self.size[self.cur] >= SEG_RECS:
            self._new()
        self.segs[self.cur].add(k)
        self.size[self.cur] += 1
        self.seg_of[k] = self.cur

    def overwrite(self, k):
        self.segs[self.seg_of[k]].discard(k)
        self.append(k)

    def amp(self):
        return sum(self.size.values()) / self.n

    def collect_best(self):
        best = max((s for s in self.segs if s != self.cur),
                   key=lambda s: 1 - len(self.segs[s]) / self.size[s], default=None)
        if best is None or len(self.segs[best]) == self.size[best]:
            return False
        keys = list(self.segs.pop(best))
        self.scanned += self.size.pop(best)
        for k in keys:
            self.append(k)
        self.copied += len(keys)
        return True


def churn(n, seed, kind, target=1.25, h=1.25, r=1.0, t0=0.0):
    rnd, log, credit = random.Random(seed), Log(n), 0.0
    for i in range(n):
        log.overwrite(rnd.randrange(n))
        if kind == "cap":
            while log.amp() > h and log.collect_best():
                pass
        elif kind == "rate" and i >= t0 * n:
            credit += r
            while credit > 0:
                before = log.copied
                if not log.collect_best():
                    break
                credit -= log.copied - before
    if kind == "end":
        while log.amp() > target and log.collect_best():
            pass
    return log.amp(), log.copied / n, log.scanned / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    mb = a.keys * REC / 1e6
    print(f"{a.keys} keys of {REC} B ({mb:.0f} MB live), {SEG_RECS} records a segment; per N = one live set")
    rows = [("end (the floor)", dict(kind="end")), ("cap 1.25", dict(kind="cap", h=1.25)),
            ("cap 1.5", dict(kind="cap", h=1.5))]
    rows += [(f"rate {r} from t0 {t0}", dict(kind="rate", r=r, t0=t0))
             for t0 in (0.0, 0.3, 0.5) for r in (1.0, 1.5, 2.0)]
    for name, kw in rows:
        amp, copied, scanned = churn(a.keys, a.seed, **kw)
        print(f"{name:22s} amp at the end {amp:.3f}  copied {copied:.2f} N  read {scanned:.2f} N  "
              f"read + copied {(copied + scanned) * mb:.0f} MB")


if __name__ == "__main__":
    main()
