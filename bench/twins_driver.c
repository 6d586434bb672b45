/*
 * bench/twins.sh's driver: one timing session (lib/timing/session.c) of a
 * task's baseline and two kernels, spread over SESSIONS sessions of 2
 * rounds, exactly as the loop times an attempt against the best. Prints
 * every timed call, one line per side and round:
 *
 *   C SIDE ROUND SESSION t1 t2 ...      (SIDE 0 the baseline, 1 A, 2 B; ms)
 *
 * and the session's own verdict on B against A as a comment. With -v -v
 * the library logs each session's start order on stderr.
 *
 * usage: twins_driver TASK NAME=VALUE A.c B.c SESSIONS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/err.h"
#include "pragma/log.h"
#include "pragma/refdata.h"
#include "pragma/task.h"
#include "pragma/timing.h"
#include "pragma/verify.h"

#define SETS 5

static int build(const struct pragma_task *t, const char *src, char *so, size_t len, struct pragma_err *err)
{
	struct pragma_verify_opts vo = PRAGMA_VERIFY_DEFAULTS;
	struct pragma_verdict v;
	int ret = -1;

	vo.n_sets = SETS;
	pragma_verdict_init(&v);
	if (pragma_verify(t, src, &vo, &v, err) == 0) {
		if (v.status == PRAGMA_V_OK) {
			snprintf(so, len, "%s", v.so_path);
			ret = 0;
		} else {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s: %s", src, pragma_vstatus_name(v.status), v.message);
		}
	}
	pragma_verdict_release(&v);
	return ret;
}

int main(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_task t;
	struct pragma_refset sets[SETS];
	uint64_t seeds[SETS];
	struct pragma_side sides[3];
	struct pragma_session_opts o;
	struct pragma_session s;
	struct pragma_ratio q;
	char so[2][4096], buf[200];
	const char *ov[1];
	int sessions;

	if (argc != 6) {
		fprintf(stderr, "usage: %s TASK NAME=VALUE A.c B.c SESSIONS\n", argv[0]);
		return 2;
	}
	if (getenv("TWINS_DEBUG"))
		pragma_log_set_level(PRAGMA_LOG_DEBUG);
	ov[0] = argv[2];
	sessions = atoi(argv[5]);
	for (int i = 0; i < SETS; i++)
		seeds[i] = pragma_ref_seed(i);
	if (pragma_task_load(argv[1], ov, 1, &t, &err) < 0 || pragma_ref_ensure(&t, seeds, SETS, sets, &err) < 0 ||
	    build(&t, argv[3], so[0], sizeof(so[0]), &err) < 0 || build(&t, argv[4], so[1], sizeof(so[1]), &err) < 0)
		goto fail;
	memset(sides, 0, sizeof(sides));
	sides[0].label = "baseline";
	sides[1].label = "A";
	sides[1].so = so[0];
	sides[2].label = "B";
	sides[2].so = so[1];
	memset(&o, 0, sizeof(o));
	o.task = &t;
	o.sets = sets;
	o.n_sets = SETS;
	o.warmup = 3;
	o.cold = 1;
	o.reps = 5;
	o.rounds = o.max_rounds = 2 * sessions;
	o.sessions = sessions;
	o.sandbox = 1;
	o.what = "bench/twins.sh";
	if (pragma_session_run(sides, 3, &o, &s, &err) < 0)
		goto fail;
	for (int k = 0; k < 3; k++) {
		const struct pragma_side_times *st = &sides[k].t;
		for (int r = 0, off = 0; r < st->n_rounds; off += st->round_count[r++]) {
			printf("C %d %d %d", k, r, st->round_session[r]);
			for (int c = 0; c < st->round_count[r]; c++)
				printf(" %.6f", st->times_ms[off + c]);
			printf("\n");
		}
	}
	pragma_ratio_compute(&sides[1].t, &sides[2].t, 0, &q);
	printf("# B against A, all sessions: %s (%d sessions, %d rounds%s)\n", pragma_ratio_str(&q, buf, sizeof(buf)),
	       q.sessions, q.rounds, s.busy ? ", busy" : "");
	return 0;
fail:
	fprintf(stderr, "twins_driver: %s\n", err.msg);
	return err.kind == PRAGMA_E_ENV ? 3 : 2;
}
