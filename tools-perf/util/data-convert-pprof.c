// SPDX-License-Identifier: GPL-2.0
/*
 * pprof export: the samples of a perf.data file as a gzip'd profile.proto,
 * the format of Google's pprof (github.com/google/pprof, proto/profile.proto),
 * with the OpenTelemetry trace and span ids of each sample as labels.
 *
 * The profile has a "samples"/"count" value and one value per event that
 * has samples: "cpu"/"nanoseconds" for cpu-clock and task-clock, the event's
 * name and "count" for the others, each the sum of the periods of the
 * samples of that event.  Samples with the same stack and labels are one
 * pprof sample.  Stacks are leaf first, as perf script resolves them;
 * functions are symbol names; mappings are the maps of the dsos.
 */

#include "data-convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_ZLIB_SUPPORT
#include <zlib.h>
#endif

#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/zalloc.h>

#include "util/auxtrace.h"
#include "util/build-id.h"
#include "util/callchain.h"
#include "util/debug.h"
#include "util/dso.h"
#include "util/env.h"
#include "util/event.h"
#include "util/evsel.h"
#include "util/hashmap.h"
#include "util/map.h"
#include "util/otel-process-ctx.h"
#include "util/sample.h"
#include "util/session.h"
#include "util/symbol.h"
#include "util/thread.h"
#include "util/tls-user.h"
#include "util/tool.h"

/*
 * A protobuf encoder, just what profile.proto needs.  A message is a list
 * of fields, each a key, varint(field number << 3 | wire type), then the
 * value: a varint (wire type 0: 7 bits a byte, low bits first, the top bit
 * set on every byte but the last) for the integers and bools, or a varint
 * length and that many bytes (wire type 2) for strings, sub-messages and
 * packed repeated integers (their varints one after the other).  Fields may
 * come in any order and a repeated field is the field written again, so a
 * message is built by appending to a buffer.  Fields of value 0 are left
 * out, as proto3 does.
 */
#define PB_VARINT	0
#define PB_LEN		2

struct pb {
	u8	*data;
	size_t	len;
	size_t	size;
	bool	nomem;		/* an append failed: the buffer is incomplete */
};

static void pb__reset(struct pb *pb)
{
	pb->len = 0;
}

static void pb__exit(struct pb *pb)
{
	zfree(&pb->data);
	pb->len = 0;
	pb->size = 0;
}

static bool pb__room(struct pb *pb, size_t len)
{
	size_t size = pb->size ?: 256;
	u8 *data;

	if (pb->nomem)
		return false;
	if (pb->len + len <= pb->size)
		return true;
	while (size < pb->len + len)
		size *= 2;
	data = realloc(pb->data, size);
	if (!data) {
		pb->nomem = true;
		return false;
	}
	pb->data = data;
	pb->size = size;
	return true;
}

static void pb__raw(struct pb *pb, const void *data, size_t len)
{
	if (!len || !pb__room(pb, len))
		return;
	memcpy(pb->data + pb->len, data, len);
	pb->len += len;
}

static size_t pb__varint_size(u64 v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void pb__varint(struct pb *pb, u64 v)
{
	u8 buf[10];
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (v & 0x7f) | 0x80;
		v >>= 7;
	}
	buf[n++] = v;
	pb__raw(pb, buf, n);
}

static void pb__key(struct pb *pb, int field, int wire_type)
{
	pb__varint(pb, (u64)field << 3 | wire_type);
}

/* An integer field: uint64, or int64 and bool given as u64 */
static void pb__uint(struct pb *pb, int field, u64 v)
{
	if (!v)
		return;
	pb__key(pb, field, PB_VARINT);
	pb__varint(pb, v);
}

/* A length-delimited field: a string or an encoded message */
static void pb__bytes(struct pb *pb, int field, const void *data, size_t len)
{
	pb__key(pb, field, PB_LEN);
	pb__varint(pb, len);
	pb__raw(pb, data, len);
}

static void pb__msg(struct pb *pb, int field, const struct pb *msg)
{
	pb__bytes(pb, field, msg->data, msg->len);
}

/* A packed repeated integer field */
static void pb__packed(struct pb *pb, int field, const u64 *v, size_t nr)
{
	size_t i, len = 0;

	if (!nr)
		return;
	for (i = 0; i < nr; i++)
		len += pb__varint_size(v[i]);
	pb__key(pb, field, PB_LEN);
	pb__varint(pb, len);
	for (i = 0; i < nr; i++)
		pb__varint(pb, v[i]);
}

/* The field numbers of profile.proto */
enum {
	PROFILE_SAMPLE_TYPE	= 1,
	PROFILE_SAMPLE		= 2,
	PROFILE_MAPPING		= 3,
	PROFILE_LOCATION	= 4,
	PROFILE_FUNCTION	= 5,
	PROFILE_STRING_TABLE	= 6,
	PROFILE_TIME_NANOS	= 9,
	PROFILE_DURATION_NANOS	= 10,
	PROFILE_PERIOD_TYPE	= 11,
	PROFILE_PERIOD		= 12,
};

enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };

enum {
	MAPPING_ID		= 1,
	MAPPING_MEMORY_START	= 2,
	MAPPING_MEMORY_LIMIT	= 3,
	MAPPING_FILE_OFFSET	= 4,
	MAPPING_FILENAME	= 5,
	MAPPING_BUILD_ID	= 6,
	MAPPING_HAS_FUNCTIONS	= 7,
};

enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3 };

/*
 * The strings, functions, mappings, locations and samples of the profile,
 * each table a set of keys (bytes) numbered from 1 in the order they came.
 */
struct pprof_entry {
	u64	count;		/* samples: how many; mappings: locations without function */
	u64	period;		/* samples: the sum of their periods */
	int	column;		/* samples: the value of their event */
	size_t	len;
	u8	key[];
};

struct pprof_table {
	struct hashmap		map;	/* entry -> its id */
	struct pprof_entry	**entries;
	size_t			nr;
	size_t			size;
	struct pprof_entry	*lookup;	/* the key looked up */
	size_t			lookup_size;
};

/* FNV-1a */
static size_t pprof_entry__hash(long key, void *ctx __maybe_unused)
{
	const struct pprof_entry *e = (const struct pprof_entry *)key;
	u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < e->len; i++)
		h = (h ^ e->key[i]) * 0x100000001b3ULL;
	return h ^ e->column;
}

static bool pprof_entry__equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct pprof_entry *a = (const struct pprof_entry *)key1;
	const struct pprof_entry *b = (const struct pprof_entry *)key2;

	return a->column == b->column && a->len == b->len && !memcmp(a->key, b->key, a->len);
}

static void pprof_table__init(struct pprof_table *t)
{
	memset(t, 0, sizeof(*t));
	hashmap__init(&t->map, pprof_entry__hash, pprof_entry__equal, NULL);
}

static void pprof_table__exit(struct pprof_table *t)
{
	size_t i;

	hashmap__clear(&t->map);
	for (i = 0; i < t->nr; i++)
		free(t->entries[i]);
	zfree(&t->entries);
	zfree(&t->lookup);
	t->nr = 0;
	t->size = 0;
	t->lookup_size = 0;
}

/* The entry of @key (of @column) and its id, added if new; NULL when out of memory */
static struct pprof_entry *pprof_table__entry(struct pprof_table *t, const void *key,
					      size_t len, int column, u64 *id)
{
	struct pprof_entry *e;
	long found;

	if (len > t->lookup_size || !t->lookup) {
		e = realloc(t->lookup, sizeof(*e) + len);
		if (!e)
			return NULL;
		t->lookup = e;
		t->lookup_size = len;
	}
	e = t->lookup;
	memset(e, 0, sizeof(*e));
	e->len = len;
	e->column = column;
	if (len)
		memcpy(e->key, key, len);
	if (hashmap__find(&t->map, e, &found)) {
		*id = found;
		return t->entries[found - 1];
	}

	if (t->nr == t->size) {
		size_t size = t->size ? 2 * t->size : 64;
		struct pprof_entry **entries = realloc(t->entries, size * sizeof(*entries));

		if (!entries)
			return NULL;
		t->entries = entries;
		t->size = size;
	}
	e = malloc(sizeof(*e) + len);
	if (!e)
		return NULL;
	memcpy(e, t->lookup, sizeof(*e) + len);
	if (hashmap__add(&t->map, e, t->nr + 1)) {
		free(e);
		return NULL;
	}
	t->entries[t->nr++] = e;
	*id = t->nr;
	return e;
}

/* The value of the samples of an event: its type and unit */
struct pprof_column {
	struct evsel	*evsel;
	const char	*type;
	const char	*unit;
};

struct convert_pprof {
	struct perf_tool	tool;
	struct perf_session	*session;
	struct pprof_table	strings;	/* id - 1: the string table index */
	struct pprof_table	functions;
	struct pprof_table	mappings;
	struct pprof_table	locations;
	struct pprof_table	samples;
	struct pprof_column	*columns;
	int			nr_columns;
	bool			cpu_column;	/* a column is "cpu" */
	u64			*stack;		/* the location ids of a sample */
	size_t			stack_size;
	struct pb		key;		/* the sample being encoded */
	struct pb		msg;		/* a message in it */
	struct pb		str;		/* a string being made UTF-8 */
	u64			nr_timed;	/* samples with a time */
	u64			first_time;
	u64			last_time;
	u64			nr_samples;
	bool			nomem;
};

/*
 * pprof's strings are proto3 strings: UTF-8, which perf's names and the
 * attribute values may not be.  Control characters and bytes of no valid
 * UTF-8 sequence become \xNN.
 */
static size_t utf8_seq_len(const u8 *s, size_t left)
{
	size_t n, i;
	u8 lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (n > left)
		return 0;
	/* No overlong forms, surrogates or code points above U+10FFFF */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return n;
}

static int pprof__strn(struct convert_pprof *c, const u8 *s, size_t len, u64 *index)
{
	struct pb *str = &c->str;
	size_t i = 0, n;
	u64 id;

	pb__reset(str);
	while (i < len) {
		n = utf8_seq_len(s + i, len - i);
		if (n == 1 && (s[i] < 0x20 || s[i] == 0x7f))
			n = 0;
		if (n) {
			pb__raw(str, s + i, n);
			i += n;
		} else {
			char esc[5];

			snprintf(esc, sizeof(esc), "\\x%02x", s[i++]);
			pb__raw(str, esc, 4);
		}
	}
	if (str->nomem || !pprof_table__entry(&c->strings, str->data, str->len, 0, &id)) {
		c->nomem = true;
		return -ENOMEM;
	}
	*index = id - 1;
	return 0;
}

/* The string table index of @s, 0 ("") for NULL or when out of memory */
static u64 pprof__str(struct convert_pprof *c, const char *s)
{
	u64 index = 0;

	if (s)
		pprof__strn(c, (const u8 *)s, strlen(s), &index);
	return index;
}

/*
 * The label name of OpenTelemetry attribute key @index in process @pid: the
 * name the OpenTelemetry process context of the process (OTEP 4719) gives
 * it, else otel.attr.<index>.
 */
static const char *pprof__attr_key(struct perf_session *session, pid_t pid, u8 index,
				   char *buf, size_t size)
{
	const struct otel_process_ctx *ctx;
	const char *name;

	ctx = otel_process_ctxs__find(session->header.env.otel_ctxs, pid);
	name = otel_process_ctx__key(ctx, index);
	if (name)
		return name;
	snprintf(buf, size, "otel.attr.%u", index);
	return buf;
}

static void pprof__label_str(struct convert_pprof *c, struct pb *pb, const char *key, u64 str)
{
	struct pb *l = &c->msg;
	u64 key_index = pprof__str(c, key);

	pb__reset(l);
	pb__uint(l, LABEL_KEY, key_index);
	pb__uint(l, LABEL_STR, str);
	pb__msg(pb, SAMPLE_LABEL, l);
	if (l->nomem)
		c->nomem = true;
}

/* A number label: pprof drops one of value 0 */
static void pprof__label_num(struct convert_pprof *c, struct pb *pb, const char *key, s64 num)
{
	struct pb *l = &c->msg;
	u64 key_index = pprof__str(c, key);

	pb__reset(l);
	pb__uint(l, LABEL_KEY, key_index);
	pb__uint(l, LABEL_NUM, (u64)num);
	pb__msg(pb, SAMPLE_LABEL, l);
	if (l->nomem)
		c->nomem = true;
}

static u64 pprof__function(struct convert_pprof *c, const char *name)
{
	u64 name_index = pprof__str(c, name), id;

	if (!pprof_table__entry(&c->functions, &name_index, sizeof(name_index), 0, &id)) {
		c->nomem = true;
		return 0;
	}
	return id;
}

struct pprof_mapping_key {
	u64	start;
	u64	limit;
	u64	offset;
	u64	filename;
	u64	build_id;
};

static struct pprof_entry *pprof__mapping(struct convert_pprof *c, struct map *map, u64 *id)
{
	struct dso *dso = map__dso(map);
	struct pprof_mapping_key key = {
		.start	= map__start(map),
		.limit	= map__end(map),
		.offset	= map__pgoff(map),
	};
	struct pprof_entry *e;

	if (dso) {
		key.filename = pprof__str(c, dso__long_name(dso));
		if (dso__has_build_id(dso)) {
			char bid[SBUILD_ID_SIZE];

			build_id__sprintf(dso__bid(dso), bid);
			key.build_id = pprof__str(c, bid);
		}
	}
	e = pprof_table__entry(&c->mappings, &key, sizeof(key), 0, id);
	if (!e) {
		c->nomem = true;
		*id = 0;
	}
	return e;
}

struct pprof_location_key {
	u64	mapping_id;
	u64	address;
	u64	function_id;
};

/*
 * The location of @ip: its function is its symbol; an address without one
 * has no function, pprof shows the address (and may symbolize it).
 */
static u64 pprof__location(struct convert_pprof *c, u64 ip, struct map *map,
			   struct symbol *sym)
{
	struct pprof_location_key key = { .address = ip, };
	struct pprof_entry *mapping = NULL;
	u64 id;

	if (map)
		mapping = pprof__mapping(c, map, &key.mapping_id);
	if (sym)
		key.function_id = pprof__function(c, sym->name);
	if (!pprof_table__entry(&c->locations, &key, sizeof(key), 0, &id)) {
		c->nomem = true;
		return 0;
	}
	if (mapping && !key.function_id && id == c->locations.nr)
		mapping->count++;
	return id;
}

static int pprof__push(struct convert_pprof *c, size_t *nr, u64 id)
{
	if (!id)
		return -ENOMEM;
	if (*nr == c->stack_size) {
		size_t size = c->stack_size ? 2 * c->stack_size : 128;
		u64 *stack = realloc(c->stack, size * sizeof(*stack));

		if (!stack) {
			c->nomem = true;
			return -ENOMEM;
		}
		c->stack = stack;
		c->stack_size = size;
	}
	c->stack[(*nr)++] = id;
	return 0;
}

/* The location ids of the sample, leaf first; only sample->ip without a callchain */
static int pprof__stack(struct convert_pprof *c, struct evsel *evsel,
			struct perf_sample *sample, struct addr_location *al)
{
	struct callchain_cursor *cursor = NULL;
	struct callchain_cursor_node *node;
	size_t nr = 0;

	if (sample->callchain) {
		cursor = get_tls_callchain_cursor();
		if (thread__resolve_callchain(al->thread, cursor, evsel, sample,
					      NULL, NULL, PERF_MAX_STACK_DEPTH))
			cursor = NULL;
	}
	if (cursor) {
		callchain_cursor_commit(cursor);
		while ((node = callchain_cursor_current(cursor)) != NULL) {
			u64 id = pprof__location(c, node->ip, node->ms.map, node->ms.sym);

			if (pprof__push(c, &nr, id))
				return -ENOMEM;
			callchain_cursor_advance(cursor);
		}
	}
	if (!nr && pprof__push(c, &nr, pprof__location(c, sample->ip, al->map, al->sym)))
		return -ENOMEM;
	pb__packed(&c->key, SAMPLE_LOCATION_ID, c->stack, nr);
	return 0;
}

static void pprof__hex(const u8 *id, size_t len, char *buf)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(buf + 2 * i, "%02x", id[i]);
}

/*
 * The labels of a sample: its thread (pid, tid, comm), the trace and span
 * ids of its OpenTelemetry thread context when valid, and the attributes of
 * that context, as far as the dump holds them.
 */
static void pprof__labels(struct convert_pprof *c, struct perf_sample *sample,
			  struct addr_location *al)
{
	const struct tls_dump *tls = &sample->tls_user;
	char hex[2 * OTEL_TRACE_ID_SIZE + 1];
	struct otel_attrs *attrs;
	struct otel_ids ids;
	pid_t pid = thread__pid(al->thread);
	int key;

	pprof__label_num(c, &c->key, "pid", pid);
	pprof__label_num(c, &c->key, "tid", thread__tid(al->thread));
	pprof__label_str(c, &c->key, "thread", pprof__str(c, thread__comm_str(al->thread)));

	tls_user__otel_ids(tls, tls->flags, &ids);
	if (!ids.valid)
		return;
	pprof__hex(ids.trace_id, OTEL_TRACE_ID_SIZE, hex);
	pprof__label_str(c, &c->key, "trace_id", pprof__str(c, hex));
	pprof__hex(ids.span_id, OTEL_SPAN_ID_SIZE, hex);
	pprof__label_str(c, &c->key, "span_id", pprof__str(c, hex));

	attrs = malloc(sizeof(*attrs));
	if (!attrs) {
		c->nomem = true;
		return;
	}
	tls_user__otel_attrs(tls, tls->flags, attrs);
	for (key = 0; key < (int)ARRAY_SIZE(attrs->at); key++) {
		char name[64], value[256];
		u64 i, index;

		if (!attrs->at[key])
			continue;
		for (i = 0; i < attrs->len[key]; i++)
			value[i] = tls_dump__byte(tls, attrs->at[key] + i);
		if (pprof__strn(c, (const u8 *)value, attrs->len[key], &index))
			break;
		pprof__label_str(c, &c->key,
				 pprof__attr_key(c->session, pid, key, name, sizeof(name)),
				 index);
	}
	free(attrs);
}

static int pprof__column(struct convert_pprof *c, struct evsel *evsel)
{
	const struct perf_event_attr *attr = &evsel->core.attr;
	struct pprof_column *columns;
	int i;

	for (i = 0; i < c->nr_columns; i++) {
		if (c->columns[i].evsel == evsel)
			return i;
	}
	columns = realloc(c->columns, (c->nr_columns + 1) * sizeof(*columns));
	if (!columns)
		return -ENOMEM;
	c->columns = columns;
	columns += c->nr_columns;
	columns->evsel = evsel;
	columns->type = evsel__name(evsel);
	columns->unit = "count";
	if (attr->type == PERF_TYPE_SOFTWARE &&
	    (attr->config == PERF_COUNT_SW_CPU_CLOCK || attr->config == PERF_COUNT_SW_TASK_CLOCK)) {
		/* The value of Go's CPU profiles, unless an event has it already */
		if (!c->cpu_column)
			columns->type = "cpu";
		columns->unit = "nanoseconds";
		c->cpu_column = true;
	}
	return c->nr_columns++;
}

static int process_sample_event(const struct perf_tool *tool,
				union perf_event *event __maybe_unused,
				struct perf_sample *sample,
				struct evsel *evsel,
				struct machine *machine)
{
	struct convert_pprof *c = container_of(tool, struct convert_pprof, tool);
	struct pprof_entry *e;
	struct addr_location al;
	int column, ret = -1;
	u64 id;

	addr_location__init(&al);
	if (machine__resolve(machine, &al, sample) < 0) {
		pr_err("Sample resolution failed!\n");
		goto out;
	}
	column = pprof__column(c, evsel);
	if (column < 0)
		goto out_nomem;

	pb__reset(&c->key);
	if (pprof__stack(c, evsel, sample, &al))
		goto out_nomem;
	pprof__labels(c, sample, &al);
	if (c->nomem || c->key.nomem)
		goto out_nomem;

	e = pprof_table__entry(&c->samples, c->key.data, c->key.len, column, &id);
	if (!e)
		goto out_nomem;
	e->count++;
	e->period += sample->period;

	c->nr_samples++;
	/* A sample without PERF_SAMPLE_TIME has time -1 */
	if (sample->time != (u64)-1) {
		if (!c->nr_timed++ || sample->time < c->first_time)
			c->first_time = sample->time;
		if (sample->time > c->last_time)
			c->last_time = sample->time;
	}
	ret = 0;
	goto out;

out_nomem:
	pr_err("Not enough memory for the pprof profile\n");
out:
	addr_location__exit(&al);
	return ret;
}

static void pprof__value_type(struct convert_pprof *c, struct pb *pb, int field,
			      const char *type, const char *unit)
{
	u64 type_index = pprof__str(c, type), unit_index = pprof__str(c, unit);
	struct pb *vt = &c->msg;

	pb__reset(vt);
	pb__uint(vt, VALUE_TYPE_TYPE, type_index);
	pb__uint(vt, VALUE_TYPE_UNIT, unit_index);
	pb__msg(pb, field, vt);
}

/* 0: an executable, 1: a shared library (.so, .so.N), 2: [kernel.kallsyms]... */
static size_t pprof__mapping_rank(const struct pprof_entry *file)
{
	size_t i;

	if (file->len && file->key[0] == '[')
		return 2;
	for (i = 0; i + 3 <= file->len; i++) {
		if (!memcmp(file->key + i, ".so", 3) &&
		    (i + 3 == file->len || file->key[i + 3] == '.'))
			return 1;
	}
	return 0;
}

/* The profile, its string table last: every string is in it by then */
static int pprof__encode(struct convert_pprof *c, struct pb *out)
{
	struct perf_env *env = &c->session->header.env;
	struct pb *m = &c->msg;
	u64 *values;
	size_t i;
	int col;

	values = calloc(c->nr_columns + 1, sizeof(*values));
	if (!values)
		return -ENOMEM;

	pprof__value_type(c, out, PROFILE_SAMPLE_TYPE, "samples", "count");
	for (col = 0; col < c->nr_columns; col++)
		pprof__value_type(c, out, PROFILE_SAMPLE_TYPE, c->columns[col].type,
				  c->columns[col].unit);

	for (i = 0; i < c->samples.nr; i++) {
		struct pprof_entry *e = c->samples.entries[i];

		/* The location ids and labels, then the values */
		pb__reset(m);
		pb__raw(m, e->key, e->len);
		memset(values, 0, (c->nr_columns + 1) * sizeof(*values));
		values[0] = e->count;
		values[e->column + 1] = e->period;
		pb__packed(m, SAMPLE_VALUE, values, c->nr_columns + 1);
		pb__msg(out, PROFILE_SAMPLE, m);
	}
	free(values);

	/*
	 * pprof takes the first mapping for the main binary: executables
	 * first, then shared libraries, then [kernel.kallsyms], [vdso] and the
	 * like.
	 */
	for (i = 0; i < 3 * c->mappings.nr; i++) {
		struct pprof_entry *e = c->mappings.entries[i % c->mappings.nr];
		struct pprof_mapping_key key;
		const struct pprof_entry *file;

		memcpy(&key, e->key, sizeof(key));
		file = c->strings.entries[key.filename];
		if (pprof__mapping_rank(file) != i / c->mappings.nr)
			continue;
		pb__reset(m);
		pb__uint(m, MAPPING_ID, i % c->mappings.nr + 1);
		pb__uint(m, MAPPING_MEMORY_START, key.start);
		pb__uint(m, MAPPING_MEMORY_LIMIT, key.limit);
		pb__uint(m, MAPPING_FILE_OFFSET, key.offset);
		pb__uint(m, MAPPING_FILENAME, key.filename);
		pb__uint(m, MAPPING_BUILD_ID, key.build_id);
		/* Every location in it has its function */
		pb__uint(m, MAPPING_HAS_FUNCTIONS, !e->count);
		pb__msg(out, PROFILE_MAPPING, m);
	}

	for (i = 0; i < c->locations.nr; i++) {
		struct pprof_location_key key;
		struct pb line = { .data = NULL, };

		memcpy(&key, c->locations.entries[i]->key, sizeof(key));
		pb__reset(m);
		pb__uint(m, LOCATION_ID, i + 1);
		pb__uint(m, LOCATION_MAPPING_ID, key.mapping_id);
		pb__uint(m, LOCATION_ADDRESS, key.address);
		if (key.function_id) {
			pb__uint(&line, LINE_FUNCTION_ID, key.function_id);
			pb__msg(m, LOCATION_LINE, &line);
			if (line.nomem)
				m->nomem = true;
			pb__exit(&line);
		}
		pb__msg(out, PROFILE_LOCATION, m);
	}

	for (i = 0; i < c->functions.nr; i++) {
		u64 name;

		memcpy(&name, c->functions.entries[i]->key, sizeof(name));
		pb__reset(m);
		pb__uint(m, FUNCTION_ID, i + 1);
		pb__uint(m, FUNCTION_NAME, name);
		pb__uint(m, FUNCTION_SYSTEM_NAME, name);
		pb__msg(out, PROFILE_FUNCTION, m);
	}

	/* The clock of the samples against the wall clock, when perf record said */
	if (c->nr_timed && env->clock.enabled)
		pb__uint(out, PROFILE_TIME_NANOS,
			 env->clock.tod_ns + (c->first_time - env->clock.clockid_ns));
	pb__uint(out, PROFILE_DURATION_NANOS, c->last_time - c->first_time);
	if (c->nr_columns) {
		const struct perf_event_attr *attr = &c->columns[0].evsel->core.attr;

		pprof__value_type(c, out, PROFILE_PERIOD_TYPE, c->columns[0].type,
				  c->columns[0].unit);
		if (!attr->freq)
			pb__uint(out, PROFILE_PERIOD, attr->sample_period);
	}

	for (i = 0; i < c->strings.nr; i++) {
		struct pprof_entry *e = c->strings.entries[i];

		pb__bytes(out, PROFILE_STRING_TABLE, e->key, e->len);
	}
	return out->nomem || m->nomem || c->nomem ? -ENOMEM : 0;
}

/*
 * gzip (RFC 1952): a header, deflate data (RFC 1951), the CRC-32 and the
 * length of the data.  With zlib the data is compressed; without it, it goes
 * in stored blocks (no compression) of at most 65535 bytes each, which every
 * gzip reader takes.
 */
#ifdef HAVE_ZLIB_SUPPORT
static int pprof__gzip(const struct pb *pb, FILE *out)
{
	u8 buf[65536];
	z_stream zs;
	int ret;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip header and trailer around the deflate data */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	zs.next_in = pb->data;
	zs.avail_in = pb->len;
	do {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		ret = deflate(&zs, Z_FINISH);
		if (ret == Z_STREAM_ERROR)
			break;
		if (fwrite(buf, 1, sizeof(buf) - zs.avail_out, out) != sizeof(buf) - zs.avail_out) {
			ret = Z_ERRNO;
			break;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&zs);
	return ret == Z_STREAM_END ? 0 : -EIO;
}
#else
/* CRC-32 of gzip (and zlib, Ethernet): reflected polynomial 0xedb88320 */
static u32 pprof__crc32(const u8 *data, size_t len)
{
	static u32 table[256];
	u32 crc = 0xffffffff;
	size_t i;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			u32 c = i;
			int k;

			for (k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffff;
}

static void put_le32(u8 *p, u32 v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static int pprof__gzip(const struct pb *pb, FILE *out)
{
	/* ID1 ID2, CM 8 (deflate), no flags, no mtime, no extra flags, OS unknown */
	static const u8 header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };
	size_t pos = 0;
	u8 trailer[8];

	if (fwrite(header, 1, sizeof(header), out) != sizeof(header))
		return -EIO;
	do {
		size_t len = min(pb->len - pos, (size_t)0xffff);
		/* BFINAL on the last block, BTYPE 00 (stored), LEN, NLEN */
		u8 block[5] = {
			pos + len == pb->len, len & 0xff, len >> 8,
			~len & 0xff, (~len >> 8) & 0xff,
		};

		if (fwrite(block, 1, sizeof(block), out) != sizeof(block) ||
		    (len && fwrite(pb->data + pos, 1, len, out) != len))
			return -EIO;
		pos += len;
	} while (pos < pb->len);
	put_le32(trailer, pprof__crc32(pb->data, pb->len));
	put_le32(trailer + 4, pb->len);
	if (fwrite(trailer, 1, sizeof(trailer), out) != sizeof(trailer))
		return -EIO;
	return 0;
}
#endif

int bt_convert__perf2pprof(const char *input_name, const char *output_name,
			   struct perf_data_convert_opts *opts)
{
	struct perf_session *session;
	struct convert_pprof c;
	struct pb out = { .data = NULL, };
	FILE *fp;
	int fd, ret = -1;
	struct perf_data data = {
		.mode = PERF_DATA_MODE_READ,
		.path = input_name,
		.force = opts->force,
	};

	if (opts->all) {
		pr_err("--all is currently unsupported for pprof output.\n");
		return -1;
	}
	if (opts->tod) {
		pr_err("--tod is currently unsupported for pprof output.\n");
		return -1;
	}

	memset(&c, 0, sizeof(c));
	perf_tool__init(&c.tool, /*ordered_events=*/true);
	c.tool.sample		= process_sample_event;
	c.tool.mmap		= perf_event__process_mmap;
	c.tool.mmap2		= perf_event__process_mmap2;
	c.tool.comm		= perf_event__process_comm;
	c.tool.namespaces	= perf_event__process_namespaces;
	c.tool.cgroup		= perf_event__process_cgroup;
	c.tool.exit		= perf_event__process_exit;
	c.tool.fork		= perf_event__process_fork;
	c.tool.lost		= perf_event__process_lost;
#ifdef HAVE_LIBTRACEEVENT
	c.tool.tracing_data	= perf_event__process_tracing_data;
#endif
	c.tool.build_id		= perf_event__process_build_id;
	c.tool.id_index		= perf_event__process_id_index;
	c.tool.auxtrace_info	= perf_event__process_auxtrace_info;
	c.tool.auxtrace		= perf_event__process_auxtrace;
	c.tool.event_update	= perf_event__process_event_update;
	c.tool.ordering_requires_timestamps = true;

	pprof_table__init(&c.strings);
	pprof_table__init(&c.functions);
	pprof_table__init(&c.mappings);
	pprof_table__init(&c.locations);
	pprof_table__init(&c.samples);
	/* String 0 is "" */
	pprof__str(&c, "");

	fd = open(output_name, O_CREAT | O_WRONLY | (opts->force ? O_TRUNC : O_EXCL), 0666);
	if (fd == -1) {
		if (errno == EEXIST)
			pr_err("Output file exists. Use --force to overwrite it.\n");
		else
			pr_err("Error opening output file!\n");
		goto out_tables;
	}
	fp = fdopen(fd, "w");
	if (!fp) {
		pr_err("Error opening output file!\n");
		close(fd);
		goto out_tables;
	}

	session = perf_session__new(&data, &c.tool);
	if (IS_ERR(session)) {
		pr_err("Error creating perf session!\n");
		goto out_fclose;
	}
	c.session = session;

	if (symbol__init(&session->header.env) < 0) {
		pr_err("Symbol init error!\n");
		goto out_session;
	}
	/* Stacks leaf first, as pprof has them */
	callchain_param.order = ORDER_CALLEE;

	if (perf_session__process_events(session)) {
		pr_err("Error reading the samples!\n");
		goto out_session;
	}
	if (pprof__encode(&c, &out)) {
		pr_err("Not enough memory for the pprof profile\n");
		goto out_session;
	}
	if (pprof__gzip(&out, fp)) {
		pr_err("Error writing the pprof profile!\n");
		goto out_session;
	}

	fprintf(stderr, "[ perf data convert: Converted '%s' into pprof profile '%s' ]\n",
		data.path, output_name);
	fprintf(stderr, "[ perf data convert: Converted %llu samples into %zu pprof samples ]\n",
		(unsigned long long)c.nr_samples, c.samples.nr);
	ret = 0;

out_session:
	perf_session__delete(session);
out_fclose:
	if (fclose(fp) && !ret) {
		pr_err("Error writing the pprof profile!\n");
		ret = -1;
	}
out_tables:
	pb__exit(&out);
	pb__exit(&c.key);
	pb__exit(&c.msg);
	pb__exit(&c.str);
	free(c.stack);
	free(c.columns);
	pprof_table__exit(&c.strings);
	pprof_table__exit(&c.functions);
	pprof_table__exit(&c.mappings);
	pprof_table__exit(&c.locations);
	pprof_table__exit(&c.samples);
	return ret;
}
