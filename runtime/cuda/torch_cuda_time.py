#!/usr/bin/python3
"""torch_cuda_time.py: the PyTorch baseline on a CUDA GPU (issue 8).

The bridge (bridge/pragma_bridge.py) times a KernelBench problem on the CPU;
this script times the same problem, on the same exported input sets, on the
GPU, by the protocol the CUDA harness uses for candidates:

    - the model and the inputs of every set moved to the device once;
    - before each timed call the L2 is flushed by writing a device buffer
      larger than it (2 x L2, at least --flush-bytes) unless --warm;
    - CUDA events around forward() followed by torch.cuda.synchronize()
      (the whole device, as for candidates);
    - warm-up calls first; the sets in turn.

It reuses the bridge's loading code (Problem, TimingSet, overrides), so a
problem means the same thing on both sides. Run it with an interpreter whose
torch has CUDA ($PRAGMA_PYTHON); Debian's python3-torch has none.

    torch_cuda_time.py check
    torch_cuda_time.py check-compile
    torch_cuda_time.py time PROBLEM.py --data DIR1,DIR2,... --warmup W --reps R
                       [--cold|--warm] [--flush-bytes B] [--set N=V]... [--serve]
                       [--device D]
                       [--compile [--compile-mode M] [--compile-backend B]]

--compile times torch.compile(model) instead of eager PyTorch: the second
baseline a user choosing between pragma and the compiler wants. Same
protocol; compilation (every input set's first call, which is where
torch.compile traces and generates code) happens before the warm-up calls
and is reported as compile_seconds, never timed. Mode "default" unless
--compile-mode (reduce-overhead, max-autotune, ...); backend inductor.
torch < 2.0 has no torch.compile, and inductor needs triton on a GPU:
either answers {"ok": false, "error": "environment", "message":
"unavailable: ..."}. check-compile says whether this Python can, without
needing a GPU.

Output: one JSON object per line on stdout, like the bridge's `time`:
{"ok": true, "times_ms": [...], "sets": N, "config": {...}}; serve mode
answers "time R" and "quit" lines. Failures: {"ok": false, "error": KIND,
"message": ...}, exit 2 (usage) or 3 (environment: no torch, no CUDA).
"""

import argparse
import gc
import importlib.util
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_bridge():
    candidates = [os.environ.get("PRAGMA_BRIDGE", ""),
                  os.path.join(os.environ.get("PRAGMA_HOME", ""), "bridge", "pragma_bridge.py"),
                  os.path.join(HERE, "..", "..", "bridge", "pragma_bridge.py")]
    for path in candidates:
        if path and os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("pragma_bridge", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    print(json.dumps({"ok": False, "error": "environment",
                      "message": "cannot find bridge/pragma_bridge.py (set PRAGMA_HOME or PRAGMA_BRIDGE)"}))
    sys.exit(3)


pb = load_bridge()


def env_error(msg):
    return pb.BridgeError("environment", msg)


def cuda_torch():
    pb.import_torch()
    torch = pb.torch
    if not torch.cuda.is_available():
        raise env_error("torch %s (%s) has no CUDA device: torch.cuda.is_available() is False%s. Hint: point "
                        "PRAGMA_PYTHON at a Python whose torch is built with CUDA, on a machine with a GPU"
                        % (torch.__version__, sys.executable,
                           "" if torch.version.cuda else " (a CPU-only build)"))
    return torch


def compile_support(torch, device_type):
    """(True, info) when torch.compile can run here, else (False, why)."""
    ver = str(torch.__version__)
    if not hasattr(torch, "compile"):
        short = re.match(r"\d+\.\d+", ver)
        return False, "unavailable: torch %s has no torch.compile (it needs torch >= 2.0)" % (
            short.group(0) if short else ver)
    info = {"torch": ver}
    if device_type == "cuda":
        try:
            import triton
            info["triton"] = getattr(triton, "__version__", "?")
        except Exception as e:  # ImportError, or a broken install
            return False, ("unavailable: torch %s has torch.compile but its inductor backend needs triton on a GPU "
                           "(%s: %s)" % (ver, type(e).__name__, e))
    return True, info


def to_device(x, dev):
    torch = pb.torch
    if isinstance(x, torch.Tensor):
        return x.to(dev)
    return x


def config(torch, dev, cold, flush_bytes):
    p = torch.cuda.get_device_properties(dev)
    return {"torch": str(torch.__version__),
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "device": p.name,
            "arch": "sm_%d%d" % (p.major, p.minor),
            "sms": p.multi_processor_count,
            "allow_tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "allow_tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "timer": "cuda events around forward() + torch.cuda.synchronize()",
            "cold": bool(cold),
            "flush_bytes": int(flush_bytes)}


class CudaTimer:
    def __init__(self, problem, sets, dev, cold, flush_bytes, compile_opts=None):
        torch = pb.torch
        self.problem, self.sets, self.dev, self.cold = problem, sets, dev, cold
        self.rep = 0
        self.compile_seconds = None
        for s in sets:
            s.model = s.model.to(dev)
            s.args = [to_device(a, dev) for a in s.args]
            s.fn = s.model
        if compile_opts is not None:
            self.compile(compile_opts)
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0
        self.flush_bytes = max(int(flush_bytes), 2 * int(l2))
        self.flush = torch.empty(max(self.flush_bytes // 4, 1), dtype=torch.float32, device=dev) if cold else None
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def compile(self, opts):
        """torch.compile every set's model, then call each once: that first
        call is where dynamo traces and inductor generates and builds code.
        Its time is compile_seconds, outside every timed call."""
        import time as _time
        torch = pb.torch
        t0 = _time.perf_counter()
        try:  # one compiled graph per set's model: none may fall back to eager
            import torch._dynamo
            lim = torch._dynamo.config.cache_size_limit
            torch._dynamo.config.cache_size_limit = max(lim, len(self.sets) + 2)
        except Exception:
            pass
        for s in self.sets:
            s.fn = self.problem.call("torch.compile()", lambda m: torch.compile(
                m, mode=opts["mode"], backend=opts["backend"], dynamic=False), s.model)
        with torch.no_grad():
            for s in self.sets:
                out = self.problem.call("forward() under torch.compile", s.fn, *s.args)
                del out
        torch.cuda.synchronize(self.dev)
        self.compile_seconds = round(_time.perf_counter() - t0, 3)

    def call(self, s):
        return self.problem.call("forward()", s.fn, *s.args)

    def warmup(self, w):
        torch = pb.torch
        with torch.no_grad():
            for i in range(w):
                out = self.call(self.sets[i % len(self.sets)])
                del out
        torch.cuda.synchronize(self.dev)

    def time(self, reps):
        torch = pb.torch
        times = []
        gc_was = gc.isenabled()
        gc.disable()
        try:
            with torch.no_grad():
                for _ in range(reps):
                    s = self.sets[self.rep % len(self.sets)]
                    self.rep += 1
                    if self.cold:
                        self.flush.fill_(float(self.rep & 0xff))
                    torch.cuda.synchronize(self.dev)
                    self.start.record()
                    out = self.call(s)
                    torch.cuda.synchronize(self.dev)
                    self.end.record()
                    self.end.synchronize()
                    del out
                    times.append(round(self.start.elapsed_time(self.end), 6))
        finally:
            if gc_was:
                gc.enable()
        return times


def cmd_check(args, out):
    torch = cuda_torch()
    dev = torch.device("cuda", args.device)
    p = torch.cuda.get_device_properties(dev)
    out.emit({"ok": True, "torch": str(torch.__version__), "cuda": torch.version.cuda, "device": p.name,
              "arch": "sm_%d%d" % (p.major, p.minor), "python": sys.executable})
    return 0


def cmd_check_compile(args, out):
    pb.import_torch()
    ok, info = compile_support(pb.torch, "cuda")
    if not ok:
        raise env_error(info)
    out.emit(dict({"ok": True, "compile": True}, **info))
    return 0


def compile_config(torch, opts, timer):
    c = {"baseline": "torch.compile", "mode": opts["mode"], "backend": opts["backend"], "dynamic": False,
         "fullgraph": False, "compile_seconds": timer.compile_seconds,
         "compile_excluded": "each input set's first call (tracing, code generation) runs before the warm-up "
                             "calls and is not timed"}
    c.update({k: v for k, v in opts.get("info", {}).items() if k != "torch"})
    try:  # graph breaks make a compiled model partly eager: worth knowing
        from torch._dynamo.utils import counters
        c["graph_breaks"] = int(sum(counters["graph_break"].values()))
    except Exception:
        pass
    return c


def cmd_time(args, out):
    dirs = [d for d in (args.data or "").split(",") if d]
    if not dirs:
        raise pb.BridgeError("usage", "time needs --data DIR1,DIR2,...")
    if args.warmup < 0 or args.reps < 0 or (args.reps < 1 and not args.serve):
        raise pb.BridgeError("usage", "--warmup must be >= 0 and --reps >= 1")
    torch = cuda_torch()
    compile_opts = None
    if args.compile:
        ok, info = compile_support(torch, "cuda")
        if not ok:
            raise env_error(info)
        compile_opts = {"mode": args.compile_mode, "backend": args.compile_backend, "info": info}
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    problem = pb.Problem(args.problem, args.overrides)
    sets = [pb.TimingSet(problem, d) for d in dirs]
    timer = CudaTimer(problem, sets, dev, args.cold, args.flush_bytes, compile_opts)
    conf = config(torch, dev, args.cold, timer.flush_bytes)
    conf["baseline"] = "pytorch eager"
    if compile_opts is not None:
        conf["baseline"] = "torch.compile"
        conf["compile"] = compile_config(torch, compile_opts, timer)
    timer.warmup(args.warmup)
    if not args.serve:
        out.emit({"ok": True, "times_ms": timer.time(args.reps), "sets": len(sets), "config": conf})
        return 0
    out.emit({"ok": True, "ready": True, "sets": len(sets), "config": conf})
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        words = line.split()
        if not words:
            continue
        if words == ["quit"]:
            return 0
        if len(words) == 2 and words[0] == "time" and words[1].isdigit() and int(words[1]) > 0:
            out.emit({"ok": True, "times_ms": timer.time(int(words[1]))})
        else:
            out.emit(pb.BridgeError("usage", "serve: expected 'time R' or 'quit', got %r" % line.strip()).to_json())


def main(argv=None):
    p = argparse.ArgumentParser(prog="torch_cuda_time.py")
    sub = p.add_subparsers(dest="command")
    c = sub.add_parser("check")
    c.add_argument("--device", type=int, default=0)
    c.set_defaults(func=cmd_check)
    cc = sub.add_parser("check-compile")
    cc.set_defaults(func=cmd_check_compile)
    t = sub.add_parser("time")
    t.add_argument("problem")
    t.add_argument("--data", required=True)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--reps", type=int, default=20)
    t.add_argument("--device", type=int, default=0)
    t.add_argument("--threads", type=int, default=None, help="accepted for the bridge's command line; unused")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("--cold", dest="cold", action="store_true", default=True)
    mode.add_argument("--warm", dest="cold", action="store_false")
    t.add_argument("--flush-bytes", type=int, default=64 << 20)
    t.add_argument("--set", dest="sets", action="append", default=[])
    t.add_argument("--serve", action="store_true")
    t.add_argument("--compile", action="store_true", help="time torch.compile(model) instead of eager")
    t.add_argument("--compile-mode", default="default",
                   choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
    t.add_argument("--compile-backend", default="inductor")
    t.set_defaults(func=cmd_time)
    try:
        args = p.parse_args(argv)
        if not getattr(args, "func", None):
            raise pb.BridgeError("usage", "missing command (check, check-compile, time)")
        args.overrides = [pb.parse_override(s) for s in getattr(args, "sets", [])]
    except pb.BridgeError as e:
        print(json.dumps(e.to_json()), flush=True)
        return e.exit_code
    out = pb.JsonOut()
    try:
        return args.func(args, out)
    except pb.BridgeError as e:
        out.emit(e.to_json())
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
