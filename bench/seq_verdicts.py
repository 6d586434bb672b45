#!/usr/bin/env python3
"""How often does the loop's adaptive comparison call two identical kernels
faster or slower? A simulation of lib/timing's procedure, old and new.

Each side's call time is exp(process effect + round effect + call noise):
a process keeps where its buffers landed in physical memory for its life
(docs/verifier.md measured ~5% on a memory-bound stencil), a round carries
the machine's load of the moment, a call its own jitter. The procedure:
the planned rounds in sessions of fresh processes, then more sessions
until the ratio is decided (its interval above or below 1 with the ratio
past the 3% margin: faster or slower; or inside 1 +- 3%: the same), up to
27 rounds. The ratio is of the medians of all calls; the interval a 95%
bootstrap over sessions, then rounds within them.

  old: sessions of 3 rounds (9 planned = 3 sessions), the bootstrap interval
  new: sessions of 2 rounds (5 planned), the interval stretched by
       t(0.975, S-1)/1.96 * sqrt(S/(S-1)) for S sessions (lib/timing/estimate.c)

The library has moved on since (DESIGN 3.5): 9 rounds in 6 sessions
started in mirrored random orders, a look per added pair of sessions, and
the interval also widened for those looks (Pocock). bench/twins_replay.py
replays that, and "new" here, on sessions recorded by bench/twins.sh.

Prints, per noise model and procedure, how often identical kernels got a
verdict (should be <= 5%), how often a kernel 15% slower than the other was told
apart (power), and the mean rounds measured (cost).

usage: bench/seq_verdicts.py [TRIALS] [SEED]     (numpy; ~1 min per 100 trials)
"""
import sys
import numpy as np

T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086]
BOOT = 400
MARGIN = 0.03


def stretch(s):
    if s < 2:
        return 1.0
    return (T975[s - 1] if s - 1 < len(T975) else 2.08) / 1.96 * np.sqrt(s / (s - 1))


def interval(rng, a, b, sess, widen):
    """a, b: [rounds, reps]; sess: session of each round."""
    ratio = np.median(b) / np.median(a)
    groups = [np.flatnonzero(sess == g) for g in np.unique(sess)]
    S = len(groups)
    boots = np.empty(BOOT)
    for k in range(BOOT):
        pick = np.concatenate([rng.choice(groups[rng.integers(S)], size=len(groups[g])) for g in range(S)])
        boots[k] = np.median(b[pick]) / np.median(a[pick])
    lo, hi = np.quantile(boots, [0.025, 0.975])
    lo, hi = min(lo, ratio), max(hi, ratio)
    if widen:
        w = stretch(S)
        lo, hi = ratio * (lo / ratio) ** w, ratio * (hi / ratio) ** w
    return ratio, lo, hi


def verdict(r, lo, hi):
    if lo > 1 and r >= 1 + MARGIN:
        return "faster"
    if hi < 1 and r <= 1 / (1 + MARGIN):
        return "slower"
    if lo >= 1 / (1 + MARGIN) and hi <= 1 + MARGIN:
        return "same"
    return "?"


def trial(rng, noise, per, widen, truth, planned=9, max_rounds=27, reps=5):
    s_proc, s_round, s_call = noise
    a, b, sess = [], [], []

    def session(rounds):
        pa, pb = rng.normal(0, s_proc, 2)
        sid = len(set(sess))
        for _ in range(rounds):
            ra, rb = rng.normal(0, s_round, 2)
            a.append(np.exp(pa + ra + rng.normal(0, s_call, reps)))
            b.append(truth * np.exp(pb + rb + rng.normal(0, s_call, reps)))
            sess.append(sid)

    left = planned
    while left > 0:
        session(min(per, left))
        left -= per
    while True:
        r, lo, hi = interval(rng, np.array(a), np.array(b), np.array(sess), widen)
        v = verdict(r, lo, hi)
        if v != "?" or len(a) >= max_rounds:
            return v, len(a)
        session(min(per if widen else 3, max_rounds - len(a)))


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    models = [("process 3%, round 15%", (0.03, 0.15, 0.05)), ("process 8%, round 8%", (0.08, 0.08, 0.05)),
              ("process 5%, round 5%", (0.05, 0.05, 0.03))]
    procs = [("old: 3-round sessions, bootstrap", 3, False), ("new: 2-round sessions, stretched", 2, True)]
    print(f"{trials} trials per cell; identical kernels should get a verdict <= 5% of the time")
    print(f"| noise | procedure | identical: called faster/slower | one 15% slower: told apart | mean rounds |")
    print("|---|---|---|---|---|")
    for mname, noise in models:
        for pname, per, widen in procs:
            same = [trial(rng, noise, per, widen, 1.0) for _ in range(trials)]
            slow = [trial(rng, noise, per, widen, 1.15) for _ in range(trials)]
            fp = sum(v in ("faster", "slower") for v, _ in same) / trials
            power = sum(v == "faster" for v, _ in slow) / trials  # side a is the faster one
            rounds = np.mean([n for _, n in same + slow])
            print(f"| {mname} | {pname} | {fp:.1%} | {power:.1%} | {rounds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
