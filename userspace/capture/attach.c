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
#include <signal.h>
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
#include "utf8.h"

#define PROVIDER "keyhog"

bool attach__seen_before(struct seen_object **list, size_t *count, dev_t dev, ino_t ino)
{
	struct seen_object *grown;

	for (size_t i = 0; i < *count; i++)
		if ((*list)[i].dev == dev && (*list)[i].ino == ino)
			return true;
	grown = realloc(*list, (*count + 1) * sizeof(*grown));
	if (grown) {
		*list = grown;
		(*list)[(*count)++] = (struct seen_object){ dev, ino };
	}
	return false;
}

/*
 * Why a file is held open from its checks to its links: the kernel opens a
 * uprobe's file by path, and a file put at the path after khprof read it
 * (renamed over it, a directory or symlink on the way swapped: easy inside
 * a container, whose files khprof reaches through /proc/PID/root) would get
 * breakpoints at offsets checked in another file, in its data perhaps.
 * /proc/self/fd/N is a magic link: the kernel's path walk (kern_path with
 * LOOKUP_FOLLOW, in uprobe-multi links since 6.6 and in perf-event uprobes
 * since 4.17) lands on the very file of descriptor N, unlinked or not, the
 * one whose (st_dev, st_ino) khprof checked.  Its bytes can still change
 * in place, but only at the hands of a writer of that file, who could
 * change every program mapping it anyway.
 */
int held_file__open(const char *path, struct held_file *f)
{
	struct stat st = { 0 };

	*f = (struct held_file){ .fd = -1, .path = path };
	f->fd = open(path, O_PATH | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int err = errno;

		held_file__close(f);
		return st.st_mode && !S_ISREG(st.st_mode) ? -ENOEXEC : -err;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	snprintf(f->kernel_path, sizeof(f->kernel_path), "/proc/self/fd/%d", f->fd);
	return 0;
}

int held_file__read(struct held_file *f)
{
	int fd = open(f->kernel_path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	/* The kernel resolves the same /proc/self as this open: a /proc of khprof's own. */
	if (fstat(fd, &st) != 0 || st.st_dev != f->dev || st.st_ino != f->ino) {
		char file[256];

		close(fd);
		log__error("cannot attach to '%s': '%s' is not the file khprof opened (is /proc "
			   "another PID namespace's?)", utf8__escape(f->path, file, sizeof(file)),
			   f->kernel_path);
		return -EXDEV;
	}
	close(f->fd);
	f->fd = fd;
	snprintf(f->kernel_path, sizeof(f->kernel_path), "/proc/self/fd/%d", f->fd);
	return 0;
}

void held_file__close(struct held_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/*
 * Test hook: KHPROF_TEST_STOP_BEFORE_LINK=PATH in khprof's environment
 * stops khprof (SIGSTOP) once it has read and checked the file it opened
 * as PATH, before the first link of its sites, so that a test replaces the
 * file at PATH then, as an attacker would, and resumes it (test_hostile,
 * test_file_swapped_before_attach).  It can only stop khprof.
 */
static void stop_before_link(struct held_file *f)
{
	const char *which = getenv("KHPROF_TEST_STOP_BEFORE_LINK");

	if (which && !f->stopped && strcmp(which, f->path) == 0) {
		f->stopped = true;
		raise(SIGSTOP);
	}
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
 * Links prog_fd to count sites of path (a held file's /proc/self/fd/N) in
 * the traced process: one uprobe-multi link, or on kernels without them
 * one perf-event uprobe per site (compat.h), each kept; the first error
 * is returned.
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

/*
 * Every probe site of a file, spans' and identities' alike, kept with its
 * original bytes before a uprobe can change it, for the children the
 * process forks (sites.h), read from the held file: once per file, as the
 * table keeps a file once.  Not khprof's own sites (calibration): the
 * command never stops a fork of khprof.
 */
static void keep_sites(struct tracer *t, struct held_file *f, const __u64 *offsets, __u32 count)
{
	char file[256];
	int err;

	if (!t->opts.stops || t->spans_only || !count)
		return;
	err = stops__publish_sites(t->opts.stops, f->kernel_path, offsets, count);
	/* A file already gone (a process that exited) is not linked either: said there. */
	if (err && err != -ENOENT)
		log__warn("cannot keep the probe sites of '%s' for the processes that fork: "
			  "%s; one that khprof lets go without attaching may crash at one",
			  utf8__escape(f->path, file, sizeof(file)), strerror(-err));
}

/* Links prog to count sites of a held file and keeps the links until tracer__close. */
int attach__link_sites(struct tracer *t, struct bpf_program *prog, struct held_file *f,
		       const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		       __u32 count)
{
	int err = 0;

	stop_before_link(f);
	/* Without cookies the BPF side finds a site's spec by its file and offset. */
	if (!features__has(&t->features, KH_FEAT_BPF_COOKIE) &&
	    (prog == t->skel->progs.kh_usdt || prog == identity_prog(t)))
		err = compat__store_site_ids(bpf_map__fd(t->skel->maps.kh_sites),
					     bpf_map__fd(t->skel->maps.__bpf_usdt_ip_to_spec_id),
					     f->dev, f->ino, offsets, cookies, count);
	if (!err)
		err = link_sites(t, bpf_program__fd(prog), f->kernel_path, offsets, ref_ctr_offsets,
				 cookies, count);
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
 * The argument spec of one site (parsed and checked with its note) into
 * specs[*n]; its id is the site's cookie.  The specs are stored by
 * store_specs, all at once.
 */
static int add_spec(struct tracer *t, const char *path, const struct usdt_note *note,
		    enum kh_probe_kind kind, struct kh_usdt_spec *specs, __u32 *ids, __u32 *n,
		    __u64 *cookie)
{
	__u32 id = t->spec_count;

	if (id >= KH_MAX_PROBE_SITES) {
		log__error("cannot attach to '%s': more than %d keyhog probe sites", path,
			   KH_MAX_PROBE_SITES);
		return -E2BIG;
	}
	specs[*n] = note->spec;
	specs[*n].usdt_cookie = kind;
	ids[*n] = id;
	*n += 1;
	t->spec_count++;
	*cookie = id;
	return 0;
}

/*
 * Files whose refused sites were named on stderr, by device and inode:
 * once per file in a run of khprof, however many processes map it
 * (--follow-forks, attach --exe and --all trace each with a tracer of its
 * own, and each one's records name them).  Tracers attach on the main
 * thread only.
 */
static struct seen_object *named_files;
static size_t named_file_count;

/*
 * The keyhog sites of a file that the parser refused (usdt_notes.h): kept
 * for the records, and named on stderr the first time khprof attaches the
 * file.  A site the linker discarded could never fire: a note, which -q
 * leaves out; any other one the file should not have: a warning, always.
 * Other providers' sites are other tools' business.
 */
static void name_refused_sites(struct tracer *t, const struct held_file *f, const char *path,
			       const struct usdt_note_list *notes)
{
	int say = -1; /* unknown until the file has a keyhog site refused */

	for (size_t i = 0; i < notes->refused_count; i++) {
		const struct usdt_note *n = &notes->refused[i];
		char provider[64], name[96], file[256], reason[192];
		struct kh_refused_site site, *grown;

		if (strcmp(n->provider, PROVIDER) != 0)
			continue;
		if (say < 0)
			say = !attach__seen_before(&named_files, &named_file_count, f->dev, f->ino);
		usdt_note__refusal_text(n, reason, sizeof(reason));
		utf8__escape(n->provider, provider, sizeof(provider));
		utf8__escape(n->name, name, sizeof(name));
		utf8__escape(path, file, sizeof(file));
		if (say && n->refusal == USDT_SITE_OUTSIDE_CODE && !t->opts.quiet)
			log__note("probe site '%s:%s' at 0x%llx of '%s' not attached: %s", provider,
				  name, (unsigned long long)n->address, file, reason);
		else if (say && n->refusal != USDT_SITE_OUTSIDE_CODE)
			log__warn("refused probe site '%s:%s' at 0x%llx of '%s': %s", provider,
				  name, (unsigned long long)n->address, file, reason);
		grown = realloc(t->refused_sites, (t->refused_site_count + 1) * sizeof(*grown));
		if (!grown)
			continue; /* named above; the records lack it */
		site = (struct kh_refused_site){
			.file = strdup(path), .provider = strdup(n->provider),
			.name = strdup(n->name), .address = n->address,
			.refusal = strdup(usdt_refusal__name(n->refusal)), .reason = strdup(reason),
		};
		t->refused_sites = grown;
		grown[t->refused_site_count++] = site;
		t->sessions.cfg.refused_sites = t->refused_sites;
		t->sessions.cfg.refused_site_count = t->refused_site_count;
	}
}

void attach__free_refused_sites(struct tracer *t)
{
	for (size_t i = 0; i < t->refused_site_count; i++)
		kh_refused_site__free(&t->refused_sites[i]);
	free(t->refused_sites);
	t->refused_sites = NULL;
	t->refused_site_count = 0;
	t->sessions.cfg.refused_sites = NULL;
	t->sessions.cfg.refused_site_count = 0;
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

/*
 * The kernel refused the sites of a file.  Its support for uprobes was
 * established when khprof probed its features, and every site passed the
 * checks of usdt_notes.c, so a refusal of an argument is the file's (a
 * site that changed since it was read, or one those checks do not know):
 * the kernel's configuration is not blamed.
 */
static void report_attach_error(const struct tracer *t, const char *path, int err)
{
	char file[256];

	utf8__escape(path, file, sizeof(file));
	/*
	 * The process ended while its mappings were being attached (a link
	 * per process, where uprobe_multi is missing, names its pid): nothing
	 * of it is left to trace, and the callers take -ESRCH as its end.
	 */
	if (err == -ESRCH)
		log__debug("'%s' not attached: PID %d ended first", file, t->pid);
	else if (err == -EPERM || err == -EACCES)
		log__error("cannot attach to '%s': permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)", file);
	else if (err == -EINVAL || err == -EOPNOTSUPP)
		log__error("cannot attach to '%s': the kernel refused its probe sites: %s "
			   "(khprof probes '%s' lists them)", file, strerror(-err), file);
	else
		log__error("cannot attach to '%s': %s", file, strerror(-err));
}

/*
 * A file whose notes cannot be read.  Not ELF (a script), gone or not
 * readable: nothing to attach.  Of another architecture: none of its
 * probes can be read, said once.  Malformed: khprof will not guess at it;
 * the executable under `record` fails the trace (the file's fault:
 * tracer__bad_file), a library is named and left untraced.
 */
static int unreadable_notes(struct tracer *t, const char *path, int err,
			    const struct usdt_note_list *notes, bool required)
{
	char file[256];

	utf8__escape(path, file, sizeof(file));
	if (err == -ENOTSUP) {
		log__warn("cannot read probes of '%s': unsupported ELF file: %s; it runs untraced",
			  file, notes->problem);
		return 0;
	}
	if (err != -EINVAL) {
		log__debug("skipping '%s': %s", file, strerror(-err));
		return 0;
	}
	if (!required) {
		log__warn("cannot read probes of '%s': malformed ELF file: %s; it runs untraced",
			  file, notes->problem);
		return 0;
	}
	log__error("cannot trace '%s': malformed ELF file: %s", file, notes->problem);
	t->bad_file = true;
	return err;
}

/*
 * How messages and records name a held file: the path it was opened by,
 * but for /proc/PID/exe (a followed child's, attach -p's) the file the
 * link names, the same for every process that runs it.
 */
static const char *held_file__name(const struct held_file *f, char *buf, size_t len)
{
	const char *pid = f->path + strlen("/proc/");
	char *end;
	ssize_t n;

	if (strncmp(f->path, "/proc/", strlen("/proc/")) != 0)
		return f->path;
	strtoul(pid, &end, 10);
	if (end == pid || strcmp(end, "/exe") != 0)
		return f->path;
	n = readlink(f->kernel_path, buf, len - 1);
	if (n <= 0 || buf[0] != '/')
		return f->path;
	buf[n] = '\0';
	return buf;
}

static int attach_file(struct tracer *t, struct held_file *f, bool required)
{
	char shown[PATH_MAX];
	const char *path = held_file__name(f, shown, sizeof(shown));
	struct usdt_note_list notes;
	__u64 *offsets = NULL, *ref_ctr_offsets = NULL, *cookies = NULL;
	struct kh_usdt_spec *specs = NULL;
	__u32 *ids = NULL, nspecs = 0;
	__u32 count = 0, first_identity, identities;
	int err;

	err = usdt_notes__read_fd(f->fd, &notes);
	if (err)
		return unreadable_notes(t, path, err, &notes, required);
	name_refused_sites(t, f, path, &notes);
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
		if (err)
			goto out;
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
	    !usdt_notes__has(&notes, PROVIDER, "clock_monotonic")) {
		char file[256];

		log__warn("'%s' predates probe ABI 4: its batched spans are timed with the TSC, "
			  "which khprof does not trust here (rebuild it with this khprof's header "
			  "or crate, or use --mode span)", utf8__escape(path, file, sizeof(file)));
	}
	/* Probe ABI 2: khprof cannot learn where its threads keep their buffers. */
	if (t->opts.mode == KH_MODE_BATCH && usdt_notes__has(&notes, PROVIDER, "batch") &&
	    !usdt_notes__has(&notes, PROVIDER, "batch_register"))
		t->abi2_batch = true;
	/* The identities, filled from the end, moved to follow the spans: one list to keep. */
	if (identities && first_identity != count) {
		memmove(offsets + count, offsets + first_identity, identities * sizeof(*offsets));
		memmove(ref_ctr_offsets + count, ref_ctr_offsets + first_identity,
			identities * sizeof(*ref_ctr_offsets));
		memmove(cookies + count, cookies + first_identity, identities * sizeof(*cookies));
	}
	keep_sites(t, f, offsets, count + identities);
	if (count)
		err = attach__link_sites(t, t->skel->progs.kh_usdt, f, offsets,
					 ref_ctr_offsets, cookies, count);
	if (!err && identities)
		err = attach__link_sites(t, identity_prog(t), f, offsets + count,
					 ref_ctr_offsets + count, cookies + count, identities);
	if (err) {
		report_attach_error(t, path, err);
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

/*
 * The file at path, opened once (held_file__open) and attached; once: not
 * when the tracer attached it already (by device and inode).  A file that
 * cannot be opened has nothing to attach.
 */
static int attach_path(struct tracer *t, const char *path, bool required, bool once)
{
	struct held_file f;
	int err;

	err = held_file__open(path, &f);
	if (!err && once && attach__seen_before(&t->seen, &t->seen_count, f.dev, f.ino)) {
		held_file__close(&f);
		return 0;
	}
	if (!err)
		err = held_file__read(&f);
	if (!err)
		err = attach_file(t, &f, required);
	else if (err != -EXDEV) {
		char file[256];

		log__debug("skipping '%s': %s", utf8__escape(path, file, sizeof(file)),
			   strerror(-err));
		err = 0;
	}
	held_file__close(&f);
	return err;
}

int attach__object(struct tracer *t, const char *path)
{
	return attach_path(t, path, false, false);
}

int attach__object_once(struct tracer *t, const char *path, bool required)
{
	return attach_path(t, path, required, true);
}
