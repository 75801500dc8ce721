// SPDX-License-Identifier: MIT
/*
 * Tracer lifecycle: open -> configure (rodata) -> load here, attach in
 * process.c, each step checked with one message per failure and one cleanup
 * path (tracer__close).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf_cache.h"
#include "btf_heap.h"
#include "compat.h"
#include "khprof.skel.h"
#include "khprof_classic.skel.h"
#include "sampler.h"
#include "latency.h"
#include "fileio.h"
#include "log.h"
#include "record.h"
#include "tracer_impl.h"
#include "span_clock.h"
#include "counter.h"
#include "stops.h"
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

/*
 * The end of libbpf's messages while loading, every level, so that a
 * failure is reported by what failed (report_load_error): the program and
 * the verifier's last words, or the kfunc this kernel lacks.
 */
#define LOAD_LOG_BYTES 8192
static char load_log[LOAD_LOG_BYTES];
static size_t load_log_len;
static bool load_log_on;

static void load_log_add(const char *fmt, va_list ap)
{
	char line[1024];
	int n = vsnprintf(line, sizeof(line), fmt, ap);

	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (load_log_len + (size_t)n >= LOAD_LOG_BYTES) {
		/* Keep the newer half. */
		size_t keep = LOAD_LOG_BYTES / 2;

		if (load_log_len > keep) {
			memmove(load_log, load_log + load_log_len - keep, keep);
			load_log_len = keep;
		}
		if ((size_t)n >= LOAD_LOG_BYTES - load_log_len)
			return;
	}
	memcpy(load_log + load_log_len, line, (size_t)n);
	load_log_len += (size_t)n;
	load_log[load_log_len] = '\0';
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (load_log_on) {
		va_list copy;

		va_copy(copy, ap);
		load_log_add(fmt, copy);
		va_end(copy);
	}
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
	if (access(VMLINUX_BTF, R_OK) != 0) {
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

/* Once per khprof process and its forks, however many tracers they open. */
static void note_clock_once(const char *reason, bool quiet)
{
	static bool noted;

	if (noted || quiet)
		return;
	noted = true;
	log__note("batch mode times spans with CLOCK_MONOTONIC (~30 ns a span more than the "
		  "%s): %s", counter__name(), reason);
}

void tracer__decide_clock(enum kh_trace_mode mode, bool quiet)
{
	const struct span_clock_verdict *v;

	if (mode != KH_MODE_BATCH)
		return;
	v = span_clock__verdict();
	if (!v->tsc_trusted)
		note_clock_once(v->reason, quiet);
}

/*
 * Batch mode times spans in the traced program with the TSC where the
 * evidence says two CPUs' readings compare (span_clock.h), else with
 * CLOCK_MONOTONIC, which the program reads once khprof attaches its
 * clock_monotonic sites (include/keyhog_profile.h).  The other modes use
 * CLOCK_MONOTONIC, the kernel's at least at one edge.
 */
static void choose_clock(struct tracer *t)
{
	const struct span_clock_verdict *v;

	t->span_clock = "monotonic";
	if (t->opts.mode != KH_MODE_BATCH) {
		snprintf(t->span_clock_reason, sizeof(t->span_clock_reason), "%s",
			 t->opts.mode == KH_MODE_SPAN
				 ? "span mode: the program's CLOCK_MONOTONIC at the enter, the "
				   "kernel's at the exit"
				 : "pair mode: the kernel's CLOCK_MONOTONIC at both edges");
		return;
	}
	v = span_clock__verdict();
	snprintf(t->span_clock_reason, sizeof(t->span_clock_reason), "%s", v->reason);
	if (v->tsc_trusted) {
		t->span_clock = counter__clock();
		return;
	}
	t->monotonic_clock = true;
	note_clock_once(t->span_clock_reason, t->opts.quiet);
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
	if (err && t->opts.mode == KH_MODE_BATCH && !t->monotonic_clock) {
		/* The TSC's rate is evidence too: a TSC that does not keep up is not used. */
		log__debug("the %s did not advance with CLOCK_MONOTONIC_RAW: spans use that clock",
			   counter__name());
		t->span_clock = "monotonic";
		t->monotonic_clock = true;
		snprintf(t->span_clock_reason, sizeof(t->span_clock_reason),
			 "the %s did not advance with CLOCK_MONOTONIC_RAW while khprof loaded",
			 counter__name());
		note_clock_once(t->span_clock_reason, t->opts.quiet);
		sessions__set_clock(&t->sessions, t->span_clock, t->span_clock_reason);
	}
	if (err)
		return 0; /* tsc_mult stays 0: TSC times of old programs are not placed */
	t->skel->bss->tsc_mult = mult;
	t->skel->bss->tsc_shift = shift;
	/* Where a dying thread's TSC times are placed when its CPU never saw a flush. */
	t->skel->bss->tsc_anchor_ticks = counter__read();
	t->skel->bss->tsc_anchor_ns = tracer__now_ns();
	log__debug("%s: %.6f ns per tick", counter__name(), (double)mult / (1u << shift));
	return 0;
}

/* The line of text that ends before end (exclusive), copied to out. */
static void line_before(const char *start, const char *end, char *out, size_t len)
{
	const char *b = end;

	while (b > start && (b[-1] == '\n' || b[-1] == ' '))
		b--;
	end = b;
	while (b > start && b[-1] != '\n')
		b--;
	snprintf(out, len, "%.*s", (int)(end - b), b);
}

/*
 * One line that says what failed: the kfunc or tracepoint libbpf found
 * missing, or the program the verifier refused with its last line (a
 * refusal comes back as EACCES or EINVAL, which is no permission problem
 * for root), else the errno.
 */
static void report_load_error(const struct tracer *t, int err)
{
	const char *kfunc = strstr(load_log, "extern (func ksym) '");
	const char *prog = strstr(load_log, "prog '");
	const char *end = strstr(load_log, "-- END PROG LOAD LOG --");
	char name[64] = "", last[256] = "";

	if (kfunc) {
		sscanf(kfunc, "extern (func ksym) '%63[^']'", name);
		log__error("cannot load BPF programs: kernel %s has no kfunc '%s' "
			   "(see 'khprof features')", t->features.release, name);
		return;
	}
	/* The program named on the line that says it failed, not an earlier one's. */
	while (prog) {
		const char *failed = strstr(prog, "BPF program load failed");
		const char *eol = strchr(prog, '\n');

		if (failed && (!eol || failed < eol))
			break;
		prog = strstr(prog + 1, "prog '");
	}
	if (prog && sscanf(prog, "prog '%63[^']'", name) == 1 && end) {
		const char *stop = strstr(load_log, "processed ");

		line_before(load_log, stop && stop < end ? stop : end, last, sizeof(last));
		log__error("cannot load BPF program '%s': the kernel's verifier refused it: %s "
			   "(kernel %s; run with -v for the verifier's log)", name, last,
			   t->features.release);
		return;
	}
	if (err == -EPERM && geteuid() != 0)
		log__error("cannot load BPF programs: permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)");
	else
		log__error("cannot load BPF programs: %s (kernel %s; run with -v for "
			   "libbpf's messages)", strerror(-err), t->features.release);
}

struct khprof_bpf *tracer__open_object(const struct bpf_object_open_opts *opts,
					const struct kh_features *f)
{
	struct khprof_bpf *obj;
	int err;

	if (features__has(f, KH_FEAT_BPF_LOOP))
		return khprof_bpf__open_opts(opts);
	/*
	 * The classic object (bpf/classic.bpf.h) through the same skeleton:
	 * the build checked that its maps, programs and globals are the same.
	 */
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = khprof_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = khprof_classic_bpf__elf_bytes(&obj->skeleton->data_sz);
		err = bpf_object__open_skeleton(obj->skeleton, opts);
	}
	if (err) {
		khprof_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/*
 * Without task-local storage (Linux 5.11) the per-thread maps are hash
 * maps keyed by thread id (bpf/task_state.bpf.h): same key and value
 * sizes, allocated as threads first need them.
 */
static void configure_task_state(struct khprof_bpf *skel, bool task_storage)
{
	struct bpf_map *maps[] = { skel->maps.thread_store, skel->maps.task_stacks };

	skel->rodata->have_task_storage = task_storage;
	if (task_storage)
		return;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		bpf_map__set_type(maps[i], BPF_MAP_TYPE_HASH);
		bpf_map__set_max_entries(maps[i], KH_MAX_THREADS);
	}
}

/*
 * The kernel's features as .rodata flags (bpf/compat.bpf.h) and as the
 * programs loaded: a program a kernel cannot load is not loaded there.
 */
void tracer__configure_features(struct khprof_bpf *skel, const struct kh_features *f,
				bool batch, bool follow_forks)
{
	struct bpf_program *uprobes[] = { skel->progs.kh_usdt, skel->progs.kh_usdt_identity,
					  skel->progs.kh_usdt_identity_nosleep,
					  skel->progs.kh_loader_state };
	bool multi = features__has(f, KH_FEAT_UPROBE_MULTI);
	bool early_exit = features__has(f, KH_FEAT_EXIT_BEFORE_MM);
	bool fentry = features__has(f, KH_FEAT_FENTRY);
	bool stop_forks;

	(void)batch; /* every mode loads the same programs since the exec sample */
	skel->rodata->have_preempt_kfuncs = features__has(f, KH_FEAT_PREEMPT_KFUNCS);
	skel->rodata->probes_preempt_off = features__has(f, KH_FEAT_PREEMPT_KFUNCS) &&
					   features__has(f, KH_FEAT_PREEMPT_OFF_CALLS);
	skel->rodata->have_rdonly_cast = features__has(f, KH_FEAT_RDONLY_CAST);
	skel->rodata->have_copy_from_user_str = features__has(f, KH_FEAT_COPY_FROM_USER_STR);
	skel->rodata->have_send_signal_task = features__has(f, KH_FEAT_SEND_SIGNAL_TASK);
	skel->rodata->have_uprobe_func_ip = features__has(f, KH_FEAT_UPROBE_FUNC_IP);
	skel->rodata->have_percpu_rss = features__has(f, KH_FEAT_PERCPU_RSS);
	skel->rodata->have_switch_prev_state = features__has(f, KH_FEAT_SWITCH_PREV_STATE);
	skel->rodata->filter_tgid = !multi;
	configure_task_state(skel, features__has(f, KH_FEAT_TASK_STORAGE));
	/* Sleepable uprobes are 6.1; the classic object's identity reads do without. */
	bpf_program__set_autoload(skel->progs.kh_usdt_identity,
				  features__has(f, KH_FEAT_BPF_LOOP));
	bpf_program__set_autoload(skel->progs.kh_usdt_identity_nosleep,
				  !features__has(f, KH_FEAT_BPF_LOOP));
	/* Without cookies: a site's spec by its file and offset (bpf/site.bpf.h). */
	skel->rodata->have_bpf_cookie = features__has(f, KH_FEAT_BPF_COOKIE);
	if (!features__has(f, KH_FEAT_BPF_COOKIE)) {
		bpf_map__set_max_entries(skel->maps.kh_sites, KH_MAX_PROBE_SITES);
		bpf_map__set_max_entries(skel->maps.__bpf_usdt_ip_to_spec_id, KH_MAX_PROBE_SITES);
	}
	for (size_t i = 0; i < sizeof(uprobes) / sizeof(uprobes[0]); i++)
		bpf_program__set_expected_attach_type(
			uprobes[i], multi ? (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI : 0);
	/*
	 * In every mode: the state the program execs in ends with a sample
	 * taken there (batch mode also reads the thread's buffer).  Kernels
	 * before 6.10 without fentry have no hook to give (kfeatures.h).
	 */
	bpf_program__set_autoload(skel->progs.kh_exec_check,
				  features__has(f, KH_FEAT_PREPARE_EXEC));
	bpf_program__set_autoload(skel->progs.kh_exec_check_old,
				  !features__has(f, KH_FEAT_PREPARE_EXEC) && fentry);
	/* Where sched_process_exit comes after exit_mm() (kernels before 6.16). */
	bpf_program__set_autoload(skel->progs.kh_thread_exit, early_exit);
	bpf_program__set_autoload(skel->progs.kh_thread_exit_again, early_exit);
	bpf_program__set_autoload(skel->progs.kh_thread_exit_last, early_exit);
	bpf_program__set_autoload(skel->progs.kh_thread_exit_old, !early_exit);
	bpf_program__set_autoload(skel->progs.kh_exit_drain, !early_exit && fentry);
	skel->rodata->drain_at_do_exit = !early_exit && fentry;
	/*
	 * Forks are stopped to be followed, or to be made safe (process.c,
	 * watch_forks): where neither is asked, their programs do not load;
	 * a vforked child is followed from its execve only when following.
	 */
	stop_forks = follow_forks || features__has(f, KH_FEAT_OPTIMIZED_UPROBES);
	bpf_program__set_autoload(skel->progs.kh_follow_fork, stop_forks);
	/* A parent that stops itself when its stopped child does (nsenter): resumed. */
	bpf_program__set_autoload(skel->progs.kh_self_stop, stop_forks);
	bpf_program__set_autoload(skel->progs.kh_follow_exec, follow_forks);
	bpf_program__set_autoload(skel->progs.kh_fork_stop,
				  stop_forks && !features__has(f, KH_FEAT_SEND_SIGNAL_TASK));
}

/*
 * What this kernel's missing features cost the record, said once per
 * khprof process (a --repeat series opens a tracer per run).
 */
static void report_features(const struct tracer *t)
{
	static bool said;

	/* -q: the record still names them (kernel.degraded, the same lines). */
	if (said || t->opts.quiet)
		return;
	said = true;
	for (size_t i = 0; i < t->degraded_count; i++)
		log__note("kernel %s: %s", t->features.release, t->degraded_list[i]);
}

static bool uses_fentry(const struct tracer *t)
{
	return bpf_program__autoload(t->skel->progs.kh_exit_drain) ||
	       bpf_program__autoload(t->skel->progs.kh_exec_check_old);
}

/* What the record will say of this kernel (kh_profile_ext's kernel_*). */
static void list_degraded(struct tracer *t)
{
	t->degraded_count = 0;
	for (int i = 0; i < KH_FEAT_COUNT; i++) {
		const char *cost = features__cost(&t->features, (enum kh_kernel_feature)i);
		char *line = t->degraded[t->degraded_count];

		if (!cost)
			continue;
		snprintf(line, sizeof(t->degraded[0]), "%s (%s%s): %s",
			 features__name((enum kh_kernel_feature)i),
			 features__since((enum kh_kernel_feature)i),
			 (t->features.disabled & (1u << i)) ? ", disabled by KHPROF_DISABLE_FEATURES"
			 : (t->features.unused & (1u << i))
				 ? ", which this kernel has, unused by the object for kernels without bpf_loop"
				 : "",
			 cost);
		t->degraded_list[t->degraded_count++] = line;
	}
}

void tracer__note_layout(struct tracer *t)
{
	static const char *const what[KH_LAYOUT_COUNT] = {
		[KH_LAYOUT_ARRAY_VALUE] = "where a bpf_array's elements start: CPU time is read up "
					  "to the scheduler's last tick and RSS without its "
					  "per-CPU parts",
		[KH_LAYOUT_CPU_OFFSETS] = "each CPU's per-CPU offset: RSS is read without its "
					  "per-CPU parts (it may trail /proc by 32 pages per CPU "
					  "and counter)",
		[KH_LAYOUT_SCHED_CLOCK] = "the scheduler's clock in a perf event: CPU time is read "
					  "up to the scheduler's last tick",
		[KH_LAYOUT_UPROBE_SITE] = "which probe site a uprobe is (no BPF cookies): hits of "
					  "sites not found by file and offset are not counted",
	};
	uint32_t bits = t->skel ? t->skel->bss->layout_failed & ~t->layout_said : 0;

	for (int i = 0; bits && i < KH_LAYOUT_COUNT; i++) {
		char *line = t->degraded[t->degraded_count];

		if (!(bits & (1u << i)))
			continue;
		t->layout_said |= 1u << i;
		log__warn("kernel %s: cannot read %s", t->features.release, what[i]);
		snprintf(line, sizeof(t->degraded[0]), "layout (kernel internals): %s", what[i]);
		t->degraded_list[t->degraded_count++] = line;
		t->sessions.cfg.kernel_degraded_count = t->degraded_count;
	}
}

static void configure_sessions(struct tracer *t, int64_t realtime_offset_ns)
{
	struct session_config cfg = {
		.mode = t->opts.mode,
		.span_clock = t->span_clock,
		.span_clock_reason = t->span_clock_reason,
		.trace_start_ns = t->trace_start_ns,
		.realtime_offset_ns = realtime_offset_ns,
		.page_size = (uint64_t)sysconf(_SC_PAGESIZE),
		.overrides = t->opts.overrides,
		.override_count = t->opts.override_count,
		.on_profile = t->opts.on_profile,
		.ctx = t->opts.ctx,
		.interval_ns = t->opts.interval_ns,
		.on_interval = t->opts.on_interval,
		.kernel_release = t->features.release,
		.kernel_degraded = t->degraded_list,
		.identity_reread = !features__has(&t->features, KH_FEAT_BPF_LOOP),
	};

	list_degraded(t);
	cfg.kernel_degraded_count = t->degraded_count;

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
	void *heap;
	int err;

	t->skel = tracer__open_object(&open_opts, &t->features);
	if (!t->skel) {
		err = -errno;
		log__error("cannot open BPF object: %s", strerror(errno));
		return err;
	}
	t->trace_start_ns = tracer__now_ns();
	configure_sessions(t, realtime_minus_monotonic());
	t->skel->rodata->trace_start_ns = t->trace_start_ns;
	t->skel->rodata->stop_on_loader_event = t->opts.stop_on_loader;
	/* Every tracer's stops in the command's table, for its keeper (stops.h). */
	t->skel->rodata->stops_kept = t->opts.stops != NULL;
	if (t->opts.stops) {
		err = stops__share_maps(t->opts.stops, t->skel->maps.kh_stops,
					t->skel->maps.kh_stop_notes);
		if (err) {
			log__error("cannot share the table of stopped processes: %s",
				   strerror(-err));
			return err;
		}
	}
	/*
	 * Stops allowed and kept (a keeper), and reads that cannot fault pages
	 * in (bpf/khprof.bpf.c's on_identity): the process waits at such an
	 * identity probe until khprof has read the strings.
	 */
	t->skel->rodata->stop_to_read_identity =
		t->opts.stop_on_loader && t->opts.stops && !features__has(&t->features, KH_FEAT_BPF_LOOP);
	t->skel->rodata->trace_mode = t->opts.mode;
	if (t->btf_cache.usable) {
		t->skel->rodata->core_ids_given = 1;
		t->skel->rodata->kernel_id_task_struct = t->btf_cache.ids[BTF_ID_TASK_STRUCT];
		t->skel->rodata->kernel_id_mm_struct = t->btf_cache.ids[BTF_ID_MM_STRUCT];
		t->skel->rodata->kernel_id_signal_struct = t->btf_cache.ids[BTF_ID_SIGNAL_STRUCT];
	}

	tracer__configure_features(t->skel, &t->features, t->opts.mode == KH_MODE_BATCH,
				   t->opts.on_fork);
	/* Every execve on the host: attach --all's watcher only (process.c). */
	bpf_program__set_autoload(t->skel->progs.kh_exec_start, t->opts.watch_execs);
	/* The kernel's pids and khprof's differ only in a PID namespace of its own (pid_map.c). */
	bpf_program__set_autoload(t->skel->progs.kh_pid_map, pid_map__needed());
	/* There, a stop names the process by khprof's pid too (bpf/stops.bpf.h). */
	t->skel->rodata->stops_pidns_inum = pid_map__own_ns_inum();
	err = latency__configure(t->skel, t->ncpus);
	if (err)
		return err;
	load_log_len = 0;
	load_log[0] = '\0';
	load_log_on = true;
	/* libbpf parses the kernel's BTF first thing (btf_heap.h). */
	heap = btf_heap__begin(VMLINUX_BTF);
	err = khprof_bpf__load(t->skel);
	btf_heap__end(heap);
	load_log_on = false;
	/*
	 * With the cache, or with fentry programs that a kernel's BTF promised
	 * (trampolines need ftrace, which some builds leave out), a failure is
	 * tried again without them before it is reported.
	 */
	if (err && !t->btf_cache.usable && !uses_fentry(t))
		report_load_error(t, err);
	return err;
}

/*
 * -v: the programs this mode, kernel and these options loaded (each costs
 * the verifier's time at every start: docs/PERFORMANCE.md, row 3), and
 * the mode whose paths kh_usdt kept (trace_mode).
 */
static void note_programs(const struct tracer *t)
{
	char names[1024];
	struct bpf_program *prog;
	size_t len = 0;
	int n = 0;

	names[0] = '\0';
	bpf_object__for_each_program(prog, t->skel->obj) {
		int w;

		if (!bpf_program__autoload(prog))
			continue;
		w = snprintf(names + len, sizeof(names) - len, "%s%s", n ? " " : "",
			     bpf_program__name(prog));
		n++;
		if (w > 0 && (size_t)w < sizeof(names) - len)
			len += (size_t)w;
	}
	log__debug("start-up: %d programs loaded for %s mode: %s", n,
		   kh_trace_mode__name(t->skel->rodata->trace_mode), names);
}

int tracer__open(struct tracer **out, const struct trace_options *opts)
{
	char floor[96];
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
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0) {
		log__error("cannot count possible CPUs: %s", strerror(-t->ncpus));
		err = t->ncpus;
		goto fail;
	}

	btf_cache__find(&t->btf_cache);
	features__probe(&t->features, t->btf_cache.usable, t->btf_cache.features);
	/* Before any other work: below the floor nothing else is tried. */
	if (features__floor_missing(&t->features, floor, sizeof(floor))) {
		log__error("kernel %s has no %s: khprof needs Linux 5.10 or later "
			   "(see 'khprof features')", t->features.release, floor);
		err = -ENOTSUP;
		goto fail;
	}
	/* Scanned here on a first run: the cache written at close keeps these. */
	if (t->features.btf_read) {
		t->btf_cache.features = t->features.btf_bits;
		t->btf_cache.features_known = true;
	}
	/* The CO-RE cache is the default object's (btf_cache.h). */
	if (!features__has(&t->features, KH_FEAT_BPF_LOOP))
		t->btf_cache.usable = t->btf_cache.fillable = false;
	/*
	 * The classic object has no batch path (bpf/khprof.bpf.c, kh_usdt):
	 * span mode, which the bpf_loop line of kernel.degraded names.
	 */
	if (!features__has(&t->features, KH_FEAT_BPF_LOOP) && t->opts.mode == KH_MODE_BATCH)
		t->opts.mode = KH_MODE_SPAN;
	/* Once the mode is final: batch mode's clock is decided from evidence. */
	choose_clock(t);
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
	if (err && t->skel && uses_fentry(t)) {
		log__debug("loading with fentry programs failed: loading without them");
		t->features.have &= ~(1u << KH_FEAT_FENTRY);
		khprof_bpf__destroy(t->skel);
		t->skel = NULL;
		sessions__free(&t->sessions);
		err = open_and_load(t);
	}
	if (err) {
		t->btf_cache.fillable = false;
		goto fail;
	}
	report_features(t);
	if (t->opts.sample_hz && !features__has(&t->features, KH_FEAT_TASK_STORAGE)) {
		/* The sampler's perf-event program reads thread_store as task storage. */
		log__error("cannot sample stacks: kernel %s has no task-local storage (%s), which "
			   "--sample needs", t->features.release,
			   features__since(KH_FEAT_TASK_STORAGE));
		err = -ENOTSUP;
		goto fail;
	}
	if (t->opts.sample_hz) {
		err = sampler__load(&t->sampler, t->skel, t->opts.sample_hz);
		if (err)
			goto fail;
		t->sessions.cfg.fill_stacks = sampler__fill_stacks;
		t->sessions.cfg.stacks_ctx = t->sampler;
	}
	note_programs(t);
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
	if (pid < 0)
		close(hold[1]);
	/*
	 * The child holds a copy of every descriptor, so closing ours here
	 * detaches nothing: the kernel's objects live until the child lets go
	 * of them after khprof's exit.  What this frees is khprof's own
	 * memory, which a sanitizer build must find freed at exit.  hold[1]
	 * stays open until exit.
	 */
	tracer__close(t);
}

static void *close_tracer(void *t)
{
	tracer__close(t);
	return NULL;
}

void tracer__close_later(struct tracer *t)
{
	attach__close_later(close_tracer, t);
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
	attach__free_refused_sites(t);
	sessions__free(&t->sessions);
	for (int i = 0; i < KH_MAX_SLOTS; i++)
		kh_latency__free(&t->pending_latency[i]);
	live__unmap(t);
	sampler__close(t->sampler);
	khprof_bpf__destroy(t->skel);
	free(t->seen);
	free(t->loaders);
	free(t);
}
