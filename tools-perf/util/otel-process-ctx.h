/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_OTEL_PROCESS_CTX_H
#define __PERF_OTEL_PROCESS_CTX_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

/*
 * The OpenTelemetry process context (OTEP 4719): a mapping named OTEL_CTX
 * whose header points to a protobuf opentelemetry.proto.resource.v1.Resource.
 * perf keeps what the thread contexts of the process need to be read: the
 * names of their attribute keys (threadlocal.attribute_key_map, key index
 * N is entry N) and threadlocal.schema_version.
 */
#define OTEL_CTX_SIGNATURE	"OTEL_CTX"
#define OTEL_CTX_VERSION	2
#define OTEL_CTX_HEADER_SIZE	32	/* signature, version, size, time, payload */
#define OTEL_CTX_MAX_PAYLOAD	65536	/* a larger payload is not read */
#define OTEL_CTX_MAX_KEYS	256	/* a key index is a u8 */
#define OTEL_CTX_MAX_STRING	1024	/* a longer name is kept empty */
#define OTEL_CTX_MAX_SECTION	(64 << 20)	/* HEADER_OTEL_PROCESS_CTX, in bytes */

struct otel_process_ctx {
	pid_t	pid;
	u64	published_at_ns;
	char	*schema_version;	/* NULL: the resource has none */
	u32	nr_keys;
	char	**keys;			/* [nr_keys], "" for a non-string entry */
};

struct otel_process_ctxs;

struct otel_process_ctxs *otel_process_ctxs__new(void);
void otel_process_ctxs__delete(struct otel_process_ctxs *ctxs);
/* Takes @ctx, and replaces the context of the same process */
int otel_process_ctxs__add(struct otel_process_ctxs *ctxs, struct otel_process_ctx *ctx);
const struct otel_process_ctx *
otel_process_ctxs__find(const struct otel_process_ctxs *ctxs, pid_t pid);
size_t otel_process_ctxs__nr(const struct otel_process_ctxs *ctxs);
/* The contexts in the order of their pids */
int otel_process_ctxs__for_each(const struct otel_process_ctxs *ctxs,
				int (*fn)(const struct otel_process_ctx *ctx, void *arg),
				void *arg);
/* Reads the context @pid publishes now: 1 read, 0 none (yet), < 0 error */
int otel_process_ctxs__read(struct otel_process_ctxs *ctxs, pid_t pid);

/* The name of key @index of @pid's thread contexts, or NULL */
const char *otel_process_ctx__key(const struct otel_process_ctx *ctx, unsigned int index);
int otel_process_ctx__index(const struct otel_process_ctx *ctx, const char *name);
int otel_process_ctx__decode(struct otel_process_ctx *ctx, const u8 *payload, size_t size);
void otel_process_ctx__delete(struct otel_process_ctx *ctx);
size_t otel_process_ctx__fprintf(const struct otel_process_ctx *ctx, FILE *fp);
/* A name perf prints as it is */
bool otel_process_ctx__name_ok(const char *name);

#endif /* __PERF_OTEL_PROCESS_CTX_H */
