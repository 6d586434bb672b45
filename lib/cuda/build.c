/*
 * Building CUDA candidates: one .cu file into a shared object the CUDA
 * harness dlopens. -cudart shared makes the object import the CUDA runtime
 * from libcudart.so instead of carrying a static copy (whose imports —
 * dlopen, fopen, sockets — would hide what the kernel itself uses), so the
 * harness and the kernel share one runtime and one context. -Xptxas -v
 * puts the resource report (registers, shared memory, spills) in the log.
 *
 * The object exports only the kernel ABI (pk_*) and the linker drops what
 * nothing reachable uses (-ffunction-sections, --gc-sections). That matters
 * for the import check: cudafe++ gives every __device__ function with
 * external linkage a host-side stub whose body is
 * `{ int volatile ___ = 1; ::exit(___); }` (host code can never call it),
 * so without this an ordinary `__device__ void f(float &x)` helper made the
 * object import exit. Now only host code reachable from pk_forward or a
 * constructor can bring an import in, which is what the check is about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_int.h"
#include "pragma/build.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/proc.h"
#include "pragma/run.h"

const char *pragma_cuda_default_arch(void)
{
	static char arch[32];
	const char *env = getenv("PRAGMA_CUDA_ARCH");
	struct pragma_gpu_probe p;

	if (env && *env) {
		snprintf(arch, sizeof(arch), "%s%s", strncmp(env, "sm_", 3) ? "sm_" : "", env);
		return arch;
	}
	pragma_gpu_probe(&p);
	if (p.n_devices > 0)
		snprintf(arch, sizeof(arch), "sm_%d%d", p.dev[0].cc_major, p.dev[0].cc_minor);
	else
		snprintf(arch, sizeof(arch), "sm_80");
	return arch;
}

static int has_arch_flag(const char *const *flags)
{
	for (int i = 0; flags && flags[i]; i++)
		if (!strncmp(flags[i], "-arch=", 6) || !strncmp(flags[i], "--gpu-architecture=", 19))
			return 1;
	return 0;
}

/* Version script: the harness looks up pk_forward; everything else is
 * local, so --gc-sections may drop it when unreferenced. */
static const char exports_map[] = "{\n  global: pk_*;\n  local: *;\n};\n";

/* <cache>/build/cuda-exports.map, written when missing or different. nvcc
 * splits -Xlinker values at commas, so a path with one cannot be passed. */
static int exports_map_path(struct pragma_buf *path, struct pragma_err *err)
{
	struct pragma_buf old = PRAGMA_BUF_INIT;
	int ret = -1;

	pragma_buf_reset(path);
	if (pragma_cache_dir(path, err) < 0)
		goto out;
	pragma_buf_adds(path, "/build");
	if (pragma_mkdir_p(path->data, 0755, err) < 0)
		goto out;
	pragma_buf_adds(path, "/cuda-exports.map");
	if (strchr(path->data, ',')) {
		pragma_err_set(err, PRAGMA_E_ENV, "the cache directory %s has a comma in its path, which nvcc's -Xlinker "
				      "cannot pass", path->data);
		pragma_err_hint(err, "set PRAGMA_CACHE_DIR to a path without commas");
		goto out;
	}
	if (pragma_read_file(path->data, &old, 4096, NULL) == 0 && old.len == sizeof(exports_map) - 1 &&
	    !memcmp(old.data, exports_map, old.len)) {
		ret = 0;
		goto out;
	}
	ret = pragma_write_file_atomic(path->data, exports_map, sizeof(exports_map) - 1, err);
out:
	pragma_buf_release(&old);
	return ret;
}

/* Copy the source into a private directory (the jail's only writable
 * place) as kernel.cu. */
static int jail_prepare(const char *src, struct pragma_buf *dir, struct pragma_buf *jsrc, struct pragma_buf *jout,
			struct pragma_err *err)
{
	struct pragma_buf parent = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
	int ret = -1;

	if (pragma_cache_dir(&parent, err) < 0)
		goto out;
	pragma_buf_adds(&parent, "/build");
	if (pragma_mkdir_p(parent.data, 0755, err) < 0 || pragma_mkdtemp(parent.data, ".nvcc-", dir, err) < 0)
		goto out;
	pragma_buf_addf(jsrc, "%s/kernel.cu", dir->data);
	pragma_buf_addf(jout, "%s/kernel.so", dir->data);
	if (pragma_read_file(src, &text, 16 << 20, err) < 0 ||
	    pragma_write_file_atomic(jsrc->data, text.data, text.len, err) < 0)
		goto out;
	ret = 0;
out:
	pragma_buf_release(&parent);
	pragma_buf_release(&text);
	return ret;
}

/* Append nvcc's output TEXT with the jail's copy named kernel.cu and the
 * jail's directory left out of other paths. */
static void unjail(struct pragma_buf *dst, const struct pragma_buf *text, const struct pragma_buf *jsrc,
		   const struct pragma_buf *jdir)
{
	struct pragma_buf named = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT;

	pragma_buf_add_replacing(&named, text->data, text->len, jsrc->data, "kernel.cu");
	if (jdir->len)
		pragma_buf_addf(&dir, "%s/", jdir->data);
	pragma_buf_add_replacing(dst, named.data, named.len, dir.data, "");
	pragma_buf_release(&named);
	pragma_buf_release(&dir);
}

/* The first line of nvcc's output that says "error" (or "fatal"). */
static void first_error(const char *log, char *line, size_t len)
{
	const char *first = strstr(log, "error");

	line[0] = '\0';
	if (!first)
		first = strstr(log, "fatal");
	if (!first)
		return;
	const char *bol = first;
	while (bol > log && bol[-1] != '\n')
		bol--;
	size_t k = strcspn(bol, "\n");
	snprintf(line, len, "%.*s", (int)(k < len - 1 ? k : len - 1), bol);
}

/* The toolkit's installation with symlinks resolved: nvcc's real path,
 * two levels up (/usr/local/cuda/bin/nvcc -> /usr/local/cuda-13.0; a conda
 * environment's bin/nvcc -> the environment). Empty when it cannot be
 * resolved. */
static void toolkit_install(const struct pragma_cuda_toolkit *tk, char *out, size_t len)
{
	char *real = realpath(tk->nvcc, NULL), *slash;

	out[0] = '\0';
	if (!real)
		return;
	for (int k = 0; k < 2 && (slash = strrchr(real, '/')); k++)
		*slash = '\0';
	snprintf(out, len, "%s", real[0] ? real : "/");
	free(real);
}

int pragma_cuda_build_so(const char *src, const char *out_so, const struct pragma_cuda_build_opts *o,
			 struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_cuda_toolkit tk;
	struct pragma_buf root = PRAGMA_BUF_INIT, inc = PRAGMA_BUF_INIT, inc2 = PRAGMA_BUF_INIT;
	struct pragma_buf arch = PRAGMA_BUF_INIT, harness = PRAGMA_BUF_INIT, tmpenv = PRAGMA_BUF_INIT;
	struct pragma_buf jdir = PRAGMA_BUF_INIT, jsrc = PRAGMA_BUF_INIT, jout = PRAGMA_BUF_INIT;
	struct pragma_buf msgs = PRAGMA_BUF_INIT;
	struct pragma_buf map = PRAGMA_BUF_INIT, vscript = PRAGMA_BUF_INIT;
	struct pragma_buf host_cc = PRAGMA_BUF_INIT, host_cxx = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_rlimits lim = { 0 };
	const char *argv[128];
	const char *env[4] = { NULL };
	const char *in = src, *out = out_so;
	int n = 0, ret = -1;
	char st[64], line[400], install[4096];

	if (pragma_cuda_toolkit_find(&tk, err) < 0)
		return -1;
	if (pragma_data_path("include", &root, err) < 0 || exports_map_path(&map, err) < 0)
		goto out;
	if (o && o->confine) {
		if (pragma_harness_path(&harness, err) < 0 || jail_prepare(src, &jdir, &jsrc, &jout, err) < 0)
			goto out;
		in = jsrc.data;
		out = jout.data;
		pragma_buf_addf(&tmpenv, "TMPDIR=%s", jdir.data);
		argv[n++] = harness.data;
		argv[n++] = "confine";
		argv[n++] = "--rw";
		argv[n++] = jdir.data;
		argv[n++] = "--ro";
		argv[n++] = root.data;
		argv[n++] = "--ro";
		argv[n++] = map.data;
		/* nvcc runs cicc, ptxas, fatbinary and nvlink from its own
		 * tree: read and execute, wherever the toolkit lives (conda,
		 * environment modules), symlinks resolved. */
		argv[n++] = "--rx";
		argv[n++] = tk.root;
		toolkit_install(&tk, install, sizeof(install));
		if (install[0] && strcmp(install, tk.root)) {
			argv[n++] = "--rx";
			argv[n++] = install;
		}
		/* and the host compiler nvcc runs (gcc for compiling, g++ for
		 * linking), when it lives outside /usr */
		pragma_compiler_install("gcc", &host_cc);
		pragma_compiler_install("g++", &host_cxx);
		if (host_cc.len) {
			argv[n++] = "--rx";
			argv[n++] = host_cc.data;
		}
		if (host_cxx.len && (!host_cc.len || strcmp(host_cxx.data, host_cc.data))) {
			argv[n++] = "--rx";
			argv[n++] = host_cxx.data;
		}
		argv[n++] = "--";
		env[0] = tmpenv.data;
		env[1] = "LANG=C";
		/* cicc on a large kernel takes a few GiB; a macro or template
		 * bomb is stopped here. */
		lim.address_space = (uint64_t)8 << 30;
		lim.file_size = (uint64_t)512 << 20;
		lim.cpu_seconds = (uint64_t)((o->timeout_ms ? o->timeout_ms : 300000) / 1000 + 5);
		lim.no_core = 1;
		c.limits = &lim;
		c.env = env;
	}
	pragma_buf_addf(&inc, "-I%s", root.data);
	pragma_buf_addf(&inc2, "-I%s/pragma", root.data);
	argv[n++] = tk.nvcc;
	argv[n++] = "-O3";
	if (!has_arch_flag(o ? o->flags : NULL)) {
		pragma_buf_addf(&arch, "-arch=%s", o && o->arch ? o->arch : pragma_cuda_default_arch());
		argv[n++] = arch.data;
	}
	argv[n++] = "-shared";
	/* Only pk_* exported and unreachable code dropped (see the top). */
	argv[n++] = "-Xcompiler=-fPIC,-fno-gnu-unique,-ffunction-sections,-fdata-sections";
	argv[n++] = "-Xlinker=--gc-sections";
	pragma_buf_addf(&vscript, "-Xlinker=--version-script=%s", map.data);
	argv[n++] = vscript.data;
	argv[n++] = "-cudart=shared";
	argv[n++] = "-Xptxas=-v";
	argv[n++] = "-lineinfo";
	argv[n++] = inc.data;
	argv[n++] = inc2.data;
	for (int i = 0; o && o->flags && o->flags[i] && n < 112; i++)
		argv[n++] = o->flags[i];
	argv[n++] = in;
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n] = NULL;
	c.argv = argv;
	c.timeout_ms = o && o->timeout_ms ? o->timeout_ms : 300000;
	c.out_cap = c.err_cap = 256 << 10;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install the CUDA toolkit or set PRAGMA_NVCC");
		goto out;
	}
	/* The jail's copy is kernel.cu to the author (and a model reading
	 * the log); the rest of the jail's paths mean nothing to them. */
	unjail(&msgs, &c.out, &jsrc, &jdir);
	unjail(&msgs, &c.err, &jsrc, &jdir);
	if (log) {
		pragma_buf_add(log, msgs.data, msgs.len);
		if (c.err_truncated)
			pragma_buf_adds(log, "\n[nvcc output truncated]\n");
	}
	if (!c.exited || c.exit_code) {
		struct pragma_buf all = PRAGMA_BUF_INIT;
		unjail(&all, &c.err, &jsrc, &jdir);
		unjail(&all, &c.out, &jsrc, &jdir);
		first_error(all.data, line, sizeof(line));
		pragma_buf_release(&all);
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "nvcc failed (%s)%s%s",
			       c.timed_out ? "timed out" : pragma_child_status_str(&c, st, sizeof(st)), *line ? ": " : "",
			       line);
		goto out;
	}
	if (jout.len && rename(jout.data, out_so) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot move %s to %s: %s", jout.data, out_so, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (jdir.len)
		pragma_rm_rf(jdir.data, NULL);
	pragma_child_release(&c);
	pragma_buf_release(&root);
	pragma_buf_release(&inc);
	pragma_buf_release(&inc2);
	pragma_buf_release(&arch);
	pragma_buf_release(&harness);
	pragma_buf_release(&tmpenv);
	pragma_buf_release(&jdir);
	pragma_buf_release(&jsrc);
	pragma_buf_release(&jout);
	pragma_buf_release(&msgs);
	pragma_buf_release(&map);
	pragma_buf_release(&vscript);
	pragma_buf_release(&host_cc);
	pragma_buf_release(&host_cxx);
	return ret;
}

int pragma_cuda_build_cached(const char *src, const struct pragma_cuda_build_opts *o, struct pragma_buf *so_path,
			     struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_buf text = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT, tmp = PRAGMA_BUF_INIT;
	struct pragma_buf logpath = PRAGMA_BUF_INIT, mylog = PRAGMA_BUF_INIT;
	struct pragma_cuda_toolkit tk;
	struct pragma_sha256 h;
	const char *arch = o && o->arch ? o->arch : pragma_cuda_default_arch();
	char hex[65];
	int ret = -1;

	if (pragma_cuda_toolkit_find(&tk, err) < 0)
		return -1;
	if (pragma_read_file(src, &text, 16 << 20, err) < 0)
		return -1;
	pragma_sha256_init(&h);
	pragma_sha256_field(&h, "cuda", 4);
	/* How pragma links (exports, dead-code removal): a change must not
	 * reuse objects built the old way. */
	pragma_sha256_field(&h, exports_map, sizeof(exports_map) - 1);
	pragma_sha256_field(&h, "gc-sections", 11);
	pragma_sha256_field(&h, text.data, text.len);
	pragma_sha256_field(&h, tk.nvcc, strlen(tk.nvcc));
	pragma_sha256_field(&h, tk.version, strlen(tk.version));
	pragma_sha256_field(&h, arch, strlen(arch));
	for (int i = 0; o && o->flags && o->flags[i]; i++)
		pragma_sha256_field(&h, o->flags[i], strlen(o->flags[i]));
	pragma_sha256_hex(&h, hex);
	if (pragma_cache_dir(&dir, err) < 0)
		goto out;
	pragma_buf_adds(&dir, "/build");
	if (pragma_mkdir_p(dir.data, 0755, err) < 0)
		goto out;
	pragma_buf_reset(so_path);
	pragma_buf_addf(so_path, "%s/cuda-%s.so", dir.data, hex);
	pragma_buf_addf(&logpath, "%s/cuda-%s.log", dir.data, hex);
	if (pragma_path_exists(so_path->data)) {
		if (log)
			pragma_read_file(logpath.data, log, 1 << 20, NULL);
		ret = 0;
		goto out;
	}
	pragma_buf_addf(&tmp, "%s/.tmp-cuda-%s-%d.so", dir.data, hex, (int)getpid());
	if (pragma_cuda_build_so(src, tmp.data, o, &mylog, err) < 0) {
		if (log)
			pragma_buf_add(log, mylog.data, mylog.len);
		goto out;
	}
	pragma_write_file_atomic(logpath.data, mylog.data, mylog.len, NULL);
	if (log)
		pragma_buf_add(log, mylog.data, mylog.len);
	if (rename(tmp.data, so_path->data) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot store %s: %s", so_path->data, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (tmp.len)
		unlink(tmp.data);
	pragma_buf_release(&text);
	pragma_buf_release(&dir);
	pragma_buf_release(&tmp);
	pragma_buf_release(&logpath);
	pragma_buf_release(&mylog);
	return ret;
}
