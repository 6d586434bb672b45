#!/usr/bin/python3
"""Two builds of one kernel, timed as the loop times an attempt against the
best: how far apart do they read, and how often would the loop's adaptive
comparison call one of them faster or slower? (bench/twins.sh records.)

Reads the driver's call times (C SIDE ROUND SESSION t...) and, when given,
its debug log (each session's start order). Prints
  1. B against A over all sessions, and per session: the spread the
     interval must cover;
  2. by start order: B against A in sessions that started A before B, and
     B before A (the effect pragma_start_order() in lib/timing/session.c balances);
  3. the adaptive comparison replayed on the recorded sessions, drawn at
     random without replacement, as lib/timing/session.c ran it before
     and after 2026-11-26 (adaptive() below says how each one goes): the
     ratio of medians of all calls, the interval a bootstrap over sessions
     then rounds, stretched by t(0.975,S-1)/1.96*sqrt(S/(S-1)) and, new,
     by Pocock's constant for its 6 looks / 1.96; faster or slower only
     beyond the interval and the 3% margin (lib/timing/estimate.c). On
     identical kernels every verdict is false; with every call of B
     multiplied by 1.10 or 1.15, a verdict is power.

usage: bench/twins_replay.py CALLS [LOG] [--trials N] [--seed S]   (numpy)
"""
import collections
import sys

import numpy as np

T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086]
POCOCK = [0, 1.960, 2.178, 2.289, 2.361, 2.413, 2.453]
MARGIN = 0.03
BOOT = 300


def load(calls, log):
    d = collections.defaultdict(lambda: collections.defaultdict(dict))
    for line in open(calls):
        if line.startswith("C "):
            p = line.split()
            d[int(p[3])][int(p[2])][int(p[1])] = np.array([float(x) for x in p[4:]])
    order = {}
    if log:
        for line in open(log):
            if "sides started in the order" in line:
                w = line.split()
                s = int(w[w.index("session") + 1].rstrip(":")) - 1
                order[s] = [int(x) for x in line.split("order")[1].split()]
    sess = [[(d[s][r][1], d[s][r][2]) for r in sorted(d[s])] for s in sorted(d)]
    return sess, [order.get(s) for s in sorted(d)]


def ratio(ch, rng):
    """The ratio of medians of all calls, and its plain bootstrap interval
    (sessions, then rounds within them, the same rounds on both sides)."""
    a = np.concatenate([x[0] for s in ch for x in s])
    b = np.concatenate([x[1] for s in ch for x in s])
    r = np.median(b) / np.median(a)
    S = len(ch)
    width = max(len(s) for s in ch)
    reps = len(ch[0][0][0])
    A = np.full((S, width, reps), np.nan)
    B = np.full((S, width, reps), np.nan)
    count = np.array([len(s) for s in ch])
    for g, s in enumerate(ch):
        for j, (x, y) in enumerate(s):
            A[g, j], B[g, j] = x, y
    g = rng.integers(0, S, (BOOT, S))                       # sessions drawn
    j = (rng.random((BOOT, S, width)) * count[g][:, :, None]).astype(int)   # rounds within them
    valid = np.arange(width)[None, None, :] < count[g][:, :, None]
    ga = A[g[:, :, None], j]                                # BOOT x S x width x reps
    gb = B[g[:, :, None], j]
    ga[~valid] = np.nan
    gb[~valid] = np.nan
    boots = np.nanmedian(gb.reshape(BOOT, -1), axis=1) / np.nanmedian(ga.reshape(BOOT, -1), axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return r, min(lo, r), max(hi, r), S


def stretch(S, looks):
    return T975[min(S - 1, 20)] / 1.96 * np.sqrt(S / (S - 1)) * POCOCK[looks] / 1.96


def adaptive(sess, groups, rng, shift, design):
    """One adaptive comparison of B with A, replayed on recorded sessions.
    old: 9 rounds in 5 sessions (2,2,2,2,1) started in any order, a look
         after each added session of 2 rounds, the interval stretched for
         few sessions;
    new: 9 rounds in 6 sessions (2,2,2,1,1,1), started in orders mirrored
         in pairs (A first, then B first, or the other way), a look after
         each added pair, the interval also widened for the 6 looks
         (Pocock). Both stop at 27 rounds."""
    new = design == "new"
    if new and groups:
        first = int(rng.integers(0, 2))
        pools = [list(rng.permutation(groups[0])), list(rng.permutation(groups[1]))]
    else:
        pool = list(rng.permutation(len(sess)))
    ch = []

    def take(want):
        if new and groups:
            g = (len(ch) + first) % 2
            s = sess[pools[g].pop()]
        else:
            s = sess[pool.pop()]
        ch.append([(x, y * shift) for x, y in s][:want])
    plan = [2, 2, 2, 1, 1, 1] if new else [2, 2, 2, 2, 1]
    for w in plan:
        take(w)
    rounds = sum(plan)
    looks = 6 if new else 1
    while True:
        r, lo, hi, S = ratio(ch, rng)
        k = stretch(S, looks)
        lo, hi = r * (lo / r) ** k, r * (hi / r) ** k
        if (lo > 1 and r >= 1 + MARGIN) or (hi < 1 and r <= 1 / (1 + MARGIN)):
            return "verdict", rounds
        if lo >= 1 / (1 + MARGIN) and hi <= 1 + MARGIN:
            return "same", rounds
        if rounds >= 27:
            return "undecided", rounds
        for _ in range(2 if new else 1):
            if rounds < 27:
                take(min(2, 27 - rounds))
                rounds += min(2, 27 - rounds)


def main():
    args = sys.argv[1:]
    trials, seed = 400, 1
    if "--trials" in args:
        i = args.index("--trials")
        trials = int(args[i + 1])
        del args[i:i + 2]
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    sess, order = load(args[0], args[1] if len(args) > 1 else None)
    rng = np.random.default_rng(seed)
    per = np.array([np.log(np.median(np.concatenate([y for _, y in s])) / np.median(np.concatenate([x for x, _ in s])))
                    for s in sess])
    print("1. B against A: %d sessions; per session log(B/A) mean %+.3f (se %.3f), sd %.3f"
          % (len(per), per.mean(), per.std(ddof=1) / np.sqrt(len(per)), per.std(ddof=1)))
    if any(order):
        print("2. by start order (log(B/A) per session, mean and se):")
        groups = collections.defaultdict(list)
        for o, v in zip(order, per):
            if o:
                groups["A started before B" if o.index(1) < o.index(2) else "B started before A"].append(v)
        for k, v in sorted(groups.items()):
            v = np.array(v)
            print("   %-20s %3d sessions  %+.3f  (se %.3f)" % (k, len(v), v.mean(), v.std(ddof=1) / np.sqrt(len(v))))
    groups = None
    if any(order):
        groups = [[i for i, o in enumerate(order) if o and o.index(1) < o.index(2)],
                  [i for i, o in enumerate(order) if o and o.index(1) > o.index(2)]]
    print("3. the adaptive comparison replayed, %d trials per row%s:" % (
        trials, "" if groups else " (no start orders: 'new' draws them at random)"))
    print("   %-6s %-7s %9s %9s %9s %7s" % ("B x", "design", "verdicts", "same", "undecided", "rounds"))
    for shift in (1.0, 1.10, 1.15):
        for design in ("old", "new"):
            c = collections.Counter()
            n = []
            for _ in range(trials):
                v, R = adaptive(sess, groups, rng, shift, design)
                c[v] += 1
                n.append(R)
            print("   %-6.2f %-7s %8.1f%% %8.1f%% %8.1f%% %7.1f" % (
                shift, design, 100 * c["verdict"] / trials, 100 * c["same"] / trials, 100 * c["undecided"] / trials,
                np.mean(n)))
    print("   (B x 1.00: every verdict is false; B x 1.10 and 1.15: a verdict is power)")


if __name__ == "__main__":
    main()
