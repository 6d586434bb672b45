/* Files and directories. All return 0 or -1 with err filled. */
#ifndef PRAGMA_FS_H
#define PRAGMA_FS_H

#include <stddef.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"

/* Read a whole file; fails (PRAGMA_E_INPUT) if it is larger than cap (0: 1 GiB). */
int pragma_read_file(const char *path, struct pragma_buf *out, size_t cap, struct pragma_err *err);
/* Write via a temp file in the same directory + fsync + rename. */
int pragma_write_file_atomic(const char *path, const void *data, size_t len, struct pragma_err *err);
int pragma_mkdir_p(const char *path, int mode, struct pragma_err *err);
/* Remove a tree; missing is fine. */
int pragma_rm_rf(const char *path, struct pragma_err *err);
/* Make a fresh directory "<parent>/<prefix>XXXXXX"; path receives its name. */
int pragma_mkdtemp(const char *parent, const char *prefix, struct pragma_buf *path, struct pragma_err *err);
int pragma_path_exists(const char *path);
int pragma_is_dir(const char *path);
/* Total bytes of regular files under path (0 if missing). */
uint64_t pragma_du(const char *path);
/* Directory of the running executable (from /proc/self/exe). */
int pragma_exe_dir(struct pragma_buf *out);
/* Resolve a data directory shipped with pragma (bridge, tasks, knowledge,
 * prompts): $PRAGMA_HOME/<name>, else the source tree pragma was built from,
 * else <exe dir>/../share/pragma/<name>. */
int pragma_data_path(const char *name, struct pragma_buf *out, struct pragma_err *err);
/* $XDG_CACHE_HOME/pragma (or ~/.cache/pragma), overridden by $PRAGMA_CACHE_DIR. */
int pragma_cache_dir(struct pragma_buf *out, struct pragma_err *err);
/* Last path component without extension ("a/b/01_x.py" → "01_x"). */
void pragma_path_stem(const char *path, struct pragma_buf *out);

#endif
