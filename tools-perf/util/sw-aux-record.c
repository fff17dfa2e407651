// SPDX-License-Identifier: GPL-2.0
/*
 * sw_aux: record the AUX area data of the software AUX area PMU
 *
 * The PMU is the same on every architecture, so its recording support is
 * here rather than under arch/: each arch's auxtrace_record__init() asks
 * sw_aux_recording_init() first.
 */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/types.h>
#include <linux/zalloc.h>
#include <internal/lib.h> // page_size

#include "auxtrace.h"
#include "debug.h"
#include "event.h"
#include "evlist.h"
#include "evsel.h"
#include "evsel_config.h"
#include "pmu.h"
#include "pmus.h"
#include "record.h"
#include "sw-aux.h"
#include "time-utils.h"

#define KiB(x) ((x) * 1024)
#define MiB(x) ((x) * 1024 * 1024)

struct sw_aux_recording {
	struct auxtrace_record	itr;
	struct perf_pmu		*pmu;
};

static size_t sw_aux_info_priv_size(struct auxtrace_record *itr __maybe_unused,
				    struct evlist *evlist __maybe_unused)
{
	return SW_AUX_AUXTRACE_PRIV_SIZE;
}

static int sw_aux_info_fill(struct auxtrace_record *itr,
			    struct perf_session *session __maybe_unused,
			    struct perf_record_auxtrace_info *auxtrace_info,
			    size_t priv_size)
{
	struct sw_aux_recording *swr = container_of(itr, struct sw_aux_recording,
						    itr);

	if (priv_size != SW_AUX_AUXTRACE_PRIV_SIZE)
		return -EINVAL;

	auxtrace_info->type = PERF_AUXTRACE_SW_AUX;
	auxtrace_info->priv[SW_AUX_PMU_TYPE] = swr->pmu->type;
	return 0;
}

/*
 * The sw_aux event does not sample (the kernel refuses a sample period or
 * frequency on it), but evsel__config() gives every event the default or
 * the -c/-F one, then applies the event's config terms: make the last of
 * them a period term of 0.
 */
static int sw_aux_evsel__no_sampling(struct evsel *evsel)
{
	struct evsel_config_term *term;

	if (evsel__get_config_term(evsel, FREQ) ||
	    evsel__get_config_term(evsel, PERIOD)) {
		pr_err(SW_AUX_PMU_NAME " does not sample: freq= and period= cannot be used (its tick is tick_us=)\n");
		return -EINVAL;
	}

	term = zalloc(sizeof(*term));
	if (!term)
		return -ENOMEM;
	term->type = EVSEL__CONFIG_TERM_PERIOD;

	term->val.period = 0;
	term->weak = false;
	list_add_tail(&term->list, &evsel->config_terms);
	return 0;
}

static size_t sw_aux_max_sample_size(struct evlist *evlist)
{
	struct evsel *evsel;
	size_t max_sz = 0;

	evlist__for_each_entry(evlist, evsel)
		max_sz = max_t(size_t, max_sz, evsel->core.attr.aux_sample_size);
	return max_sz;
}

static int sw_aux_set_mmap_pages(struct evlist *evlist,
				 struct record_opts *opts)
{
	bool privileged = perf_event_paranoid_check(-1);
	size_t sz;

	if (opts->auxtrace_sample_mode) {
		size_t max_sz = sw_aux_max_sample_size(evlist);

		/* Room for twice the largest sample, to take it from */
		if (!opts->auxtrace_mmap_pages) {
			sz = round_up(2 * max_sz, page_size) / page_size;
			opts->auxtrace_mmap_pages = roundup_pow_of_two(sz);
		}
		if (max_sz > opts->auxtrace_mmap_pages * (size_t)page_size) {
			pr_err("sw_aux: sample size %zu must not be greater than the AUX area mmap size %zu\n",
			       max_sz,
			       opts->auxtrace_mmap_pages * (size_t)page_size);
			return -EINVAL;
		}
	} else if (!opts->auxtrace_mmap_pages) {
		if (privileged) {
			opts->auxtrace_mmap_pages = MiB(4) / page_size;
		} else {
			opts->auxtrace_mmap_pages = KiB(128) / page_size;
			if (opts->mmap_pages == UINT_MAX)
				opts->mmap_pages = KiB(256) / page_size;
		}
	}

	sz = opts->auxtrace_mmap_pages * (size_t)page_size;
	if (sz < KiB(4) || !is_power_of_2(sz)) {
		pr_err("sw_aux: the AUX area mmap size must be at least 4KiB and a power of 2\n");
		return -EINVAL;
	}
	return 0;
}

static int sw_aux_recording_options(struct auxtrace_record *itr,
				    struct evlist *evlist,
				    struct record_opts *opts)
{
	struct sw_aux_recording *swr = container_of(itr, struct sw_aux_recording,
						    itr);
	const struct perf_cpu_map *cpus = evlist->core.user_requested_cpus;
	struct evsel *evsel, *sw_aux_evsel = NULL;
	struct evsel *tracking_evsel;
	int err;

	evlist__for_each_entry(evlist, evsel) {
		if (evsel->core.attr.type != swr->pmu->type)
			continue;
		if (sw_aux_evsel) {
			pr_err("There may be only one " SW_AUX_PMU_NAME " event\n");
			return -EINVAL;
		}
		sw_aux_evsel = evsel;
	}
	if (!sw_aux_evsel)
		return 0;

	if (opts->auxtrace_snapshot_mode) {
		pr_err(SW_AUX_PMU_NAME " does not support snapshot mode (-S)\n");
		return -EINVAL;
	}

	err = sw_aux_evsel__no_sampling(sw_aux_evsel);
	if (err)
		return err;
	sw_aux_evsel->no_aux_samples = true;
	sw_aux_evsel->needs_auxtrace_mmap = true;
	opts->full_auxtrace = true;

	err = sw_aux_set_mmap_pages(evlist, opts);
	if (err)
		return err;

	/* Full trace: wake up to read the AUX area when it is a quarter full */
	if (!opts->auxtrace_sample_mode) {
		size_t aw = opts->auxtrace_mmap_pages * (size_t)page_size / 4;

		sw_aux_evsel->core.attr.aux_watermark = min_t(size_t, aw, UINT_MAX);
	}

	/* The AUX area event must come first to get the AUX area mmaps */
	evlist__to_front(evlist, sw_aux_evsel);
	evsel__set_sample_bit(sw_aux_evsel, TIME);
	/* With per-cpu mmaps, PERF_RECORD_AUX needs the CPU */
	if (!perf_cpu_map__is_any_cpu_or_is_empty(cpus))
		evsel__set_sample_bit(sw_aux_evsel, CPU);

	/* A dummy event for the side band (comm, mmap, ...) */
	tracking_evsel = evlist__add_aux_dummy(evlist, false);
	if (!tracking_evsel)
		return -ENOMEM;
	evlist__set_tracking_event(evlist, tracking_evsel);
	evsel__set_sample_bit(tracking_evsel, TIME);
	if (!perf_cpu_map__is_any_cpu_or_is_empty(cpus))
		evsel__set_sample_bit(tracking_evsel, CPU);
	evsel__reset_sample_bit(tracking_evsel, BRANCH_STACK);

	return 0;
}

static int sw_aux_parse_snapshot_options(struct auxtrace_record *itr __maybe_unused,
					 struct record_opts *opts __maybe_unused,
					 const char *str __maybe_unused)
{
	pr_err(SW_AUX_PMU_NAME " does not support snapshot mode (-S)\n");
	return -EINVAL;
}

static u64 sw_aux_reference(struct auxtrace_record *itr __maybe_unused)
{
	return rdclock();
}

static void sw_aux_recording_free(struct auxtrace_record *itr)
{
	free(container_of(itr, struct sw_aux_recording, itr));
}

/*
 * The auxtrace_record for an evlist with a sw_aux event, or NULL (and
 * *err = 0) if it has none.
 */
struct auxtrace_record *sw_aux_recording_init(struct evlist *evlist, int *err)
{
	struct sw_aux_recording *swr;
	bool found = false, other = false;
	struct perf_pmu *pmu;
	struct evsel *evsel;

	*err = 0;
	pmu = perf_pmus__find(SW_AUX_PMU_NAME);
	if (!pmu || !evlist)
		return NULL;

	evlist__for_each_entry(evlist, evsel) {
		if (evsel->core.attr.type == pmu->type)
			found = true;
		else if (evsel__is_aux_event(evsel))
			other = true;
	}
	if (!found)
		return NULL;
	if (other) {
		pr_err(SW_AUX_PMU_NAME " cannot be used together with another AUX area event\n");
		*err = -EINVAL;
		return NULL;
	}

	swr = zalloc(sizeof(*swr));
	if (!swr) {
		*err = -ENOMEM;
		return NULL;
	}

	swr->pmu = pmu;
	swr->itr.recording_options = sw_aux_recording_options;
	swr->itr.info_priv_size = sw_aux_info_priv_size;
	swr->itr.info_fill = sw_aux_info_fill;
	swr->itr.parse_snapshot_options = sw_aux_parse_snapshot_options;
	swr->itr.free = sw_aux_recording_free;
	swr->itr.reference = sw_aux_reference;
	swr->itr.read_finish = auxtrace_record__read_finish;
	/* The kernel writes whole records */
	swr->itr.alignment = 0;
	return &swr->itr;
}
