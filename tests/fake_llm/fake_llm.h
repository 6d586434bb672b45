/*
 * Test helper: run tests/fake_llm/fake_llm.py for one test and read its
 * request log. Header-only (static functions) so each test program includes
 * it directly: #include "../fake_llm/fake_llm.h".
 */
#ifndef PRAGMA_TEST_FAKE_LLM_H
#define PRAGMA_TEST_FAKE_LLM_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pragma/fs.h"
#include "pragma/proc.h"

struct fake_llm {
	struct pragma_child child;
	char dir[512];
	char log[600];
	int port;
	char base_openai[128];    /* http://127.0.0.1:PORT/v1 */
	char base_anthropic[128]; /* http://127.0.0.1:PORT */
};

static const char *fake_llm_script_path(void)
{
	static char path[1024];
	const char *d = getenv("PRAGMA_TEST_DATA");

	snprintf(path, sizeof(path), "%s/fake_llm/fake_llm.py", d && *d ? d : PRAGMA_SOURCE_DIR "/tests");
	return path;
}

/* Start a server answering from the script (JSON text). 0 or -1. */
__attribute__((unused)) static int fake_llm_start(struct fake_llm *f, const char *script)
{
	char script_path[700], port_path[700];
	struct pragma_buf tmp = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *py = "/usr/bin/python3";

	memset(f, 0, sizeof(*f));
	f->child = (struct pragma_child)PRAGMA_CHILD_INIT;
	if (access(py, X_OK) != 0)
		py = "python3";
	if (pragma_mkdtemp("/tmp", "pragma-fake-llm-", &tmp, &err) < 0) {
		fprintf(stderr, "fake_llm: %s\n", err.msg);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s", tmp.data);
	pragma_buf_release(&tmp);
	snprintf(script_path, sizeof(script_path), "%s/script.json", f->dir);
	snprintf(port_path, sizeof(port_path), "%s/port", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/requests.jsonl", f->dir);
	if (pragma_write_file_atomic(script_path, script, strlen(script), &err) < 0) {
		fprintf(stderr, "fake_llm: %s\n", err.msg);
		return -1;
	}
	static const char *argv[12];
	argv[0] = py;
	argv[1] = fake_llm_script_path();
	argv[2] = "--script";
	argv[3] = strdup(script_path);
	argv[4] = "--log";
	argv[5] = strdup(f->log);
	argv[6] = "--port-file";
	argv[7] = strdup(port_path);
	argv[8] = "--max-seconds";
	argv[9] = "240";
	argv[10] = "--exit-with-parent";
	argv[11] = NULL;
	f->child.argv = argv;
	f->child.inherit_err = 1;
	if (pragma_child_start(&f->child, NULL, NULL, &err) < 0) {
		fprintf(stderr, "fake_llm: %s\n", err.msg);
		return -1;
	}
	free((void *)argv[3]);
	free((void *)argv[5]);
	free((void *)argv[7]);
	for (int i = 0; i < 1000; i++) {
		FILE *pf = fopen(port_path, "r");
		if (pf) {
			int ok = fscanf(pf, "%d", &f->port) == 1;
			fclose(pf);
			if (ok && f->port > 0)
				break;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (f->port <= 0) {
		fprintf(stderr, "fake_llm: the server did not start\n");
		pragma_child_kill(&f->child);
		return -1;
	}
	snprintf(f->base_openai, sizeof(f->base_openai), "http://127.0.0.1:%d/v1", f->port);
	snprintf(f->base_anthropic, sizeof(f->base_anthropic), "http://127.0.0.1:%d", f->port);
	return 0;
}

/* The request log as a JSON array (caller decrefs). */
__attribute__((unused)) static json_t *fake_llm_requests(struct fake_llm *f)
{
	json_t *arr = json_array();
	FILE *fp = fopen(f->log, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!fp)
		return arr;
	while (getline(&line, &cap, fp) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		if (o)
			json_array_append_new(arr, o);
	}
	free(line);
	fclose(fp);
	return arr;
}

__attribute__((unused)) static size_t fake_llm_count(struct fake_llm *f)
{
	json_t *a = fake_llm_requests(f);
	size_t n = json_array_size(a);

	json_decref(a);
	return n;
}

__attribute__((unused)) static void fake_llm_stop(struct fake_llm *f)
{
	pragma_child_kill(&f->child);
	pragma_child_release(&f->child);
	if (f->dir[0])
		pragma_rm_rf(f->dir, NULL);
}

#endif

#ifndef PRAGMA_TEST_FAKE_LLM_ENV
#define PRAGMA_TEST_FAKE_LLM_ENV
extern char **environ;

/* A clean, private environment for LLM tests: no PRAGMA_LLM* variables,
 * no config files, a fresh cache directory. Returns the cache dir. */
__attribute__((unused)) static const char *fake_llm_env_reset(void)
{
	static char cache[256];
	struct pragma_buf tmp = PRAGMA_BUF_INIT;

	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++) {
			if (!strncmp(*e, "PRAGMA_LLM", 10) || !strncmp(*e, "OPENAI_API_KEY=", 15) ||
			    !strncmp(*e, "ANTHROPIC_API_KEY=", 18) || !strncmp(*e, "DEEPSEEK_API_KEY=", 17) ||
			    !strncmp(*e, "PRAGMA_CONFIG=", 14)) {
				char name[128];
				size_t n = strcspn(*e, "=");
				snprintf(name, sizeof(name), "%.*s", (int)n, *e);
				unsetenv(name);
				again = 1;
				break;
			}
		}
	}
	setenv("PRAGMA_CONFIG_NO_DEFAULTS", "1", 1);
	if (pragma_mkdtemp("/tmp", "pragma-llm-cache-", &tmp, NULL) == 0) {
		snprintf(cache, sizeof(cache), "%s", tmp.data);
		setenv("PRAGMA_CACHE_DIR", cache, 1);
	}
	pragma_buf_release(&tmp);
	return cache;
}
#endif

#ifndef PRAGMA_TEST_FAKE_LLM_CLOCK
#define PRAGMA_TEST_FAKE_LLM_CLOCK
__attribute__((unused)) static double llm_test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#endif
