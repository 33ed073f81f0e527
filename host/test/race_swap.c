/* race_swap: the attacker of the security suite's race cases (P0-11..P0-13).
 *
 *   race_swap MODE PATH_A PATH_B SECONDS REPORT_FILE
 *
 * MODE "exchange": loop renameat2(PATH_A, PATH_B, RENAME_EXCHANGE).
 * MODE "rename":   loop rename(PATH_A -> PATH_B), rename(PATH_B -> PATH_A).
 *
 * It stops by itself after SECONDS (a hard bound, so a crashed or hung test
 * never leaves it running), or at SIGTERM/SIGINT, and then writes
 * "swaps=N errors=M\n" to REPORT_FILE so the spec can check that the race
 * really ran. It has no privileges beyond the files it is pointed at. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int exchange(const char *a, const char *b)
{
	/* raw syscall: no dependency on the libc wrapper's vintage */
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: race_swap exchange|rename PATH_A PATH_B SECONDS REPORT\n");
		return 2;
	}
	const char *mode = argv[1], *a = argv[2], *b = argv[3], *report = argv[5];
	double limit = atof(argv[4]);
	int do_exchange = strcmp(mode, "exchange") == 0;
	if (!do_exchange && strcmp(mode, "rename") != 0) {
		fprintf(stderr, "race_swap: unknown mode %s\n", mode);
		return 2;
	}
	if (limit <= 0 || limit > 120)
		limit = 30;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	double deadline = now() + limit;
	unsigned long swaps = 0, errors = 0, i = 0;
	int forward = 1;
	int last_errno = 0;
	while (!stop) {
		int rc;
		if (do_exchange) {
			rc = exchange(a, b);
		} else {
			rc = forward ? rename(a, b) : rename(b, a);
			if (rc == 0)
				forward = !forward;
		}
		if (rc == 0) {
			swaps++;
		} else {
			errors++;
			last_errno = errno;
			if (errors > 1000 && swaps == 0)
				break;          /* misconfigured: give up instead of spinning */
		}
		if ((++i & 1023) == 0 && now() > deadline)
			break;
	}

	FILE *f = fopen(report, "w");
	if (f) {
		fprintf(f, "swaps=%lu errors=%lu last_errno=%d\n", swaps, errors, last_errno);
		fclose(f);
	}
	return swaps > 0 ? 0 : 1;
}
