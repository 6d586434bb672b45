/*
 * Leveled messages and the progress line (see pragma/log.h). Everything
 * goes through one lock and one write() per message, so a live status line
 * can be erased before a message and drawn again after it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "pragma/log.h"

#define SLOTS 16
#define TEXT_CAP 480
#define DRAW_EVERY_MS 100.0

static enum pragma_log_level log_level = PRAGMA_LOG_WARN;
static int log_fd = 2;
static int tty_mode = -1;
static double heartbeat_ms = 30000;

struct slot {
	int used;
	unsigned long seq;
	char text[TEXT_CAP];
	double t_printed; /* last plain line written for it (not a terminal) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SLOTS];
static unsigned long seq;
static double last_draw;
/* A live line is on the terminal now: read by the signal-safe clear. */
static volatile sig_atomic_t live_shown;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static const char clear_seq[] = "\r\033[K";

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void pragma_log_set_level(enum pragma_log_level level)
{
	log_level = level;
}

enum pragma_log_level pragma_log_get_level(void)
{
	return log_level;
}

void pragma_log_set_fd(int fd)
{
	log_fd = fd;
}

void pragma_log_set_tty(int tty)
{
	tty_mode = tty;
}

void pragma_progress_set_heartbeat(double seconds)
{
	heartbeat_ms = seconds * 1000;
}

/* Whole buffer, retrying short writes and EINTR; errors are dropped (there
 * is nowhere left to report them). */
static void write_all(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(log_fd, s, n);
		if (w < 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static int is_live(void)
{
	if (log_level < PRAGMA_LOG_WARN)
		return 0;
	if (tty_mode >= 0)
		return tty_mode;
	return isatty(log_fd);
}

static int columns(void)
{
	struct winsize ws;

	if (ioctl(log_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		return ws.ws_col;
	return 80;
}

static struct slot *top_locked(void)
{
	struct slot *t = NULL;

	for (int i = 0; i < SLOTS; i++)
		if (slots[i].used && (!t || slots[i].seq > t->seq))
			t = &slots[i];
	return t;
}

static void clear_locked(void)
{
	if (live_shown) {
		write_all(clear_seq, sizeof(clear_seq) - 1);
		live_shown = 0;
	}
}

static void clear_at_exit(void)
{
	pthread_mutex_lock(&lock);
	clear_locked();
	pthread_mutex_unlock(&lock);
}

static void register_atexit(void)
{
	atexit(clear_at_exit);
}

/* Draw the top step's text as the live line, cut to the terminal's width
 * (a line that wraps could no longer be rewritten in place). Counted in
 * UTF-8 characters, cut on a character boundary. */
static void draw_locked(void)
{
	struct slot *t = top_locked();
	char line[TEXT_CAP + 16];
	size_t n = 0, chars = 0, max;

	if (!t) {
		clear_locked();
		return;
	}
	pthread_once(&atexit_once, register_atexit);
	max = (size_t)columns() - 1;
	memcpy(line, clear_seq, sizeof(clear_seq) - 1);
	n = sizeof(clear_seq) - 1;
	for (const char *p = t->text; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && ++chars > max)
			break;
		line[n++] = *p;
	}
	write_all(line, n);
	live_shown = 1;
	last_draw = now_ms();
}

void pragma_log(enum pragma_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[4096];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "pragma: %s: ", names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	pthread_mutex_lock(&lock);
	int redraw = live_shown;
	clear_locked();
	/* One write per line, so lines of concurrent processes do not interleave. */
	write_all(line, (size_t)n);
	if (redraw)
		draw_locked();
	pthread_mutex_unlock(&lock);
}

/* A plain progress line (not a terminal). */
static void plain_locked(struct slot *s)
{
	char line[TEXT_CAP + 16];
	int n = snprintf(line, sizeof(line), "pragma: %s\n", s->text);

	write_all(line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
	s->t_printed = now_ms();
}

int pragma_progress_begin(const char *fmt, ...)
{
	va_list ap;
	int id = -1;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < SLOTS; i++)
		if (!slots[i].used) {
			id = i;
			break;
		}
	if (id >= 0) {
		struct slot *s = &slots[id];
		s->used = 1;
		s->seq = ++seq;
		va_start(ap, fmt);
		vsnprintf(s->text, sizeof(s->text), fmt, ap);
		va_end(ap);
		if (log_level >= PRAGMA_LOG_WARN) {
			if (is_live()) {
				if (log_level >= PRAGMA_LOG_INFO) {
					char line[TEXT_CAP + 32];
					int n = snprintf(line, sizeof(line), "pragma: info: %s\n", s->text);
					clear_locked();
					write_all(line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
				}
				draw_locked();
			} else {
				plain_locked(s);
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return id;
}

void pragma_progress_update(int id, const char *fmt, ...)
{
	va_list ap;

	if (id < 0 || id >= SLOTS)
		return;
	pthread_mutex_lock(&lock);
	struct slot *s = &slots[id];
	if (s->used) {
		va_start(ap, fmt);
		vsnprintf(s->text, sizeof(s->text), fmt, ap);
		va_end(ap);
		if (log_level >= PRAGMA_LOG_WARN) {
			double t = now_ms();
			if (is_live()) {
				if (s == top_locked() && t - last_draw >= DRAW_EVERY_MS)
					draw_locked();
			} else if (t - s->t_printed >= heartbeat_ms) {
				plain_locked(s);
			}
		}
	}
	pthread_mutex_unlock(&lock);
}

void pragma_progress_end(int id)
{
	if (id < 0 || id >= SLOTS)
		return;
	pthread_mutex_lock(&lock);
	if (slots[id].used) {
		slots[id].used = 0;
		if (live_shown)
			draw_locked(); /* the step below, or nothing */
	}
	pthread_mutex_unlock(&lock);
}

void pragma_progress_clear(void)
{
	pthread_mutex_lock(&lock);
	clear_locked();
	pthread_mutex_unlock(&lock);
}

void pragma_progress_clear_signal_safe(void)
{
	if (live_shown) {
		ssize_t w = write(log_fd, clear_seq, sizeof(clear_seq) - 1);
		(void)w;
		live_shown = 0;
	}
}
