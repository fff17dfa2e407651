// SPDX-License-Identifier: GPL-2.0
/*
 * An OTEP 4947 writer: one record per thread, in the thread's own storage.
 * The record is filled while invalid, then flipped valid; the pointer is
 * published once and never swapped at the same time as the valid byte.
 */
#include <string.h>
#include "otel_writer.h"

__attribute__((visibility("default")))
__thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

/* More TLS of the writer, with an alignment of its own */
static __thread union {
	struct otel_thread_ctx_record	rec;
	uint8_t				bytes[640];
} otel_rec __aligned(64);

int otel_writer_enter(const uint8_t trace_id[16], const uint8_t span_id[8],
		      const uint8_t *attrs, uint16_t attrs_size)
{
	if (attrs_size > OTEL_ATTRS_MAX)
		return -1;
	WRITE_ONCE(otel_rec.rec.valid, 0);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(otel_rec.rec.trace_id, trace_id, 16);
	memcpy(otel_rec.rec.span_id, span_id, 8);
	otel_rec.rec.trace_flags = 1;
	otel_rec.rec.attrs_data_size = attrs_size;
	if (attrs_size)
		memcpy(otel_rec.rec.attrs_data, attrs, attrs_size);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!otel_thread_ctx_v1)
		WRITE_ONCE(otel_thread_ctx_v1, &otel_rec.rec);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	WRITE_ONCE(otel_rec.rec.valid, 1);
	return 0;
}

void otel_writer_leave(void)
{
	WRITE_ONCE(otel_rec.rec.valid, 0);
}

long otel_writer_offset(void)
{
	return (long)((char *)&otel_thread_ctx_v1 - (char *)__builtin_thread_pointer());
}
