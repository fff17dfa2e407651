// SPDX-License-Identifier: GPL-2.0
/*
 * The OpenTelemetry process context (OTEP 4719) of a recorded process: the
 * names of the attribute keys its thread contexts (OTEP 4947) use.
 *
 * A process publishes a mapping named OTEL_CTX ("[anon:OTEL_CTX]" when
 * named with PR_SET_VMA_ANON_NAME, "[anon_shmem:OTEL_CTX]" or
 * "/memfd:OTEL_CTX" for a memfd) that starts with a header:
 *
 *   char signature[8]    "OTEL_CTX", written last
 *   u32  version         2
 *   u32  payload_size
 *   u64  published_at_ns 0 while the process updates the context
 *   u64  payload         address of a protobuf Resource
 *
 * perf reads it through /proc/PID/mem, as it would read any memory of a
 * process it may trace, and reads the header again after the payload: the
 * read is kept only when published_at_ns did not change in between.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/zalloc.h>
#include "hashmap.h"
#include "otel-process-ctx.h"

struct otel_process_ctxs {
	struct hashmap	*map;	/* pid -> struct otel_process_ctx */
};

static size_t otel_ctx__hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool otel_ctx__equal(long a, long b, void *ctx __maybe_unused)
{
	return a == b;
}

struct otel_process_ctxs *otel_process_ctxs__new(void)
{
	struct otel_process_ctxs *ctxs = zalloc(sizeof(*ctxs));

	if (!ctxs)
		return NULL;
	ctxs->map = hashmap__new(otel_ctx__hash, otel_ctx__equal, NULL);
	if (IS_ERR(ctxs->map)) {
		free(ctxs);
		return NULL;
	}
	return ctxs;
}

void otel_process_ctx__delete(struct otel_process_ctx *ctx)
{
	u32 i;

	if (!ctx)
		return;
	for (i = 0; ctx->keys && i < ctx->nr_keys; i++)
		free(ctx->keys[i]);
	free(ctx->keys);
	free(ctx->schema_version);
	free(ctx);
}

void otel_process_ctxs__delete(struct otel_process_ctxs *ctxs)
{
	struct hashmap_entry *entry;
	size_t bkt;

	if (!ctxs)
		return;
	hashmap__for_each_entry(ctxs->map, entry, bkt)
		otel_process_ctx__delete(entry->pvalue);
	hashmap__free(ctxs->map);
	free(ctxs);
}

int otel_process_ctxs__add(struct otel_process_ctxs *ctxs, struct otel_process_ctx *ctx)
{
	struct otel_process_ctx *old = NULL;
	int err;

	err = hashmap__set(ctxs->map, ctx->pid, ctx, NULL, &old);
	if (err) {
		otel_process_ctx__delete(ctx);
		return err;
	}
	otel_process_ctx__delete(old);
	return 0;
}

const struct otel_process_ctx *
otel_process_ctxs__find(const struct otel_process_ctxs *ctxs, pid_t pid)
{
	struct otel_process_ctx *ctx;

	if (!ctxs || !hashmap__find(ctxs->map, pid, &ctx))
		return NULL;
	return ctx;
}

size_t otel_process_ctxs__nr(const struct otel_process_ctxs *ctxs)
{
	return ctxs ? hashmap__size(ctxs->map) : 0;
}

static int otel_ctx__cmp(const void *a, const void *b)
{
	const struct otel_process_ctx *l = *(const struct otel_process_ctx **)a;
	const struct otel_process_ctx *r = *(const struct otel_process_ctx **)b;

	return l->pid < r->pid ? -1 : l->pid > r->pid;
}

int otel_process_ctxs__for_each(const struct otel_process_ctxs *ctxs,
				int (*fn)(const struct otel_process_ctx *ctx, void *arg),
				void *arg)
{
	size_t nr = otel_process_ctxs__nr(ctxs), i = 0, bkt;
	struct otel_process_ctx **all;
	struct hashmap_entry *entry;
	int err = 0;

	if (!nr)
		return 0;
	all = calloc(nr, sizeof(*all));
	if (!all)
		return -ENOMEM;
	hashmap__for_each_entry(ctxs->map, entry, bkt)
		all[i++] = entry->pvalue;
	qsort(all, nr, sizeof(*all), otel_ctx__cmp);
	for (i = 0; i < nr && !err; i++)
		err = fn(all[i], arg);
	free(all);
	return err;
}

const char *otel_process_ctx__key(const struct otel_process_ctx *ctx, unsigned int index)
{
	if (!ctx || index >= ctx->nr_keys || !ctx->keys[index][0])
		return NULL;
	return ctx->keys[index];
}

/*
 * The index of the key @name: its entry in @ctx, or @name itself if it is
 * a decimal index that @ctx does not name.  -1: no such key.
 */
int otel_process_ctx__index(const struct otel_process_ctx *ctx, const char *name)
{
	unsigned int i;
	char *end;
	long idx;

	for (i = 0; ctx && i < ctx->nr_keys; i++)
		if (!strcmp(ctx->keys[i], name))
			return i;
	idx = strtol(name, &end, 10);
	if (*name < '0' || *name > '9' || *end || idx > 255 || otel_process_ctx__key(ctx, idx))
		return -1;
	return idx;
}

/*
 * A minimal protobuf reader: varints and length-delimited fields, which is
 * all a Resource of string and array attributes needs; any other wire type
 * is skipped by its size.  Every length is checked against what is left.
 */
struct pb {
	const u8	*p;
	const u8	*end;
};

static int pb__varint(struct pb *pb, u64 *val)
{
	int shift;

	*val = 0;
	for (shift = 0; shift < 64 && pb->p < pb->end; shift += 7) {
		u8 b = *pb->p++;

		*val |= (u64)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, and for a length-delimited one its bytes */
static int pb__field(struct pb *pb, u32 *field, struct pb *sub)
{
	u64 key, val;

	if (pb__varint(pb, &key))
		return -1;
	*field = key >> 3;
	sub->p = NULL;
	sub->end = NULL;
	switch (key & 7) {
	case 0:		/* varint */
		return pb__varint(pb, &val);
	case 1:		/* 64-bit */
		if (pb->end - pb->p < 8)
			return -1;
		pb->p += 8;
		return 0;
	case 2:		/* length-delimited */
		if (pb__varint(pb, &val) || val > (u64)(pb->end - pb->p))
			return -1;
		sub->p = pb->p;
		sub->end = pb->p + val;
		pb->p += val;
		return 0;
	case 5:		/* 32-bit */
		if (pb->end - pb->p < 4)
			return -1;
		pb->p += 4;
		return 0;
	default:
		return -1;
	}
}

/*
 * A key name or schema perf prints as it is: printable ASCII but '"', '\\'
 * and '=', and UTF-8 bytes from 0x80 up.  A hostile process or file cannot
 * put control characters into perf's output this way.
 */
bool otel_process_ctx__name_ok(const char *name)
{
	const unsigned char *c;

	for (c = (const unsigned char *)name; *c; c++) {
		if (*c <= ' ' || *c == 0x7f || *c == '"' || *c == '\\' || *c == '=')
			return false;
	}
	return true;
}

/* AnyValue.string_value (1) of @val, or NULL: a copy, NUL-terminated */
static char *pb__any_string(struct pb val)
{
	struct pb sub;
	u32 field;

	while (val.p < val.end) {
		if (pb__field(&val, &field, &sub))
			return NULL;
		if (field == 1 && sub.p) {
			size_t len = sub.end - sub.p;

			if (len > OTEL_CTX_MAX_STRING || memchr(sub.p, 0, len))
				return NULL;
			return strndup((const char *)sub.p, len);
		}
	}
	return NULL;
}

/* threadlocal.attribute_key_map: AnyValue.array_value (5), ArrayValue.values (1) */
static int otel_ctx__key_map(struct otel_process_ctx *ctx, struct pb val)
{
	struct pb arr = { NULL, NULL }, sub;
	u32 field, nr = 0;
	char **keys;

	while (val.p < val.end) {
		if (pb__field(&val, &field, &sub))
			return -1;
		if (field == 5 && sub.p)
			arr = sub;
	}
	keys = calloc(OTEL_CTX_MAX_KEYS, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	while (arr.p && arr.p < arr.end && nr < OTEL_CTX_MAX_KEYS) {
		if (pb__field(&arr, &field, &sub))
			break;
		if (field != 1 || !sub.p)
			continue;
		keys[nr] = pb__any_string(sub);
		if (keys[nr] && !otel_process_ctx__name_ok(keys[nr]))
			zfree(&keys[nr]);
		if (!keys[nr])
			keys[nr] = strdup("");
		if (!keys[nr])
			break;
		nr++;
	}
	while (ctx->nr_keys)
		free(ctx->keys[--ctx->nr_keys]);
	free(ctx->keys);
	ctx->keys = keys;
	ctx->nr_keys = nr;
	return 0;
}

/* A KeyValue: key (1), value (2) */
static int otel_ctx__key_value(struct otel_process_ctx *ctx, struct pb kv)
{
	struct pb key = { NULL, NULL }, val = { NULL, NULL }, sub;
	static const char schema[] = "threadlocal.schema_version";
	static const char key_map[] = "threadlocal.attribute_key_map";
	u32 field;
	size_t len;

	while (kv.p < kv.end) {
		if (pb__field(&kv, &field, &sub))
			return -1;
		if (field == 1 && sub.p)
			key = sub;
		else if (field == 2 && sub.p)
			val = sub;
	}
	if (!key.p || !val.p)
		return 0;
	len = key.end - key.p;
	if (len == strlen(key_map) && !memcmp(key.p, key_map, len))
		return otel_ctx__key_map(ctx, val);
	if (len == strlen(schema) && !memcmp(key.p, schema, len)) {
		free(ctx->schema_version);
		ctx->schema_version = pb__any_string(val);
		if (ctx->schema_version && !otel_process_ctx__name_ok(ctx->schema_version))
			zfree(&ctx->schema_version);
	}
	return 0;
}

/*
 * The payload is a Resource, whose attributes (1) are KeyValues; a payload
 * that wraps the Resource in a message of its own (the Resource as field 1,
 * more KeyValues as field 2) is read too: a field that is no KeyValue of
 * ours is looked into once more.
 */
static int otel_ctx__scan(struct otel_process_ctx *ctx, struct pb msg, int depth)
{
	struct pb sub;
	u32 field;
	int err;

	while (msg.p < msg.end) {
		if (pb__field(&msg, &field, &sub))
			return -1;
		if ((field != 1 && field != 2) || !sub.p)
			continue;
		err = otel_ctx__key_value(ctx, sub);
		if (!err && depth < 1)
			err = otel_ctx__scan(ctx, sub, depth + 1);
		if (err == -ENOMEM)
			return err;
	}
	return 0;
}

int otel_process_ctx__decode(struct otel_process_ctx *ctx, const u8 *payload, size_t size)
{
	struct pb msg = { payload, payload + size };

	return otel_ctx__scan(ctx, msg, 0);
}

/*
 * The mappings of a process that perf reads: the one named OTEL_CTX, and
 * those a payload may be in.  A payload is read only from memory that no
 * file backs (anonymous, heap, stack, shared memory, memfd), so that a
 * read of /proc/PID/mem never waits for a file system.
 */
struct otel_ctx_maps {
	u64	ctx;		/* start of the OTEL_CTX mapping, 0: none */
	u64	(*mem)[2];	/* [start, end) of memory without a file */
	size_t	nr, alloc;
};

static bool otel_ctx__fileless(const char *name)
{
	return !*name || *name == '\n' || *name == '[' || strstarts(name, "/memfd:") ||
	       strstarts(name, "/dev/zero") || strstarts(name, "/SYSV");
}

static int otel_ctx__read_maps(pid_t pid, struct otel_ctx_maps *maps)
{
	static const char * const names[] = {
		"[anon:OTEL_CTX]", "[anon_shmem:OTEL_CTX]", "/memfd:OTEL_CTX",
	};
	char path[64], *line = NULL;
	size_t n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (getline(&line, &n, fp) > 0) {
		unsigned long long lo, hi;
		int pos = 0;
		size_t i;

		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &pos) < 2 || !pos)
			continue;
		for (i = 0; i < ARRAY_SIZE(names); i++) {
			if (!maps->ctx && strstarts(line + pos, names[i]) &&
			    hi - lo >= OTEL_CTX_HEADER_SIZE)
				maps->ctx = lo;
		}
		if (!otel_ctx__fileless(line + pos))
			continue;
		if (maps->nr == maps->alloc) {
			size_t alloc = maps->alloc ? 2 * maps->alloc : 64;
			void *mem = realloc(maps->mem, alloc * sizeof(*maps->mem));

			if (!mem)
				break;
			maps->mem = mem;
			maps->alloc = alloc;
		}
		maps->mem[maps->nr][0] = lo;
		maps->mem[maps->nr][1] = hi;
		maps->nr++;
	}
	free(line);
	fclose(fp);
	return 0;
}

/* [@addr, @addr + @size) lies in one mapping without a file */
static bool otel_ctx__readable(const struct otel_ctx_maps *maps, u64 addr, u64 size)
{
	size_t i;

	for (i = 0; i < maps->nr; i++) {
		if (addr >= maps->mem[i][0] && addr < maps->mem[i][1])
			return size <= maps->mem[i][1] - addr;
	}
	return false;
}

struct otel_ctx_header {
	char	signature[8];
	u32	version;
	u32	payload_size;
	u64	published_at_ns;
	u64	payload;
};

static int otel_ctx__read_header(int fd, u64 addr, struct otel_ctx_header *hdr)
{
	if (pread(fd, hdr, sizeof(*hdr), addr) != sizeof(*hdr))
		return -1;
	if (memcmp(hdr->signature, OTEL_CTX_SIGNATURE, 8) ||
	    hdr->version != OTEL_CTX_VERSION || !hdr->published_at_ns)
		return -1;
	return 0;
}

int otel_process_ctxs__read(struct otel_process_ctxs *ctxs, pid_t pid)
{
	const struct otel_process_ctx *known = otel_process_ctxs__find(ctxs, pid);
	struct otel_ctx_maps maps = { .ctx = 0 };
	struct otel_ctx_header hdr, again;
	struct otel_process_ctx *ctx;
	u8 *payload = NULL;
	int fd = -1, tries, err;
	char path[64];

	err = otel_ctx__read_maps(pid, &maps);
	if (err || !maps.ctx)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}

	/* A context the process updates while perf reads it is read again */
	for (tries = 0; tries < 3; tries++) {
		if (otel_ctx__read_header(fd, maps.ctx, &hdr))
			goto out;
		if (known && known->published_at_ns == hdr.published_at_ns) {
			err = 1;
			goto out;
		}
		if (hdr.payload_size > OTEL_CTX_MAX_PAYLOAD ||
		    !otel_ctx__readable(&maps, hdr.payload, hdr.payload_size))
			goto out;
		free(payload);
		payload = malloc(hdr.payload_size ?: 1);
		if (!payload) {
			err = -ENOMEM;
			goto out;
		}
		if (pread(fd, payload, hdr.payload_size, hdr.payload) != hdr.payload_size)
			goto out;
		if (!otel_ctx__read_header(fd, maps.ctx, &again) &&
		    again.published_at_ns == hdr.published_at_ns &&
		    again.payload == hdr.payload && again.payload_size == hdr.payload_size)
			break;
	}
	if (tries == 3)
		goto out;

	ctx = zalloc(sizeof(*ctx));
	if (!ctx) {
		err = -ENOMEM;
		goto out;
	}
	ctx->pid = pid;
	ctx->published_at_ns = hdr.published_at_ns;
	err = otel_process_ctx__decode(ctx, payload, hdr.payload_size);
	if (err < 0 || (!ctx->nr_keys && !ctx->schema_version)) {
		otel_process_ctx__delete(ctx);
		err = err == -ENOMEM ? err : 0;
		goto out;
	}
	err = otel_process_ctxs__add(ctxs, ctx);
	if (!err)
		err = 1;
out:
	free(payload);
	free(maps.mem);
	if (fd >= 0)
		close(fd);
	return err;
}

/* The key names of @ctx, with their indexes */
size_t otel_process_ctx__fprintf(const struct otel_process_ctx *ctx, FILE *fp)
{
	size_t printed;
	u32 i;

	printed = fprintf(fp, "pid %d, schema %s:", ctx->pid,
			  ctx->schema_version ?: "(none)");
	for (i = 0; i < ctx->nr_keys; i++)
		printed += fprintf(fp, " %u=%s", i, ctx->keys[i]);
	return printed;
}
