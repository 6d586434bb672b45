"""Tests for runtime/cuda/torch_cuda_time.py, the GPU baseline's timer.

These machines have no GPU and Debian's torch 1.13 has no torch.compile, so
most of the script cannot run for real here. What can be checked is:

  - the answers pragma's C side relies on where nothing is available
    (check-compile: "unavailable: torch 1.13 has no torch.compile");
  - the timing protocol and the torch.compile path end to end, in-process,
    with torch.cuda replaced by a CPU stand-in (events from the wall clock,
    "cuda" devices mapped to the CPU) and torch.compile by a recording
    wrapper: compilation happens once per set before the warm-up calls and
    is reported, never timed; the configuration names the baseline, mode,
    backend and versions; serve mode answers like the bridge's.

The real CUDA run is scripts/gpu-check.sh's job.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "runtime", "cuda", "torch_cuda_time.py")
BRIDGE = os.path.join(ROOT, "bridge", "pragma_bridge.py")
FIX = os.path.join(HERE, "fixtures")
PYTHON = os.environ.get("PRAGMA_PYTHON", "/usr/bin/python3")

sys.path.insert(0, os.path.dirname(BRIDGE))
import pragma_bridge as pb  # noqa: E402

try:
    pb.import_torch()
    import torch
    HAVE_TORCH = True
except pb.BridgeError:
    HAVE_TORCH = False


def load_script():
    import importlib.util
    os.environ.setdefault("PRAGMA_BRIDGE", BRIDGE)
    spec = importlib.util.spec_from_file_location("torch_cuda_time", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@contextlib.contextmanager
def fake_cuda(compile_calls, with_compile=True):
    """torch.cuda on the CPU; torch.compile recording its calls."""
    real_device = torch.device
    saved = {}

    def patch(obj, name, value):
        saved[(id(obj), name)] = (obj, name, getattr(obj, name, None), hasattr(obj, name))
        setattr(obj, name, value)

    def device(kind, index=None):
        if kind == "cuda":
            return real_device("cpu")
        return real_device(kind) if index is None else real_device(kind, index)

    def compile_fn(model, mode=None, backend=None, dynamic=None):
        compile_calls.append({"mode": mode, "backend": backend, "dynamic": dynamic})
        return model

    props = types.SimpleNamespace(name="Fake GPU", major=9, minor=0, multi_processor_count=132,
                                  L2_cache_size=1 << 20)
    patch(torch.cuda, "is_available", lambda: True)
    patch(torch.cuda, "get_device_properties", lambda d: props)
    patch(torch.cuda, "set_device", lambda d: None)
    patch(torch.cuda, "synchronize", lambda d=None: None)
    patch(torch.cuda, "Event", FakeEvent)
    patch(torch.version, "cuda", "13.0")
    patch(torch, "device", device)
    if with_compile:
        patch(torch, "compile", compile_fn)
    triton = types.ModuleType("triton")
    triton.__version__ = "3.fake"
    had_triton = sys.modules.get("triton")
    sys.modules["triton"] = triton
    try:
        yield
    finally:
        for obj, name, old, existed in saved.values():
            if existed:
                setattr(obj, name, old)
            else:
                delattr(obj, name)
        if had_triton is None:
            sys.modules.pop("triton", None)
        else:
            sys.modules["triton"] = had_triton


def run_main(mod, argv, stdin=None):
    """Run the script's main() in-process; its JSON lines and exit code.
    JsonOut writes to a dup of fd 1, so capture at the descriptor level."""
    r, w = os.pipe()
    saved = os.dup(1)
    old_stdin = sys.stdin
    try:
        os.dup2(w, 1)
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        rc = mod.main(argv)
        sys.stdout.flush()
    finally:
        sys.stdin = old_stdin
        os.dup2(saved, 1)
        os.close(saved)
        os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    return rc, [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class TorchCudaTimeTests(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.mod = load_script()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dirs = []
        for seed in (0, 1):
            d = os.path.join(cls.tmp.name, "s%d" % seed)
            p = subprocess.run([PYTHON, BRIDGE, "export", os.path.join(FIX, "matmul.py"), "--set", "N=16",
                                "--seed", str(seed), "--out", d], capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stdout + p.stderr
            cls.dirs.append(d)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def time_args(self, *extra):
        return ["time", os.path.join(FIX, "matmul.py"), "--set", "N=16", "--data", ",".join(self.dirs),
                "--warmup", "2", "--reps", "6"] + list(extra)

    def test_check_compile_cli_on_this_torch(self):
        p = subprocess.run([PYTHON, SCRIPT, "check-compile"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PRAGMA_BRIDGE=BRIDGE))
        d = json.loads(p.stdout.splitlines()[0])
        if hasattr(torch, "compile"):
            self.skipTest("this torch has torch.compile")
        self.assertEqual((p.returncode, d["ok"], d["error"]), (3, False, "environment"))
        major_minor = ".".join(torch.__version__.split(".")[:2])
        self.assertIn("unavailable: torch %s has no torch.compile" % major_minor, d["message"])

    def test_eager_protocol(self):
        calls = []
        with fake_cuda(calls):
            rc, out = run_main(self.mod, self.time_args())
        self.assertEqual(rc, 0, out)
        d = out[0]
        self.assertTrue(d["ok"])
        self.assertEqual(len(d["times_ms"]), 6)
        self.assertTrue(all(t >= 0 for t in d["times_ms"]))
        self.assertEqual(d["config"]["baseline"], "pytorch eager")
        self.assertEqual(d["config"]["device"], "Fake GPU")
        self.assertNotIn("compile", d["config"])
        self.assertEqual(calls, [])

    def test_compile_protocol(self):
        calls = []
        with fake_cuda(calls):
            rc, out = run_main(self.mod, self.time_args("--compile", "--compile-mode", "max-autotune"))
        self.assertEqual(rc, 0, out)
        d = out[0]
        self.assertTrue(d["ok"], d)
        self.assertEqual(len(d["times_ms"]), 6)
        c = d["config"]
        self.assertEqual(c["baseline"], "torch.compile")
        self.assertEqual((c["compile"]["mode"], c["compile"]["backend"], c["compile"]["dynamic"]),
                         ("max-autotune", "inductor", False))
        self.assertEqual(c["compile"]["triton"], "3.fake")
        self.assertIsInstance(c["compile"]["compile_seconds"], float)
        self.assertIn("not timed", c["compile"]["compile_excluded"])
        # one torch.compile per input set's model, all before timing
        self.assertEqual(len(calls), len(self.dirs))
        self.assertTrue(all(k["mode"] == "max-autotune" and k["dynamic"] is False for k in calls))

    def test_compile_serve(self):
        calls = []
        with fake_cuda(calls):
            rc, out = run_main(self.mod, self.time_args("--compile", "--serve"), stdin="time 3\nquit\n")
        self.assertEqual(rc, 0, out)
        self.assertTrue(out[0]["ready"])
        self.assertEqual(out[0]["config"]["baseline"], "torch.compile")
        self.assertEqual(len(out[1]["times_ms"]), 3)

    def test_compile_unavailable(self):
        calls = []
        with fake_cuda(calls, with_compile=False):
            if hasattr(torch, "compile"):
                self.skipTest("this torch has torch.compile")
            rc, out = run_main(self.mod, self.time_args("--compile"))
        self.assertEqual(rc, 3)
        self.assertEqual((out[0]["ok"], out[0]["error"]), (False, "environment"))
        self.assertIn("has no torch.compile", out[0]["message"])


if __name__ == "__main__":
    unittest.main()
