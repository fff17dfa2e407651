// SPDX-License-Identifier: GPL-2.0
/*
 * sw_aux: decode the AUX area data of the software AUX area PMU
 *
 * The sw_aux PMU writes one struct sw_aux_record per tick into the AUX
 * area.  Each record becomes a sample of a synthesized "sw_aux-tick"
 * event, delivered in time order with the other events, and perf report -D
 * dumps the records.  The seq member counts the records of an event, so a
 * gap in it means records were lost, e.g. because the AUX area was full.
 */

#include <byteswap.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel.h>
#include <linux/perf_sw_aux.h>
#include <linux/time64.h>
#include <linux/types.h>
#include <linux/zalloc.h>

#include "auxtrace.h"
#include "color.h"
#include "debug.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "sample.h"
#include "session.h"
#include "sw-aux.h"
#include "tool.h"
#include "util/synthetic-events.h"

#define SW_AUX_ERR_SEQ	1	/* auxtrace error code: seq not contiguous */

/* The last seq seen in an AUX buffer (tid -1) or of one thread in it. */
struct sw_aux_stream {
	int			idx;
	int			tid;
	u64			next_seq;
	bool			seen;
};

struct sw_aux {
	struct auxtrace		auxtrace;
	struct auxtrace_queues	queues;
	struct itrace_synth_opts synth_opts;
	struct perf_session	*session;
	u32			auxtrace_type;
	u32			pmu_type;
	bool			data_queued;
	bool			synth_ticks;
	u64			tick_id;
	u64			tick_sample_type;
	size_t			tick_event_size;
	struct sw_aux_stream	*streams;
	size_t			nr_streams;
};

/* Where decoding stands in one queue (AUX buffer) */
struct sw_aux_queue {
	struct auxtrace_buffer	*buffer;
	size_t			pos;
};

static void sw_aux_read_record(struct sw_aux *swa, const void *data,
			       struct sw_aux_record *rec)
{
	memcpy(rec, data, sizeof(*rec));
	if (!swa->session->header.needs_swap)
		return;
	rec->seq = bswap_64(rec->seq);
	rec->time = bswap_64(rec->time);
	rec->ip = bswap_64(rec->ip);
	rec->pid = bswap_32(rec->pid);
	rec->tid = bswap_32(rec->tid);
}

static int sw_aux_record_fprintf(const struct sw_aux_record *rec, FILE *fp)
{
	return fprintf(fp, "seq %llu time %llu.%09llu ip %#llx pid %u tid %u",
		       (unsigned long long)rec->seq,
		       (unsigned long long)rec->time / NSEC_PER_SEC,
		       (unsigned long long)rec->time % NSEC_PER_SEC,
		       (unsigned long long)rec->ip, rec->pid, rec->tid);
}

static struct sw_aux_stream *sw_aux_stream(struct sw_aux *swa, int idx,
					   int tid)
{
	struct sw_aux_stream *s;
	size_t i;

	for (i = 0; i < swa->nr_streams; i++) {
		s = &swa->streams[i];
		if (s->idx == idx && s->tid == tid)
			return s;
	}

	s = realloc(swa->streams, (swa->nr_streams + 1) * sizeof(*s));
	if (!s)
		return NULL;
	swa->streams = s;
	s = &s[swa->nr_streams++];
	s->idx = idx;
	s->tid = tid;
	s->next_seq = 0;
	s->seen = false;
	return s;
}

/*
 * An AUX buffer holds the records of one event (a CPU-wide event, or a
 * task event with per-thread mmaps) or of several (the inherited events
 * of a task and its children on one CPU).  seq counts per event from 0,
 * so a record is in order if it follows the previous record in its
 * buffer, or the previous record of its thread (0 for a thread's first).
 * Returns false, and the seq expected, if @rec is not in order.
 */
static bool sw_aux_seq_ok(struct sw_aux *swa, int idx,
			  const struct sw_aux_record *rec, u64 *expected)
{
	struct sw_aux_stream *buf, *thr;
	bool ok;

	/*
	 * Adding the thread's stream may move the array, so the buffer's
	 * stream is looked up again once both exist.
	 */
	if (!sw_aux_stream(swa, idx, -1))
		return true;
	thr = sw_aux_stream(swa, idx, rec->tid);
	if (!thr)
		return true;
	buf = sw_aux_stream(swa, idx, -1);

	*expected = thr->seen ? thr->next_seq : 0;
	ok = rec->seq == *expected || (buf->seen && rec->seq == buf->next_seq);
	if (!ok && !thr->seen && buf->seen)
		*expected = buf->next_seq;

	buf->seen = true;
	buf->next_seq = rec->seq + 1;
	thr->seen = true;
	thr->next_seq = rec->seq + 1;
	return ok;
}

/*
 * A PERF_SAMPLE_AUX sample is padded with zeroed bytes when fewer records
 * than fit were written, and when its size is not a multiple of the record
 * size.  A zeroed record is padding: a real one never has time 0.
 */
static bool sw_aux_is_padding(const struct sw_aux_record *rec)
{
	return !rec->time;
}

static void sw_aux_dump(struct sw_aux *swa, const unsigned char *buf,
			size_t len)
{
	const char *color = PERF_COLOR_BLUE;
	struct sw_aux_record rec;
	size_t pos, pad = 0;
	bool first = true;
	u64 expected = 0;

	color_fprintf(stdout, color, ". ... sw_aux data: size %zu bytes\n",
		      len);

	for (pos = 0; pos + SW_AUX_RECORD_SIZE <= len;
	     pos += SW_AUX_RECORD_SIZE) {
		sw_aux_read_record(swa, buf + pos, &rec);
		if (sw_aux_is_padding(&rec)) {
			pad += SW_AUX_RECORD_SIZE;
			continue;
		}
		if (!first && rec.seq != expected)
			color_fprintf(stdout, color,
				      ".  sw_aux: gap: seq %llu, expected %llu\n",
				      (unsigned long long)rec.seq,
				      (unsigned long long)expected);
		first = false;
		expected = rec.seq + 1;
		color_fprintf(stdout, color, ".  %08zx: ", pos);
		sw_aux_record_fprintf(&rec, stdout);
		fputc('\n', stdout);
	}
	pad += len - pos;
	if (pad)
		color_fprintf(stdout, color, ".  sw_aux: %zu bytes of padding\n",
			      pad);
}

static int sw_aux_synth_tick(struct sw_aux *swa, int cpu,
			     const struct sw_aux_record *rec)
{
	struct perf_sample sample = { .ip = 0, };
	union perf_event event;
	int err;

	sample.ip = rec->ip;
	sample.cpumode = PERF_RECORD_MISC_USER;
	sample.pid = rec->pid;
	sample.tid = rec->tid;
	sample.time = rec->time;
	sample.cpu = cpu;
	sample.id = swa->tick_id;
	sample.stream_id = swa->tick_id;
	sample.period = 1;

	event.sample.header.type = PERF_RECORD_SAMPLE;
	event.sample.header.misc = sample.cpumode;
	event.sample.header.size = sizeof(struct perf_event_header);

	if (swa->synth_opts.inject) {
		event.sample.header.size = swa->tick_event_size;
		err = perf_event__synthesize_sample(&event,
						    swa->tick_sample_type,
						    0, &sample);
		if (err)
			return err;
	}

	err = perf_session__deliver_synth_event(swa->session, &event, &sample);
	if (err)
		pr_err("sw_aux: failed to deliver a tick sample, error %d\n",
		       err);
	return err;
}

static int sw_aux_synth_seq_error(struct sw_aux *swa, int cpu,
				  const struct sw_aux_record *rec,
				  u64 expected)
{
	char msg[MAX_AUXTRACE_ERROR_MSG];
	union perf_event event;
	int err;

	/* At most 63 characters: fits MAX_AUXTRACE_ERROR_MSG */
	snprintf(msg, sizeof(msg), "sw_aux seq %llu, expected %llu",
		 (unsigned long long)rec->seq, (unsigned long long)expected);

	auxtrace_synth_error(&event.auxtrace_error, PERF_AUXTRACE_ERROR_ITRACE,
			     SW_AUX_ERR_SEQ, cpu, rec->pid, rec->tid, rec->ip,
			     msg, rec->time);

	err = perf_session__deliver_synth_event(swa->session, &event, NULL);
	if (err)
		pr_err("sw_aux: failed to deliver an error event, error %d\n",
		       err);
	return err;
}

/* Decode the records of queue @idx that are older than @timestamp. */
static int sw_aux_process_queue(struct sw_aux *swa, unsigned int idx,
				u64 timestamp)
{
	struct auxtrace_queue *queue = &swa->queues.queue_array[idx];
	struct sw_aux_queue *swq = queue->priv;
	int fd = perf_data__fd(swa->session->data);
	struct auxtrace_buffer *buffer;
	struct sw_aux_record rec;
	u64 expected;
	int err;

	if (!swq) {
		if (list_empty(&queue->head))
			return 0;
		swq = zalloc(sizeof(*swq));
		if (!swq)
			return -ENOMEM;
		queue->priv = swq;
	}

	while (true) {
		buffer = swq->buffer;
		if (!buffer || buffer->size - swq->pos < SW_AUX_RECORD_SIZE) {
			buffer = auxtrace_buffer__next(queue, swq->buffer);
			if (!buffer)
				return 0;
			if (swq->buffer)
				auxtrace_buffer__drop_data(swq->buffer);
			swq->buffer = buffer;
			swq->pos = 0;
			if (!auxtrace_buffer__get_data(buffer, fd))
				return -ENOMEM;
			if (buffer->size % SW_AUX_RECORD_SIZE)
				pr_warning("sw_aux: AUX buffer of %zu bytes is not whole records\n",
					   buffer->size);
			continue;
		}

		sw_aux_read_record(swa, buffer->data + swq->pos, &rec);
		if (rec.time > timestamp)
			return 0;
		swq->pos += SW_AUX_RECORD_SIZE;
		if (sw_aux_is_padding(&rec))
			continue;

		if (!sw_aux_seq_ok(swa, idx, &rec, &expected) &&
		    swa->synth_opts.errors) {
			err = sw_aux_synth_seq_error(swa, buffer->cpu.cpu,
						     &rec, expected);
			if (err)
				return err;
		}

		if (swa->synth_ticks) {
			err = sw_aux_synth_tick(swa, buffer->cpu.cpu, &rec);
			if (err)
				return err;
		}
	}
}

static int sw_aux_process_queues(struct sw_aux *swa, u64 timestamp)
{
	unsigned int i;
	int err;

	for (i = 0; i < swa->queues.nr_queues; i++) {
		err = sw_aux_process_queue(swa, i, timestamp);
		if (err)
			return err;
	}
	return 0;
}

static int sw_aux_process_event(struct perf_session *session,
				union perf_event *event __maybe_unused,
				struct perf_sample *sample,
				const struct perf_tool *tool)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);

	if (dump_trace)
		return 0;

	if (!tool->ordered_events) {
		pr_err("sw_aux decoding requires ordered events\n");
		return -EINVAL;
	}

	if (!sample->time || sample->time == (u64)-1)
		return 0;

	return sw_aux_process_queues(swa, sample->time);
}

static int sw_aux_process_auxtrace_event(struct perf_session *session,
					 union perf_event *event,
					 const struct perf_tool *tool __maybe_unused)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);
	int fd = perf_data__fd(session->data);
	struct auxtrace_buffer *buffer;
	off_t data_offset;
	int err;

	if (swa->data_queued)
		return 0;

	if (perf_data__is_pipe(session->data)) {
		data_offset = 0;
	} else {
		data_offset = lseek(fd, 0, SEEK_CUR);
		if (data_offset == -1)
			return -errno;
	}

	err = auxtrace_queues__add_event(&swa->queues, session, event,
					 data_offset, &buffer);
	if (err)
		return err;

	/* Dump here, now that a piped trace has been copied out of the pipe */
	if (dump_trace && auxtrace_buffer__get_data(buffer, fd)) {
		printf(".\n");
		sw_aux_dump(swa, buffer->data, buffer->size);
		auxtrace_buffer__put_data(buffer);
	}

	return 0;
}

static void sw_aux_dump_sample(struct perf_session *session,
			       struct perf_sample *sample)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);

	printf("\n");
	sw_aux_dump(swa, sample->aux_sample.data, sample->aux_sample.size);
}

/*
 * perf script: the records of a PERF_SAMPLE_AUX sample, oldest first, each
 * on a line of its own under the sample.
 */
static size_t sw_aux_fprintf_aux_sample(struct perf_session *session,
					struct perf_sample *sample, FILE *fp)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);
	const unsigned char *data = sample->aux_sample.data;
	size_t len = sample->aux_sample.size;
	size_t pos, ret, nr = 0;
	struct sw_aux_record rec;
	u64 expected = 0;

	for (pos = 0; pos + SW_AUX_RECORD_SIZE <= len;
	     pos += SW_AUX_RECORD_SIZE) {
		sw_aux_read_record(swa, data + pos, &rec);
		nr += !sw_aux_is_padding(&rec);
	}

	ret = fprintf(fp, "\tsw_aux: %zu bytes, %zu records\n", len, nr);

	for (pos = 0; pos + SW_AUX_RECORD_SIZE <= len;
	     pos += SW_AUX_RECORD_SIZE) {
		sw_aux_read_record(swa, data + pos, &rec);
		if (sw_aux_is_padding(&rec))
			continue;
		if (expected && rec.seq != expected)
			ret += fprintf(fp, "\tsw_aux: gap: seq %llu, expected %llu\n",
				       (unsigned long long)rec.seq,
				       (unsigned long long)expected);
		expected = rec.seq + 1;
		ret += fprintf(fp, "\tsw_aux: ");
		ret += sw_aux_record_fprintf(&rec, fp);
		ret += fprintf(fp, "\n");
	}
	return ret;
}

static int sw_aux_flush(struct perf_session *session,
			const struct perf_tool *tool)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);

	if (dump_trace)
		return 0;

	if (!tool->ordered_events)
		return -EINVAL;

	return sw_aux_process_queues(swa, (u64)-1);
}

static void sw_aux_free_events(struct perf_session *session)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);
	struct auxtrace_queues *queues = &swa->queues;
	unsigned int i;

	for (i = 0; i < queues->nr_queues; i++)
		zfree(&queues->queue_array[i].priv);
	auxtrace_queues__free(queues);
}

static void sw_aux_free(struct perf_session *session)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);

	sw_aux_free_events(session);
	session->auxtrace = NULL;
	free(swa->streams);
	free(swa);
}

static bool sw_aux_evsel_is_auxtrace(struct perf_session *session,
				     struct evsel *evsel)
{
	struct sw_aux *swa = container_of(session->auxtrace, struct sw_aux,
					  auxtrace);

	return evsel->core.attr.type == swa->pmu_type;
}

static int sw_aux_synth_events(struct sw_aux *swa,
			       struct perf_session *session)
{
	struct evlist *evlist = session->evlist;
	struct perf_event_attr attr;
	struct evsel *evsel;
	bool found = false;
	u64 id;
	int err;

	evlist__for_each_entry(evlist, evsel) {
		if (evsel->core.attr.type == swa->pmu_type && evsel->core.ids) {
			found = true;
			break;
		}
	}

	if (!found) {
		pr_debug("There are no selected events with sw_aux data\n");
		return 0;
	}

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1;
	attr.sample_type = evsel->core.attr.sample_type & PERF_SAMPLE_MASK;
	attr.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.sample_id_all = evsel->core.attr.sample_id_all;
	attr.read_format = evsel->core.attr.read_format;

	/* A fixed offset from the sw_aux event's id, as other decoders do */
	id = evsel->core.id[0] + 1000000000;
	if (!id)
		id = 1;

	pr_debug("Synthesizing 'sw_aux-tick' event with id %llu sample type %#llx\n",
		 (unsigned long long)id, (unsigned long long)attr.sample_type);
	err = perf_session__deliver_synth_attr_event(session, &attr, id);
	if (err) {
		pr_err("%s: failed to synthesize 'sw_aux-tick' event type\n",
		       __func__);
		return err;
	}

	evlist__for_each_entry(evlist, evsel) {
		if (evsel->core.id && evsel->core.id[0] == id) {
			free(evsel->name);
			evsel->name = strdup("sw_aux-tick");
			break;
		}
	}

	swa->synth_ticks = true;
	swa->tick_id = id;
	swa->tick_sample_type = attr.sample_type;
	/* Only PERF_SAMPLE_MASK bits, so __evsel__sample_size() will do */
	swa->tick_event_size = sizeof(struct perf_record_sample) +
			       __evsel__sample_size(attr.sample_type);
	return 0;
}

int sw_aux_process_auxtrace_info(union perf_event *event,
				 struct perf_session *session)
{
	struct perf_record_auxtrace_info *auxtrace_info = &event->auxtrace_info;
	struct sw_aux *swa;
	int err;

	if (auxtrace_info->header.size < sizeof(*auxtrace_info) +
					 SW_AUX_AUXTRACE_PRIV_SIZE)
		return -EINVAL;

	swa = zalloc(sizeof(*swa));
	if (!swa)
		return -ENOMEM;

	err = auxtrace_queues__init(&swa->queues);
	if (err)
		goto err_free;

	swa->session = session;
	swa->auxtrace_type = auxtrace_info->type;
	swa->pmu_type = auxtrace_info->priv[SW_AUX_PMU_TYPE];

	swa->auxtrace.process_event = sw_aux_process_event;
	swa->auxtrace.process_auxtrace_event = sw_aux_process_auxtrace_event;
	swa->auxtrace.dump_auxtrace_sample = sw_aux_dump_sample;
	swa->auxtrace.fprintf_aux_sample = sw_aux_fprintf_aux_sample;
	swa->auxtrace.flush_events = sw_aux_flush;
	swa->auxtrace.free_events = sw_aux_free_events;
	swa->auxtrace.free = sw_aux_free;
	swa->auxtrace.evsel_is_auxtrace = sw_aux_evsel_is_auxtrace;
	session->auxtrace = &swa->auxtrace;

	if (dump_trace) {
		fprintf(stdout, "  PMU Type           %lld\n",
			(long long)auxtrace_info->priv[SW_AUX_PMU_TYPE]);
		return 0;
	}

	if (session->itrace_synth_opts->set) {
		swa->synth_opts = *session->itrace_synth_opts;
	} else {
		bool no_sample = session->itrace_synth_opts->default_no_sample;

		itrace_synth_opts__set_default(&swa->synth_opts, no_sample);
		/*
		 * The ticks are all there is to see, so they are on by
		 * default, also where samples are not (perf script).
		 */
		swa->synth_opts.instructions = true;
	}

	/* The ticks are what the i (instructions) itrace option selects */
	if (swa->synth_opts.instructions) {
		err = sw_aux_synth_events(swa, session);
		if (err)
			goto err_free_queues;
	}

	err = auxtrace_queues__process_index(&swa->queues, session);
	if (err)
		goto err_free_queues;

	if (swa->queues.populated)
		swa->data_queued = true;

	return 0;

err_free_queues:
	auxtrace_queues__free(&swa->queues);
	session->auxtrace = NULL;
err_free:
	free(swa);
	return err;
}
