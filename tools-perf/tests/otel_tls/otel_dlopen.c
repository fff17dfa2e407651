// SPDX-License-Identifier: GPL-2.0
/*
 * A program that loads the writer with dlopen(), as a plugin host does:
 * its TLS is then not in the static TLS block laid out at startup.
 *
 *   otel_dlopen SECONDS TRACE_ID SPAN_ID
 */
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "otel_writer.h"

static sig_atomic_t done;

static void on_alarm(int sig)
{
	(void)sig;
	WRITE_ONCE(done, 1);
}

int main(int argc, char **argv)
{
	int (*enter)(const uint8_t *trace_id, const uint8_t *span_id,
		     const uint8_t *attrs, uint16_t attrs_size);
	uint8_t ids[24];
	char path[PATH_MAX];
	ssize_t n;
	void *lib;
	char *slash;
	int i;

	if (argc < 4 || strlen(argv[2]) != 32 || strlen(argv[3]) != 16) {
		fprintf(stderr, "usage: %s SECONDS TRACE_ID SPAN_ID\n", argv[0]);
		return 2;
	}
	for (i = 0; i < 24; i++) {
		const char *hex = i < 16 ? argv[2] + 2 * i : argv[3] + 2 * (i - 16);
		unsigned int b;

		if (sscanf(hex, "%2x", &b) != 1)
			return 2;
		ids[i] = b;
	}
	/* The writer beside the program */
	n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	n = slash ? slash + 1 - path : 0;
	snprintf(path + n, sizeof(path) - n, "libotel_writer.so");
	lib = dlopen(path, RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	enter = (int (*)(const uint8_t *, const uint8_t *, const uint8_t *, uint16_t))
		dlsym(lib, "otel_writer_enter");
	if (!enter || enter(ids, ids + 16, NULL, 0))
		return 1;
	signal(SIGALRM, on_alarm);
	alarm(atoi(argv[1]));
	while (!READ_ONCE(done))
		;
	return 0;
}
