"""Tests for bridge/pragma_bridge.py.

Run with Debian's torch:  /usr/bin/python3 -m unittest discover -s tests/bridge

Most checks call the bridge in-process (torch is imported once); the CLI
contract (one JSON object on stdout, exit codes, serve mode) is checked by
running the script as pragma does.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BRIDGE = os.path.join(ROOT, "bridge", "pragma_bridge.py")
FIX = os.path.join(HERE, "fixtures")
PYTHON = os.environ.get("PRAGMA_PYTHON", "/usr/bin/python3")

sys.path.insert(0, os.path.dirname(BRIDGE))
import pragma_bridge as pb  # noqa: E402

try:
    pb.import_torch()
    import numpy as np
    import torch
    HAVE_TORCH = True
except pb.BridgeError:
    HAVE_TORCH = False


def fixture(name):
    return os.path.join(FIX, name + ".py")


def run_bridge(*args, stdin=None, python=PYTHON):
    """Run the bridge CLI; return (exit code, the one JSON object on stdout, stderr)."""
    p = subprocess.run([python, BRIDGE] + list(args), input=stdin, capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    lines = p.stdout.splitlines()
    if stdin is None:
        assert len(lines) == 1, "expected one JSON line on stdout, got %r (stderr %s)" % (p.stdout, p.stderr)
        return p.returncode, json.loads(lines[0]), p.stderr
    return p.returncode, [json.loads(line) for line in lines], p.stderr


def info(name, *sets):
    return pb.problem_info(fixture(name), [pb.parse_override(s) for s in sets])


def refusal(name, *sets):
    with unittest.TestCase().assertRaises(pb.BridgeError) as cm:
        info(name, *sets)
    return cm.exception


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class InfoTests(unittest.TestCase):
    def test_matmul_flops_and_shapes(self):
        d = info("matmul")
        self.assertEqual(d["category"], "matmul")
        self.assertEqual(d["category_source"], "comment")
        self.assertEqual(d["description"], "Square matrix multiplication C = A @ B.")
        self.assertEqual(d["constants"], {"N": 64, "K": 128})
        self.assertEqual([(i["name"], i["role"], i["shape"]) for i in d["inputs"]],
                         [("A", "input", [64, 128]), ("B", "input", [128, 64])])
        self.assertEqual(d["outputs"], [{"name": "out0", "dtype": "float32", "shape": [64, 64]}])
        self.assertEqual(d["flops"], 2 * 64 * 64 * 128)
        self.assertEqual(d["flops_method"], "aten-dispatch")
        self.assertEqual(d["ops"], ["aten::mm"])
        self.assertEqual(d["bytes"], 4 * (64 * 128 * 2 + 64 * 64))

    def test_set_override_changes_shapes_and_derived_constants(self):
        d = info("matmul", "N=10")
        self.assertEqual(d["constants"], {"N": 10, "K": 20})
        self.assertEqual([i["shape"] for i in d["inputs"]], [[10, 20], [20, 10]])
        self.assertEqual(d["outputs"][0]["shape"], [10, 10])
        self.assertEqual(d["flops"], 2 * 10 * 10 * 20)

    def test_bad_overrides(self):
        self.assertEqual(refusal("matmul", "NOPE=3").kind, "bad_override")
        for text in ("N=abc", "N", "=3", "1N=2"):
            with self.assertRaises(pb.BridgeError) as cm:
                pb.parse_override(text)
            self.assertEqual(cm.exception.kind, "bad_override", text)
        self.assertEqual(pb.parse_override("N=7"), ("N", 7))
        self.assertEqual(pb.parse_override("eps=1e-3"), ("eps", 1e-3))
        self.assertEqual(pb.parse_override("shape=(3, 4)"), ("shape", (3, 4)))

    def test_transcendentals_counted_apart(self):
        # softmax (5 FLOPs an element, one exp) + tanh (1) + add (1)
        d = info("softmax_tanh")
        self.assertEqual(d["flops"], 5 * 64 + 64 + 64)
        self.assertEqual(d["flops_transcendental"], 64 + 64)
        # x ** 2 and sqrt are no transcendentals; a matmul has none
        self.assertEqual(info("rmsnorm")["flops_transcendental"], 0)
        self.assertEqual(info("matmul")["flops_transcendental"], 0)

    def test_conv_params_and_exact_flops(self):
        d = info("conv")
        self.assertEqual(d["category"], "conv")
        self.assertEqual(d["category_source"], "inferred")
        self.assertEqual([(i["name"], i["role"], i["shape"]) for i in d["inputs"]],
                         [("x", "input", [2, 3, 16, 16]), ("conv.weight", "param", [8, 3, 3, 3]),
                          ("conv.bias", "param", [8])])
        # 2 * output numel * (Cin/groups) * prod(kernel)
        self.assertEqual(d["flops"], 2 * (2 * 8 * 16 * 16) * 3 * 9)
        self.assertEqual(d["constants"]["out_channels"], 8)  # lowercase KernelBench constants

    def test_conv_transpose_flops(self):
        d = info("conv_transpose")
        # 2 * input numel * (Cout/groups) * prod(kernel)
        self.assertEqual(d["flops"], 2 * (2 * 4 * 5 * 7) * (6 // 2) * 9)

    def test_batchnorm_buffers(self):
        d = info("batchnorm")
        self.assertEqual(d["category"], "normalization")
        self.assertEqual([(i["name"], i["role"], i["dtype"], i["shape"]) for i in d["inputs"][1:]],
                         [("bn.weight", "param", "float32", [4]), ("bn.bias", "param", "float32", [4]),
                          ("bn.running_mean", "buffer", "float32", [4]),
                          ("bn.running_var", "buffer", "float32", [4]),
                          ("bn.num_batches_tracked", "buffer", "int64", [])])

    def test_tuple_output(self):
        d = info("tuple_out")
        self.assertEqual([o["name"] for o in d["outputs"]], ["out0", "out1"])
        self.assertEqual(d["category"], "others")

    def test_scalar_forward_args(self):
        d = info("scalar_arg")
        self.assertEqual([(i["name"], i["dtype"], i["shape"], i.get("python_scalar")) for i in d["inputs"]],
                         [("A", "float32", [5, 6], None), ("s", "float32", [], "float"),
                          ("shift", "int64", [], "int"), ("flag", "bool", [], "bool")])

    def test_bfloat16_input(self):
        d = info("bf16")
        self.assertEqual(d["inputs"][0]["dtype"], "bfloat16")
        self.assertEqual(d["outputs"][0]["dtype"], "bfloat16")
        self.assertEqual(d["category"], "activation")

    def test_inferred_normalization_from_rms_pattern(self):
        self.assertEqual(info("rmsnorm")["category"], "normalization")

    def test_dropout_refused(self):
        for name in ("dropout", "dropout_functional"):
            e = refusal(name)
            self.assertEqual(e.kind, "random_forward", name)
            self.assertIn("forward() is random (dropout?); pragma needs a deterministic forward", e.message)

    def test_exception_in_problem_has_location(self):
        e = refusal("raises")
        self.assertEqual(e.kind, "problem_exception")
        self.assertEqual(e.where, fixture("raises") + ":12")
        self.assertIn("ValueError: no inputs for size 4", e.message)

    def test_bad_output_refused(self):
        self.assertEqual(refusal("bad_output").kind, "bad_output")

    def test_category_inference_rules(self):
        self.assertEqual(pb.infer_category(["aten::max_pool2d_with_indices"]), "pooling_reduction")
        self.assertEqual(pb.infer_category(["aten::sum"]), "pooling_reduction")
        self.assertEqual(pb.infer_category(["aten::_softmax"]), "activation")
        self.assertEqual(pb.infer_category(["aten::native_layer_norm"]), "normalization")
        self.assertEqual(pb.infer_category(["aten::t", "aten::addmm", "aten::relu"]), "matmul")
        self.assertEqual(pb.infer_category(["aten::cumsum"]), "others")
        self.assertEqual(pb.infer_category(["aten::add"]), "others")


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class TaskFactTests(unittest.TestCase):
    """Hyper-parameters that are not inputs reach the info: constructor
    arguments by their names in Model.__init__, the model's own settings,
    submodules' settings (extra_repr), module constants."""

    TASKS = os.path.join(ROOT, "tasks", "cpu-l1")

    def task(self, name, *sets):
        return pb.problem_info(os.path.join(self.TASKS, name + ".py"), [pb.parse_override(s) for s in sets])

    def test_cumsum_dim(self):
        d = self.task("52_cumsum", "BATCH=2", "LENGTH=64")
        self.assertEqual(d["init_args"], [{"name": "dim", "value": 1, "text": "1"}])
        self.assertIn({"name": "dim", "value": 1, "text": "1"}, d["attributes"])
        self.assertEqual(d["constants"]["SCAN_DIM"], 1)

    def test_pooling_kernel_stride_padding(self):
        d = self.task("33_max_pool2d", "BATCH=1", "CHANNELS=2", "HEIGHT=8", "WIDTH=8")
        self.assertEqual([(a["name"], a["value"]) for a in d["init_args"]],
                         [("kernel_size", 3), ("stride", 2), ("padding", 1)])
        pool = [m for m in d["modules"] if m["name"] == "pool"]
        self.assertEqual(len(pool), 1)
        self.assertEqual(pool[0]["type"], "MaxPool2d")
        for want in ("kernel_size=3", "stride=2", "padding=1"):
            self.assertIn(want, pool[0]["config"])

    def test_layer_norm_eps(self):
        d = self.task("25_layer_norm", "BATCH=1", "FEATURES=2", "DIM1=4", "DIM2=4")
        self.assertEqual(d["init_args"], [{"name": "normalized_shape", "value": [2, 4, 4], "text": "(2, 4, 4)"}])
        ln = [m for m in d["modules"] if m["type"] == "LayerNorm"]
        self.assertEqual(len(ln), 1)
        self.assertIn("eps=1e-05", ln[0]["config"])

    def test_init_names_beyond_the_signature(self):
        class M(torch.nn.Module):
            def __init__(self, a, *rest):
                super().__init__()

        self.assertEqual(pb.init_param_names(M, 3), ["a", "rest[0]", "rest[1]"])
        self.assertEqual(pb.init_param_names(torch.nn.Module, 1), ["arg0"])
        self.assertIsNone(pb._fact_value(float("nan")))
        self.assertEqual(pb._fact_text(torch.zeros(3, 4)), "tensor [3, 4] float32")

    def test_problem_without_init_args(self):
        d = info("matmul")
        self.assertEqual(d["init_args"], [])
        self.assertEqual(d["modules"], [])


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by %s" % sys.executable)
class RoundTripTests(unittest.TestCase):
    def _roundtrip(self, name, seed=3):
        problem = pb.Problem(fixture(name))
        inst = pb.Instance(problem, seed)
        analysis = pb.Analysis(problem, inst)
        facts = analysis.facts(problem, inst)
        with tempfile.TemporaryDirectory() as d:
            n = pb.write_set(d, seed, facts, inst.entries, analysis.outputs)
            self.assertEqual(n, len(inst.entries) + len(analysis.outputs) + 1)
            self.assertFalse([f for f in os.listdir(d) if f.startswith(".")], "temp files left")
            with open(os.path.join(d, "meta.json")) as f:
                meta = json.load(f)
            self.assertEqual(meta["seed"], seed)
            loaded = pb.TimingSet(problem, d)
            outs = [pb.numpy_to_tensor(np.load(os.path.join(d, o["file"])), o["dtype"])
                    for o in meta["outputs"]]
        return inst, analysis, loaded, outs

    def test_bfloat16_roundtrip(self):
        inst, analysis, loaded, outs = self._roundtrip("bf16")
        self.assertEqual(loaded.args[0].dtype, torch.bfloat16)
        self.assertTrue(torch.equal(loaded.args[0], inst.entries[0].tensor))
        self.assertTrue(torch.equal(outs[0], analysis.outputs[0]))

    def test_batchnorm_state_roundtrip_and_reforward(self):
        problem = pb.Problem(fixture("batchnorm"))
        inst, analysis, loaded, outs = self._roundtrip("batchnorm")
        sd = loaded.model.state_dict()
        for e in inst.entries[1:]:
            self.assertTrue(torch.equal(sd[e.name], e.tensor), e.name)
        again = pb.run_forward(problem, loaded.model, loaded.args)
        self.assertTrue(torch.equal(again[0], outs[0]))

    def test_scalar_args_come_back_as_python_scalars(self):
        _, _, loaded, _ = self._roundtrip("scalar_arg")
        self.assertEqual([type(a) for a in loaded.args[1:]], [float, int, bool])
        self.assertEqual(loaded.args[1:], [3.5, 2, True])


class CliTests(unittest.TestCase):
    """The contract pragma's C code relies on."""

    def test_info_cli(self):
        rc, d, _ = run_bridge("info", fixture("matmul"), "--set", "N=32")
        self.assertEqual(rc, 0)
        self.assertTrue(d["ok"])
        self.assertEqual(d["flops"], 2 * 32 * 32 * 64)
        for key in ("name", "category", "category_source", "description", "constants", "inputs",
                    "outputs", "flops", "flops_method", "flops_transcendental", "bytes", "ops", "versions"):
            self.assertIn(key, d)
        self.assertEqual(set(d["versions"]), {"python", "torch", "numpy"})

    def test_problem_prints_do_not_reach_stdout(self):
        rc, d, err = run_bridge("info", fixture("tuple_out"))
        self.assertEqual(rc, 0)
        self.assertIn("must not reach", err)

    def test_refusals(self):
        cases = [("syntax_error", "syntax_error", fixture("syntax_error") + ":6"),
                 ("missing_get_inputs", "missing_symbol", None),
                 ("dropout", "random_forward", None)]
        for name, kind, where in cases:
            rc, d, _ = run_bridge("info", fixture(name))
            self.assertEqual(rc, 2, name)
            self.assertEqual((d["ok"], d["error"], d["where"]), (False, kind, where), name)
            self.assertTrue(d["message"])

    def test_usage_errors(self):
        rc, d, _ = run_bridge()
        self.assertEqual((rc, d["error"]), (2, "usage"))
        rc, d, _ = run_bridge("export", fixture("matmul"), "--seed", "1")
        self.assertEqual((rc, d["error"]), (2, "usage"))
        rc, d, _ = run_bridge("info", os.path.join(FIX, "no_such_problem.py"))
        self.assertEqual((rc, d["error"]), (2, "usage"))

    def test_torch_missing_is_an_environment_error(self):
        # -S drops site-packages, so Debian's torch is not importable.
        p = subprocess.run([PYTHON, "-S", BRIDGE, "versions"], capture_output=True, text=True, timeout=60)
        d = json.loads(p.stdout)
        self.assertEqual((p.returncode, d["ok"], d["error"]), (3, False, "environment"))
        self.assertIn("Hint", d["message"])

    def test_versions(self):
        rc, d, _ = run_bridge("versions")
        self.assertEqual(rc, 0)
        self.assertEqual(set(d), {"ok", "python", "torch", "numpy", "blas", "allocator"})

    def test_export_time_serve(self):
        with tempfile.TemporaryDirectory() as tmp:
            d0, d1 = os.path.join(tmp, "s0"), os.path.join(tmp, "s1")
            rc, d, _ = run_bridge("export", fixture("batchnorm"), "--seed", "0", "--out", d0,
                                  "--seed", "1", "--out", d1)
            self.assertEqual(rc, 0, d)
            self.assertEqual(d, {"ok": True, "sets": [{"seed": 0, "dir": d0, "files": 8},
                                                      {"seed": 1, "dir": d1, "files": 8}]})
            self.assertEqual(sorted(os.listdir(d0)), ["in_%03d.npy" % i for i in range(6)]
                             + ["meta.json", "out_000.npy"])
            with open(os.path.join(d1, "meta.json")) as f:
                meta = json.load(f)
            self.assertEqual(meta["seed"], 1)
            self.assertNotIn("ok", meta)
            x0, x1 = np.load(os.path.join(d0, "in_000.npy")), np.load(os.path.join(d1, "in_000.npy"))
            self.assertFalse(np.array_equal(x0, x1), "different seeds must give different inputs")
            self.assertEqual(np.load(os.path.join(d0, "in_005.npy")).shape, ())

            # The exported data equals an in-process run of the same seed.
            if HAVE_TORCH:
                problem = pb.Problem(fixture("batchnorm"))
                inst = pb.Instance(problem, 1)
                ref = pb.run_forward(problem, inst.model, inst.fresh_args())[0]
                self.assertTrue(np.array_equal(np.load(os.path.join(d1, "in_000.npy")),
                                               inst.entries[0].tensor.numpy()))
                self.assertTrue(np.array_equal(np.load(os.path.join(d1, "out_000.npy")), ref.numpy()))

            rc, t, _ = run_bridge("time", fixture("batchnorm"), "--data", d0 + "," + d1,
                                  "--warmup", "2", "--reps", "5", "--threads", "1",
                                  "--flush-bytes", str(1 << 20))
            self.assertEqual(rc, 0, t)
            self.assertEqual(len(t["times_ms"]), 5)
            self.assertTrue(all(x > 0 for x in t["times_ms"]))
            self.assertEqual(t["sets"], 2)
            cfg = t["config"]
            self.assertEqual((cfg["threads"], cfg["cold"], cfg["flush_bytes"]), (1, True, 1 << 20))
            for key in ("torch", "interop_threads", "blas", "allocator", "env", "mkldnn"):
                self.assertIn(key, cfg)
            self.assertIn("LD_PRELOAD", cfg["env"])

            rc, lines, _ = run_bridge("time", fixture("batchnorm"), "--data", d0, "--warmup", "1",
                                      "--threads", "2", "--warm", "--serve",
                                      stdin="time 3\ntime 4\nquit\n")
            self.assertEqual(rc, 0, lines)
            self.assertEqual(len(lines), 3)
            self.assertTrue(lines[0]["ready"])
            self.assertEqual((lines[0]["config"]["threads"], lines[0]["config"]["cold"]), (2, False))
            self.assertEqual([len(x["times_ms"]) for x in lines[1:]], [3, 4])

            # Timing with other overrides than the export is refused.
            rc, t, _ = run_bridge("time", fixture("batchnorm"), "--data", d0, "--reps", "1", "--set", "C=5")
            self.assertEqual((rc, t["error"]), (2, "usage"))


if __name__ == "__main__":
    unittest.main()
