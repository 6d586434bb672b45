/* Static machine facts from /proc and /sys (pragma_machine_detect). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "machine/machine_priv.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"

/*
 * The flags worth telling a kernel writer about, in the order they are
 * printed. Fixed order (not cpuinfo's) so the string is comparable across
 * kernels that list flags differently. cpuinfo names on x86; "Features"
 * names on arm64.
 */
static const char *const isa_flags[] = {
	"sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2",
	"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512ifma",
	"avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bitalg", "avx512_vpopcntdq",
	"avx512_bf16", "avx512_fp16", "avx_vnni", "avx_vnni_int8", "avx_ifma",
	"amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "gfni", "vaes", "vpclmulqdq", "sha_ni",
	"asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm", "sme",
};

/* "<root><rel>", with root NULL or "" meaning the real file system. */
static void root_path(struct pragma_buf *b, const char *root, const char *rel)
{
	size_t n = root ? strlen(root) : 0;

	while (n && root[n - 1] == '/')
		n--;
	pragma_buf_reset(b);
	if (n)
		pragma_buf_add(b, root, n);
	pragma_buf_adds(b, rel);
}

/* A one-line sysfs/procfs file, whitespace-trimmed; -1 if unreadable or empty. */
static int read_line(const char *root, const char *rel, char *out, size_t len)
{
	struct pragma_buf path = PRAGMA_BUF_INIT, data = PRAGMA_BUF_INIT;
	int ret = -1;

	root_path(&path, root, rel);
	if (pragma_read_file(path.data, &data, 65536, NULL) < 0)
		goto out;
	pragma_buf_rtrim(&data);
	if (!data.len)
		goto out;
	snprintf(out, len, "%s", data.data);
	ret = 0;
out:
	pragma_buf_release(&path);
	pragma_buf_release(&data);
	return ret;
}

static int read_int(const char *root, const char *rel, int *out)
{
	char line[64], *end;
	long v;

	if (read_line(root, rel, line, sizeof(line)) < 0)
		return -1;
	errno = 0;
	v = strtol(line, &end, 10);
	if (errno || end == line || *end || v < 0 || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

uint64_t pragma_machine_parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	while (*end == ' ')
		end++;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')   /* "32 KB" in cpuinfo's "cache size" */
		end++;
	while (isspace((unsigned char)*end))
		end++;
	return *end ? 0 : (uint64_t)v;
}

int pragma_machine_count_cpulist(const char *s)
{
	int count = 0;

	while (isspace((unsigned char)*s))
		s++;
	while (*s) {
		char *end;
		long lo = strtol(s, &end, 10), hi;

		if (end == s || lo < 0)
			return -1;
		hi = lo;
		s = end;
		if (*s == '-') {
			s++;
			hi = strtol(s, &end, 10);
			if (end == s || hi < lo)
				return -1;
			s = end;
		}
		if (hi - lo >= INT_MAX - count)
			return -1;
		count += (int)(hi - lo + 1);
		if (*s == ',')
			s++;
		else if (*s && !isspace((unsigned char)*s))
			return -1;
		while (isspace((unsigned char)*s))
			s++;
	}
	return count;
}

int pragma_machine_count_cpumask(const char *s)
{
	int count = 0, digits = 0;

	for (; *s && !isspace((unsigned char)*s); s++) {
		if (*s == ',')
			continue;
		if (!isxdigit((unsigned char)*s))
			return -1;
		int v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		count += __builtin_popcount((unsigned)v);
		digits++;
	}
	return digits ? count : -1;
}

/* Split "key\t\t: value" in place; NULL when the line has no colon. */
static char *cpuinfo_value(char *line, char **key)
{
	char *colon = strchr(line, ':'), *e;

	if (!colon)
		return NULL;
	*colon = '\0';
	for (e = colon; e > line && isspace((unsigned char)e[-1]); e--)
		e[-1] = '\0';
	*key = line;
	for (colon++; isspace((unsigned char)*colon); colon++)
		;
	for (e = colon + strlen(colon); e > colon && isspace((unsigned char)e[-1]); e--)
		e[-1] = '\0';
	return colon;
}

static int has_flag(const char *flags, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = flags; (p = strstr(p, flag)); p += n)
		if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

static void copy_collapsed(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	/* "Intel(R) Xeon(R) Platinum 8480+    " → single spaces, trimmed */
	for (; *src && o + 1 < len; src++) {
		if (isspace((unsigned char)*src)) {
			if (o && dst[o - 1] != ' ')
				dst[o++] = ' ';
			continue;
		}
		dst[o++] = *src;
	}
	while (o && dst[o - 1] == ' ')
		o--;
	dst[o] = '\0';
}

static int parse_cpuinfo(struct pragma_machine *m, const char *root, uint64_t *cache_size_hint,
			 int *n_processors, struct pragma_err *err)
{
	struct pragma_buf path = PRAGMA_BUF_INIT, data = PRAGMA_BUF_INIT;
	char *line, *save = NULL, *flags = NULL;
	int first_block = 1, ret = -1;

	root_path(&path, root, "/proc/cpuinfo");
	if (pragma_read_file(path.data, &data, 64u << 20, err) < 0) {
		if (err)
			err->kind = PRAGMA_E_ENV;
		pragma_err_hint(err, "pragma needs /proc mounted to learn what the CPU can do");
		goto out;
	}
	*n_processors = 0;
	/* Only the first processor's block: the rest repeat it on every machine
	 * pragma targets (no hybrid P/E-core handling yet). */
	for (line = strtok_r(data.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *key, *val = cpuinfo_value(line, &key);

		if (!val)
			continue;
		if (!strcmp(key, "processor")) {
			if (++*n_processors > 1)
				first_block = 0;
			continue;
		}
		if (!first_block)
			continue;
		if (!strcmp(key, "vendor_id"))
			snprintf(m->vendor, sizeof(m->vendor), "%s", val);
		else if (!strcmp(key, "model name"))
			copy_collapsed(m->cpu_model, sizeof(m->cpu_model), val);
		else if (!strcmp(key, "cpu family"))
			m->family = atoi(val);
		else if (!strcmp(key, "model"))
			m->model = atoi(val);
		else if (!strcmp(key, "stepping"))
			m->stepping = atoi(val);
		else if (!strcmp(key, "cache size"))
			*cache_size_hint = pragma_machine_parse_size(val);
		else if (!strcmp(key, "cpu MHz"))
			m->cpu_mhz = strtod(val, NULL) > 0 ? strtod(val, NULL) : 0;
		else if ((!strcmp(key, "flags") || !strcmp(key, "Features")) && !flags)
			flags = val;
	}
	if (flags) {
		size_t o = 0;

		for (size_t i = 0; i < sizeof(isa_flags) / sizeof(isa_flags[0]); i++) {
			if (!has_flag(flags, isa_flags[i]))
				continue;
			int n = snprintf(m->isa + o, sizeof(m->isa) - o, "%s%s", o ? " " : "", isa_flags[i]);
			if (n < 0 || (size_t)n >= sizeof(m->isa) - o)
				break;
			o += (size_t)n;
		}
		m->has_avx2 = has_flag(flags, "avx2");
		m->has_fma = has_flag(flags, "fma");
		m->has_avx512f = has_flag(flags, "avx512f");
		m->hypervisor = has_flag(flags, "hypervisor");
	}
	if (!m->vendor[0])
		snprintf(m->vendor, sizeof(m->vendor), "unknown");
	if (!m->cpu_model[0])
		snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
	ret = 0;
out:
	pragma_buf_release(&path);
	pragma_buf_release(&data);
	return ret;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void read_caches(struct pragma_machine *m, const char *root)
{
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	int idx[64], n = 0;
	struct dirent *de;
	DIR *d;

	root_path(&dir, root, "/sys/devices/system/cpu/cpu0/cache");
	d = opendir(dir.data);
	if (!d) {
		pragma_debug("no cache information in %s: %s", dir.data, strerror(errno));
		goto out;
	}
	while ((de = readdir(d)) && n < (int)(sizeof(idx) / sizeof(idx[0]))) {
		char *end;
		long i;

		if (strncmp(de->d_name, "index", 5))
			continue;
		i = strtol(de->d_name + 5, &end, 10);
		if (end != de->d_name + 5 && !*end && i >= 0 && i < 1000)
			idx[n++] = (int)i;
	}
	closedir(d);
	qsort(idx, (size_t)n, sizeof(idx[0]), cmp_int);

	for (int k = 0; k < n && m->n_caches < PRAGMA_MACHINE_MAX_CACHES; k++) {
		struct pragma_cache_level c;
		char rel[128], val[4096];
		int cnt;

		memset(&c, 0, sizeof(c));   /* padding too: records compare with memcmp */

#define REL(f) (snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu0/cache/index%d/" f, idx[k]), rel)
		if (read_int(root, REL("level"), &c.level) < 0 ||
		    read_line(root, REL("type"), c.type, sizeof(c.type)) < 0 ||
		    read_line(root, REL("size"), val, sizeof(val)) < 0 ||
		    !(c.size = pragma_machine_parse_size(val))) {
			pragma_debug("skipping cache index%d: level, type or size unreadable", idx[k]);
			continue;
		}
		if (read_int(root, REL("ways_of_associativity"), &c.ways) < 0)
			c.ways = 0;
		if (read_int(root, REL("coherency_line_size"), &c.line) < 0)
			c.line = 64;
		cnt = -1;
		if (read_line(root, REL("shared_cpu_list"), val, sizeof(val)) == 0)
			cnt = pragma_machine_count_cpulist(val);
		if (cnt <= 0 && read_line(root, REL("shared_cpu_map"), val, sizeof(val)) == 0)
			cnt = pragma_machine_count_cpumask(val);
		c.shared_cpus = cnt > 0 ? cnt : 1;
#undef REL
		m->caches[m->n_caches++] = c;
	}
out:
	pragma_buf_release(&dir);
}

static void summarize_caches(struct pragma_machine *m)
{
	int llc_level = 0;

	for (int i = 0; i < m->n_caches; i++) {
		const struct pragma_cache_level *c = &m->caches[i];
		int data = strcmp(c->type, "Instruction") != 0;

		if (!data)
			continue;
		if (c->level == 1 && !m->l1d_bytes)
			m->l1d_bytes = c->size;
		if (c->level == 2 && !m->l2_bytes)
			m->l2_bytes = c->size;
		if (c->level >= llc_level) {
			llc_level = c->level;
			m->llc_bytes = c->size;
		}
	}
}

static int usable_cpus(void)
{
	/* Grow the set until the kernel accepts it: machines with >1024 CPUs. */
	for (int ncpu = 1024; ncpu <= (1 << 20); ncpu *= 2) {
		cpu_set_t *set = CPU_ALLOC((size_t)ncpu);
		size_t sz = CPU_ALLOC_SIZE((size_t)ncpu);
		int n = -1;

		if (!set)
			return -1;
		if (sched_getaffinity(0, sz, set) == 0)
			n = CPU_COUNT_S(sz, set);
		CPU_FREE(set);
		if (n > 0)
			return n;
		if (errno != EINVAL)
			return -1;
	}
	return -1;
}

int pragma_machine_detect_at(struct pragma_machine *m, const char *root, struct pragma_err *err)
{
	uint64_t cache_size_hint = 0;
	int n_processors = 0;
	char line[256];

	memset(m, 0, sizeof(*m));
	if (parse_cpuinfo(m, root, &cache_size_hint, &n_processors, err) < 0)
		return -1;

	if (read_line(root, "/sys/devices/system/cpu/online", line, sizeof(line)) == 0)
		m->online_cpus = pragma_machine_count_cpulist(line);
	if (m->online_cpus <= 0)
		m->online_cpus = n_processors > 0 ? n_processors : 1;
	m->cores = usable_cpus();
	if (m->cores <= 0)
		m->cores = m->online_cpus;

	/* cpufreq (kHz): absent in most VMs, where only cpuinfo's figure is left. */
	int khz;
	if (read_int(root, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", &khz) == 0 && khz > 0)
		m->max_mhz = khz / 1000.0;
	if (read_int(root, "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", &khz) == 0 && khz > 0)
		m->base_mhz = khz / 1000.0;

	read_caches(m, root);
	summarize_caches(m);
	if (!m->llc_bytes)   /* no sysfs caches (some VMs): cpuinfo's figure, L2 or L3 */
		m->llc_bytes = cache_size_hint;

	if (read_line(root, "/proc/sys/kernel/osrelease", m->kernel, sizeof(m->kernel)) < 0) {
		struct utsname u;

		if (uname(&u) == 0)
			snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
		else
			snprintf(m->kernel, sizeof(m->kernel), "unknown");
	}
	return 0;
}

int pragma_machine_detect(struct pragma_machine *m, struct pragma_err *err)
{
	return pragma_machine_detect_at(m, NULL, err);
}
