// SPDX-License-Identifier: GPL-2.0
/*
 * tpcount: count tracepoints through perf, on every CPU, until killed.
 *
 * Usage: tpcount <tracepoint id>...
 *
 * `make coverage` runs it in the guest over one transport with the ids of
 * all of ndk's events, so that the perf side of ndk's tracepoints (the
 * code `perf stat -e 'ndk:*'` runs) is measured too; the guest has no
 * perf(1). Built static on the host by check.sh.
 */
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void done(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct perf_event_attr attr;
	int i, opened = 0;
	long cpu;

	signal(SIGTERM, done);
	for (i = 1; i < argc; i++) {
		for (cpu = 0; cpu < cpus; cpu++) {
			memset(&attr, 0, sizeof(attr));
			attr.type = PERF_TYPE_TRACEPOINT;
			attr.size = sizeof(attr);
			attr.config = strtoull(argv[i], NULL, 0);
			if (syscall(SYS_perf_event_open, &attr, -1, (int)cpu,
				    -1, 0) < 0) {
				perror("perf_event_open");
				return 1;
			}
			opened++;
		}
	}
	printf("tpcount: %d events open\n", opened);
	fflush(stdout);
	for (;;)
		pause();
}
