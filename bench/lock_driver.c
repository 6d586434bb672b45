/*
 * bench/lock_fairness.sh's driver: takes the measurement lock COUNT times
 * (KIND ex or sh), holds it HOLD_MS each time, and prints how long each
 * take waited, in milliseconds, one per line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pragma/timing.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s ex|sh HOLD_MS COUNT\n", argv[0]);
		return 2;
	}
	enum pragma_lock_kind kind = strcmp(argv[1], "ex") ? PRAGMA_LOCK_SHARED : PRAGMA_LOCK_EXCLUSIVE;
	int hold = atoi(argv[2]), count = atoi(argv[3]);

	for (int i = 0; i < count; i++) {
		double t0 = now_ms();
		int t = pragma_measure_lock(kind, "bench/lock_fairness.sh");
		printf("%.1f\n", now_ms() - t0);
		fflush(stdout);
		usleep(hold * 1000);
		pragma_measure_unlock(t);
		usleep(500); /* let go and come straight back, as a loop does */
	}
	return 0;
}
