// SPDX-License-Identifier: MIT
/*
 * Attaching: the keyhog notes of each file the process maps -> one argument
 * spec per wanted site -> one uprobe-multi link per file (compat.c), plus
 * the dynamic loader's hook so that libraries loaded later are attached.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "calibrate.h"
#include "compat.h"
#include "khprof.skel.h"
#include "latency.h"
#include "log.h"
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

/* Links prog to count sites of path and keeps the link until tracer__close. */
static int link_sites(struct tracer *t, struct bpf_program *prog, const char *path,
		      const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		      __u32 count)
{
	int fd = compat__uprobe_multi_link(bpf_program__fd(prog), path, offsets, ref_ctr_offsets,
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

int attach__object(struct tracer *t, const char *path)
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
	return attach__object(t, path);
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

int tracer__attach(struct tracer *t, pid_t pid, const char *exe_path)
{
	int err;

	err = calibrate__run(t);
	if (err)
		return err;
	t->pid = pid;
	t->sessions.cfg.pid = pid;
	t->sessions.cfg.off_cpu = latency__attach(t->skel, pid, t->sched_links) == 0;
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

	sessions__take_first_sample(&t->sessions);
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
