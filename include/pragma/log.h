/*
 * The library's only way to print: leveled messages and progress, on stderr.
 *
 * Levels: the CLI starts at WARN; -v raises it to INFO (-v -v: DEBUG), -q
 * lowers it to ERROR. A message is one line "pragma: LEVEL: TEXT", written
 * with one write() so lines of concurrent processes do not interleave.
 */
#ifndef PRAGMA_LOG_H
#define PRAGMA_LOG_H

enum pragma_log_level { PRAGMA_LOG_ERROR, PRAGMA_LOG_WARN, PRAGMA_LOG_INFO, PRAGMA_LOG_DEBUG };

void pragma_log_set_level(enum pragma_log_level level);
enum pragma_log_level pragma_log_get_level(void);
__attribute__((format(printf, 2, 3)))
void pragma_log(enum pragma_log_level level, const char *fmt, ...);

#define pragma_warn(...)  pragma_log(PRAGMA_LOG_WARN, __VA_ARGS__)
#define pragma_info(...)  pragma_log(PRAGMA_LOG_INFO, __VA_ARGS__)
#define pragma_debug(...) pragma_log(PRAGMA_LOG_DEBUG, __VA_ARGS__)

/*
 * Progress: what a long operation is doing right now, so nobody stares at a
 * silent terminal. A step is begun, updated as it goes, and ended:
 *
 *     int p = pragma_progress_begin("making reference data for %s", name);
 *     for (...)
 *             pragma_progress_update(p, "making reference data for %s (set %d of %d, %.0f s)", ...);
 *     pragma_progress_end(p);
 *
 * How it shows:
 *   - stderr is a terminal: one live status line, rewritten in place (at
 *     most 10 times a second, cut to the terminal's width). Any log message
 *     clears it first and it is drawn again below the message; it is
 *     cleared at exit and by the CLI's signal handler. Steps nest (a bridge
 *     wait inside reference-data creation inside an attempt): the line shows
 *     the most recently begun step that has not ended, and ending it shows
 *     the one below again. At -v each step's begin text is also left as a
 *     permanent "pragma: info:" line.
 *   - stderr is not a terminal (a log file, a pipe, CI): plain lines
 *     "pragma: TEXT" — one when a step begins, then while it goes on at
 *     most one update every 30 s (a heartbeat), so logs stay short.
 *   - at -q (level ERROR) nothing at all.
 * Thread-safe. Ids are small integers; -1 (all slots busy: more than 16
 * steps at once) is accepted by update and end and shows nothing. A step
 * should be ended on every path (goto out); text is cut at 480 bytes.
 */
__attribute__((format(printf, 1, 2)))
int pragma_progress_begin(const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void pragma_progress_update(int id, const char *fmt, ...);
void pragma_progress_end(int id);
/* Erase the live line now (the CLI calls it before printing on stdout,
 * which may share the terminal); the next update draws it again. */
void pragma_progress_clear(void);
/* Async-signal-safe: erase the live line with one write() (signal handlers). */
void pragma_progress_clear_signal_safe(void);

/* Tests and the CLI: where messages go (default 2) and whether it counts as
 * a terminal (-1: ask isatty(), 0: plain lines, 1: live line). */
void pragma_log_set_fd(int fd);
void pragma_log_set_tty(int tty);
/* Tests: the heartbeat of plain progress lines (default 30 s). */
void pragma_progress_set_heartbeat(double seconds);

#endif
