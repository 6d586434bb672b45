#!/usr/bin/python3
# How far is each built-in KernelBench task's PyTorch reference from a float64
# evaluation of the same model, and what do the old rule (atol 1e-4 absolute,
# rtol 1e-4) and the new one (atol 1e-4 x RMS(ref), rtol 1e-4, norm-wise 1e-4;
# docs/verifier.md) make of that honest answer and of four trivial ones
# (zeros, the constant mean, the reference permuted, the reference x 1.001)?
# The float64 answer rounded to float32 is the most accurate kernel there is:
# any rule must accept it.
#
# usage: bench/tolerance_reference.py [TASKS_DIR [NAME_SUBSTRING...]]
#        (default tasks/cpu-l1; Debian's /usr/bin/python3 with torch; JSON rows
#        go to stdout, one per output; ~30 min on 2 cores at default sizes)
# Columns: rms (of the reference), f64_maxabs / f64_norm (reference vs float64),
# use_old / use_new (largest |d| / allowed, per element; > 1 fails), and which
# trivial answers each rule passes (the python audit counts an answer equal to
# the reference as passing; pragma calls it "not applicable").
# norm-wise <= 1e-4) judge it and four trivial answers.
import sys, glob, os, time, math, json
import numpy as np, torch
torch.set_num_threads(2)
R = 1e-4
def judge(g, w, a_abs, r, eps):
    g = g.astype(np.float64); w = w.astype(np.float64)
    fin = np.isfinite(w)
    d = np.abs(g - w)
    el = bool(np.all(d[fin] <= a_abs + r*np.abs(w[fin]))) and bool(np.all(np.isfinite(g[fin])))
    nw = np.linalg.norm(w[fin]); nd = np.linalg.norm((g-w)[fin])
    ne = nd/nw if nw > 0 else (0 if nd == 0 else math.inf)
    return el and (eps is None or ne <= eps), ne
def trivial(w, r):
    fin = np.isfinite(w)
    out = {}
    out["zeros"] = np.where(fin, 0, w).astype(w.dtype)
    out["mean"] = np.where(fin, w[fin].mean() if fin.any() else 0, w).astype(w.dtype)
    n = w.size; a = int(n*0.6180339887) | 1
    while math.gcd(a, n) != 1: a += 2
    idx = (np.arange(n, dtype=np.int64)*a + 12345) % n if n > 1 else np.zeros(1, np.int64)
    out["permuted"] = w.reshape(-1)[idx].reshape(w.shape)
    out["scaled"] = (w.astype(np.float64)*(1+10*r)).astype(w.dtype)
    return out
rows = []
for path in sorted(glob.glob((sys.argv[1] if len(sys.argv) > 1 else "tasks/cpu-l1") + "/*.py")):
    name = os.path.basename(path)[:-3]
    if len(sys.argv) > 2 and not any(s in name for s in sys.argv[2:]): continue
    g = {"__name__": "task"}
    exec(compile(open(path).read(), path, "exec"), g)
    torch.manual_seed(0); model = g["Model"](*g["get_init_inputs"]())
    torch.manual_seed(1000003); inputs = g["get_inputs"]()
    t0 = time.time()
    with torch.no_grad():
        ref = model(*inputs)
        m64 = model.double()
        out64 = m64(*[x.double() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs])
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    o64s = out64 if isinstance(out64, (tuple, list)) else (out64,)
    for k, (w, h) in enumerate(zip(refs, o64s)):
        w = w.numpy(); h = h.numpy()
        if not np.issubdtype(w.dtype, np.floating):
            rows.append(dict(task=name, k=k, dtype=str(w.dtype), exact=True, same=bool((h.astype(w.dtype) == w).all())))
            print(rows[-1], flush=True); continue
        fin = np.isfinite(w)
        S = float(np.sqrt(np.mean(w[fin].astype(np.float64)**2))) if fin.any() else 0.0
        hr = h.astype(w.dtype)
        d = np.abs(hr.astype(np.float64) - w.astype(np.float64))
        use_old = float(np.max(d[fin]/(1e-4 + R*np.abs(w[fin])))) if fin.any() else 0
        use_new = float(np.max(d[fin]/(1e-4*S + R*np.abs(w[fin])))) if fin.any() and S > 0 else 0
        _, ne = judge(hr, w, 1e-4*S, R, R)
        triv_old = {n: judge(t, w, 1e-4, R, None)[0] for n, t in trivial(w, R).items()}
        triv_new = {n: judge(t, w, 1e-4*S, R, R)[0] for n, t in trivial(w, R).items()}
        rows.append(dict(task=name, k=k, dtype=str(w.dtype), n=int(w.size), rms=S, maxabs=float(np.max(np.abs(w[fin]))) if fin.any() else 0,
                         f64_maxabs=float(d[fin].max()) if fin.any() else 0, f64_norm=ne, use_old=use_old, use_new=use_new,
                         old_passes=[n for n, v in triv_old.items() if v], new_passes=[n for n, v in triv_new.items() if v],
                         secs=round(time.time()-t0, 1)))
        print(rows[-1], flush=True)

