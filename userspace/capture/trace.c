// SPDX-License-Identifier: MIT
/*
 * Tracer lifecycle: open -> configure (rodata) -> load -> attach, each step
 * checked with one message per failure and one cleanup path (tracer__close).
 * Sessions are assembled from ring-buffer events in order; per-stage sums
 * come from the per-CPU slot maps when a session finishes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "calibrate.h"
#include "khprof.skel.h"
#include "latency.h"
#include "log.h"
#include "procfs.h"
#include "stats.h"
#include "trace.h"
#include "tsc.h"
#include "usdt_notes.h"
#include "usdt_spec.h"

#define PROVIDER "keyhog"
/* BPF_TRACE_UPROBE_MULTI (Linux 6.6) is newer than libbpf 1.1 and its headers. */
#define KH_BPF_TRACE_UPROBE_MULTI 48

struct seen_object {
	dev_t dev;
	ino_t ino;
};

struct open_session {
	bool open;
	bool started_mid_session;
	uint64_t start_ns;
	uint32_t last_state;
	struct kh_profile profile;
};

struct tracer {
	struct khprof_bpf *skel;
	struct ring_buffer *rb;
	struct trace_options opts;
	pid_t pid;
	int ncpus;
	uint64_t trace_start_ns;
	int64_t realtime_offset_ns;
	struct seen_object *seen;
	size_t seen_count;
	int *link_fds;             /* one uprobe-multi link per traced file */
	size_t link_fd_count;
	__u32 spec_count;
	size_t probe_count;
	bool have_first_sample;
	struct kh_resource_snapshot first_sample; /* when tracing began */
	bool saw_session;
	uint64_t page_size;
	uint64_t span_cost_ns;  /* calibrated: what one span costs the program */
	uint64_t span_bias_ns;  /* calibrated: apparent length of an empty span */
	size_t records_emitted;
	struct open_session sessions[KH_MAX_SLOTS];
	char warned_keys[512];
	struct bpf_link *sched_links[2]; /* off-CPU log (latency.c) */
	bool offcpu;                     /* ... attached */
};

uint64_t tracer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t realtime_minus_monotonic(void)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll + (rt.tv_nsec - mono.tv_nsec);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
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
	t->opts = *opts;
	tsc__sample(&tsc_start);
	choose_mode(t);
	t->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0) {
		log__error("cannot count possible CPUs: %s", strerror(-t->ncpus));
		err = t->ncpus;
		goto fail;
	}

	t->skel = khprof_bpf__open();
	if (!t->skel) {
		err = -errno;
		log__error("cannot open BPF object: %s", strerror(errno));
		goto fail;
	}
	t->trace_start_ns = tracer__now_ns();
	t->realtime_offset_ns = realtime_minus_monotonic();
	t->skel->rodata->trace_start_ns = t->trace_start_ns;
	t->skel->rodata->stop_on_loader_event = opts->stop_on_loader;

	bpf_program__set_expected_attach_type(t->skel->progs.kh_usdt,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.kh_loader_state,
					      (enum bpf_attach_type)KH_BPF_TRACE_UPROBE_MULTI);
	err = latency__configure(t->skel, t->ncpus);
	if (err)
		goto fail;
	err = khprof_bpf__load(t->skel);
	if (err) {
		report_load_error(err);
		goto fail;
	}
	log__debug("BPF programs loaded in %.1f ms",
		   (double)(tracer__now_ns() - t->trace_start_ns) / 1e6);
	err = set_tsc_scale(t, &tsc_start);
	if (err)
		goto fail;
	*out = t;
	return 0;
fail:
	tracer__close(t);
	return err;
}

/* --- attaching --------------------------------------------------------- */

static bool seen_before(struct tracer *t, dev_t dev, ino_t ino)
{
	struct seen_object *grown;

	for (size_t i = 0; i < t->seen_count; i++)
		if (t->seen[i].dev == dev && t->seen[i].ino == ino)
			return true;
	grown = realloc(t->seen, (t->seen_count + 1) * sizeof(*grown));
	if (grown) {
		t->seen = grown;
		t->seen[t->seen_count++] = (struct seen_object){ dev, ino };
	}
	return false;
}

#define MODE_BIT(m) (1u << (m))
#define ALL_MODES (MODE_BIT(KH_MODE_SPAN) | MODE_BIT(KH_MODE_PAIR) | MODE_BIT(KH_MODE_BATCH))

/* Which probes each mode attaches (docs/PROBES.md). */
static const struct {
	const char *name;
	enum kh_probe_kind kind;
	unsigned int modes;
} probe_kinds[] = {
	{ "span", KH_PROBE_SPAN, MODE_BIT(KH_MODE_SPAN) },
	{ "span_enter", KH_PROBE_SPAN_ENTER, MODE_BIT(KH_MODE_PAIR) },
	{ "span_exit", KH_PROBE_SPAN_EXIT, MODE_BIT(KH_MODE_PAIR) },
	{ "batch", KH_PROBE_BATCH, MODE_BIT(KH_MODE_BATCH) },
	{ "input_bytes", KH_PROBE_INPUT_BYTES, ALL_MODES },
	{ "input_units", KH_PROBE_INPUT_UNITS, ALL_MODES },
	{ "session_start", KH_PROBE_SESSION_START, ALL_MODES },
	{ "identity", KH_PROBE_IDENTITY, ALL_MODES },
	{ "transition", KH_PROBE_TRANSITION, ALL_MODES },
	{ "session_finish", KH_PROBE_SESSION_FINISH, ALL_MODES },
};

static enum kh_probe_kind wanted_kind(const struct tracer *t, const struct usdt_note *note)
{
	if (strcmp(note->provider, PROVIDER) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(probe_kinds) / sizeof(probe_kinds[0]); i++)
		if (strcmp(note->name, probe_kinds[i].name) == 0)
			return probe_kinds[i].modes & MODE_BIT(t->opts.mode) ? probe_kinds[i].kind : 0;
	return 0;
}


struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u8 rest[64]; /* the rest of union bpf_attr stays zero */
};

static int uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets,
			     const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count,
			     pid_t pid)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = KH_BPF_TRACE_UPROBE_MULTI;
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offsets;
	attr.ref_ctr_offsets = (__u64)(unsigned long)ref_ctr_offsets;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = count;
	attr.pid = (__u32)pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* Links prog to count sites of path and keeps the link until tracer__close. */
static int link_sites(struct tracer *t, struct bpf_program *prog, const char *path,
		      const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		      __u32 count)
{
	int fd = uprobe_multi_link(bpf_program__fd(prog), path, offsets, ref_ctr_offsets,
				   cookies, count, t->pid);
	int *grown;

	if (fd < 0)
		return fd;
	grown = realloc(t->link_fds, (t->link_fd_count + 1) * sizeof(*grown));
	if (!grown) {
		close(fd);
		return -ENOMEM;
	}
	t->link_fds = grown;
	t->link_fds[t->link_fd_count++] = fd;
	return 0;
}

/* Registers the argument spec of one site; its id is the site's cookie. */
static int add_spec(struct tracer *t, const char *path, const struct usdt_note *note,
		    enum kh_probe_kind kind, __u64 *cookie)
{
	struct kh_usdt_spec spec;
	__u32 id = t->spec_count;

	if (usdt_spec__parse(note->args, kind, &spec) != 0) {
		log__warn("skipping probe '%s:%s' in '%s': unsupported arguments '%s'",
			  note->provider, note->name, path, note->args);
		return 1;
	}
	if (id >= KH_MAX_PROBE_SITES) {
		log__error("cannot attach to '%s': more than %d keyhog probe sites", path,
			   KH_MAX_PROBE_SITES);
		return -E2BIG;
	}
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.__bpf_usdt_specs), &id, &spec, 0)) {
		log__error("cannot store probe arguments: %s", strerror(errno));
		return -errno;
	}
	t->spec_count++;
	*cookie = id;
	return 0;
}

static void report_attach_error(const char *path, int err)
{
	if (err == -EPERM || err == -EACCES)
		log__error("cannot attach to '%s': permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)", path);
	else if (err == -EINVAL || err == -EOPNOTSUPP)
		log__error("cannot attach to '%s': %s (khprof needs uprobe-multi links, "
			   "Linux 6.6 or later)", path, strerror(-err));
	else
		log__error("cannot attach to '%s': %s", path, strerror(-err));
}

/* All wanted keyhog sites of one file, in one uprobe-multi link. */
static int attach_object(struct tracer *t, const char *path)
{
	struct usdt_note_list notes;
	__u64 *offsets = NULL, *ref_ctr_offsets = NULL, *cookies = NULL;
	__u32 count = 0;
	int err;

	err = usdt_notes__read(path, &notes);
	if (err) {
		log__debug("skipping '%s': %s", path, strerror(-err));
		return 0;
	}
	if (notes.count) {
		offsets = calloc(notes.count, sizeof(*offsets));
		ref_ctr_offsets = calloc(notes.count, sizeof(*ref_ctr_offsets));
		cookies = calloc(notes.count, sizeof(*cookies));
		if (!offsets || !ref_ctr_offsets || !cookies) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *note = &notes.notes[i];
		enum kh_probe_kind kind = wanted_kind(t, note);

		if (!kind || !note->file_offset)
			continue;
		err = add_spec(t, path, note, kind, &cookies[count]);
		if (err < 0)
			goto out;
		if (err > 0)
			continue;
		offsets[count] = note->file_offset;
		ref_ctr_offsets[count] = note->semaphore_offset;
		count++;
	}
	err = 0;
	if (count == 0)
		goto out;
	err = link_sites(t, t->skel->progs.kh_usdt, path, offsets, ref_ctr_offsets, cookies,
			 count);
	if (err) {
		report_attach_error(path, err);
		goto out;
	}
	log__debug("attached %u probe sites in '%s'", count, path);
	t->probe_count += count;
out:
	free(offsets);
	free(ref_ctr_offsets);
	free(cookies);
	usdt_notes__free(&notes);
	return err;
}

static int attach_object_once(struct tracer *t, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	if (seen_before(t, st.st_dev, st.st_ino))
		return 0;
	return attach_object(t, path);
}

/*
 * The loader calls _dl_debug_state() with _r_debug.r_state saying what it
 * is about: RT_ADD or RT_DELETE before it changes the link map, RT_CONSISTENT
 * once objects are mapped.  Only the last is worth a stop; the BPF side
 * finds r_state from the probe's address.
 */
#define R_DEBUG_R_STATE_OFFSET 24 /* struct r_debug on LP64 */

static int hook_loader(struct tracer *t, const char *exe)
{
	char interp[PATH_MAX];
	uint64_t hook_vaddr = 0, hook_offset = 0, r_debug_vaddr = 0, r_debug_offset = 0;
	__u64 offset, cookie = 0, no_semaphore = 0;
	int err;

	err = elf__interpreter(exe, interp, sizeof(interp));
	if (err || interp[0] == '\0')
		return 0; /* static executable: nothing is ever loaded later */
	err = elf__symbol(interp, "_dl_debug_state", &hook_vaddr, &hook_offset);
	if (!err && elf__symbol(interp, "_r_debug", &r_debug_vaddr, &r_debug_offset) == 0)
		t->skel->bss->r_state_from_hook =
			(__s64)(r_debug_vaddr + R_DEBUG_R_STATE_OFFSET) - (__s64)hook_vaddr;
	offset = hook_offset;
	if (!err)
		err = link_sites(t, t->skel->progs.kh_loader_state, interp, &offset, &no_semaphore,
				 &cookie, 1);
	if (err)
		log__warn("cannot watch '%s' for dlopen: %s; libraries loaded later "
			  "will not be traced", interp, strerror(-err));
	return 0;
}

static int read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset);

#define CALIBRATION_ROUNDS 5
#define CALIBRATION_SPANS 200

/*
 * Traces khprof's own probe sites (calibrate.c) for a few hundred empty
 * spans: the median per-span slowdown is what one span costs a traced
 * program, and the median recorded length of an empty span is the bias
 * every recorded span carries.  Runs before the target is attached, so the
 * outside slot holds only these spans; it is zeroed afterwards.
 */
static int calibrate(struct tracer *t)
{
	double untraced[CALIBRATION_ROUNDS], traced[CALIBRATION_ROUNDS], bias[CALIBRATION_ROUNDS];
	size_t links_before = t->link_fd_count, probes_before = t->probe_count;
	double traced_ns, untraced_ns;
	struct kh_slot_stats sum;
	int err;

	for (int r = 0; r < CALIBRATION_ROUNDS; r++)
		untraced[r] = calibrate__spans(CALIBRATION_SPANS);
	t->pid = getpid();
	err = attach_object(t, "/proc/self/exe");
	t->probe_count = probes_before;
	if (err || t->link_fd_count == links_before) {
		log__debug("calibration skipped: cannot trace khprof itself");
		return 0;
	}
	for (int r = 0; r < CALIBRATION_ROUNDS; r++) {
		const struct kh_stage_stats *s = &sum.stages[CALIBRATION_STAGE];

		traced[r] = calibrate__spans(CALIBRATION_SPANS);
		calibrate__flush();
		if (read_slot(t, KH_OUTSIDE_SLOT, &sum, true))
			return -EIO;
		bias[r] = s->calls ? s->elapsed_ns / s->calls : 0;
	}
	t->span_bias_ns = (uint64_t)stats__median(bias, CALIBRATION_ROUNDS);
	traced_ns = stats__median(traced, CALIBRATION_ROUNDS);
	untraced_ns = stats__median(untraced, CALIBRATION_ROUNDS);
	t->span_cost_ns = traced_ns > untraced_ns
				  ? (uint64_t)(traced_ns - untraced_ns) / CALIBRATION_SPANS : 0;
	log__debug("calibration: a span costs %" PRIu64 " ns and appears %" PRIu64 " ns long "
		   "(done %.1f ms after start)", t->span_cost_ns, t->span_bias_ns,
		   (double)(tracer__now_ns() - t->trace_start_ns) / 1e6);
	return 0;
}

int tracer__attach(struct tracer *t, pid_t pid, const char *exe_path)
{
	struct kh_latency calibration = { 0 };
	int err;

	err = calibrate(t);
	if (err)
		return err;
	/* The calibration's spans are not the target's. */
	latency__read_slot(t->skel, t->ncpus, KH_OUTSIDE_SLOT, 0, &calibration);
	kh_latency__free(&calibration);
	t->pid = pid;
	t->offcpu = latency__attach(t->skel, pid, t->sched_links) == 0;
	err = attach_object_once(t, exe_path);
	if (err)
		return err;
	return hook_loader(t, exe_path);
}

int tracer__attach_mapped(struct tracer *t)
{
	char maps_path[64], line[PATH_MAX + 128];
	FILE *maps;
	int err = 0;

	if (!t->have_first_sample) {
		memset(&t->first_sample, 0, sizeof(t->first_sample));
		procfs__sample(t->pid, &t->first_sample);
		t->have_first_sample = true;
	}
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", t->pid);
	maps = fopen(maps_path, "re");
	if (!maps)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), maps)) {
		char perms[8], path[PATH_MAX];
		unsigned long long inode;

		path[0] = '\0';
		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %llu %4095[^\n]", perms, &inode, path) < 2)
			continue;
		if (perms[2] != 'x' || inode == 0 || path[0] != '/')
			continue;
		err = attach_object_once(t, path);
		if (err)
			break;
	}
	fclose(maps);
	return err;
}

size_t tracer__probe_count(const struct tracer *t)
{
	return t->probe_count;
}

size_t tracer__records_emitted(const struct tracer *t)
{
	return t->records_emitted;
}

/* --- sessions ------------------------------------------------------------ */

/* Sums a slot over the CPUs; with reset, zeroes it for the slot's next session. */
static int read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset)
{
	size_t size = (size_t)t->ncpus * sizeof(struct kh_slot_stats);
	struct kh_slot_stats *percpu = calloc(t->ncpus, sizeof(*percpu));
	int fd = bpf_map__fd(t->skel->maps.slot_stats), err;

	memset(sum, 0, sizeof(*sum));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(fd, &slot, percpu);
	if (err) {
		err = -errno;
		log__error("cannot read session slot %u: %s", slot, strerror(errno));
		goto out;
	}
	for (int cpu = 0; cpu < t->ncpus; cpu++) {
		const struct kh_slot_stats *c = &percpu[cpu];

		for (int s = 0; s < KH_STAGE_COUNT; s++) {
			sum->stages[s].elapsed_ns += c->stages[s].elapsed_ns;
			sum->stages[s].calls += c->stages[s].calls;
			sum->stages[s].attributed_ns += c->stages[s].attributed_ns;
			sum->stages[s].attributed_calls += c->stages[s].attributed_calls;
		}
		sum->input_bytes += c->input_bytes;
		sum->input_units += c->input_units;
		sum->probe_hits += c->probe_hits;
		for (int d = 0; d < KH_DROP_COUNT; d++)
			sum->drops[d] += c->drops[d];
	}
	memset(percpu, 0, size);
	if (reset && bpf_map_update_elem(fd, &slot, percpu, BPF_ANY)) {
		err = -errno;
		log__error("cannot reset session slot %u: %s", slot, strerror(errno));
	}
out:
	free(percpu);
	return err;
}

/* Removes the probe's own calibrated share from a stage's sum. */
static uint64_t unbias(uint64_t elapsed_ns, uint64_t calls, uint64_t bias_ns)
{
	uint64_t bias = calls * bias_ns;

	return elapsed_ns > bias ? elapsed_ns - bias : 0;
}

static bool slot_has_activity(const struct kh_slot_stats *s)
{
	if (s->input_bytes || s->input_units || s->probe_hits)
		return true;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		if (s->drops[d])
			return true;
	return false;
}

/*
 * Samples are read from /proc when khprof handles the event, like the
 * seed reads them, typically 50-150 us after the transition (the record's
 * sample_latency_ns_max says how late at worst).  The probe handler also
 * read memory and threads at the transition itself; those fill in what
 * /proc no longer has once the process has exited (its finish sample).
 * They are the kernel's folded counters, which can trail /proc's exact sum
 * by the per-CPU batches (a few hundred KiB).
 */
static void sample(struct tracer *t, struct open_session *s, const struct kh_event *e,
		   struct kh_resource_snapshot *snap)
{
	uint64_t latency;

	memset(snap, 0, sizeof(*snap));
	procfs__sample(t->pid, snap);
	if (!e || !e->threads)
		return;
	latency = tracer__now_ns() - e->ts_ns;
	if (latency > s->profile.ext.sample_latency_ns_max)
		s->profile.ext.sample_latency_ns_max = latency;
	if (!snap->resident_bytes.present && e->resident_pages)
		snap->resident_bytes = (struct kh_opt_u64){ true, e->resident_pages * t->page_size };
	if (!snap->virtual_bytes.present && e->virtual_pages)
		snap->virtual_bytes = (struct kh_opt_u64){ true, e->virtual_pages * t->page_size };
	if (!snap->thread_count.present)
		snap->thread_count = (struct kh_opt_u64){ true, e->threads };
}

static void apply_overrides(struct tracer *t, struct kh_identity *id)
{
	for (size_t i = 0; i < t->opts.override_count; i++)
		identity__set(id, t->opts.overrides[i].key, t->opts.overrides[i].value);
}

/* As the seed's available_parallelism(): the CPUs the traced process may use. */
static uint64_t logical_cpus_of(pid_t pid, uint64_t fallback)
{
	cpu_set_t set;

	if (sched_getaffinity(pid, sizeof(set), &set) != 0)
		return fallback;
	return CPU_COUNT(&set) > 0 ? (uint64_t)CPU_COUNT(&set) : fallback;
}

static void session_begin(struct tracer *t, struct open_session *s, uint64_t start_ns,
			  const char *sequence, bool mid_session, const struct kh_event *e)
{
	struct kh_resource_snapshot snap;
	char run_id[96];

	memset(s, 0, sizeof(*s));
	s->open = true;
	s->started_mid_session = mid_session;
	s->start_ns = start_ns;
	s->last_state = KH_STATE_CREATED;
	profile__init(&s->profile);
	snprintf(run_id, sizeof(run_id), "%d-%" PRIu64 "-%s", t->pid,
		 (uint64_t)((int64_t)start_ns + t->realtime_offset_ns), sequence);
	identity__set(&s->profile.identity, "run_id", run_id);
	s->profile.identity.logical_cpus = logical_cpus_of(t->pid, s->profile.identity.logical_cpus);
	/* A session khprof opens itself starts when tracing did. */
	if (!e && t->have_first_sample)
		snap = t->first_sample;
	else
		sample(t, s, e, &snap);
	profile__add_transition(&s->profile, KH_STATE_CREATED, 0, &snap);
}

static uint64_t since(const struct open_session *s, uint64_t ts)
{
	return ts > s->start_ns ? ts - s->start_ns : 0;
}

static void session_transition(struct tracer *t, struct open_session *s, uint32_t state,
			       uint64_t ts, const struct kh_event *e)
{
	struct kh_resource_snapshot snap;

	if (state >= KH_STATE_COUNT) {
		log__warn("ignoring transition to unknown state %u", state);
		return;
	}
	sample(t, s, e, &snap);
	profile__add_transition(&s->profile, state, since(s, ts), &snap);
	s->last_state = state;
}

static void session_emit(struct tracer *t, struct open_session *s, uint32_t slot,
			 uint32_t status, uint64_t end_ns, bool ended_mid_session)
{
	struct kh_slot_stats sum;
	struct kh_profile *p = &s->profile;
	uint64_t spans = 0;

	read_slot(t, slot, &sum, true);
	latency__read_slot(t->skel, t->ncpus, slot, t->span_bias_ns, &p->ext.latency);
	p->ext.latency.off_cpu = t->offcpu && p->ext.latency.present;
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_stats *stage = &sum.stages[st];

		spans += stage->calls;
		profile__set_stage(p, st, unbias(stage->elapsed_ns, stage->calls, t->span_bias_ns),
				   stage->calls,
				   unbias(stage->attributed_ns, stage->attributed_calls,
					  t->span_bias_ns));
	}
	p->input_bytes = sum.input_bytes;
	p->input_units = sum.input_units;
	apply_overrides(t, &p->identity);
	profile__finish(p, status, since(s, end_ns));

	profile__set_mode(p, t->opts.mode);
	p->ext.started_mid_session = s->started_mid_session;
	p->ext.ended_mid_session = ended_mid_session;
	memcpy(p->ext.drops, sum.drops, sizeof(p->ext.drops));
	p->ext.probe_hits = sum.probe_hits;
	p->ext.probe_cost_ns = t->span_cost_ns;
	p->ext.tracer_cost_ns = spans * t->span_cost_ns;
	p->ext.span_bias_ns = t->span_bias_ns;
	p->ext.traced_pid = t->pid;

	if (slot != KH_OUTSIDE_SLOT)
		t->skel->bss->slot_busy[slot] = 0;
	t->records_emitted++;
	if (t->opts.on_profile)
		t->opts.on_profile(p, t->opts.ctx);
	profile__free(p);
	s->open = false;
}

/* An event for a slot with no session seen: khprof attached mid-session. */
static struct open_session *session_for(struct tracer *t, uint32_t slot)
{
	struct open_session *s = &t->sessions[slot < KH_MAX_SLOTS ? slot : 0];

	if (!s->open)
		session_begin(t, s, t->trace_start_ns, "partial", true, NULL);
	return s;
}

static void warn_unknown_key_once(struct tracer *t, const char *key)
{
	char needle[KH_IDENTITY_KEY_MAX + 2];

	snprintf(needle, sizeof(needle), "|%s|", key);
	if (strstr(t->warned_keys, needle))
		return;
	if (strlen(t->warned_keys) + strlen(needle) < sizeof(t->warned_keys))
		strcat(t->warned_keys, needle);
	log__warn("ignoring identity '%s': not a RunIdentity field or bad value", key);
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct kh_event *e = data;
	uint32_t slot = e->slot < KH_MAX_SLOTS ? e->slot : KH_OUTSIDE_SLOT;
	struct open_session *s;
	char sequence[24];
	uint32_t status;

	if (len < sizeof(*e))
		return 0;
	switch (e->type) {
	case KH_EVENT_SESSION_START:
		t->saw_session = true;
		if (slot == KH_OUTSIDE_SLOT) {
			log__warn("session %" PRIu64 " not recorded: all %d session slots "
				  "were unread", (uint64_t)e->arg0, KH_MAX_SLOTS - 1);
			break;
		}
		snprintf(sequence, sizeof(sequence), "%" PRIu64, (uint64_t)e->arg0);
		session_begin(t, &t->sessions[slot], e->ts_ns, sequence, false, e);
		t->sessions[slot].profile.ext.session_sequence = e->arg0;
		break;
	case KH_EVENT_IDENTITY:
		s = session_for(t, slot);
		if (identity__set(&s->profile.identity, e->key, e->value) != 0)
			warn_unknown_key_once(t, e->key);
		break;
	case KH_EVENT_TRANSITION:
		s = session_for(t, slot);
		session_transition(t, s, (uint32_t)e->arg0, e->ts_ns, e);
		break;
	case KH_EVENT_SESSION_FINISH:
		t->saw_session = true;
		s = session_for(t, slot);
		status = e->arg0 < KH_STATE_COUNT ? (uint32_t)e->arg0 : KH_STATE_FAILED;
		if (e->arg0 >= KH_STATE_COUNT)
			log__warn("session finished with unknown status %" PRIu64 "; recorded as "
				  "failed", (uint64_t)e->arg0);
		session_transition(t, s, status, e->ts_ns, e);
		session_emit(t, s, slot, status, e->ts_ns, false);
		break;
	case KH_EVENT_LOADER_STATE:
		tracer__attach_mapped(t);
		if (t->opts.stop_on_loader)
			kill(t->pid, SIGCONT);
		break;
	default:
		log__debug("ignoring event type %u", e->type);
	}
	return 0;
}

int tracer__poll(struct tracer *t, int timeout_ms)
{
	if (!t->rb) {
		t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), handle_event, t, NULL);
		if (!t->rb) {
			log__error("cannot open the event ring buffer: %s", strerror(errno));
			return -errno;
		}
	}
	return ring_buffer__poll(t->rb, timeout_ms);
}

int tracer__epoll_fd(const struct tracer *t)
{
	return t->rb ? ring_buffer__epoll_fd(t->rb) : -1;
}

void tracer__finish(struct tracer *t, int exit_status)
{
	uint64_t now = tracer__now_ns();
	bool exited = exit_status >= 0;

	if (t->rb)
		ring_buffer__consume(t->rb);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		struct open_session *s = &t->sessions[slot];
		uint32_t status;

		if (!s->open)
			continue;
		/* A process that exits inside a session did not complete it. */
		status = exited ? KH_STATE_FAILED : s->last_state;
		session_transition(t, s, status, now, NULL);
		session_emit(t, s, slot, status, now, true);
	}
	if (!t->saw_session && t->records_emitted == 0) {
		struct kh_slot_stats outside;

		if (read_slot(t, KH_OUTSIDE_SLOT, &outside, false) == 0 &&
		    slot_has_activity(&outside)) {
			/* Spans but no session probes: one record for the whole trace. */
			struct open_session *s = &t->sessions[KH_OUTSIDE_SLOT];
			uint32_t status = exit_status == 0 ? KH_STATE_COMPLETED
				       : exited ? KH_STATE_FAILED : KH_STATE_SCANNING;

			session_begin(t, s, t->trace_start_ns, "0", !exited, NULL);
			session_transition(t, s, status, now, NULL);
			session_emit(t, s, KH_OUTSIDE_SLOT, status, now, !exited);
		}
	}
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

	if (!t || t->link_fd_count == 0 || pipe(hold) != 0) {
		tracer__close(t);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* Whoever reads khprof's output must not wait for this child. */
		int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		for (int fd = 0; fd < 3; fd++)
			dup2(null_fd, fd);
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
	ring_buffer__free(t->rb);
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(t->sched_links[i]);
	for (size_t i = 0; i < t->link_fd_count; i++)
		close(t->link_fds[i]);
	free(t->link_fds);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++)
		if (t->sessions[slot].open)
			profile__free(&t->sessions[slot].profile);
	khprof_bpf__destroy(t->skel);
	free(t->seen);
	free(t);
}
