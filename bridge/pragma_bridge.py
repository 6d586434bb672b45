#!/usr/bin/python3
"""pragma_bridge.py: the PyTorch side of pragma for KernelBench problems.

pragma (C) runs this file as a subprocess under Debian's torch
(`/usr/bin/python3`, or $PRAGMA_PYTHON) and reads exactly one JSON object per
line on stdout.  Everything else (logs, warnings, anything a problem file
prints) goes to stderr.  See bridge/README.md for the full contract; in short:

    pragma_bridge.py info    PROBLEM.py [--set N=V]...
    pragma_bridge.py export  PROBLEM.py --seed S --out DIR [--seed S2 --out DIR2]... [--set N=V]...
    pragma_bridge.py time    PROBLEM.py --data DIR1,DIR2,... --warmup W --reps R --threads T
                             [--cold|--warm] [--flush-bytes B] [--set N=V]... [--serve]
    pragma_bridge.py versions

Semantics of one seed S (KernelBench's, in training mode):
    torch.manual_seed(S); model = Model(*get_init_inputs())
    torch.manual_seed(S + 1000003); inputs = get_inputs()
    tensors exported: inputs (forward order), then model.state_dict() entries
    with torch.no_grad(): out = model(*inputs)

Failures print {"ok": false, "error": KIND, "message": ..., "where": ...} and
exit 2 (problem or usage) or 3 (environment: torch missing, internal error).

Only the standard library, torch and numpy are used.
"""

import argparse
import ast
import ctypes
import gc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import random
import re
import sys
import time
import traceback
import weakref
import zlib

EXIT_OK = 0
EXIT_INPUT = 2       # usage errors and problems we refuse
EXIT_ENVIRONMENT = 3  # torch missing, internal errors

INPUT_SEED_OFFSET = 1000003
DEFAULT_FLUSH_BYTES = 64 << 20
RANDOM_FORWARD_MSG = "forward() is random (dropout?); pragma needs a deterministic forward"
RANDOM_RTOL = 1e-6

CATEGORIES = ("matmul", "activation", "normalization", "pooling_reduction", "conv", "others")
CATEGORY_ALIASES = {
    "convolution": "conv",
    "pooling": "pooling_reduction",
    "reduction": "pooling_reduction",
    "pooling/reduction": "pooling_reduction",
    "pooling-reduction": "pooling_reduction",
    "norm": "normalization",
    "other": "others",
}

# dtype name (pk_dtype order) <-> torch dtype attribute name
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16",
               "int64", "int32", "int8", "uint8", "bool")

torch = None  # set by import_torch()
np = None


def log(msg):
    """Diagnostics go to stderr only; stdout carries the JSON protocol."""
    print("pragma_bridge: " + msg, file=sys.stderr, flush=True)


class BridgeError(Exception):
    """A failure reported to pragma as one JSON object.

    kind is one of syntax_error, missing_symbol, problem_exception,
    bad_output, random_forward, bad_override, usage, environment.
    """

    def __init__(self, kind, message, where=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.where = where

    @property
    def exit_code(self):
        return EXIT_ENVIRONMENT if self.kind == "environment" else EXIT_INPUT

    def to_json(self):
        return {"ok": False, "error": self.kind, "message": self.message,
                "where": self.where}


# --------------------------------------------------------------------------
# Output channel

class JsonOut:
    """Owns the real stdout; after construction fd 1 points at stderr.

    Problem files, torch's C++ code and stray print() calls then cannot
    corrupt the protocol.
    """

    def __init__(self):
        sys.stdout.flush()
        fd = os.dup(1)
        os.dup2(2, 1)
        self._f = os.fdopen(fd, "w", encoding="utf-8")

    def emit(self, obj):
        self._f.write(json.dumps(obj, allow_nan=False) + "\n")
        self._f.flush()


# --------------------------------------------------------------------------
# Environment

def import_torch():
    """Import torch and numpy into the module globals, or raise environment."""
    global torch, np
    if torch is not None:
        return
    try:
        import numpy
        import torch as torch_mod
    except Exception as e:  # ImportError, OSError from a missing .so, ...
        raise BridgeError(
            "environment",
            "cannot import torch/numpy with %s: %s: %s. Hint: on Debian install "
            "python3-torch and python3-numpy and run the bridge with /usr/bin/python3, "
            "or set PRAGMA_PYTHON to an interpreter that has torch"
            % (sys.executable, type(e).__name__, e))
    torch, np = torch_mod, numpy


def mapped_libraries():
    """Paths of the shared objects mapped into this process, in map order."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    p = parts[5].strip()
                    if p not in paths:
                        paths.append(p)
    except OSError:
        pass
    return paths


def blas_library(paths=None):
    """The BLAS library mapped in this process (libblas first), or None."""
    paths = mapped_libraries() if paths is None else paths
    names = [os.path.basename(p) for p in paths]
    for pattern in (r"^libblas\b", r"openblas", r"mkl_rt|libmkl", r"blis"):
        for p, n in zip(paths, names):
            if re.search(pattern, n):
                return p
    return None


def allocator_name(paths=None):
    paths = mapped_libraries() if paths is None else paths
    for p in paths:
        n = os.path.basename(p)
        if "libtcmalloc" in n:
            return "tcmalloc"
        if "libjemalloc" in n:
            return "jemalloc"
    return "glibc"


def openblas_handle(paths=None):
    """A ctypes handle exposing openblas_{get,set}_num_threads, or None."""
    paths = mapped_libraries() if paths is None else paths
    for p in paths:
        n = os.path.basename(p)
        if "blas" not in n:
            continue
        try:
            lib = ctypes.CDLL(p)
            lib.openblas_get_num_threads.restype = ctypes.c_int
            lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
            return lib
        except (OSError, AttributeError):
            continue
    return None


def versions():
    """Versions that decide reference results (used in pragma's cache key)."""
    import_torch()
    paths = mapped_libraries()
    return {"python": "%d.%d.%d" % sys.version_info[:3],
            "torch": str(torch.__version__),
            "numpy": np.__version__,
            "blas": blas_library(paths),
            "allocator": allocator_name(paths)}


def runtime_config(cold, flush_bytes):
    """The baseline's configuration, recorded with every timing."""
    paths = mapped_libraries()
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "LD_PRELOAD")}
    for k in sorted(os.environ):
        if k.startswith(("MALLOC_", "OMP_", "OPENBLAS_", "GOMP_", "MKL_")):
            env[k] = os.environ[k]
    ob = openblas_handle(paths)
    return {"torch": str(torch.__version__),
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "blas": blas_library(paths),
            "blas_threads": ob.openblas_get_num_threads() if ob else None,
            "allocator": allocator_name(paths),
            "env": env,
            "mkldnn": bool(torch.backends.mkldnn.is_available()),
            "cold": bool(cold),
            "flush_bytes": int(flush_bytes)}


# --------------------------------------------------------------------------
# Dtypes and .npy files

def dtype_name(dtype):
    for name in DTYPE_NAMES:
        if getattr(torch, name) == dtype:
            return name
    return None


def tensor_to_numpy(t):
    """A C-ordered little-endian copy; bfloat16 becomes its raw uint16 bits."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy().view(np.uint16)
    else:
        arr = t.numpy()
    # np.ascontiguousarray would turn 0-d arrays into 1-d ones; astype keeps them.
    return arr.astype(arr.dtype.newbyteorder("<"), order="C", copy=True)


def numpy_to_tensor(arr, name):
    """Inverse of tensor_to_numpy given the dtype name from meta.json."""
    if name == "bfloat16":
        if arr.dtype != np.uint16:
            raise BridgeError("usage", "bfloat16 tensor stored as %s, expected uint16" % arr.dtype)
        bits = arr.astype(np.dtype("=u2"), order="C", copy=True).view(np.int16)
        return torch.from_numpy(bits).view(torch.bfloat16).clone()
    t = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="), order="C", copy=True)).clone()
    if dtype_name(t.dtype) != name:
        raise BridgeError("usage", "tensor stored as %s, meta.json says %s" % (arr.dtype, name))
    return t


def write_atomic(path, writer):
    """Write via a temp name + rename: a killed bridge leaves no complete-looking file."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, ".%s.tmp%d" % (base, os.getpid()))
    try:
        with open(tmp, "wb") as f:
            writer(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --------------------------------------------------------------------------
# Loading the problem file

def parse_override(text):
    """'NAME=VALUE' -> (name, value): int, then float, then a Python literal."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise BridgeError("bad_override", "--set expects NAME=VALUE, got %r" % text)
    raw = raw.strip()
    for conv in (int, float, ast.literal_eval):
        try:
            return name, conv(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise BridgeError("bad_override",
                      "--set %s: cannot parse %r as an int, a float or a Python literal" % (name, raw))


class _OverrideAssignments(ast.NodeTransformer):
    """Rewrites top-level `NAME = ...` for overridden names, so constants
    derived from them (`K = N * 2`) follow the override too."""

    def __init__(self, names):
        self.names = names

    def _value(self, node, name):
        key = ast.Constant(value=name)
        if sys.version_info < (3, 9):  # PRAGMA_PYTHON may be older than Debian's
            key = ast.Index(value=key)
        new = ast.Subscript(value=ast.Name(id="__pragma_overrides__", ctx=ast.Load()),
                            slice=key, ctx=ast.Load())
        return ast.copy_location(new, node)

    def visit_Module(self, node):
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in self.names:
                stmt.value = self._value(stmt.value, stmt.targets[0].id)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None \
                    and isinstance(stmt.target, ast.Name) and stmt.target.id in self.names:
                stmt.value = self._value(stmt.value, stmt.target.id)
        return node


def _first_line(doc):
    if not doc:
        return None
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return None


def assigned_names(tree):
    """Names bound by top-level assignments (so `from math import pi` is not a constant)."""
    names = set()

    def add(target):
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                add(t)

    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                add(t)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            add(stmt.target)
    return names


def module_constants(module, names=None):
    """Module-level public int/float constants (any case: KernelBench writes
    `batch_size = 16` as often as `N = 2048`), in definition order; only
    `names` if given."""
    out = {}
    for k, v in vars(module).items():
        if k.startswith("_") or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if names is not None and k not in names:
            continue
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            continue  # not representable in JSON
        out[k] = v
    return out


class Problem:
    """A loaded KernelBench problem file.

    Attributes: path (as given), name (file stem), module, Model, category,
    category_source ("comment" or None until inferred), description.
    """

    def __init__(self, path, overrides=()):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        if not os.path.isfile(path):
            raise BridgeError("usage", "problem file %s does not exist" % path)
        try:
            with open(path, "rb") as f:
                source = f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise BridgeError("usage", "cannot read %s: %s" % (path, e))
        self.overrides = dict(overrides)
        self.category, self.category_source = self._category_comment(source)
        self.module = self._execute(source)
        self._check_symbols()

    # -- loading

    def _category_comment(self, source):
        """`# pragma: category=X` among the leading comment lines."""
        for lineno, line in enumerate(source.splitlines(), 1):
            s = line.strip()
            if s and not s.startswith("#"):
                break
            m = re.match(r"#\s*pragma:\s*category\s*=\s*([\w/-]+)", s)
            if m:
                cat = m.group(1).lower()
                cat = CATEGORY_ALIASES.get(cat, cat)
                if cat not in CATEGORIES:
                    where = "%s:%d" % (self.path, lineno)
                    raise BridgeError("syntax_error", "%s: unknown category %r (expected one of %s)"
                                      % (where, m.group(1), ", ".join(CATEGORIES)), where)
                return cat, "comment"
        return None, None

    def _execute(self, source):
        try:
            tree = ast.parse(source, filename=self.path)
            if self.overrides:
                tree = ast.fix_missing_locations(_OverrideAssignments(set(self.overrides)).visit(tree))
            code = compile(tree, self.path, "exec")
        except SyntaxError as e:
            where = "%s:%s" % (self.path, e.lineno) if e.lineno else None
            raise BridgeError("syntax_error", "%s: SyntaxError: %s" % (where or self.path, e.msg), where)
        except ValueError as e:  # e.g. null bytes
            raise BridgeError("syntax_error", "%s: %s" % (self.path, e))
        self.docstring = ast.get_docstring(tree)
        self.assigned = assigned_names(tree) | set(self.overrides)

        absdir = os.path.dirname(os.path.abspath(self.path))
        modname = "pragma_problem_%s_%08x" % (re.sub(r"\W", "_", self.name),
                                               zlib.crc32(os.path.abspath(self.path).encode()))
        loader = importlib.machinery.SourceFileLoader(modname, self.path)  # any file suffix
        spec = importlib.util.spec_from_file_location(modname, self.path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__pragma_overrides__"] = self.overrides
        sys.modules[modname] = module
        # The problem may import a sibling module; the path entry is temporary.
        sys.path.insert(0, absdir)
        try:
            self.call("importing the problem", exec, code, module.__dict__)
        finally:
            try:
                sys.path.remove(absdir)
            except ValueError:
                pass
            module.__dict__.pop("__pragma_overrides__", None)
        for name, value in self.overrides.items():
            if name not in module.__dict__:
                known = [k for k in module_constants(module, self.assigned) if k not in self.overrides]
                raise BridgeError("bad_override", "--set %s: %s defines no module-level name %s "
                                  "(its constants: %s)" % (name, self.path, name, ", ".join(known) or "none"))
            setattr(module, name, value)
        return module

    def _check_symbols(self):
        m = self.module
        missing = [s for s in ("Model", "get_inputs", "get_init_inputs") if not hasattr(m, s)]
        if missing:
            raise BridgeError("missing_symbol", "%s does not define %s (a KernelBench problem needs "
                              "class Model(nn.Module), get_inputs() and get_init_inputs())"
                              % (self.path, ", ".join(missing)))
        import_torch()
        if not (inspect.isclass(m.Model) and issubclass(m.Model, torch.nn.Module)):
            raise BridgeError("missing_symbol", "%s: Model is not a subclass of torch.nn.Module" % self.path)
        for s in ("get_inputs", "get_init_inputs"):
            if not callable(getattr(m, s)):
                raise BridgeError("missing_symbol", "%s: %s is not callable" % (self.path, s))
        self.Model = m.Model

    # -- calling into the problem

    def call(self, what, fn, *args):
        """Run problem code; turn its exceptions into problem_exception with
        the last traceback frame that lies in the problem file."""
        # pragma shows this while it waits ("running forward()", lib/task/bridge.c);
        # once per change, so timing loops write (and pay for) nothing.
        if getattr(self, "_phase", None) != what:
            self._phase = what
            log("running %s" % what)
        try:
            return fn(*args)
        except BridgeError:
            raise
        except (Exception, SystemExit) as e:
            frames = traceback.extract_tb(e.__traceback__)
            mine = [f for f in frames if f.filename == self.path]
            where = "%s:%d" % (self.path, mine[-1].lineno) if mine else None
            text = "%s: %s" % (type(e).__name__, e)
            hint = ""
            if isinstance(e, MemoryError) or "can't allocate memory" in str(e):
                hint = " Hint: scale the problem down with --set NAME=VALUE"
            log("%s failed:\n%s" % (what, "".join(traceback.format_exception(type(e), e, e.__traceback__))))
            raise BridgeError("problem_exception", "%s failed%s: %s%s"
                              % (what, " at " + where if where else "", text, hint), where)

    # -- facts

    def constants(self):
        return module_constants(self.module, self.assigned)

    def description(self):
        return _first_line(self.docstring) or _first_line(self.Model.__dict__.get("__doc__"))

    def forward_arg_names(self, model, n):
        """forward()'s parameter names; in0, in1... where they run out."""
        names = []
        try:
            for p in inspect.signature(model.forward).parameters.values():
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    names.append(p.name)
        except (TypeError, ValueError):
            pass
        return [names[i] if i < len(names) else "in%d" % i for i in range(n)]


# --------------------------------------------------------------------------
# One seed: model, inputs, state

class Entry:
    """One exported input tensor: name, role (input/param/buffer), tensor
    (a private CPU contiguous copy), python_scalar (float/int/bool or None)."""

    def __init__(self, name, role, tensor, python_scalar=None):
        self.name, self.role, self.tensor, self.python_scalar = name, role, tensor, python_scalar

    def meta(self):
        d = {"name": self.name, "role": self.role, "dtype": dtype_name(self.tensor.dtype),
             "shape": list(self.tensor.shape)}
        if self.python_scalar:
            d["python_scalar"] = self.python_scalar
        return d


def _check_dtype(t, what):
    if dtype_name(t.dtype) is None:
        raise BridgeError("bad_output", "%s has dtype %s; pragma supports %s"
                          % (what, t.dtype, ", ".join(DTYPE_NAMES)))


def _snapshot(t):
    return t.detach().cpu().contiguous().clone()


def _scalar_tensor(v):
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool), "bool"
    if isinstance(v, int):
        return torch.tensor(v, dtype=torch.int64), "int"
    return torch.tensor(v, dtype=torch.float32), "float"


def state_roles(model):
    """state_dict key -> 'param' | 'buffer', in state_dict order."""
    roles = {}
    for key in model.state_dict().keys():
        modpath, _, leaf = key.rpartition(".")
        mod = model.get_submodule(modpath) if modpath else model
        if leaf in mod._parameters:
            roles[key] = "param"
        elif leaf in mod._buffers:
            roles[key] = "buffer"
        else:
            raise BridgeError("bad_output", "state_dict entry %s is neither a parameter nor a buffer "
                              "(extra state is not supported)" % key)
    return roles


def seed_everything(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))


def build_model(problem, seed, init_out=None):
    """torch.manual_seed(seed); Model(*get_init_inputs()) in training mode.
    init_out (a list), when given, receives get_init_inputs()'s values."""
    seed_everything(seed)
    init = problem.call("get_init_inputs()", problem.module.get_init_inputs)
    if not isinstance(init, (list, tuple)):
        raise BridgeError("bad_output", "get_init_inputs() returned %s, expected a list"
                          % type(init).__name__)
    if init_out is not None:
        init_out.extend(init)
    model = problem.call("Model(*get_init_inputs())", problem.Model, *init)
    model.train()
    return model


# --------------------------------------------------------------------------
# task facts: what the forward pass depends on that no tensor shows

FACT_TEXT_MAX = 240
FACTS_MAX = 32


def _fact_value(v, depth=0):
    """A JSON-safe form of a hyper-parameter (None when it has none)."""
    if isinstance(v, bool) or isinstance(v, int) or isinstance(v, str):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else None
    if isinstance(v, (list, tuple)) and depth < 3 and len(v) <= 64:
        return [_fact_value(x, depth + 1) for x in v]
    return None


def _fact_text(v):
    """How a model would write it: (64, 128, 128), 1e-05, 'mean', tensor [3, 4] float32."""
    if torch is not None and isinstance(v, torch.Tensor):
        return "tensor %s %s" % (list(v.shape), dtype_name(v.dtype))
    if torch is not None and isinstance(v, torch.nn.Module):
        return type(v).__name__
    text = repr(v)
    return text if len(text) <= FACT_TEXT_MAX else text[:FACT_TEXT_MAX - 3] + "..."


def init_param_names(model_cls, n):
    """Model.__init__'s parameter names for n positional values; arg<i> for
    values caught by *args or beyond the signature."""
    names, star = [], None
    try:
        params = list(inspect.signature(model_cls.__init__).parameters.values())[1:]  # drop self
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            star = p.name
            break
    out = []
    for i in range(n):
        if i < len(names):
            out.append(names[i])
        elif star:
            out.append("%s[%d]" % (star, i - len(names)))
        else:
            out.append("arg%d" % i)
    return out


def init_facts(problem, init):
    """[{"name", "value", "text"}] for Model(*get_init_inputs())."""
    names = init_param_names(problem.Model, len(init))
    return [{"name": n, "value": _fact_value(v), "text": _fact_text(v)} for n, v in zip(names, init)]


def attribute_facts(model):
    """The model's own plain settings (self.dim = dim, self.eps = 1e-5):
    numbers, strings and short tuples of them, in assignment order."""
    out = []
    for k, v in vars(model).items():
        if k.startswith("_") or k == "training" or len(out) >= FACTS_MAX:
            continue
        val = _fact_value(v)
        if val is None or (isinstance(val, list) and any(x is None or isinstance(x, list) for x in val)):
            continue
        out.append({"name": k, "value": val, "text": _fact_text(v)})
    return out


def module_facts(model):
    """Submodules with settings (nn.MaxPool2d's kernel_size, stride,
    padding; nn.LayerNorm's eps): their extra_repr, which is how torch
    prints a module's hyper-parameters."""
    out = []
    for name, mod in model.named_modules():
        if not name or len(out) >= FACTS_MAX:
            continue
        try:
            cfg = mod.extra_repr()
        except Exception:  # a user module's extra_repr may fail; it only costs the fact
            continue
        if not cfg:
            continue
        if len(cfg) > FACT_TEXT_MAX:
            cfg = cfg[:FACT_TEXT_MAX - 3] + "..."
        out.append({"name": name, "type": type(mod).__name__, "config": cfg})
    return out


class Instance:
    """Model and inputs for one seed, with the exported snapshot taken before forward()."""

    def __init__(self, problem, seed):
        self.seed = seed
        self.init = []
        self.model = build_model(problem, seed, self.init)
        seed_everything(seed + INPUT_SEED_OFFSET)
        raw = problem.call("get_inputs()", problem.module.get_inputs)
        if not isinstance(raw, (list, tuple)):
            raise BridgeError("bad_output", "get_inputs() returned %s, expected a list of tensors"
                              % type(raw).__name__)
        self.args = list(raw)
        names = problem.forward_arg_names(self.model, len(self.args))
        self.entries = []
        for i, (name, v) in enumerate(zip(names, self.args)):
            if isinstance(v, torch.Tensor):
                t, scalar = _snapshot(v), None
            elif isinstance(v, (bool, int, float)):
                t, scalar = _scalar_tensor(v)
            else:
                raise BridgeError("bad_output", "get_inputs()[%d] (%s) is a %s; pragma supports tensors "
                                  "and Python scalars" % (i, name, type(v).__name__))
            _check_dtype(t, "input %s" % name)
            self.entries.append(Entry(name, "input", t, scalar))
        roles = state_roles(self.model)
        for key, t in self.model.state_dict().items():
            t = _snapshot(t)
            _check_dtype(t, "%s %s" % (roles[key], key))
            self.entries.append(Entry(key, roles[key], t))

    def fresh_args(self):
        """Copies of the forward arguments, so a forward that writes its inputs cannot leak."""
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in self.args]


def run_forward(problem, model, args, mode=None):
    """with torch.no_grad(): model(*args), outputs flattened one level and
    copied.  mode (a TorchDispatchMode) sees the forward's ops and nothing else."""
    with torch.no_grad():
        if mode is None:
            out = problem.call("forward()", model, *args)
        else:
            with mode:
                out = problem.call("forward()", model, *args)
    return collect_outputs(out)


def collect_outputs(out):
    if isinstance(out, torch.Tensor):
        outs = [out]
    elif isinstance(out, (tuple, list)):
        outs = list(out)
    else:
        raise BridgeError("bad_output", "forward() returned %s; pragma needs a tensor or a tuple/list "
                          "of tensors" % type(out).__name__)
    for i, t in enumerate(outs):
        if not isinstance(t, torch.Tensor):
            raise BridgeError("bad_output", "forward() output %d is %s, not a tensor" % (i, type(t).__name__))
        _check_dtype(t, "output %d" % i)
    return [_snapshot(t) for t in outs]


# --------------------------------------------------------------------------
# Determinism

def outputs_differ(a, b):
    """True when two output lists differ beyond RANDOM_RTOL of each tensor's max |value|."""
    if len(a) != len(b):
        return True
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return True
        if not (x.is_floating_point() or x.is_complex()):
            if not torch.equal(x, y):
                return True
            continue
        x, y = x.double(), y.double()
        if not torch.equal(torch.isnan(x), torch.isnan(y)):
            return True
        fin = torch.isfinite(x) & torch.isfinite(y)
        if not torch.equal(x[~fin & ~torch.isnan(x)], y[~fin & ~torch.isnan(y)]):
            return True
        if fin.any():
            xf, yf = x[fin], y[fin]
            scale = max(float(yf.abs().max()), float(xf.abs().max()))
            if float((xf - yf).abs().max()) > RANDOM_RTOL * scale:
                return True
    return False


def dropout_modules(model):
    """Names of dropout-like modules that are active (training, p > 0)."""
    found = []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training and m.p > 0:
            found.append("%s (%s, p=%g)" % (name or "model", type(m).__name__, m.p))
    return found


# --------------------------------------------------------------------------
# Op recording, FLOP counting, category inference

ZERO_FLOP_OPS = set("""
view _unsafe_view _reshape_alias reshape t transpose permute expand expand_as squeeze unsqueeze
slice select narrow narrow_copy as_strided alias detach clone copy _to_copy to contiguous
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full
full_like new_zeros new_ones new_full fill zero cat stack split split_with_sizes chunk unbind
index index_select index_put gather scatter masked_scatter masked_select take flip roll repeat
constant_pad_nd reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d
replication_pad2d replication_pad3d lift_fresh lift_fresh_copy lift _local_scalar_dense
scalar_tensor arange linspace tril triu diag diagonal diag_embed unfold im2col col2im sort topk
argsort bernoulli rand randn randint normal uniform rand_like randn_like randint_like nonzero
view_as movedim swapaxes resize set embedding pixel_shuffle pixel_unshuffle channel_shuffle
upsample_nearest1d upsample_nearest2d upsample_nearest3d _unsafe_index unique _unique2 eye randperm
_efficientzerotensor one_hot
""".split())

MATMUL_OPS = set("mm addmm bmm baddbmm addbmm mv addmv dot vdot matmul linear _addmm_activation".split())
CONV_OPS = set("""convolution _convolution convolution_overrideable conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d mkldnn_convolution _conv_depthwise2d
slow_conv3d slow_conv_dilated2d slow_conv_dilated3d slow_conv_transpose2d slow_conv_transpose3d
_slow_conv2d_forward thnn_conv2d""".split())
POOL_OPS = set("""max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices
max_pool3d_with_indices avg_pool1d avg_pool2d avg_pool3d mkldnn_max_pool2d mkldnn_max_pool3d""".split())
ADAPTIVE_POOL_OPS = set("""adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
_adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
mkldnn_adaptive_avg_pool2d""".split())
NORM_OPS = set("""native_layer_norm layer_norm native_batch_norm batch_norm _native_batch_norm_legit
_native_batch_norm_legit_no_training _batch_norm_impl_index native_group_norm group_norm
instance_norm rms_norm""".split())
SOFTMAX_OPS = set("_softmax softmax _log_softmax log_softmax".split())
REDUCE_OPS = set("""sum mean amax amin max min prod argmax argmin aminmax nansum nanmean all any
count_nonzero trace median nanmedian mode""".split())
CUMULATIVE_OPS = set("cumsum cumprod cummax cummin logcumsumexp".split())
VECTOR_NORM_OPS = set("norm linalg_vector_norm frobenius_norm".split())
LOSS_OPS = set("""mse_loss l1_loss smooth_l1_loss huber_loss soft_margin_loss binary_cross_entropy
binary_cross_entropy_with_logits kl_div nll_loss nll_loss_forward nll_loss2d_forward nll_loss_nd
cross_entropy_loss multi_margin_loss multilabel_margin_loss_forward hinge_embedding_loss
margin_ranking_loss cosine_embedding_loss poisson_nll_loss triplet_margin_loss ctc_loss""".split())
ACTIVATION_OPS = set("""relu relu6 gelu sigmoid tanh elu selu celu leaky_relu hardtanh hardsigmoid
hardswish silu mish softplus softshrink hardshrink threshold log_sigmoid_forward prelu
_prelu_kernel rrelu_with_noise glu logsigmoid""".split()) | SOFTMAX_OPS
POINTWISE_OPS = set("""add sub rsub mul div true_divide floor_divide remainder fmod neg abs exp exp2
expm1 log log2 log10 log1p sqrt rsqrt reciprocal pow square sign sgn floor ceil round trunc frac
sin cos tan asin acos atan sinh cosh asinh acosh atanh atan2 erf erfc erfinv logit clamp clamp_min
clamp_max clip minimum maximum fmin fmax where masked_fill lt le gt ge eq ne logical_and
logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_not bitwise_xor isnan isinf
isfinite nan_to_num xlogy hypot heaviside copysign signbit deg2rad sinc lgamma digamma
""".split()) | (ACTIVATION_OPS - SOFTMAX_OPS)
UNCOUNTABLE_OPS = set("""cholesky cholesky_solve cholesky_inverse lu_solve lu_unpack _lu_with_info
triangular_solve svd _svd_helper eig symeig qr geqrf orgqr ormqr inverse det logdet slogdet solve
lstsq matrix_exp pinverse stft istft nuclear_norm""".split())

# Ops that evaluate a transcendental function (exp, log, tanh, erf, ...) per
# element: each counts as one FLOP, though a vectorized one costs 10-20
# instructions, so "flops_transcendental" reports how many of the FLOPs they are.
TRANSCENDENTAL_OPS = set("""exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh
asinh acosh atanh atan2 erf erfc erfinv logit lgamma digamma sinc sigmoid tanh gelu elu selu celu
silu mish softplus log_sigmoid_forward logsigmoid logsumexp logcumsumexp""".split()) | SOFTMAX_OPS


def op_transcendentals(name, args, out):
    """Transcendental evaluations of one aten op: one per element it makes
    (softmax and logsumexp: per input element)."""
    if name not in TRANSCENDENTAL_OPS:
        return 0
    if name in SOFTMAX_OPS or name in ("logsumexp", "logcumsumexp"):
        targs = [a for a in args if isinstance(a, torch.Tensor)]
        return _numel(targs[0]) if targs else 0
    outs = _tensors(out)
    return _numel(outs[0]) if outs else 0


# FLOPs per element of the first tensor argument (see bridge/README.md).
INPUT_MULTIPLE = {}
INPUT_MULTIPLE.update({op: 1 for op in REDUCE_OPS | CUMULATIVE_OPS - {"logcumsumexp"}})
INPUT_MULTIPLE.update({op: 2 for op in VECTOR_NORM_OPS})
INPUT_MULTIPLE.update({op: 3 for op in "var std var_mean std_mean logcumsumexp mse_loss l1_loss".split()})
INPUT_MULTIPLE.update({op: 4 for op in """logsumexp smooth_l1_loss huber_loss soft_margin_loss
binary_cross_entropy binary_cross_entropy_with_logits kl_div""".split()})
INPUT_MULTIPLE.update({op: 5 for op in SOFTMAX_OPS})
INPUT_MULTIPLE.update({op: 6 for op in ["cross_entropy_loss"]})
INPUT_MULTIPLE.update({op: 8 for op in NORM_OPS})
OUTPUT_MULTIPLE = {op: 1 for op in POINTWISE_OPS}
OUTPUT_MULTIPLE.update({op: 2 for op in "addcmul addcdiv lerp glu".split()})

# For the RMS/L2/L1 "x / norm(x)" pattern: reductions whose results seed the
# tracking, and pointwise ops through which the mark propagates.
NORM_SEED_OPS = set("sum mean norm linalg_vector_norm frobenius_norm var std".split())
NORM_VIEW_OPS = set("expand expand_as view _reshape_alias _unsafe_view unsqueeze squeeze alias detach".split())
NORM_CARRY_OPS = set("sqrt rsqrt add sub pow reciprocal clamp clamp_min clamp_max mul div abs".split()) | NORM_VIEW_OPS


def op_base_name(func):
    """'aten::add_' -> 'add' (in-place and out variants share rules)."""
    name = func._schema.name.split("::", 1)[-1]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for t in x if isinstance(t, torch.Tensor)]
    return []


def _numel(t):
    return int(t.numel()) if isinstance(t, torch.Tensor) else 0


def _prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def op_flops(name, args, kwargs, out):
    """FLOPs of one aten op, or None if it has no simple rule (linear algebra,
    FFT).  Returns (flops, classified)."""
    outs = _tensors(out)
    out0 = outs[0] if outs else None
    targs = [a for a in args if isinstance(a, torch.Tensor)]
    in0 = targs[0] if targs else None

    if name in ZERO_FLOP_OPS:
        return 0, True
    if name in MATMUL_OPS:
        a = args[1] if name in ("addmm", "baddbmm", "addbmm", "addmv", "_addmm_activation") else args[0]
        k = int(a.shape[-1]) if a.dim() > 0 else 1
        batch = int(a.shape[0]) if name == "addbmm" else 1
        return 2 * _numel(out0) * k * batch, True
    if name in CONV_OPS:
        inp, w = args[0], args[1]
        if name in ("convolution", "_convolution", "convolution_overrideable"):
            transposed = bool(args[6]) if len(args) > 6 else bool(kwargs.get("transposed", False))
        else:
            transposed = "transpose" in name
        per = int(w.shape[1]) * _prod(w.shape[2:])  # Cin/groups (or Cout/groups) * kernel
        return 2 * (_numel(inp) if transposed else _numel(out0)) * per, True
    if name in POOL_OPS:
        dims = int(re.search(r"(\d)d", name).group(1))
        k = args[1] if len(args) > 1 else kwargs.get("kernel_size")
        k = [k] * dims if isinstance(k, int) else list(k)
        if len(k) == 1:
            k = k * dims
        return _numel(out0) * _prod(k), True
    if name in ADAPTIVE_POOL_OPS:
        return _numel(in0), True
    if name.startswith("nll_loss"):
        return _numel(args[1]) if len(args) > 1 else _numel(in0), True
    if name in INPUT_MULTIPLE:
        return INPUT_MULTIPLE[name] * _numel(in0), True
    if name == "cdist" or name == "_cdist_forward":
        return 3 * _numel(out0) * int(args[0].shape[-1]), True
    if name in UNCOUNTABLE_OPS or name.startswith(("linalg_", "_linalg_", "fft_", "_fft_")):
        return None, True
    if name in OUTPUT_MULTIPLE:
        return OUTPUT_MULTIPLE[name] * _numel(out0), True
    return _numel(out0), False  # unknown op: counted as pointwise, reported


def make_recorder():
    """An OpRecorder (a TorchDispatchMode) recording one forward()."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpRecorder(TorchDispatchMode):
        """Sees every aten op below autograd: names, FLOPs, RNG use, and the
        x / reduce(x) data flow that marks hand-written RMS/L2/L1 norms."""

        def __init__(self):
            self.ops = []
            self.flops = 0
            self.transcendentals = 0
            self.flops_known = True
            self.uncountable = []
            self.unclassified = []
            self.random_ops = []
            self.norm_pattern = False
            self.softmax_pattern = False
            self._marks = {}  # id -> (weakref, "reduce" | "exp")

        def _mark(self, t, kind):
            try:
                self._marks[id(t)] = (weakref.ref(t), kind)
            except TypeError:
                pass

        def _kind(self, t):
            m = self._marks.get(id(t))
            return m[1] if m and m[0]() is t else None

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            try:
                self._record(func, args, kwargs, out)
            except Exception as e:  # never break the forward for bookkeeping
                log("flop counter: cannot account for %s: %s" % (func, e))
                self.flops_known = False
            return out

        def _record(self, func, args, kwargs, out):
            full = "aten::" + func._schema.name.split("::", 1)[-1]
            if full not in self.ops:
                self.ops.append(full)
            tags = getattr(func, "tags", ()) or ()
            if any(getattr(tg, "name", "") == "nondeterministic_seeded" for tg in tags) \
                    and full not in self.random_ops:
                self.random_ops.append(full)
            name = op_base_name(func)
            flops, classified = op_flops(name, args, kwargs, out)
            if flops is None:
                self.flops_known = False
                if full not in self.uncountable:
                    self.uncountable.append(full)
            else:
                self.flops += flops
                self.transcendentals += op_transcendentals(name, args, out)
            if not classified and full not in self.unclassified:
                self.unclassified.append(full)
            self._track_norm(name, args, out)

        def _track_norm(self, name, args, out):
            outs = _tensors(out)
            targs = [a for a in args if isinstance(a, torch.Tensor)]
            if name == "exp":
                for t in outs:
                    self._mark(t, "exp")
                return
            if name in NORM_SEED_OPS and targs and outs and outs[0].numel() < targs[0].numel():
                for t in outs:
                    self._mark(t, "reduce")
                return
            if name in ("div", "mul") and len(targs) == 2:
                a, b = targs
                ka, kb = self._kind(a), self._kind(b)
                if kb == "reduce" and ka is None:
                    self.norm_pattern = True
                elif name == "div" and kb == "reduce" and ka == "exp":
                    self.softmax_pattern = True  # exp(x - max) / sum(...)
                elif name == "mul" and ka == "reduce" and kb is None:
                    self.norm_pattern = True
            # Carry the mark through views (expand for broadcasting) and through
            # pointwise math on the reduced values, but not into full-size
            # results such as x - mean(x).
            marked = [a for a in targs if self._kind(a) == "reduce"]
            if name in NORM_CARRY_OPS and marked and outs and (
                    name in NORM_VIEW_OPS or outs[0].numel() <= max(a.numel() for a in marked)):
                for t in outs:
                    self._mark(t, "reduce")

    return OpRecorder()


def infer_category(ops, norm_pattern=False, softmax_pattern=False):
    """Category from the aten ops of one forward (README: 'Category inference')."""
    names = set(op.split("::", 1)[-1].rstrip("_") for op in ops)
    if names & CONV_OPS:
        return "conv"
    if names & MATMUL_OPS:
        return "matmul"
    if names & NORM_OPS or norm_pattern:
        return "normalization"
    if names & LOSS_OPS or any(n.startswith("nll_loss") for n in names) or names & CUMULATIVE_OPS:
        return "others"
    if softmax_pattern:
        return "activation"
    if names & (POOL_OPS | ADAPTIVE_POOL_OPS | REDUCE_OPS | VECTOR_NORM_OPS) or \
            names & {"var", "std", "var_mean", "std_mean", "logsumexp"}:
        return "pooling_reduction"
    if names & ACTIVATION_OPS:
        return "activation"
    return "others"


# --------------------------------------------------------------------------
# info / export

class Analysis:
    """What one seed's forward tells us: outputs, ops, FLOPs, category."""

    def __init__(self, problem, inst, check_random=True):
        if check_random:
            active = dropout_modules(inst.model)
            if active:
                raise BridgeError("random_forward", "%s: %s; active in training mode: %s"
                                  % (problem.path, RANDOM_FORWARD_MSG, ", ".join(active)))
        self.outputs = run_forward(problem, inst.model, inst.fresh_args())
        if not check_random:
            return
        # Run 1 doubles as the op/FLOP recording; run 2 is plain.
        rec = make_recorder()
        args = inst.fresh_args()
        torch.manual_seed(1)
        out1 = run_forward(problem, inst.model, args, mode=rec)
        del args
        torch.manual_seed(2)
        out2 = run_forward(problem, inst.model, inst.fresh_args())
        if outputs_differ(out1, out2) or outputs_differ(self.outputs, out2):
            extra = " (random ops seen: %s)" % ", ".join(rec.random_ops) if rec.random_ops else ""
            raise BridgeError("random_forward", "%s: %s%s" % (problem.path, RANDOM_FORWARD_MSG, extra))
        self.recorder = rec

    def facts(self, problem, inst):
        """The info object (without "ok")."""
        rec = self.recorder
        category, source = problem.category, problem.category_source
        if category is None:
            category, source = infer_category(rec.ops, rec.norm_pattern, rec.softmax_pattern), "inferred"
        inputs = [e.meta() for e in inst.entries]
        outputs = [{"name": "out%d" % i, "dtype": dtype_name(t.dtype), "shape": list(t.shape)}
                   for i, t in enumerate(self.outputs)]
        nbytes = sum(e.tensor.element_size() * e.tensor.numel() for e in inst.entries) + \
            sum(t.element_size() * t.numel() for t in self.outputs)
        known = rec.flops_known
        v = versions()
        return {"name": problem.name,
                "category": category,
                "category_source": source,
                "description": problem.description(),
                "constants": problem.constants(),
                "init_args": init_facts(problem, inst.init),
                "attributes": attribute_facts(inst.model),
                "modules": module_facts(inst.model),
                "inputs": inputs,
                "outputs": outputs,
                "flops": int(rec.flops) if known else None,
                "flops_method": "aten-dispatch" if known else None,
                "flops_transcendental": int(rec.transcendentals) if known else None,
                "flops_unclassified_ops": rec.unclassified,
                "bytes": int(nbytes),
                "ops": rec.ops,
                "versions": {"python": v["python"], "torch": v["torch"], "numpy": v["numpy"]}}


def problem_info(path, overrides=(), seed=0):
    """The `info` object (without "ok") for one seed; raises BridgeError."""
    import_torch()
    problem = Problem(path, overrides)
    inst = Instance(problem, seed)
    return Analysis(problem, inst).facts(problem, inst)


def cmd_info(args, out):
    out.emit(dict({"ok": True}, **problem_info(args.problem, args.overrides)))
    return EXIT_OK


def write_set(directory, seed, facts, entries, outputs):
    """DIR/in_NNN.npy, out_NNN.npy, then meta.json last (its presence marks a complete set)."""
    os.makedirs(directory, exist_ok=True)
    meta_path = os.path.join(directory, "meta.json")
    if os.path.exists(meta_path):
        os.unlink(meta_path)
    for f in os.listdir(directory):
        if re.fullmatch(r"(in|out)_\d+\.npy", f):
            os.unlink(os.path.join(directory, f))
    meta = dict(facts, seed=seed)
    meta["inputs"] = [dict(m) for m in meta["inputs"]]
    meta["outputs"] = [dict(m) for m in meta["outputs"]]
    files = 0
    for prefix, tensors, metas in (("in", [e.tensor for e in entries], meta["inputs"]),
                                   ("out", outputs, meta["outputs"])):
        for i, (t, m) in enumerate(zip(tensors, metas)):
            fname = "%s_%03d.npy" % (prefix, i)
            arr = tensor_to_numpy(t)
            write_atomic(os.path.join(directory, fname),
                         lambda f, arr=arr: np.save(f, arr, allow_pickle=False))
            m["file"] = fname
            files += 1
    text = json.dumps(meta, indent=1, allow_nan=False).encode()
    write_atomic(meta_path, lambda f: f.write(text + b"\n"))
    return files + 1


def cmd_export(args, out):
    seeds, dirs = args.seed or [], args.out or []
    if not seeds or len(seeds) != len(dirs):
        raise BridgeError("usage", "export needs --seed S --out DIR pairs (got %d seeds, %d dirs)"
                          % (len(seeds), len(dirs)))
    for s in seeds:
        if s < 0 or s + INPUT_SEED_OFFSET >= 1 << 63:
            raise BridgeError("usage", "--seed %d out of range" % s)
    import_torch()
    problem = Problem(args.problem, args.overrides)
    facts, sets = None, []
    for seed, directory in zip(seeds, dirs):
        inst = Instance(problem, seed)
        analysis = Analysis(problem, inst, check_random=facts is None)
        if facts is None:
            facts = analysis.facts(problem, inst)
        else:  # shapes, and so ops and FLOPs, are the seed-independent part
            facts = dict(facts, inputs=[e.meta() for e in inst.entries],
                         outputs=[{"name": "out%d" % i, "dtype": dtype_name(t.dtype), "shape": list(t.shape)}
                                  for i, t in enumerate(analysis.outputs)])
        try:
            n = write_set(directory, seed, facts, inst.entries, analysis.outputs)
        except OSError as e:
            raise BridgeError("usage", "cannot write %s: %s" % (directory, e))
        log("seed %d -> %s (%d files)" % (seed, directory, n))
        sets.append({"seed": seed, "dir": directory, "files": n})
    out.emit({"ok": True, "sets": sets})
    return EXIT_OK


# --------------------------------------------------------------------------
# time

class TimingSet:
    """One exported data set loaded for timing: its own model and call args."""

    def __init__(self, problem, directory):
        meta_path = os.path.join(directory, "meta.json")
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except (OSError, ValueError) as e:
            raise BridgeError("usage", "cannot read %s: %s (export the data first)" % (meta_path, e))
        if meta.get("name") != problem.name:
            log("warning: %s was exported from %r, timing %r" % (directory, meta.get("name"), problem.name))
        consts = problem.constants()
        diff = {k: (meta.get("constants", {}).get(k), v) for k, v in consts.items()
                if meta.get("constants", {}).get(k) != v}
        if diff:
            raise BridgeError("usage", "%s was exported with other constants (%s); pass the same --set "
                              "overrides as for export" % (directory, ", ".join(
                                  "%s=%r now %r" % (k, a, b) for k, (a, b) in diff.items())))
        self.dir = directory
        args, state = [], {}
        for i, m in enumerate(meta["inputs"]):
            path = os.path.join(directory, m.get("file", "in_%03d.npy" % i))
            try:
                arr = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise BridgeError("usage", "cannot load %s: %s" % (path, e))
            t = numpy_to_tensor(arr, m["dtype"])
            if list(t.shape) != list(m["shape"]):
                raise BridgeError("usage", "%s has shape %s, meta.json says %s" % (path, list(t.shape), m["shape"]))
            if m["role"] == "input":
                scalar = m.get("python_scalar")
                args.append({"float": float, "int": int, "bool": bool}[scalar](t.item()) if scalar else t)
            else:
                state[m["name"]] = t
        self.model = build_model(problem, int(meta.get("seed", 0)))
        try:
            self.model.load_state_dict(state, strict=True)
        except RuntimeError as e:
            raise BridgeError("usage", "%s does not fit Model(*get_init_inputs()): %s" % (directory, e))
        self.args = args


class Timer:
    """The timing protocol shared with pragma's C harness (README: 'time')."""

    def __init__(self, problem, sets, cold, flush_bytes):
        self.problem, self.sets, self.cold = problem, sets, cold
        self.flush = torch.zeros(max(flush_bytes // 4, 1), dtype=torch.float32) if cold else None
        self.rep = 0

    def call(self, s):
        return self.problem.call("forward()", s.model, *s.args)

    def warmup(self, w):
        with torch.no_grad():
            for i in range(w):
                out = self.call(self.sets[i % len(self.sets)])
                del out

    def time(self, reps):
        times = []
        gc_was = gc.isenabled()
        gc.disable()
        try:
            with torch.no_grad():
                for _ in range(reps):
                    s = self.sets[self.rep % len(self.sets)]
                    self.rep += 1
                    if self.cold:
                        self.flush += 1
                    t0 = time.perf_counter_ns()
                    out = self.call(s)
                    t1 = time.perf_counter_ns()
                    del out
                    times.append(round((t1 - t0) / 1e6, 6))
        finally:
            if gc_was:
                gc.enable()
        return times


def cmd_time(args, out):
    dirs = [d for d in (args.data or "").split(",") if d]
    if not dirs:
        raise BridgeError("usage", "time needs --data DIR1,DIR2,...")
    if args.warmup < 0 or (args.reps < 1 and not args.serve) or args.reps < 0:
        raise BridgeError("usage", "--warmup must be >= 0 and --reps >= 1")
    if args.threads is not None and args.threads < 1:
        raise BridgeError("usage", "--threads must be >= 1")
    if args.cold and args.flush_bytes < 4:
        raise BridgeError("usage", "--flush-bytes must be at least 4 in cold mode")
    import_torch()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
        ob = openblas_handle()
        if ob is not None:  # torch threads = OpenBLAS threads (DESIGN 3.3)
            ob.openblas_set_num_threads(args.threads)
    problem = Problem(args.problem, args.overrides)
    sets = [TimingSet(problem, d) for d in dirs]
    timer = Timer(problem, sets, args.cold, args.flush_bytes)
    config = runtime_config(args.cold, args.flush_bytes)
    timer.warmup(args.warmup)
    if not args.serve:
        out.emit({"ok": True, "times_ms": timer.time(args.reps), "sets": len(sets), "config": config})
        return EXIT_OK
    out.emit({"ok": True, "ready": True, "sets": len(sets), "config": config})
    while True:
        line = sys.stdin.readline()
        if not line:
            return EXIT_OK
        words = line.split()
        if not words:
            continue
        if words == ["quit"]:
            return EXIT_OK
        if len(words) == 2 and words[0] == "time" and words[1].isdigit() and int(words[1]) > 0:
            out.emit({"ok": True, "times_ms": timer.time(int(words[1]))})
        else:
            out.emit(BridgeError("usage", "serve: expected 'time R' (R >= 1) or 'quit', got %r"
                                 % line.strip()).to_json())


def cmd_versions(args, out):
    out.emit(dict({"ok": True}, **versions()))
    return EXIT_OK


# --------------------------------------------------------------------------
# CLI

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BridgeError("usage", "%s: %s" % (self.prog, message))


def build_parser():
    p = _Parser(prog="pragma_bridge.py", description="PyTorch bridge for pragma (see bridge/README.md)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def problem_cmd(name, help_):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("problem", metavar="PROBLEM.py")
        sp.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                        help="override a module-level constant (repeatable)")
        return sp

    sp = problem_cmd("info", "describe the problem (seed 0)")
    sp.set_defaults(func=cmd_info)

    sp = problem_cmd("export", "write input/output .npy sets")
    sp.add_argument("--seed", action="append", type=int)
    sp.add_argument("--out", action="append")
    sp.set_defaults(func=cmd_export)

    sp = problem_cmd("time", "time the PyTorch baseline on exported sets")
    sp.add_argument("--data", required=True, help="comma-separated exported set directories")
    sp.add_argument("--warmup", type=int, default=2)
    sp.add_argument("--reps", type=int, default=10)
    sp.add_argument("--threads", type=int, default=None)
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--cold", dest="cold", action="store_true", default=True)
    mode.add_argument("--warm", dest="cold", action="store_false")
    sp.add_argument("--flush-bytes", type=int, default=DEFAULT_FLUSH_BYTES)
    sp.add_argument("--serve", action="store_true")
    sp.set_defaults(func=cmd_time)

    sp = sub.add_parser("versions", help="python/torch/numpy/BLAS/allocator versions")
    sp.set_defaults(func=cmd_versions)
    return p


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "func", None):
            raise BridgeError("usage", "missing command (info, export, time, versions); see --help")
        args.overrides = [parse_override(s) for s in getattr(args, "sets", [])]
    except BridgeError as e:
        print(json.dumps(e.to_json()), flush=True)
        return e.exit_code
    out = JsonOut()
    try:
        return args.func(args, out)
    except BridgeError as e:
        out.emit(e.to_json())
        return e.exit_code
    except KeyboardInterrupt:
        out.emit(BridgeError("environment", "interrupted").to_json())
        return EXIT_ENVIRONMENT
    except Exception as e:
        log(traceback.format_exc())
        out.emit(BridgeError("environment", "internal error in pragma_bridge.py: %s: %s"
                             % (type(e).__name__, e)).to_json())
        return EXIT_ENVIRONMENT


if __name__ == "__main__":
    sys.exit(main())
