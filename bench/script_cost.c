// SPDX-License-Identifier: GPL-2.0
/*
 * What merging deferred user callchains costs perf script: the same
 * workload (perf test -w deferred_chain, getrandom() system calls from a
 * chain of frame-pointer functions) is recorded once with --call-graph fp
 * and once with --call-graph fp,defer, then "perf script" runs over each
 * recording, output to /dev/null, ROUNDS times interleaved.  The fastest
 * run of each counts, and its peak RSS (wait4()'s ru_maxrss).
 *
 *   script_cost [seconds [period_ns]]   (default 10 s, 50000 ns)
 *
 * Prints, as "BENCH <name> <value> <unit>" lines read by scripts/bench.sh:
 *   script.{fp,defer}.samples    samples in the recording
 *   script.{fp,defer}.ns         perf script wall time
 *   script.{fp,defer}.rss_kib    perf script peak RSS
 *   script.{fp,defer}.ns_per_sample
 *   script.time_ratio_defer_vs_fp, script.rss_ratio_defer_vs_fp, and
 *   script.sample_time_ratio_defer_vs_fp (per sample: the two recordings
 *   of the same time need not have the same number of samples)
 * and script.unsupported when perf cannot record deferred callchains.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define ROUNDS	3

static const char * const mode[2] = { "fp", "fp,defer" };
static const char * const name[2] = { "fp", "defer" };

/* Run argv with stdout (and stderr) to @out; returns the exit status */
static int run(char *const argv[], const char *out, int quiet_err,
	       uint64_t *ns, long *maxrss_kib)
{
	struct rusage ru;
	uint64_t t0 = now_ns();
	int status, fd;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		if (quiet_err)
			dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -1;
	if (ns)
		*ns = now_ns() - t0;
	if (maxrss_kib)
		*maxrss_kib = ru.ru_maxrss;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Samples in a recording: the lines of perf script -F time */
static uint64_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	uint64_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	const char *secs = argc > 1 ? argv[1] : "10";
	const char *period = argc > 2 ? argv[2] : "50000";
	char data[2][64], count[] = "/tmp/script_cost.count";
	uint64_t best_ns[2] = { UINT64_MAX, UINT64_MAX }, samples[2], ns;
	long rss[2] = { 0, 0 }, kib;
	int v, round;

	for (v = 0; v < 2; v++) {
		char *rec[] = { "perf", "record", "-q", "-o", data[v],
				"-e", "cpu-clock", "-c", (char *)period,
				"--call-graph", (char *)mode[v], "--",
				"perf", "test", "-w", "deferred_chain",
				(char *)secs, NULL };
		char *cnt[] = { "perf", "script", "-i", data[v], "-F", "time",
				NULL };

		snprintf(data[v], sizeof(data[v]), "/tmp/script_cost.%s.data",
			 name[v]);
		if (run(rec, "/dev/null", 1, NULL, NULL)) {
			printf("BENCH script.%s.unsupported 1 flag\n", name[v]);
			return 0;
		}
		run(cnt, count, 1, NULL, NULL);
		samples[v] = count_lines(count);
		unlink(count);
	}

	for (round = 0; round < ROUNDS; round++) {
		for (v = 0; v < 2; v++) {
			char *scr[] = { "perf", "script", "-i", data[v], NULL };

			if (run(scr, "/dev/null", 0, &ns, &kib))
				continue;
			if (ns < best_ns[v]) {
				best_ns[v] = ns;
				rss[v] = kib;
			}
		}
	}
	for (v = 0; v < 2; v++) {
		printf("BENCH script.%s.samples %llu count\n", name[v],
		       (unsigned long long)samples[v]);
		if (best_ns[v] == UINT64_MAX)
			continue;
		printf("BENCH script.%s.ns %llu ns\n", name[v],
		       (unsigned long long)best_ns[v]);
		printf("BENCH script.%s.rss_kib %ld KiB\n", name[v], rss[v]);
		if (samples[v])
			printf("BENCH script.%s.ns_per_sample %.0f ns\n", name[v],
			       (double)best_ns[v] / samples[v]);
	}
	if (best_ns[0] != UINT64_MAX && best_ns[1] != UINT64_MAX &&
	    rss[0] > 0) {
		printf("BENCH script.time_ratio_defer_vs_fp %.3f x\n",
		       (double)best_ns[1] / best_ns[0]);
		printf("BENCH script.rss_ratio_defer_vs_fp %.3f x\n",
		       (double)rss[1] / rss[0]);
		if (samples[0] && samples[1])
			printf("BENCH script.sample_time_ratio_defer_vs_fp %.3f x\n",
			       ((double)best_ns[1] / samples[1]) /
			       ((double)best_ns[0] / samples[0]));
	}
	for (v = 0; v < 2; v++)
		unlink(data[v]);
	return 0;
}
