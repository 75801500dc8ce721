// SPDX-License-Identifier: MIT
/*
 * Tracer lifecycle: open -> configure (rodata) -> load here, attach in
 * attach.c, each step checked with one message per failure and one cleanup
 * path (tracer__close).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf_cache.h"
#include "compat.h"
#include "khprof.skel.h"
#include "sampler.h"
#include "latency.h"
#include "fileio.h"
#include "log.h"
#include "tracer_impl.h"
#include "tsc.h"

static int64_t realtime_minus_monotonic(void)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll + (rt.tv_nsec - mono.tv_nsec);
}

/*
 * KHPROF_LIBBPF_DEBUG=1: libbpf's debug messages too, each stamped with the
 * ms since the tracer was opened, to see where a start-up's time goes
 * (docs/PERFORMANCE.md, row 3).
 */
static uint64_t libbpf_debug_since_ns;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_debug_since_ns) {
		fprintf(stderr, "[%8.3f ms] ",
			(double)(tracer__now_ns() - libbpf_debug_since_ns) / 1e6);
		return vfprintf(stderr, fmt, ap);
	}
	if (!khprof_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int check_kernel_support(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		log__error("kernel has no BTF at '/sys/kernel/btf/vmlinux' "
			   "(khprof needs a kernel built with CONFIG_DEBUG_INFO_BTF)");
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe", F_OK) != 0) {
		log__error("kernel has no uprobes (khprof needs CONFIG_UPROBE_EVENTS)");
		return -ENOTSUP;
	}
	return 0;
}

/*
 * Batch mode times spans with the TSC, which only a TSC clocksource vouches
 * for: elsewhere the TSCs of two CPUs may disagree, and a span that moves
 * between them is mistimed.  Counts stay exact, so an explicit request is
 * honoured with a warning; the default turns to span mode.
 */
static void choose_mode(struct tracer *t)
{
	char clocksource[64];

	if (t->opts.mode != KH_MODE_BATCH || tsc__reliable(clocksource, sizeof(clocksource)))
		return;
	if (t->opts.mode_is_default) {
		log__note("the kernel does not keep time with the TSC (clocksource '%s'): "
			  "tracing in span mode", clocksource);
		t->opts.mode = KH_MODE_SPAN;
		return;
	}
	log__warn("batch mode times spans with the TSC, which this kernel does not keep time "
		  "with (clocksource '%s'): spans that move between CPUs may be mistimed "
		  "(--mode span avoids it)", clocksource);
}

/*
 * The TSC's rate, over the interval since tracing began: loading the BPF
 * programs takes milliseconds, which makes the rate precise to a few ppm.
 */
static int set_tsc_scale(struct tracer *t, const struct tsc_sample *start)
{
	struct tsc_sample now;
	uint32_t mult, shift;
	int err;

	do {
		tsc__sample(&now);
		err = tsc__scale(start, &now, &mult, &shift);
	} while (err && now.raw_ns - start->raw_ns < 10000000ull);
	if (err) {
		log__error("cannot measure the TSC's rate: it did not advance with the clock");
		return err;
	}
	t->skel->bss->tsc_mult = mult;
	t->skel->bss->tsc_shift = shift;
	/* Where a dying thread's TSC times are placed when its CPU never saw a flush. */
	t->skel->bss->tsc_anchor_ticks = __rdtsc();
	t->skel->bss->tsc_anchor_ns = tracer__now_ns();
	log__debug("TSC: %.6f ns per tick", (double)mult / (1u << shift));
	return 0;
}

static void report_load_error(int err)
{
	/* The verifier rejects with EACCES too; privileges were checked before. */
	if (err == -EPERM)
		log__error("cannot load BPF programs: permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)");
	else
		log__error("cannot load BPF programs: %s (the kernel rejected them; "
			   "run with -v for the verifier's log)", strerror(-err));
}

static void configure_sessions(struct tracer *t, int64_t realtime_offset_ns)
{
	struct session_config cfg = {
		.mode = t->opts.mode,
		.trace_start_ns = t->trace_start_ns,
		.realtime_offset_ns = realtime_offset_ns,
		.page_size = (uint64_t)sysconf(_SC_PAGESIZE),
		.overrides = t->opts.overrides,
		.override_count = t->opts.override_count,
		.on_profile = t->opts.on_profile,
		.ctx = t->opts.ctx,
		.interval_ns = t->opts.interval_ns,
		.on_interval = t->opts.on_interval,
	};

	sessions__init(&t->sessions, &cfg);
}

/*
 * Open, configure and load: with the CO-RE target cache when there is one
 * (btf_cache.h).  A failure is reported here, once.
 */
static int open_and_load(struct tracer *t)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts,
		    .btf_custom_path = t->btf_cache.usable ? t->btf_cache.btf_path : NULL);
	int err;

	t->skel = khprof_bpf__open_opts(&open_opts);
	if (!t->skel) {
		err = -errno;
		log__error("cannot open BPF object: %s", strerror(errno));
		return err;
	}
	t->trace_start_ns = tracer__now_ns();
	configure_sessions(t, realtime_minus_monotonic());
	t->skel->rodata->trace_start_ns = t->trace_start_ns;
	t->skel->rodata->stop_on_loader_event = t->opts.stop_on_loader;
	if (t->btf_cache.usable) {
		t->skel->rodata->core_ids_given = 1;
		t->skel->rodata->kernel_id_task_struct = t->btf_cache.ids[BTF_ID_TASK_STRUCT];
		t->skel->rodata->kernel_id_mm_struct = t->btf_cache.ids[BTF_ID_MM_STRUCT];
		t->skel->rodata->kernel_id_signal_struct = t->btf_cache.ids[BTF_ID_SIGNAL_STRUCT];
	}

	bpf_program__set_expected_attach_type(t->skel->progs.kh_usdt,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.kh_usdt_identity,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.kh_loader_state,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.kh_untraced,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	/* Only batch mode keeps spans in the process: the rest needs no syscall hook. */
	bpf_program__set_autoload(t->skel->progs.kh_exec_check, t->opts.mode == KH_MODE_BATCH);
	err = latency__configure(t->skel, t->ncpus);
	if (err)
		return err;
	err = khprof_bpf__load(t->skel);
	/* With the cache, a failure is tried again without it before it is reported. */
	if (err && !t->btf_cache.usable)
		report_load_error(err);
	return err;
}

int tracer__open(struct tracer **out, const struct trace_options *opts)
{
	struct tsc_sample tsc_start;
	struct tracer *t;
	int err;

	*out = NULL;
	err = check_kernel_support();
	if (err)
		return err;
	libbpf_set_print(libbpf_print);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->open_ns = tracer__now_ns();
	if (getenv("KHPROF_LIBBPF_DEBUG"))
		libbpf_debug_since_ns = t->open_ns;
	t->fork_link_fd = -1;
	t->warmer.stop_fd = t->warmer.quiet_fd = -1;
	t->warmer.pid = -1;
	t->opts = *opts;
	/* First: its wait for a grace period runs while the programs load. */
	if (opts->attach_at_once) {
		warmer__start(&t->warmer);
		log__debug("start-up: uprobe warmer started in %.2f ms",
			   (double)(tracer__now_ns() - t->open_ns) / 1e6);
	}
	tsc__sample(&tsc_start);
	choose_mode(t);
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0) {
		log__error("cannot count possible CPUs: %s", strerror(-t->ncpus));
		err = t->ncpus;
		goto fail;
	}

	btf_cache__find(&t->btf_cache);
	err = open_and_load(t);
	if (err && t->btf_cache.usable) {
		/* A cache that no longer fits: rebuilt when this run closes. */
		log__debug("loading with the CO-RE target cache '%s' failed: loading without it",
			   t->btf_cache.btf_path);
		khprof_bpf__destroy(t->skel);
		t->skel = NULL;
		btf_cache__forget(&t->btf_cache);
		sessions__free(&t->sessions);
		err = open_and_load(t);
	}
	if (err) {
		t->btf_cache.fillable = false;
		goto fail;
	}
	if (t->opts.sample_hz) {
		err = sampler__load(&t->sampler, t->skel, t->opts.sample_hz);
		if (err)
			goto fail;
		t->sessions.cfg.fill_stacks = tracer__fill_stacks;
		t->sessions.cfg.stacks_ctx = t;
	}
	log__debug("start-up: BPF object opened in %.1f ms, programs loaded in %.1f ms%s",
		   (double)(t->trace_start_ns - t->open_ns) / 1e6,
		   (double)(tracer__now_ns() - t->trace_start_ns) / 1e6,
		   t->btf_cache.usable ? " (CO-RE targets from the cache)" : "");
	err = set_tsc_scale(t, &tsc_start);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	tracer__close(t);
	return err;
}

/* After the first successful load on a kernel: the cache for the next start. */
static void fill_btf_cache(struct tracer *t)
{
	size_t len;
	const void *object = khprof_bpf__elf_bytes(&len);

	btf_cache__fill(&t->btf_cache, object, len);
}

/*
 * Each uprobe link's detach waits for an RCU-tasks grace period, serialised
 * in the kernel (about 80 ms per link here, one link per traced file), which
 * would keep `khprof record` alive after the traced program exited.
 * When the traced process is gone the probes cannot fire any more: a child
 * inherits the links and releases them after khprof has exited.
 */
void tracer__close_in_background(struct tracer *t)
{
	int hold[2];
	pid_t pid;
	char c;

	if (t) {
		attach__stop_watching_forks(t, true);
		fill_btf_cache(t);
	}
	if (!t || t->link_fd_count == 0 || pipe(hold) != 0) {
		tracer__close(t);
		return;
	}
	pid = process__fork_quiet();
	if (pid == 0) {
		close(hold[1]);
		/* EOF once khprof has exited and dropped its references. */
		while (read(hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(hold[0]);
	if (pid < 0) {
		close(hold[1]);
		tracer__close(t);
	}
	/* hold[1] stays open until exit; the links are released by the child. */
}

void tracer__close(struct tracer *t)
{
	if (!t)
		return;
	attach__stop_watching_forks(t, true);
	warmer__stop(&t->warmer);
	fill_btf_cache(t);
	ring_buffer__free(t->rb);
	for (size_t i = 0; i < sizeof(t->end_links) / sizeof(t->end_links[0]); i++)
		bpf_link__destroy(t->end_links[i]);
	for (size_t i = 0; i < sizeof(t->sched_links) / sizeof(t->sched_links[0]); i++)
		bpf_link__destroy(t->sched_links[i]);
	for (size_t i = 0; i < t->link_fd_count; i++)
		close(t->link_fds[i]);
	free(t->link_fds);
	attach__free_site_sets(t);
	attach__release_children(t, true);
	sessions__free(&t->sessions);
	for (int i = 0; i < KH_MAX_SLOTS; i++)
		kh_latency__free(&t->pending_latency[i]);
	live__unmap(t);
	sampler__close(t->sampler);
	khprof_bpf__destroy(t->skel);
	free(t->seen);
	free(t);
}
