// SPDX-License-Identifier: GPL-2.0
/*
 * An OTEP 4947 writer: one record per thread, in the thread's own storage.
 * The record is filled while invalid, then flipped valid; the pointer is
 * published once and never swapped at the same time as the valid byte.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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

/* The process context: a header, and the payload after it in one page */
struct otel_process_ctx_header {
	char		signature[8];
	uint32_t	version;
	uint32_t	payload_size;
	uint64_t	published_at_ns;
	uint64_t	payload;
};

#define OTEL_CTX_MAP_SIZE	4096

static struct otel_process_ctx_header *otel_ctx;

/* Protobuf, as far as a Resource of string attributes needs it */
static size_t pb_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	return n;
}

/* Field @field of @len bytes of @data; NULL @data: only the key and length */
static size_t pb_bytes(uint8_t *p, unsigned int field, const void *data, size_t len)
{
	size_t n = pb_varint(p, field << 3 | 2);

	n += pb_varint(p + n, len);
	if (data)
		memcpy(p + n, data, len);
	return n + (data ? len : 0);
}

/* Resource.attributes (1): a KeyValue {key (1), value (2) AnyValue} */
static size_t pb_attribute(uint8_t *p, const char *key, const uint8_t *any, size_t any_len)
{
	uint8_t kv[2048];
	size_t n = pb_bytes(kv, 1, key, strlen(key));

	n += pb_bytes(kv + n, 2, any, any_len);
	return pb_bytes(p, 1, kv, n);
}

static size_t otel_ctx_payload(uint8_t *p, const char *const *keys, int nr_keys)
{
	uint8_t any[1536], arr[1536];
	size_t n = 0, a = 0, len;
	int i;

	len = pb_bytes(any, 1, "tlsdesc_v1_dev", strlen("tlsdesc_v1_dev"));
	n += pb_attribute(p + n, "threadlocal.schema_version", any, len);
	/* AnyValue.array_value (5): ArrayValue.values (1), AnyValues */
	for (i = 0; i < nr_keys; i++) {
		len = pb_bytes(any, 1, keys[i], strlen(keys[i]));
		a += pb_bytes(arr + a, 1, any, len);
	}
	len = pb_bytes(any, 5, arr, a);
	n += pb_attribute(p + n, "threadlocal.attribute_key_map", any, len);
	return n;
}

int otel_writer_publish_process(const char *const *keys, int nr_keys, int anon)
{
	struct otel_process_ctx_header *hdr = otel_ctx;
	uint8_t *payload, buf[OTEL_CTX_MAP_SIZE];
	struct timespec ts;
	size_t size;
	int i, fd;

	for (i = 0, size = 0; i < nr_keys; i++)
		size += strlen(keys[i]) + 8;
	if (size > 1024)
		return -1;
	size = otel_ctx_payload(buf, keys, nr_keys);
	if (size > OTEL_CTX_MAP_SIZE / 2 - sizeof(*hdr))
		return -1;

	if (!hdr) {
		fd = anon ? -1 : memfd_create("OTEL_CTX", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, OTEL_CTX_MAP_SIZE)) {
			close(fd);
			return -1;
		}
		hdr = mmap(NULL, OTEL_CTX_MAP_SIZE, PROT_READ | PROT_WRITE,
			   fd >= 0 ? MAP_PRIVATE : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
		if (fd >= 0)
			close(fd);
		if (hdr == MAP_FAILED)
			return -1;
		madvise(hdr, OTEL_CTX_MAP_SIZE, MADV_DONTFORK);
		otel_ctx = hdr;
	} else {
		/* An update: readers see published_at_ns 0 meanwhile */
		WRITE_ONCE(hdr->published_at_ns, 0);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	/* The payload after the header, at the other half on an update */
	payload = (uint8_t *)(hdr + 1);
	if (hdr->payload == (uintptr_t)payload)
		payload = (uint8_t *)hdr + OTEL_CTX_MAP_SIZE / 2;
	memcpy(payload, buf, size);
	hdr->version = 2;
	hdr->payload_size = size;
	hdr->payload = (uintptr_t)payload;
	clock_gettime(CLOCK_REALTIME, &ts);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	WRITE_ONCE(hdr->published_at_ns, ts.tv_sec * 1000000000ULL + ts.tv_nsec ?: 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(hdr->signature, "OTEL_CTX", 8);
	/* Named for readers; fails on kernels without CONFIG_ANON_VMA_NAME */
	if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)hdr, OTEL_CTX_MAP_SIZE,
		  (unsigned long)"OTEL_CTX"))
		return anon ? 1 : 0;	/* a memfd is named by its file */
	return 0;
}
