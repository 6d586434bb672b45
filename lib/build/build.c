#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "pragma/run.h"

static const char *compiler_of(const struct pragma_build_opts *o)
{
	const char *cc = o && o->compiler ? o->compiler : getenv("PRAGMA_CC");

	return cc && *cc ? cc : "gcc";
}

const char *pragma_compiler_version(const char *compiler)
{
	static char cache[4][96];
	static char names[4][32];
	const char *argv[] = { compiler, "-dumpfullversion", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int slot = -1;

	for (int i = 0; i < 4; i++)
		if (!strcmp(names[i], compiler))
			return cache[i];
	for (int i = 0; i < 4 && slot < 0; i++)
		if (!names[i][0])
			slot = i;
	if (slot < 0)
		slot = 0;
	snprintf(names[slot], sizeof(names[slot]), "%s", compiler);
	snprintf(cache[slot], sizeof(cache[slot]), "%s unknown", compiler);
	/* gcc's -dumpversion may say just "12"; clang lacks -dumpfullversion. */
	for (int k = 0; k < 2; k++) {
		argv[1] = k ? "-dumpversion" : "-dumpfullversion";
		c.argv = argv;
		c.timeout_ms = 10000;
		if (pragma_child_run(&c, &e) == 0 && c.exited && !c.exit_code) {
			pragma_buf_rtrim(&c.out);
			snprintf(cache[slot], sizeof(cache[slot]), "%s %s", compiler, c.out.data);
			break;
		}
	}
	pragma_child_release(&c);
	return cache[slot];
}

/* Untrusted sources compile in a jail: a private directory holding a copy
 * of the source, TMPDIR pointing there, Landlock through pragma-harness
 * confine, and limits on memory, CPU and output size. */
struct jail {
	struct pragma_buf dir, src, out, tmpdir, harness, include, install;
};

static void jail_release(struct jail *j)
{
	if (j->dir.len)
		pragma_rm_rf(j->dir.data, NULL);
	pragma_buf_release(&j->dir);
	pragma_buf_release(&j->src);
	pragma_buf_release(&j->out);
	pragma_buf_release(&j->tmpdir);
	pragma_buf_release(&j->harness);
	pragma_buf_release(&j->include);
	pragma_buf_release(&j->install);
}

void pragma_compiler_install(const char *cc, struct pragma_buf *out)
{
	struct pragma_buf found = PRAGMA_BUF_INIT;
	char *real = NULL, *slash;

	pragma_buf_reset(out);
	if (strchr(cc, '/'))
		pragma_buf_adds(&found, cc);
	else if (!pragma_which(cc, &found))
		goto out;
	real = realpath(found.data, NULL);
	if (!real)
		goto out;
	for (int k = 0; k < 2 && (slash = strrchr(real, '/')); k++)
		*slash = '\0';
	if (real[0] && strcmp(real, "/usr") && strncmp(real, "/usr/", 5))
		pragma_buf_adds(out, real);
out:
	free(real);
	pragma_buf_release(&found);
}

/* The name a build gives its source (and so its debug lines). */
static const char *source_base(const char *src_path)
{
	const char *b = strrchr(src_path, '/');

	return b && b[1] ? b + 1 : src_path;
}

static int jail_prepare(struct jail *j, const char *src_path, const char *include_root, struct pragma_err *err)
{
	struct pragma_buf parent = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
	int ret = -1;

	if (pragma_harness_path(&j->harness, err) < 0 || pragma_cache_dir(&parent, err) < 0)
		goto out;
	pragma_buf_adds(&parent, "/build");
	if (pragma_mkdir_p(parent.data, 0755, err) < 0 || pragma_mkdtemp(parent.data, ".cc-", &j->dir, err) < 0)
		goto out;
	/* The copy keeps the source's own name: the object's debug lines
	 * (which profile maps instructions to) and the compiler's messages
	 * then name the author's file, whichever way it was built. */
	pragma_buf_addf(&j->src, "%s/%.200s", j->dir.data, source_base(src_path));
	pragma_buf_addf(&j->out, "%s/kernel.so", j->dir.data);
	pragma_buf_addf(&j->tmpdir, "TMPDIR=%s", j->dir.data);
	pragma_buf_adds(&j->include, include_root);
	if (pragma_read_file(src_path, &text, 64 << 20, err) < 0 ||
	    pragma_write_file_atomic(j->src.data, text.data, text.len, err) < 0)
		goto out;
	ret = 0;
out:
	pragma_buf_release(&parent);
	pragma_buf_release(&text);
	return ret;
}

int pragma_build_so(const char *src_path, const char *out_so, const struct pragma_build_opts *o,
		    struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_buf root = PRAGMA_BUF_INIT, inc = PRAGMA_BUF_INIT, inc2 = PRAGMA_BUF_INIT;
	struct pragma_buf msgs = PRAGMA_BUF_INIT, jail_dir = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct jail j = { PRAGMA_BUF_INIT, PRAGMA_BUF_INIT, PRAGMA_BUF_INIT, PRAGMA_BUF_INIT,
			  PRAGMA_BUF_INIT, PRAGMA_BUF_INIT, PRAGMA_BUF_INIT };
	struct pragma_rlimits lim = { 0 };
	const char *argv[112];
	const char *env[4] = { NULL };
	const char *cc = compiler_of(o);
	const char *src = src_path, *out = out_so;
	int n = 0, ret = -1;
	char st[64];

	if (pragma_data_path("include", &root, err) < 0)
		return -1;
	if (o && o->confine) {
		if (jail_prepare(&j, src_path, root.data, err) < 0)
			goto out;
		src = j.src.data;
		out = j.out.data;
		argv[n++] = j.harness.data;
		argv[n++] = "confine";
		argv[n++] = "--rw";
		argv[n++] = j.dir.data;
		argv[n++] = "--ro";
		argv[n++] = j.include.data;
		pragma_compiler_install(cc, &j.install);
		if (j.install.len) {
			argv[n++] = "--rx";
			argv[n++] = j.install.data;
		}
		argv[n++] = "--";
		env[0] = j.tmpdir.data;
		env[1] = "LANG=C";
		/* A compiler that needs more than this on one kernel file is
		 * being abused (macro bombs, giant static arrays). */
		lim.address_space = (uint64_t)4 << 30;
		lim.file_size = (uint64_t)256 << 20;
		lim.cpu_seconds = (uint64_t)((o->timeout_ms ? o->timeout_ms : 120000) / 1000 + 5);
		lim.no_core = 1;
		c.limits = &lim;
		c.env = env;
	}
	/* Both <pragma/kernel.h> and "kernel.h" work in a candidate. */
	pragma_buf_addf(&inc, "-I%s", root.data);
	pragma_buf_addf(&inc2, "-I%s/pragma", root.data);
	argv[n++] = cc;
	argv[n++] = "-O3";
	argv[n++] = "-march=native";
	argv[n++] = "-fopenmp";
	argv[n++] = "-fPIC";
	argv[n++] = "-shared";
	argv[n++] = "-g";
	/* gcc's STB_GNU_UNIQUE symbols would keep an object loaded forever;
	 * clang neither makes them nor knows the flag. */
	if (!strstr(cc, "clang"))
		argv[n++] = "-fno-gnu-unique";
	argv[n++] = inc.data;
	argv[n++] = inc2.data;
	for (int i = 0; o && o->flags && o->flags[i] && n < 100; i++)
		argv[n++] = o->flags[i];
	argv[n++] = src;
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n++] = "-lm";
	argv[n] = NULL;
	c.argv = argv;
	c.timeout_ms = o && o->timeout_ms ? o->timeout_ms : 120000;
	c.out_cap = c.err_cap = 256 << 10;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install gcc/clang (scripts/install-deps.sh) or set PRAGMA_CC");
		goto out;
	}
	/* Paths of pragma's private copy mean nothing to the author (or to a
	 * model reading the log): the copy has the source's own name. */
	if (j.dir.len)
		pragma_buf_addf(&jail_dir, "%s/", j.dir.data);
	pragma_buf_add_replacing(&msgs, c.out.data, c.out.len, jail_dir.data, "");
	pragma_buf_add_replacing(&msgs, c.err.data, c.err.len, jail_dir.data, "");
	if (log) {
		pragma_buf_add(log, msgs.data, msgs.len);
		if (c.err_truncated)
			pragma_buf_adds(log, "\n[compiler output truncated]\n");
	}
	if (c.exited && c.exit_code == 127 && strstr(c.err.data, "cannot run")) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s: compiler not found", cc);
		pragma_err_hint(err, "install gcc/clang (scripts/install-deps.sh) or set PRAGMA_CC");
		goto out;
	}
	if (!c.exited || c.exit_code) {
		const char *first = msgs.len ? strcasestr(msgs.data, "error") : NULL;
		char line[400] = "";
		if (first) {
			const char *bol = first;
			while (bol > msgs.data && bol[-1] != '\n')
				bol--;
			size_t k = strcspn(bol, "\n");
			snprintf(line, sizeof(line), "%.*s", (int)(k < 399 ? k : 399), bol);
		}
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "compile failed (%s)%s%s",
			       c.timed_out ? "the compiler timed out" : pragma_child_status_str(&c, st, sizeof(st)),
			       *line ? ": " : "", line);
		goto out;
	}
	if (j.out.len && rename(j.out.data, out_so) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot move %s to %s: %s", j.out.data, out_so, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	pragma_child_release(&c);
	pragma_buf_release(&root);
	pragma_buf_release(&inc);
	pragma_buf_release(&inc2);
	pragma_buf_release(&msgs);
	pragma_buf_release(&jail_dir);
	jail_release(&j);
	return ret;
}

/* The fixed flags every build gets (pragma_build_so); part of the cache key. */
#define BUILD_RECIPE "-O3 -march=native -fopenmp -fPIC -shared -fno-gnu-unique -lm"

/* What -march=native resolves to on this host: the CPU's vendor, family,
 * model and ISA flags from /proc/cpuinfo (a cluster's nodes may differ, and
 * a build for one is not a build for another). Read once per process. */
static const char *host_cpu(void)
{
	static char id[8192];
	static int done;
	char line[4096];
	FILE *f;

	if (done)
		return id;
	done = 1;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return id;
	while (fgets(line, sizeof(line), f)) {
		static const char *const keys[] = { "vendor_id", "cpu family", "model", "model name", "flags" };
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strncmp(line, keys[k], strlen(keys[k])) &&
			    (line[strlen(keys[k])] == '\t' || line[strlen(keys[k])] == ':'))
				strncat(id, line, sizeof(id) - strlen(id) - 1);
		if (line[0] == '\n' && id[0])
			break; /* the first processor describes them all */
	}
	fclose(f);
	return id;
}

int pragma_build_cached_log(const char *src_path, const struct pragma_build_opts *o, struct pragma_buf *so_path,
			    struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT, tmp = PRAGMA_BUF_INIT;
	struct pragma_buf logpath = PRAGMA_BUF_INIT, mylog = PRAGMA_BUF_INIT;
	struct pragma_sha256 h;
	const char *cc = compiler_of(o);
	const char *ver = pragma_compiler_version(cc);
	char hex[65];
	int ret = -1;

	if (pragma_read_file(src_path, &src, 64 << 20, err) < 0)
		return -1;
	pragma_sha256_init(&h);
	pragma_sha256_field(&h, src.data, src.len);
	pragma_sha256_field(&h, ver, strlen(ver));
	/* The source's name is in the object's debug lines. */
	pragma_sha256_field(&h, source_base(src_path), strlen(source_base(src_path)));
	/* Everything else the object depends on: which compiler (its path, not
	 * only its version), the fixed part of the command line, the CPU. */
	{
		struct pragma_buf where = PRAGMA_BUF_INIT;
		if (!pragma_which(cc, &where))
			pragma_buf_adds(&where, cc);
		pragma_sha256_field(&h, where.data, where.len);
		pragma_buf_release(&where);
	}
	pragma_sha256_field(&h, BUILD_RECIPE, strlen(BUILD_RECIPE));
	pragma_sha256_field(&h, host_cpu(), strlen(host_cpu()));
	for (int i = 0; o && o->flags && o->flags[i]; i++)
		pragma_sha256_field(&h, o->flags[i], strlen(o->flags[i]));
	pragma_sha256_hex(&h, hex);
	if (pragma_cache_dir(&dir, err) < 0)
		goto out;
	pragma_buf_adds(&dir, "/build");
	if (pragma_mkdir_p(dir.data, 0755, err) < 0)
		goto out;
	pragma_buf_reset(so_path);
	pragma_buf_addf(so_path, "%s/%s.so", dir.data, hex);
	pragma_buf_addf(&logpath, "%s/%s.log", dir.data, hex);
	if (pragma_path_exists(so_path->data)) {
		if (log)
			pragma_read_file(logpath.data, log, 1 << 20, NULL);
		ret = 0;
		goto out;
	}
	pragma_buf_addf(&tmp, "%s/.tmp-%s-%d.so", dir.data, hex, (int)getpid());
	if (pragma_build_so(src_path, tmp.data, o, &mylog, err) < 0) {
		if (log)
			pragma_buf_add(log, mylog.data, mylog.len);
		goto out;
	}
	pragma_write_file_atomic(logpath.data, mylog.data, mylog.len, NULL);
	if (log)
		pragma_buf_add(log, mylog.data, mylog.len);
	if (rename(tmp.data, so_path->data) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot store %s", so_path->data);
		goto out;
	}
	ret = 0;
out:
	if (tmp.len)
		unlink(tmp.data);
	pragma_buf_release(&src);
	pragma_buf_release(&dir);
	pragma_buf_release(&tmp);
	pragma_buf_release(&logpath);
	pragma_buf_release(&mylog);
	return ret;
}

int pragma_build_cached(const char *src_path, const struct pragma_build_opts *o, struct pragma_buf *so_path,
			struct pragma_err *err)
{
	return pragma_build_cached_log(src_path, o, so_path, NULL, err);
}
