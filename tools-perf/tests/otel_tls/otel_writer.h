/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A writer of the OpenTelemetry thread context (OTEP 4947), the way an SDK
 * ships one: the TLS variable otel_thread_ctx_v1 points to the record of
 * the span the thread works for, or is NULL.
 */
#ifndef OTEL_WRITER_H
#define OTEL_WRITER_H

#include <stdint.h>
#include <linux/compiler.h>

struct otel_thread_ctx_record {
	uint8_t		trace_id[16];
	uint8_t		span_id[8];
	uint8_t		valid;
	uint8_t		trace_flags;
	uint16_t	attrs_data_size;
	uint8_t		attrs_data[];	/* {u8 key_index; u8 length; u8 value[length]} */
} __packed;

#define OTEL_ATTRS_MAX	612	/* the record is at most 640 bytes */

extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

/* Publish a span for the calling thread: attrs are packed attrs_data entries */
int otel_writer_enter(const uint8_t trace_id[16], const uint8_t span_id[8],
		      const uint8_t *attrs, uint16_t attrs_size);
/* The thread no longer works for a span */
void otel_writer_leave(void);
/* &otel_thread_ctx_v1 minus the thread pointer, as the writer sees it */
long otel_writer_offset(void);

/*
 * Publish the process context (OTEP 4719): a Resource with the attributes
 * threadlocal.schema_version and threadlocal.attribute_key_map (entry N
 * names key index N), in a memfd mapping, or with @anon in an anonymous
 * mapping named [anon:OTEL_CTX].  Publishing again updates it.  Returns 0,
 * 1 when the kernel did not name the mapping, -1 when nothing is published.
 */
int otel_writer_publish_process(const char *const *keys, int nr_keys, int anon);

#endif
