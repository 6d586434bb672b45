/* The library's only way to print: leveled messages to stderr (or a sink). */
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

#endif
