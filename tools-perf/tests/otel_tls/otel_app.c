// SPDX-License-Identifier: GPL-2.0
/*
 * A program that works for one span until SECONDS have passed, with the
 * OpenTelemetry thread context published by otel_writer.
 *
 *   otel_app SECONDS TRACE_ID SPAN_ID [ATTRS]  ids in hex, attrs_data in hex
 *   otel_app offset                            print the offset of
 *                                              otel_thread_ctx_v1 from the
 *                                              thread pointer
 *
 * With OTEL_APP_KEYS=NAME,NAME... in the environment, the program first
 * publishes its process context, naming the attribute keys 0, 1, ...; a
 * memfd mapping, or an anonymous one with OTEL_APP_CTX=anon; with
 * OTEL_APP_KEYS_LATER=NAME,... too, it updates the context to those names
 * half a second in.
 *
 * Built with OTEL_APP_OWN_TLS, the program has TLS of its own and reads
 * otel_thread_ctx_v1 itself, as a program that includes the writer's header
 * does: its symbol table then has an undefined otel_thread_ctx_v1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "otel_writer.h"

#ifdef OTEL_APP_OWN_TLS
static __thread char app_tls[72] __aligned(128);
__thread long app_counter = 3;
#endif

static sig_atomic_t done;

static void on_alarm(int sig)
{
	(void)sig;
	WRITE_ONCE(done, 1);
}

static int unhex(const char *s, uint8_t *buf, size_t size)
{
	size_t i;

	if (strlen(s) != 2 * size)
		return -1;
	for (i = 0; i < size; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		buf[i] = b;
	}
	return 0;
}

/* OTEL_APP_KEYS: the key names of the process context, comma separated */
static int publish_keys(const char *list)
{
	const char *keys[64];
	char *copy, *key;
	int nr = 0, anon;

	if (!list)
		return 0;
	copy = strdup(list);
	for (key = strtok(copy, ","); key && nr < 64; key = strtok(NULL, ","))
		keys[nr++] = key;
	anon = getenv("OTEL_APP_CTX") && !strcmp(getenv("OTEL_APP_CTX"), "anon");
	switch (otel_writer_publish_process(keys, nr, anon)) {
	case 0:
		return 0;
	case 1:
		if (anon)
			fprintf(stderr, "otel_app: the kernel did not name the mapping\n");
		return 0;
	default:
		fprintf(stderr, "otel_app: cannot publish the process context\n");
		return -1;
	}
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *later = getenv("OTEL_APP_KEYS_LATER");
	double start = seconds();
	uint8_t trace_id[16], span_id[8], attrs[OTEL_ATTRS_MAX];
	size_t attrs_size = 0;
	unsigned long spins = 0;

	if (argc == 2 && !strcmp(argv[1], "offset")) {
		printf("%ld\n", otel_writer_offset());
		return 0;
	}
	if (argc < 4 || unhex(argv[2], trace_id, 16) || unhex(argv[3], span_id, 8)) {
		fprintf(stderr, "usage: %s SECONDS TRACE_ID SPAN_ID [ATTRS] | offset\n", argv[0]);
		return 2;
	}
	if (argc > 4) {
		attrs_size = strlen(argv[4]) / 2;
		if (attrs_size > OTEL_ATTRS_MAX || unhex(argv[4], attrs, attrs_size))
			return 2;
	}
	if (publish_keys(getenv("OTEL_APP_KEYS")))
		return 1;
	if (otel_writer_enter(trace_id, span_id, attrs, attrs_size))
		return 1;
#ifdef OTEL_APP_OWN_TLS
	/* The program reads the writer's variable itself */
	if (!otel_thread_ctx_v1 || memcmp(otel_thread_ctx_v1->span_id, span_id, 8))
		return 1;
	app_tls[0] = 1;
#endif
	signal(SIGALRM, on_alarm);
	alarm(atoi(argv[1]));
	while (!READ_ONCE(done)) {
		spins++;
		if (later && !(spins & 0xfffff) && seconds() - start >= 0.5) {
			if (publish_keys(later))
				return 1;
			later = NULL;
		}
#ifdef OTEL_APP_OWN_TLS
		app_counter += app_tls[spins % sizeof(app_tls)];
#endif
	}
	otel_writer_leave();
	return spins ? 0 : 1;
}
