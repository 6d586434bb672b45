/* Counters around pk_forward (see perf_counters.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_counters.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int perf_counters_parse(json_t *req, struct perf_counters *pc)
{
	json_t *perf = json_object_get(req, "perf"), *groups, *g;
	const char *method;
	size_t i;

	memset(pc, 0, sizeof(*pc));
	if (!perf || json_is_null(perf))
		return 0;
	groups = json_object_get(perf, "groups");
	if (!json_is_array(groups) || json_array_size(groups) > PC_MAX_GROUPS)
		return -1;
	json_array_foreach(groups, i, g) {
		struct pc_group *G = &pc->g[pc->n_groups++];
		json_t *evs = json_object_get(g, "events"), *e;
		const char *name = json_string_value(json_object_get(g, "name"));
		size_t k;

		if (!name || !json_is_array(evs) || !json_array_size(evs) || json_array_size(evs) > PC_MAX_EVENTS)
			return -1;
		snprintf(G->name, sizeof(G->name), "%s", name);
		json_array_foreach(evs, k, e) {
			const char *en = json_string_value(json_object_get(e, "name"));
			json_t *type = json_object_get(e, "type"), *config = json_object_get(e, "config");
			if (!en || !json_is_integer(type) || !json_is_integer(config))
				return -1;
			snprintf(G->ev[k], sizeof(G->ev[k]), "%s", en);
			G->type[k] = (uint32_t)json_integer_value(type);
			G->config[k] = (uint64_t)json_integer_value(config);
			G->fd[k] = -1;
		}
		G->n = (int)json_array_size(evs);
	}
	method = json_string_value(json_object_get(perf, "method"));
	if (method && strcmp(method, "ioctl") && strcmp(method, "read"))
		return -1;
	pc->by_read = method && !strcmp(method, "read");
	pc->active = 1;
	return 0;
}

static void close_group(struct pc_group *G)
{
	for (int k = 0; k < G->n; k++)
		if (G->fd[k] >= 0) {
			close(G->fd[k]);
			G->fd[k] = -1;
		}
}

void perf_counters_open(struct perf_counters *pc)
{
	for (int i = 0; pc->active && i < pc->n_groups; i++) {
		struct pc_group *G = &pc->g[i];

		G->ok = 1;
		for (int k = 0; k < G->n; k++) {
			struct perf_event_attr a;
			long fd;

			memset(&a, 0, sizeof(a));
			a.size = sizeof(a);
			a.type = G->type[k];
			a.config = G->config[k];
			/* ioctl: the leader starts disabled, members follow it;
			 * read: everything counts from here on. */
			a.disabled = !pc->by_read && k == 0;
			a.inherit = 1;            /* threads the kernel starts count too */
			a.exclude_kernel = 1;     /* perf_event_paranoid 2 allows user space */
			a.exclude_hv = 1;
			a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
			fd = syscall(SYS_perf_event_open, &a, 0, -1, k ? G->fd[0] : -1, PERF_FLAG_FD_CLOEXEC);
			if (fd < 0) {
				G->ok = 0;
				G->err = errno;
				snprintf(G->failed, sizeof(G->failed), "%s", G->ev[k]);
				close_group(G);
				break;
			}
			G->fd[k] = (int)fd;
		}
	}
}

static void group_ioctl(struct perf_counters *pc, unsigned long op)
{
	for (int i = 0; i < pc->n_groups; i++) {
		struct pc_group *G = &pc->g[i];

		if (!G->ok)
			continue;
		if (ioctl(G->fd[0], op, PERF_IOC_FLAG_GROUP) < 0) {
			/* Inside a sandbox that forbids the ioctl: say so, count nothing. */
			G->ok = 0;
			G->err = errno;
			snprintf(G->failed, sizeof(G->failed), "%s (ioctl)", G->ev[0]);
			close_group(G);
		}
	}
}

/* read method: value, time enabled and time running of every event. */
static void read_all(struct perf_counters *pc, uint64_t (*snap)[PC_MAX_EVENTS][3])
{
	for (int i = 0; i < pc->n_groups; i++) {
		struct pc_group *G = &pc->g[i];

		for (int k = 0; G->ok && k < G->n; k++)
			if (read(G->fd[k], snap[i][k], sizeof(snap[i][k])) != (ssize_t)sizeof(snap[i][k])) {
				G->ok = 0;
				G->err = errno ? errno : EIO;
				snprintf(G->failed, sizeof(G->failed), "%s (read)", G->ev[k]);
				close_group(G);
			}
	}
}

/* The window's wall time encloses the enable/disable (or the reads): the
 * threads' CPU time between two reads can never exceed it, so utilization
 * stays at most 100%. */
void perf_counters_start(struct perf_counters *pc)
{
	if (!pc->active)
		return;
	pc->t_start = now_ns();
	if (pc->by_read)
		read_all(pc, pc->before);
	else
		group_ioctl(pc, PERF_EVENT_IOC_ENABLE);
}

void perf_counters_stop(struct perf_counters *pc)
{
	if (!pc->active)
		return;
	if (pc->by_read) {
		uint64_t after[PC_MAX_GROUPS][PC_MAX_EVENTS][3];
		read_all(pc, after);
		for (int i = 0; i < pc->n_groups; i++)
			for (int k = 0; pc->g[i].ok && k < pc->g[i].n; k++)
				for (int f = 0; f < 3; f++)
					pc->sum[i][k][f] += after[i][k][f] - pc->before[i][k][f];
	} else {
		group_ioctl(pc, PERF_EVENT_IOC_DISABLE);
	}
	pc->wall_ns += now_ns() - pc->t_start;
	pc->calls++;
}

void perf_counters_report(struct perf_counters *pc, json_t *result)
{
	json_t *groups;

	if (!pc->active)
		return;
	groups = json_array();
	for (int i = 0; i < pc->n_groups; i++) {
		struct pc_group *G = &pc->g[i];
		json_t *o = json_pack("{s:s}", "name", G->name), *evs = json_array();
		uint64_t enabled = 0, running = 0;

		for (int k = 0; G->ok && k < G->n; k++) {
			uint64_t buf[3];
			/* Each member on its own: with inherit, the kernel sums the
			 * counts of the threads, finished ones included. */
			if (pc->by_read)
				memcpy(buf, pc->sum[i][k], sizeof(buf));
			else if (read(G->fd[k], buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
				G->ok = 0;
				G->err = errno ? errno : EIO;
				snprintf(G->failed, sizeof(G->failed), "%s (read)", G->ev[k]);
				break;
			}
			if (k == 0) {
				enabled = buf[1];
				running = buf[2];
			}
			json_array_append_new(evs, json_pack("{s:s, s:I}", "name", G->ev[k], "value", (json_int_t)buf[0]));
		}
		close_group(G);
		json_object_set_new(o, "ok", json_boolean(G->ok));
		if (G->ok) {
			json_object_set_new(o, "enabled_ns", json_integer((json_int_t)enabled));
			json_object_set_new(o, "running_ns", json_integer((json_int_t)running));
			json_object_set_new(o, "events", evs);
		} else {
			json_decref(evs);
			json_object_set_new(o, "event", json_string(G->failed));
			json_object_set_new(o, "errno", json_integer(G->err));
			json_object_set_new(o, "error", json_string(strerror(G->err)));
		}
		json_array_append_new(groups, o);
	}
	json_object_set_new(result, "perf", json_pack("{s:i, s:I, s:o}", "calls", pc->calls, "wall_ns",
						      (json_int_t)pc->wall_ns, "groups", groups));
}
