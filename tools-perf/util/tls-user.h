/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_TLS_USER_H
#define __PERF_TLS_USER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include <linux/perf_event.h>

struct option;
struct target;
struct tls_dump;

/* What perf record --tls-user asks PERF_SAMPLE_TLS_USER to capture */
struct tls_user_opts {
	u16	size;		/* attr.sample_tls_user, 0: not asked for */
	u16	flags;		/* attr.tls_user_flags */
	u16	deref_offset;	/* attr.tls_user_deref_offset */
	s32	offset;		/* attr.tls_user_offset */
	u8	hops;		/* attr.tls_user_hops */
	s32	hop_offset[PERF_TLS_USER_MAX_HOPS]; /* attr.tls_user_hop_offset */
	u16	len_offset;	/* attr.tls_user_len_offset */
	u8	len_size;	/* attr.tls_user_len_size, 0: no length field */
	u8	len_shift;	/* attr.tls_user_len_shift */
	u16	len_base;	/* attr.tls_user_len_base */
	bool	len_optional;	/* the length field otel adds by itself */
	bool	find;		/* offset: that of sym, computed by perf */
	char	sym[128];	/* the TLS variable, OTEL_TLS_SYMBOL for otel */
};

/* The OpenTelemetry thread context record (OTEP 4947) */
#define OTEL_TLS_SYMBOL		"otel_thread_ctx_v1"
#define OTEL_TLS_SIZE		32
#define OTEL_TRACE_ID_SIZE	16
#define OTEL_SPAN_ID_SIZE	8
#define OTEL_VALID_OFFSET	24
#define OTEL_RECORD_MIN_SIZE	28
#define OTEL_ATTRS_SIZE_OFFSET	26	/* u16 attrs_data_size, native endian */
#define OTEL_ATTRS_OFFSET	28	/* {u8 key_index; u8 length; u8 value[length]}... */
/* An attribute value as perf prints it: at most 255 bytes, each at most "\xNN" */
#define OTEL_VALUE_SIZE		(4 * 255 + 1)

/* perf report --sort otel.NAME: at most this many such keys */
#define OTEL_SORT_KEYS_MAX	8

/* The ids of an OpenTelemetry thread context, for perf report's sort keys */
struct otel_ids {
	u8	trace_id[OTEL_TRACE_ID_SIZE];
	u8	span_id[OTEL_SPAN_ID_SIZE];
	bool	valid;
};

int tls_user__parse_opt(const struct option *opt, const char *str, int unset);
int tls_user__find_offset(struct tls_user_opts *tls, int argc, const char **argv,
			  const struct target *target);
int tls_user__system_wide_offset(struct tls_user_opts *tls);
void tls_user__one_offset_warning(struct tls_user_opts *tls);
void tls_user__comm(pid_t pid, char *comm, size_t size);
bool tls_user__is_otel(const struct tls_dump *tls, u16 flags);
void tls_user__otel_ids(const struct tls_dump *tls, u16 flags, struct otel_ids *ids);
size_t tls_user__fprintf_ids(const u8 *trace_id, const u8 *span_id, FILE *fp);
/* The attributes of an OpenTelemetry record, as far as its dump has them */
struct otel_attrs {
	u64	size;		/* attrs_data_size */
	u64	in_dump;	/* bytes of attrs_data in the dump */
	u64	decoded;	/* bytes of entries that fit */
	u16	at[256];	/* offset of key K's last value in the dump, 0: none */
	u8	len[256];
};

struct otel_process_ctx;

void tls_user__otel_attrs(const struct tls_dump *tls, u16 flags, struct otel_attrs *attrs);
int otel_attrs__value(const struct tls_dump *tls, const struct otel_attrs *attrs,
		      unsigned int key, bool escape, char *buf, size_t size);
/* @ctx: the process context with the names of the keys, or NULL */
size_t tls_user__fprintf(const struct tls_dump *tls, u16 flags,
			 const struct otel_process_ctx *ctx, FILE *fp);

struct perf_sample;
struct tls_user_stats;

struct tls_user_stats *tls_user_stats__new(void);
void tls_user_stats__delete(struct tls_user_stats *stats);
int tls_user_stats__add(struct tls_user_stats *stats, const struct perf_sample *sample,
			const struct perf_event_attr *attr, const char *comm);
size_t tls_user_stats__fprintf(const struct tls_user_stats *stats, const char *prefix,
			       FILE *fp);
u64 tls_user_stats__without(const struct tls_user_stats *stats);
void tls_user_stats__comm(struct tls_user_stats *stats, pid_t pid, pid_t tid,
			  const char *comm);

#endif /* __PERF_TLS_USER_H */
