#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pragma/fs.h"

int pragma_read_file(const char *path, struct pragma_buf *out, size_t cap, struct pragma_err *err)
{
	struct stat st;
	int fd, ret = -1;

	if (!cap)
		cap = (size_t)1 << 30;
	pragma_buf_reset(out);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pragma_err_set(err, errno == ENOENT ? PRAGMA_E_INPUT : PRAGMA_E_INTERNAL,
				      "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s is a directory, not a file", path);
		goto out;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > cap) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s is too large (%lld bytes, limit %zu)", path,
			       (long long)st.st_size, cap);
		goto out;
	}
	for (;;) {
		pragma_buf_grow(out, 65536);
		ssize_t n = read(fd, out->data + out->len, out->alloc - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		out->data[out->len] = '\0';
		if (out->len > cap) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s is too large (limit %zu bytes)", path, cap);
			goto out;
		}
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

int pragma_write_file_atomic(const char *path, const void *data, size_t len, struct pragma_err *err)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;
	const char *p = data;
	int fd, ret = -1;

	pragma_buf_addf(&tmp, "%s.tmp.XXXXXX", path);
	fd = mkostemp(tmp.data, O_CLOEXEC);
	if (fd < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot create %s: %s", tmp.data, strerror(errno));
		goto out;
	}
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot write %s: %s", tmp.data, strerror(errno));
			close(fd);
			unlink(tmp.data);
			goto out;
		}
		p += n;
		len -= (size_t)n;
	}
	fchmod(fd, 0644);
	if (close(fd) < 0 || rename(tmp.data, path) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp.data);
		goto out;
	}
	ret = 0;
out:
	pragma_buf_release(&tmp);
	return ret;
}

int pragma_mkdir_p(const char *path, int mode, struct pragma_err *err)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return pragma_err_set(err, PRAGMA_E_INPUT, "bad directory path '%s'", path);
	memcpy(buf, path, n + 1);
	for (char *s = buf + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
				return pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot create directory %s: %s",
						      buf, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	if (!pragma_is_dir(path))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "%s exists and is not a directory", path);
	return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(p) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(p) < 0 && errno != ENOENT ? -1 : 0;
}

int pragma_rm_rf(const char *path, struct pragma_err *err)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : pragma_err_set(err, PRAGMA_E_INTERNAL, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot remove %s: %s", path,
							strerror(errno)) : 0;
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) < 0)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot remove %s: %s", path, strerror(errno));
	return 0;
}

int pragma_mkdtemp(const char *parent, const char *prefix, struct pragma_buf *path, struct pragma_err *err)
{
	if (pragma_mkdir_p(parent, 0755, err) < 0)
		return -1;
	pragma_buf_reset(path);
	pragma_buf_addf(path, "%s/%sXXXXXX", parent, prefix);
	if (!mkdtemp(path->data))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot create a directory in %s: %s", parent,
				      strerror(errno));
	return 0;
}

int pragma_path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int pragma_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static uint64_t du_total;

static int du_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)p;
	(void)ftw;
	if (flag == FTW_F && S_ISREG(sb->st_mode))
		du_total += (uint64_t)sb->st_size;
	return 0;
}

uint64_t pragma_du(const char *path)
{
	du_total = 0;
	nftw(path, du_one, 32, FTW_PHYS);
	return du_total;
}

int pragma_exe_dir(struct pragma_buf *out)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
	pragma_buf_reset(out);
	pragma_buf_adds(out, buf);
	return 0;
}

int pragma_data_path(const char *name, struct pragma_buf *out, struct pragma_err *err)
{
	const char *home = getenv("PRAGMA_HOME");
	struct pragma_buf exe = PRAGMA_BUF_INIT;

	pragma_buf_reset(out);
	if (home && *home) {
		pragma_buf_addf(out, "%s/%s", home, name);
		if (pragma_path_exists(out->data))
			return 0;
		return pragma_err_set(err, PRAGMA_E_ENV, "%s not found under PRAGMA_HOME=%s", name, home);
	}
#ifdef PRAGMA_SOURCE_DIR
	pragma_buf_addf(out, "%s/%s", PRAGMA_SOURCE_DIR, name);
	if (pragma_path_exists(out->data))
		return 0;
#endif
	if (pragma_exe_dir(&exe) == 0) {
		pragma_buf_reset(out);
		pragma_buf_addf(out, "%s/../share/pragma/%s", exe.data, name);
		pragma_buf_release(&exe);
		if (pragma_path_exists(out->data))
			return 0;
	}
	pragma_err_set(err, PRAGMA_E_ENV, "cannot find pragma's %s directory", name);
	pragma_err_hint(err, "set PRAGMA_HOME to the pragma source tree");
	return -1;
}

int pragma_cache_dir(struct pragma_buf *out, struct pragma_err *err)
{
	const char *dir = getenv("PRAGMA_CACHE_DIR");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	pragma_buf_reset(out);
	if (dir && *dir)
		pragma_buf_adds(out, dir);
	else if (xdg && *xdg)
		pragma_buf_addf(out, "%s/pragma", xdg);
	else if (home && *home)
		pragma_buf_addf(out, "%s/.cache/pragma", home);
	else
		return pragma_err_set(err, PRAGMA_E_ENV, "no cache directory: set PRAGMA_CACHE_DIR or HOME");
	return pragma_mkdir_p(out->data, 0755, err);
}

void pragma_path_stem(const char *path, struct pragma_buf *out)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		n--;
	dot = memrchr(base, '.', n);
	if (dot && dot != base)
		n = (size_t)(dot - base);
	pragma_buf_reset(out);
	pragma_buf_add(out, base, n);
}
