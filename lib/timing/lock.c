/*
 * The measurement lock (include/pragma/timing.h): one flock(2)'d file per
 * host. flock locks belong to an open file description, so one process
 * keeps one descriptor and counts its holds itself; a second open and
 * flock in the same process would deadlock against its own first hold.
 *
 * flock alone is not fair: when a holder lets go, whichever waiter asks
 * first gets it, so with many waiters (a `bench --jobs 8` of 24
 * trajectories) one can wait an hour while others go round and round, and
 * a stream of shared holds (compiles) keeps an exclusive waiter out for
 * ever. So waiters queue first, in a directory beside the lock: each takes
 * a ticket, a file named by the time it arrived, and holds an exclusive
 * flock on it while it waits. A waiter goes for the lock itself only when
 * nothing ahead of it must go first: for an exclusive waiter, no ticket at
 * all; for a shared one, no exclusive ticket (so a waiting measurement
 * stops new compiles from slipping in before it). It waits for the one
 * ticket just ahead of it by polling that ticket's flock, which its owner
 * lets go when it gets the lock, gives up or dies, so a killed waiter never
 * blocks the queue. The queue only orders the waiters: the flock on the
 * lock file is still what excludes, so a queue that cannot be made, or a
 * ticket that is missed, costs fairness, never exclusion. A process never
 * queues while it holds the lock (a shared hold is let go before it queues
 * for an exclusive one), else it could wait on a ticket whose owner waits on
 * it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
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
	char queue[560];             /* the waiters' queue: PATH's name + ".queue" */
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
		snprintf(L.queue, sizeof(L.queue), "%s.queue", L.path);
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

/* A ticket's name: the arrival time in nanoseconds (20 digits, so names
 * sort as times), the pid, and X or S for the kind wanted. */
#define TICKET_LEN 40

struct ticket {
	int fd;                      /* our ticket, flock'd LOCK_EX while we wait; -1: not queued */
	char name[TICKET_LEN];
	int ahead_fd;                /* the live ticket we wait behind; -1: none */
	int ahead;                   /* how many tickets were ahead at the last look */
	int ino;                     /* inotify on the queue: a ticket gone, a release; -1: not yet; -2: poll */
};

static int ticket_name_ok(const char *n)
{
	return strlen(n) > 22 && strspn(n, "0123456789") == 20 && n[20] == '.' &&
	       (!strcmp(n + strlen(n) - 2, ".X") || !strcmp(n + strlen(n) - 2, ".S"));
}

/* Join the queue: make the ticket under a temporary name, lock it, and only
 * then give it its name, so no one ever sees an unlocked ticket and takes
 * its owner for dead. 0, or -1 where there is no queue (we go unqueued). */
static int ticket_take(struct ticket *t, int exclusive)
{
	char tmp[640], final[640];
	struct timespec ts;

	t->fd = t->ahead_fd = t->ino = -1;
	t->ahead = 0;
	/* PRAGMA_LOCK_QUEUE=0: plain flock (bench/lock_fairness.sh compares). */
	if (getenv("PRAGMA_LOCK_QUEUE") && !strcmp(getenv("PRAGMA_LOCK_QUEUE"), "0"))
		return -1;
	if (mkdir(L.queue, 0777) == 0)
		chmod(L.queue, 0777); /* others' processes queue here too */
	else if (errno != EEXIST)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/tmp.%d", L.queue, (int)getpid());
	t->fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (t->fd < 0)
		return -1;
	fchmod(t->fd, 0666);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(t->name, sizeof(t->name), "%011lld%09ld.%d.%c", (long long)ts.tv_sec, ts.tv_nsec, (int)getpid(),
		 exclusive ? 'X' : 'S');
	snprintf(final, sizeof(final), "%s/%s", L.queue, t->name);
	if (flock(t->fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, final) < 0) {
		unlink(tmp);
		close(t->fd);
		t->fd = -1;
		return -1;
	}
	return 0;
}

/* Tell the queue's head that the lock was let go: it waits on inotify,
 * and a flock release makes no event of its own. */
static void release_said(void)
{
	char path[640];
	int fd;

	if (!L.queue[0])
		return;
	snprintf(path, sizeof(path), "%s/released", L.queue);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return; /* no queue: no one waits in it */
	fchmod(fd, 0666); /* others' processes say so too */
	if (pwrite(fd, "r", 1, 0) != 1)
		pragma_debug("could not tell the lock's queue of a release");
	close(fd);
}

/* Sleep until something happens in the queue or MS pass. */
static void ticket_wait(struct ticket *t, int ms)
{
	char buf[4096];
	struct pollfd p;

	/* Woken when a ticket goes (the one ahead got the lock) or a holder
	 * lets go (release_said()); without inotify we poll. Made on the
	 * first wait (most takes never wait), and then the caller looks again
	 * before the first sleep: what happened before the watch made no event. */
	if (t->ino == -1) {
		int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd >= 0 && inotify_add_watch(fd, L.queue, IN_DELETE | IN_MODIFY) >= 0) {
			t->ino = fd;
			return;
		}
		if (fd >= 0)
			close(fd);
		t->ino = -2;
	}
	if (t->ino < 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		return;
	}
	p = (struct pollfd){ .fd = t->ino, .events = POLLIN };
	if (poll(&p, 1, ms) > 0)
		while (read(t->ino, buf, sizeof(buf)) > 0)
			; /* what happened does not matter: we look again */
}

static void ticket_drop(struct ticket *t)
{
	char path[640];

	if (t->ahead_fd >= 0)
		close(t->ahead_fd);
	if (t->ino >= 0)
		close(t->ino);
	if (t->fd >= 0) {
		snprintf(path, sizeof(path), "%s/%s", L.queue, t->name);
		unlink(path); /* before the close lets the one behind us look again */
		close(t->fd);
	}
	t->fd = t->ahead_fd = t->ino = -1;
}

/* Whether the ticket we wait behind is still there (its owner still waits). */
static int ticket_ahead_waits(struct ticket *t)
{
	struct stat st;

	/* Unlinked: its owner got the lock (it unlinks, then lets go). */
	if (fstat(t->ahead_fd, &st) == 0 && st.st_nlink > 0 && flock(t->ahead_fd, LOCK_SH | LOCK_NB) < 0)
		return 1;
	close(t->ahead_fd);
	t->ahead_fd = -1;
	return 0;
}

/* Find the ticket we must wait behind: the latest one ahead of ours that
 * must go first (any, for an exclusive waiter; an exclusive one, for a
 * shared waiter) and whose owner is alive. A dead owner's ticket is
 * removed. 1: waiting behind t->ahead_fd; 0: nothing ahead. */
static int ticket_look(struct ticket *t)
{
	int exclusive = t->name[strlen(t->name) - 1] == 'X';

	for (;;) {
		char best[TICKET_LEN] = "", path[640];
		struct dirent *e;
		DIR *d = opendir(L.queue);

		if (!d)
			return 0;
		t->ahead = 0;
		while ((e = readdir(d))) {
			if (!ticket_name_ok(e->d_name) || strcmp(e->d_name, t->name) >= 0)
				continue;
			t->ahead++;
			if (!exclusive && e->d_name[strlen(e->d_name) - 1] != 'X')
				continue;
			if (strcmp(e->d_name, best) > 0)
				snprintf(best, sizeof(best), "%s", e->d_name);
		}
		closedir(d);
		if (!best[0])
			return 0;
		snprintf(path, sizeof(path), "%s/%s", L.queue, best);
		t->ahead_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->ahead_fd < 0)
			continue; /* gone meanwhile: look again */
		if (ticket_ahead_waits(t))
			return 1;
		/* Its owner got the lock, or died: a dead owner's ticket goes. */
		unlink(path);
	}
}


static void take(int op, const char *what)
{
	double t0 = wall_s(), said = 0;
	struct ticket t;
	int queued, behind = 0;

	/* Even a free lock is not taken past a waiter that must go first:
	 * else a process that lets go and takes it again at once (a loop's
	 * verify, then its timing) would always beat the head of the queue. */
	queued = ticket_take(&t, op == LOCK_EX) == 0;
	if (queued)
		behind = ticket_look(&t);
	if (!behind && flock(L.fd, op | LOCK_NB) == 0)
		goto out;
	for (;;) {
		double waited = wall_s() - t0;
		/* Say what we wait for after a few seconds, then every minute. */
		if (waited >= 3 && waited - said >= (said ? 60 : 3)) {
			char who[256], q[64] = "";
			holder(who, sizeof(who));
			if (queued && t.ahead)
				snprintf(q, sizeof(q), "; %d waiting ahead", t.ahead);
			pragma_info("waiting for the measurement lock (%.0f s so far; held by %s%s) to %s", waited,
				    who[0] ? who : "another pragma process", q, what ? what : "measure");
			said = waited;
		}
		/* Woken by the queue; the timeouts catch what makes no event (a
		 * waiter or holder killed) and poll where there is no queue. */
		if (queued)
			ticket_wait(&t, behind ? 500 : 100);
		else
			nanosleep(&(struct timespec){ 0, 20 * 1000000L }, NULL);
		if (behind) {
			if (!ticket_ahead_waits(&t))
				behind = ticket_look(&t);
			continue;
		}
		if (flock(L.fd, op | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			pragma_warn("the measurement lock failed (%s): measuring without it", strerror(errno));
			break;
		}
	}
	L.waited += wall_s() - t0;
out:
	if (queued)
		ticket_drop(&t);
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
			/* From a shared hold this converts, not atomically: the
			 * shared hold is let go first, so that we never wait in the
			 * queue behind someone who waits for us; another process may
			 * measure in between, which is fine. */
			if (L.sh > 0) {
				flock(L.fd, LOCK_UN);
				release_said();
			}
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
		release_said();
	} else {
		if (L.sh <= 0 || --L.sh > 0 || L.ex > 0)
			return;
		log_hold(L.since_sh, "SH");
		flock(L.fd, LOCK_UN);
		release_said();
	}
}

void pragma_measure_lock_forget(void)
{
	if (L.fd >= 0)
		close(L.fd); /* the parent's description stays locked as it was */
	L.fd = -1;
	L.ex = L.sh = 0;
	L.waited = 0;
}

double pragma_measure_lock_waited(void)
{
	return L.waited;
}
