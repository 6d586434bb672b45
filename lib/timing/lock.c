/*
 * The measurement lock (include/pragma/timing.h): one flock(2)'d file per
 * host. flock locks belong to an open file description, so one process
 * keeps one descriptor and counts its holds itself; a second open and
 * flock in the same process would deadlock against its own first hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pragma/log.h"
#include "pragma/timing.h"

static struct {
	int fd;                      /* -1: not open; -2: cannot be opened (unlocked) */
	int ex, sh;                  /* holds of each kind by this process */
	double since_ex, since_sh;   /* when the outermost hold of each kind began */
	double waited;
	char path[512];
} L = { .fd = -1 };

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *pragma_measure_lock_path(void)
{
	const char *dir = getenv("PRAGMA_LOCK_DIR");
	struct stat st;

	if (!L.path[0]) {
		/* /dev/shm is memory: always this host's, never a shared home. */
		if (!dir || !*dir)
			dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ?
				      "/dev/shm" : "/tmp";
		snprintf(L.path, sizeof(L.path), "%s/pragma-measure.lock", dir);
	}
	return L.path;
}

static int open_lock(void)
{
	if (L.fd >= 0 || L.fd == -2)
		return L.fd;
	L.fd = open(pragma_measure_lock_path(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (L.fd < 0) {
		pragma_warn("cannot open the measurement lock %s (%s): measuring without it; concurrent pragma runs "
			    "may disturb each other's numbers",
			    L.path, strerror(errno));
		L.fd = -2;
		return -2;
	}
	/* Others' pragma processes (other users too) must be able to take it. */
	fchmod(L.fd, 0666);
	return L.fd;
}

/* Who holds it, as its last exclusive holder wrote: "pid what". */
static void holder(char *out, size_t len)
{
	ssize_t n = pread(L.fd, out, len - 1, 0);

	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

static void take(int op, const char *what)
{
	double t0 = wall_s(), said = 0;

	if (flock(L.fd, op | LOCK_NB) == 0)
		return;
	for (;;) {
		double waited = wall_s() - t0;
		/* Say what we wait for after a few seconds, then every minute. */
		if (waited >= 3 && waited - said >= (said ? 60 : 3)) {
			char who[256];
			holder(who, sizeof(who));
			pragma_info("waiting for the measurement lock (%.0f s so far; held by %s) to %s", waited,
				    who[0] ? who : "another pragma process", what ? what : "measure");
			said = waited;
		}
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		if (flock(L.fd, op | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			pragma_warn("the measurement lock failed (%s): measuring without it", strerror(errno));
			break;
		}
	}
	L.waited += wall_s() - t0;
}

static void log_hold(double since, const char *kind)
{
	const char *log = getenv("PRAGMA_LOCK_LOG");
	char line[112];
	int n, lf;

	if (!log || !*log)
		return;
	n = snprintf(line, sizeof(line), "%d %.6f %.6f %s\n", (int)getpid(), since, wall_s(), kind);
	lf = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (lf < 0)
		return;
	if (write(lf, line, (size_t)n) != n)
		pragma_warn("PRAGMA_LOCK_LOG: short write to %s", log);
	close(lf);
}

int pragma_measure_lock(enum pragma_lock_kind kind, const char *what)
{
	if (open_lock() < 0)
		return kind;
	if (kind == PRAGMA_LOCK_EXCLUSIVE) {
		if (L.ex++ == 0) {
			/* From a shared hold this converts (not atomically: another
			 * process may measure in between, which is fine). */
			take(LOCK_EX, what);
			L.since_ex = wall_s();
			char line[256];
			int n = snprintf(line, sizeof(line), "pid %d (%s) since %.0f\n", (int)getpid(),
					 what ? what : "measuring", L.since_ex);
			if (ftruncate(L.fd, 0) == 0 && pwrite(L.fd, line, (size_t)n, 0) != n)
				pragma_debug("could not record the lock holder");
		}
	} else if (L.sh++ == 0 && L.ex == 0) {
		take(LOCK_SH, what);
		L.since_sh = wall_s();
	}
	return kind;
}

void pragma_measure_unlock(int token)
{
	if (L.fd < 0)
		return;
	if (token == PRAGMA_LOCK_EXCLUSIVE) {
		if (L.ex <= 0 || --L.ex > 0)
			return;
		log_hold(L.since_ex, "EX");
		if (L.sh > 0) {
			flock(L.fd, LOCK_SH); /* back to the shared hold still open */
			L.since_sh = wall_s();
		} else {
			flock(L.fd, LOCK_UN);
		}
	} else {
		if (L.sh <= 0 || --L.sh > 0 || L.ex > 0)
			return;
		log_hold(L.since_sh, "SH");
		flock(L.fd, LOCK_UN);
	}
}

double pragma_measure_lock_waited(void)
{
	return L.waited;
}
