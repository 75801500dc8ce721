// SPDX-License-Identifier: MIT
/*
 * Attaching one file: its keyhog notes -> one argument spec per wanted
 * site -> one uprobe-multi link per file (compat.c), kept until the tracer
 * closes; the sites kept first for the children the process forks
 * (stops/sites.h).  Which files, and the rest of a process's attach, is
 * process.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "compat.h"
#include "kfeatures.h"
#include "khprof.skel.h"
#include "latency.h"
#include "fileio.h"
#include "log.h"
#include "sampler.h"
#include "stops.h"
#include "tracer_impl.h"
#include "usdt_notes.h"
#include "usdt_spec.h"

#define PROVIDER "keyhog"

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
	{ "batch_register", KH_PROBE_BATCH_REGISTER, MODE_BIT(KH_MODE_BATCH) },
	{ "input_bytes", KH_PROBE_INPUT_BYTES, ALL_MODES },
	{ "input_units", KH_PROBE_INPUT_UNITS, ALL_MODES },
	{ "session_start", KH_PROBE_SESSION_START, ALL_MODES },
	{ "identity", KH_PROBE_IDENTITY, ALL_MODES },
	{ "transition", KH_PROBE_TRANSITION, ALL_MODES },
	{ "session_finish", KH_PROBE_SESSION_FINISH, ALL_MODES },
	/* Probe ABI 4: attached only for its semaphore (wanted_kind). */
	{ "clock_monotonic", KH_PROBE_CLOCK_MONOTONIC, MODE_BIT(KH_MODE_BATCH) },
};

unsigned int tracer__probe_modes(const char *provider, const char *name)
{
	if (strcmp(provider, PROVIDER) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(probe_kinds) / sizeof(probe_kinds[0]); i++)
		if (strcmp(name, probe_kinds[i].name) == 0)
			return probe_kinds[i].modes;
	return 0;
}

/* The probes that carry spans: all that calibration needs of khprof itself. */
static bool is_span_kind(enum kh_probe_kind kind)
{
	return kind == KH_PROBE_SPAN || kind == KH_PROBE_SPAN_ENTER || kind == KH_PROBE_SPAN_EXIT ||
	       kind == KH_PROBE_BATCH || kind == KH_PROBE_BATCH_REGISTER ||
	       kind == KH_PROBE_CLOCK_MONOTONIC;
}

static enum kh_probe_kind wanted_kind(const struct tracer *t, const struct usdt_note *note)
{
	if (strcmp(note->provider, PROVIDER) != 0)
		return 0;
	/* Its semaphore asks the program for CLOCK_MONOTONIC instead of the TSC. */
	if (!t->monotonic_clock && strcmp(note->name, "clock_monotonic") == 0)
		return 0;
	for (size_t i = 0; i < sizeof(probe_kinds) / sizeof(probe_kinds[0]); i++)
		if (strcmp(note->name, probe_kinds[i].name) == 0)
			/* The sampler finds each thread's span stack through batch_register. */
			return (probe_kinds[i].modes & MODE_BIT(t->opts.mode) ||
				(probe_kinds[i].kind == KH_PROBE_BATCH_REGISTER && t->opts.sample_hz)) &&
			       (!t->spans_only || is_span_kind(probe_kinds[i].kind))
				? probe_kinds[i].kind : 0;
	return 0;
}

/* Keeps a link until tracer__close (closes it when memory runs out); passes a negative errno on. */
int attach__keep_link(struct tracer *t, int fd)
{
	int *grown;

	if (fd < 0)
		return fd;
	grown = realloc(t->link_fds, (t->link_fd_count + 1) * sizeof(*grown));
	if (!grown) {
		close(fd);
		return -ENOMEM;
	}
	t->link_fds = grown;
	grown[t->link_fd_count++] = fd;
	return 0;
}

/*
 * Links prog_fd to count sites of path in the traced process: one
 * uprobe-multi link, or on kernels without them one perf-event uprobe per
 * site (compat.h), each kept; the first error is returned.
 */
static int link_sites(struct tracer *t, int prog_fd, const char *path, const __u64 *offsets,
		      const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count)
{
	int err = 0;

	if (features__has(&t->features, KH_FEAT_UPROBE_MULTI))
		return attach__keep_link(t, compat__uprobe_multi_link(prog_fd, path, offsets,
								      ref_ctr_offsets, cookies,
								      count, t->pid));
	for (__u32 i = 0; i < count && !err; i++)
		err = attach__keep_link(t, compat__uprobe_perf_link(
					prog_fd, path, offsets[i], ref_ctr_offsets[i], cookies[i],
					t->pid, features__has(&t->features, KH_FEAT_BPF_COOKIE)));
	return err;
}

/* The identity sites' program: sleepable, or not where uprobes cannot sleep (load.c). */
static struct bpf_program *identity_prog(const struct tracer *t)
{
	return bpf_program__autoload(t->skel->progs.kh_usdt_identity)
		       ? t->skel->progs.kh_usdt_identity
		       : t->skel->progs.kh_usdt_identity_nosleep;
}

/* Links prog to count sites of path and keeps the links until tracer__close. */
int attach__link_sites(struct tracer *t, struct bpf_program *prog, const char *path,
		       const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		       __u32 count)
{
	int err = 0;

	/* Without cookies the BPF side finds a site's spec by its file and offset. */
	if (!features__has(&t->features, KH_FEAT_BPF_COOKIE) &&
	    (prog == t->skel->progs.kh_usdt || prog == identity_prog(t)))
		err = compat__store_site_ids(bpf_map__fd(t->skel->maps.kh_sites),
					     bpf_map__fd(t->skel->maps.__bpf_usdt_ip_to_spec_id),
					     path, offsets, cookies, count);
	/*
	 * A probe site is kept with its original bytes before a uprobe can
	 * change it, for the children the process forks (sites.h).  Not
	 * khprof's own sites (calibration): the command never stops a fork
	 * of khprof.
	 */
	if (!err && t->opts.stops && !t->spans_only &&
	    (prog == t->skel->progs.kh_usdt || prog == identity_prog(t))) {
		err = stops__publish_sites(t->opts.stops, path, offsets, count);
		/* A file already gone (a process that exited) is not linked either: said there. */
		if (err && err != -ENOENT)
			log__warn("cannot keep the probe sites of '%s' for the processes that fork: "
				  "%s; one that khprof lets go without attaching may crash at one",
				  path, strerror(-err));
		err = 0;
	}
	if (!err)
		err = link_sites(t, bpf_program__fd(prog), path, offsets, ref_ctr_offsets, cookies,
				 count);
	return err;
}

/*
 * A fork already stopped is in the ring buffer: made safe and let go
 * here (trace.c, fork_stopped), never left stopped.
 */
void attach__stop_watching_forks(struct tracer *t, bool closing)
{
	if (t->fork_link_fd < 0)
		return;
	for (size_t i = 0; i < t->link_fd_count; i++)
		if (t->link_fds[i] == t->fork_link_fd)
			t->link_fds[i] = -1;
	close(t->fork_link_fd);
	t->fork_link_fd = -1;
	if (t->rb) {
		t->closing = closing;
		ring_buffer__consume(t->rb);
	}
}

void attach__close_later(void *(*close)(void *), void *what)
{
	pthread_attr_t attr;
	pthread_t thread;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, close, what) != 0)
		close(what);
	pthread_attr_destroy(&attr);
}

/*
 * Parses the argument spec of one site into specs[*n]; its id is the
 * site's cookie.  The specs are stored by store_specs, all at once.
 */
static int add_spec(struct tracer *t, const char *path, const struct usdt_note *note,
		    enum kh_probe_kind kind, struct kh_usdt_spec *specs, __u32 *ids, __u32 *n,
		    __u64 *cookie)
{
	__u32 id = t->spec_count;

	if (usdt_spec__parse(note->args, kind, &specs[*n]) != 0) {
		log__warn("skipping probe '%s:%s' in '%s': unsupported arguments '%s'",
			  note->provider, note->name, path, note->args);
		return 1;
	}
	if (id >= KH_MAX_PROBE_SITES) {
		log__error("cannot attach to '%s': more than %d keyhog probe sites", path,
			   KH_MAX_PROBE_SITES);
		return -E2BIG;
	}
	ids[*n] = id;
	*n += 1;
	t->spec_count++;
	*cookie = id;
	return 0;
}

/*
 * One BPF_MAP_UPDATE_BATCH for a file's sites instead of one update per
 * site: 183 update syscalls at every start of a kh-scan record before.
 */
static int store_specs(struct tracer *t, const struct kh_usdt_spec *specs, const __u32 *ids,
		       __u32 n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 count = n;

	if (n && bpf_map_update_batch(bpf_map__fd(t->skel->maps.__bpf_usdt_specs), ids, specs,
				      &count, &opts)) {
		log__error("cannot store probe arguments: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static void report_attach_error(const char *path, int err)
{
	if (err == -EPERM || err == -EACCES)
		log__error("cannot attach to '%s': permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)", path);
	else if (err == -EINVAL || err == -EOPNOTSUPP)
		log__error("cannot attach to '%s': %s (khprof needs perf-event uprobes, "
			   "CONFIG_UPROBE_EVENTS)", path, strerror(-err));
	else
		log__error("cannot attach to '%s': %s", path, strerror(-err));
}

int attach__object(struct tracer *t, const char *path)
{
	struct usdt_note_list notes;
	__u64 *offsets = NULL, *ref_ctr_offsets = NULL, *cookies = NULL;
	struct kh_usdt_spec *specs = NULL;
	__u32 *ids = NULL, nspecs = 0;
	__u32 count = 0, first_identity, identities;
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
		specs = calloc(notes.count, sizeof(*specs));
		ids = calloc(notes.count, sizeof(*ids));
		if (!offsets || !ref_ctr_offsets || !cookies || !specs || !ids) {
			err = -ENOMEM;
			goto out;
		}
	}
	/*
	 * Identity sites fill the arrays from the end: they get a link of their
	 * own to kh_usdt_identity, the sleepable program that can fault their
	 * strings in (bpf/khprof.bpf.c).
	 */
	first_identity = (__u32)notes.count;
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *note = &notes.notes[i];
		enum kh_probe_kind kind = wanted_kind(t, note);
		__u32 at;

		if (!kind || !note->file_offset)
			continue;
		at = kind == KH_PROBE_IDENTITY ? first_identity - 1 : count;
		err = add_spec(t, path, note, kind, specs, ids, &nspecs, &cookies[at]);
		if (err < 0)
			goto out;
		if (err > 0)
			continue;
		offsets[at] = note->file_offset;
		ref_ctr_offsets[at] = note->semaphore_offset;
		if (kind == KH_PROBE_IDENTITY)
			first_identity--;
		else
			count++;
	}
	identities = (__u32)notes.count - first_identity;
	err = store_specs(t, specs, ids, nspecs);
	if (err)
		goto out;
	/* Probe ABI 3 and older: no clock word; their batches keep the TSC. */
	if (t->monotonic_clock && usdt_notes__has(&notes, PROVIDER, "batch") &&
	    !usdt_notes__has(&notes, PROVIDER, "clock_monotonic"))
		log__warn("'%s' predates probe ABI 4: its batched spans are timed with the TSC, "
			  "which khprof does not trust here (rebuild it with this khprof's header "
			  "or crate, or use --mode span)", path);
	/* Probe ABI 2: khprof cannot learn where its threads keep their buffers. */
	if (t->opts.mode == KH_MODE_BATCH && usdt_notes__has(&notes, PROVIDER, "batch") &&
	    !usdt_notes__has(&notes, PROVIDER, "batch_register"))
		t->abi2_batch = true;
	if (count)
		err = attach__link_sites(t, t->skel->progs.kh_usdt, path, offsets,
					 ref_ctr_offsets, cookies, count);
	if (!err && identities)
		err = attach__link_sites(t, identity_prog(t), path,
					 offsets + first_identity,
					 ref_ctr_offsets + first_identity,
					 cookies + first_identity, identities);
	if (err) {
		report_attach_error(path, err);
		goto out;
	}
	if (count + identities)
		log__debug("attached %u probe sites in '%s'", count + identities, path);
	t->probe_count += count + identities;
	/* From here an execve ends the records (bpf/khprof.bpf.c, kh_exec). */
	if (count + identities)
		t->skel->bss->image_traced = 1;
out:
	free(offsets);
	free(ref_ctr_offsets);
	free(cookies);
	free(specs);
	free(ids);
	usdt_notes__free(&notes);
	return err;
}

int attach__object_once(struct tracer *t, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	if (seen_before(t, st.st_dev, st.st_ino))
		return 0;
	return attach__object(t, path);
}
