// SPDX-License-Identifier: MIT
/* The running kernel's features (kfeatures.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "btf_heap.h"
#include "compat.h"
#include "kfeatures.h"
#include "log.h"


static const struct {
	const char *name;
	const char *since;
	/* What khprof does without it; NULL: nothing the record would miss. */
	const char *cost;
} table[] = {
	[KH_FEAT_UPROBE_MULTI] = {
		"uprobe_multi", "Linux 6.6",
		"one perf-event uprobe per probe site: attaching costs a system call "
		"or two per site instead of one per file" },
	[KH_FEAT_PREEMPT_KFUNCS] = { "bpf_preempt_disable", "Linux 6.10", NULL },
	[KH_FEAT_RDONLY_CAST] = {
		"bpf_rdonly_cast", "Linux 6.2",
		"process CPU and memory samples read kernel memory with a helper call per "
		"field instead of plain loads" },
	[KH_FEAT_COPY_FROM_USER_STR] = {
		"bpf_copy_from_user_str", "Linux 6.12",
		"an identity string on a page the program never touched is faulted in by a "
		"one-byte bpf_copy_from_user and read again (a few helper calls more per "
		"identity probe)" },
	[KH_FEAT_SEND_SIGNAL_TASK] = {
		"bpf_send_signal_task", "Linux 6.13",
		"forked children are stopped from a sys_exit tracepoint: while khprof "
		"watches forks, every system call on the machine takes the tracepoint's "
		"slow path" },
	[KH_FEAT_PREPARE_EXEC] = {
		"sched_prepare_exec", "Linux 6.10",
		"spans a thread still buffers when the program calls execve are lost, and "
		"counted as exit_unknown (batch mode); the state it execs in ends without "
		"its memory" },
	[KH_FEAT_UPROBE_FUNC_IP] = { "uprobe_func_ip", "Linux 6.4", NULL },
	[KH_FEAT_PERCPU_RSS] = { "percpu_rss", "Linux 6.2", NULL },
	[KH_FEAT_OPTIMIZED_UPROBES] = { "optimized_uprobes", "Linux 6.18 on x86-64", NULL },
	[KH_FEAT_EXIT_BEFORE_MM] = {
		"exit_before_mm", "Linux 6.16",
		"spans a thread still buffers when it ends are lost, and counted as "
		"exit_unknown (batch mode)" },
	[KH_FEAT_FENTRY] = { "fentry", "Linux 5.5 with ftrace direct calls", NULL },
	[KH_FEAT_BPF_LOOP] = {
		"bpf_loop", "Linux 5.17",
		"khprof loads its object of bounded loops and traces in span mode (a 256-span "
		"batch walked in bounded loops is past the verifier's 1,000,000 instructions), "
		"process CPU samples sum at most 256 live threads, identity strings on pages "
		"never touched are read by khprof from the process (stopped at the probe under "
		"record), and the load takes "
		"longer (the verifier walks every iteration)" },
	[KH_FEAT_TASK_STORAGE] = {
		"task_storage", "Linux 5.11",
		"per-thread state in hash maps keyed by thread id, deleted at the thread's exit "
		"(a hash lookup at each flush, ~2.3 ns a batched span here); --sample is refused" },
	[KH_FEAT_SWITCH_PREV_STATE] = { "switch_prev_state", "Linux 5.18", NULL },
	[KH_FEAT_RINGBUF] = { "ringbuf", "Linux 5.8",
			      "khprof does not run: every event comes through a BPF ring buffer" },
	[KH_FEAT_BPF_COOKIE] = {
		"bpf_cookie", "Linux 5.15",
		"each probe hit finds its site from the kernel's uprobe (its file and offset: "
		"four kernel reads and a hash lookup more a hit), and the uprobes are attached "
		"with PERF_EVENT_IOC_SET_BPF" },
	[KH_FEAT_PREEMPT_OFF_CALLS] = {
		"preempt_off_calls", "Linux 6.15",
		"khprof's uprobe programs run preemptible (the verifier refuses their "
		"calls with preemption off): on a kernel whose JIT gives them a stack per "
		"CPU, a thread preempted in one can find another thread's values in it" },
};
_Static_assert(sizeof(table) / sizeof(table[0]) == KH_FEAT_COUNT, "one row per feature");

const char *features__name(enum kh_kernel_feature feat)
{
	return (unsigned)feat < KH_FEAT_COUNT ? table[feat].name : NULL;
}

const char *features__since(enum kh_kernel_feature feat)
{
	return (unsigned)feat < KH_FEAT_COUNT ? table[feat].since : NULL;
}

const char *features__cost(const struct kh_features *f, enum kh_kernel_feature feat)
{
	if ((unsigned)feat >= KH_FEAT_COUNT || features__has(f, feat))
		return NULL;
	if (feat == KH_FEAT_PREEMPT_KFUNCS || feat == KH_FEAT_PREEMPT_OFF_CALLS) {
		/* Only a kernel that preempts kernel code can interleave two runs. */
		if (f->preempt == KH_PREEMPT_NONE || f->preempt == KH_PREEMPT_VOLUNTARY)
			return NULL;
		/* Stacks per CPU came after the kfuncs (6.13): not before them. */
		if (feat == KH_FEAT_PREEMPT_OFF_CALLS)
			return features__has(f, KH_FEAT_PREEMPT_KFUNCS) ? table[feat].cost : NULL;
		return "this kernel may preempt a BPF program (preempt=full or unknown): two "
		       "traced threads interleaving on one CPU can lose a count";
	}
	/* Read at the start of do_exit() and begin_new_exec() instead (fentry). */
	if ((feat == KH_FEAT_EXIT_BEFORE_MM || feat == KH_FEAT_PREPARE_EXEC) &&
	    features__has(f, KH_FEAT_FENTRY))
		return NULL;
	return table[feat].cost;
}

/* A type's name, or "" (anonymous types). */
static const char *name_of(const struct btf *btf, const struct btf_type *t)
{
	const char *name = btf__name_by_offset(btf, t->name_off);

	return name ? name : "";
}

static const struct btf_type *skip_mods(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t;
}

/*
 * The member of struct or union t named name, also inside its anonymous
 * members (mm_struct keeps nearly all of its fields in one), or NULL.
 */
static const struct btf_member *member_of(const struct btf *btf, const struct btf_type *t,
					  const char *name, int depth)
{
	const struct btf_member *m = btf_members(t);

	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *member = btf__name_by_offset(btf, m->name_off);
		const struct btf_type *inner;

		if (member && *member) {
			if (strcmp(member, name) == 0)
				return m;
			continue;
		}
		inner = skip_mods(btf, m->type);
		if (inner && btf_is_composite(inner) && depth < 4) {
			const struct btf_member *found = member_of(btf, inner, name, depth + 1);

			if (found)
				return found;
		}
	}
	return NULL;
}

static uint32_t struct_bits(const struct btf *btf, const struct btf_type *t, const char *name)
{
	const struct btf_member *m;

	if (strcmp(name, "bpf_trace_run_ctx") == 0)
		/* is_uprobe came with bpf_get_func_ip for uprobes (Linux 6.4). */
		return member_of(btf, t, "is_uprobe", 0) ? 1u << KH_FEAT_UPROBE_FUNC_IP : 0;
	if (strcmp(name, "bpf_subprog_info") == 0)
		/*
		 * might_sleep came with the verifier's leave to call global
		 * subprograms with preemption off, which kh_usdt's calls of
		 * libbpf's bpf_usdt_arg need (bpf/khprof.bpf.c, before kh_usdt).
		 */
		return member_of(btf, t, "might_sleep", 0) ? 1u << KH_FEAT_PREEMPT_OFF_CALLS : 0;
	if (strcmp(name, "mm_struct") == 0) {
		m = member_of(btf, t, "rss_stat", 0);
		if (m && btf_is_array(skip_mods(btf, m->type) ?: t))
			return 1u << KH_FEAT_PERCPU_RSS;
	}
	return 0;
}

/*
 * The tracepoint's prototype: (ctx, task) before Linux 6.16, (ctx, task,
 * group_dead) since, when it also moved before exit_mm().
 */
static uint32_t exit_bits(const struct btf *btf, const struct btf_type *typedef_type)
{
	const struct btf_type *ptr = btf__type_by_id(btf, typedef_type->type);
	const struct btf_type *proto = ptr && btf_is_ptr(ptr) ? btf__type_by_id(btf, ptr->type)
							       : NULL;

	return proto && btf_is_func_proto(proto) && btf_vlen(proto) >= 3
		       ? 1u << KH_FEAT_EXIT_BEFORE_MM : 0;
}

/* (ctx, preempt, prev, next) before Linux 5.18, then prev_state too. */
static uint32_t switch_bits(const struct btf *btf, const struct btf_type *typedef_type)
{
	const struct btf_type *ptr = btf__type_by_id(btf, typedef_type->type);
	const struct btf_type *proto = ptr && btf_is_ptr(ptr) ? btf__type_by_id(btf, ptr->type)
							       : NULL;

	return proto && btf_is_func_proto(proto) && btf_vlen(proto) >= 5
		       ? 1u << KH_FEAT_SWITCH_PREV_STATE : 0;
}

/* An fentry program on do_exit loaded and attached: trampolines work. */
static bool probe_fentry(__s32 btf_id)
{
	int prog_fd = compat__empty_prog(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, (__u32)btf_id,
					 "kh_probe_fentry");
	int link_fd;

	if (prog_fd < 0)
		return false;
	link_fd = bpf_raw_tracepoint_open(NULL, prog_fd);
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return link_fd >= 0;
}

int features__scan_btf(const char *path, uint32_t *bits)
{
	static const struct {
		const char *name;
		__u16 kind;
		enum kh_kernel_feature feat;
	} funcs[] = {
		{ "bpf_preempt_disable", BTF_KIND_FUNC, KH_FEAT_PREEMPT_KFUNCS },
		{ "bpf_rdonly_cast", BTF_KIND_FUNC, KH_FEAT_RDONLY_CAST },
		{ "bpf_copy_from_user_str", BTF_KIND_FUNC, KH_FEAT_COPY_FROM_USER_STR },
		{ "bpf_send_signal_task", BTF_KIND_FUNC, KH_FEAT_SEND_SIGNAL_TASK },
		{ "btf_trace_sched_prepare_exec", BTF_KIND_TYPEDEF, KH_FEAT_PREPARE_EXEC },
		{ "arch_uprobe_optimize", BTF_KIND_FUNC, KH_FEAT_OPTIMIZED_UPROBES },
		/* Trampolines attach through ftrace's direct calls. */
		{ "register_ftrace_direct", BTF_KIND_FUNC, KH_FEAT_FENTRY },
		/* Helpers, by the kernel functions that implement them. */
		{ "bpf_loop", BTF_KIND_FUNC, KH_FEAT_BPF_LOOP },
		{ "bpf_task_storage_get", BTF_KIND_FUNC, KH_FEAT_TASK_STORAGE },
		{ "bpf_get_attach_cookie_trace", BTF_KIND_FUNC, KH_FEAT_BPF_COOKIE },
		{ "bpf_ringbuf_output", BTF_KIND_FUNC, KH_FEAT_RINGBUF },
	};
	void *heap = btf_heap__begin(path);
	struct btf *btf = btf__parse(path, NULL);
	bool preempt_enable = false;
	__s32 do_exit_id = -1;
	__u32 n;

	*bits = 0;
	if (!btf) {
		int err = -errno;

		btf_heap__end(heap);
		return err;
	}
	n = btf__type_cnt(btf);
	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = name_of(btf, t);

		if (!*name)
			continue;
		if (btf_is_struct(t)) {
			*bits |= struct_bits(btf, t, name);
			continue;
		}
		if (btf_is_func(t) && strcmp(name, "bpf_preempt_enable") == 0)
			preempt_enable = true;
		if (btf_is_typedef(t) && strcmp(name, "btf_trace_sched_process_exit") == 0)
			*bits |= exit_bits(btf, t);
		if (btf_is_typedef(t) && strcmp(name, "btf_trace_sched_switch") == 0)
			*bits |= switch_bits(btf, t);
		if (btf_is_func(t) && strcmp(name, "do_exit") == 0)
			do_exit_id = (__s32)id;
		for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
			if (btf_kind(t) == funcs[i].kind && strcmp(name, funcs[i].name) == 0)
				*bits |= 1u << funcs[i].feat;
	}
	if (!preempt_enable)
		*bits &= ~(1u << KH_FEAT_PREEMPT_KFUNCS);
	btf__free(btf);
	btf_heap__end(heap);
	/* ftrace's symbols are there on builds that cannot attach trampolines too. */
	if ((*bits & (1u << KH_FEAT_FENTRY)) && (do_exit_id <= 0 || !probe_fentry(do_exit_id)))
		*bits &= ~(1u << KH_FEAT_FENTRY);
	return 0;
}

/*
 * uprobe-multi links by trying one, as libbpf's own probe does: a link on
 * "/" (not a regular file) fails with EBADF where the attach type exists.
 * The first kernels filtered such links by thread, not by process, which
 * would lose every thread but the main one; kernels with the fix refuse a
 * negative PID with EINVAL before they look at the path.
 */
static bool probe_uprobe_multi(void)
{
	/* Once per khprof process: --follow-forks and attach --exe open many tracers. */
	static int known = -1;
	__u64 offset = 0, ref_ctr = 0, cookie = 0;
	int prog_fd, fd, err;
	bool ok = false;

	if (known >= 0)
		return known;
	prog_fd = compat__empty_prog(BPF_PROG_TYPE_KPROBE, KH_BPF_TRACE_UPROBE_MULTI, 0,
				     "kh_probe_multi");
	if (prog_fd < 0)
		return false; /* no privileges yet: asked again by the next tracer */
	fd = compat__uprobe_multi_link(prog_fd, "/", &offset, &ref_ctr, &cookie, 1, 0);
	if (fd >= 0)
		close(fd);
	else if (fd == -EBADF) {
		fd = compat__uprobe_multi_link(prog_fd, "/", &offset, &ref_ctr, &cookie, 1,
					       (pid_t)-1);
		if (fd >= 0)
			close(fd);
		ok = fd == -EINVAL;
	}
	err = errno;
	close(prog_fd);
	errno = err;
	known = ok;
	return ok;
}

/* "none (voluntary) full": the mode in brackets. */
static enum kh_preempt_mode preempt_mode_of(const char *text)
{
	static const char *const names[] = { "none", "voluntary", "full", "lazy" };
	static const enum kh_preempt_mode modes[] = { KH_PREEMPT_NONE, KH_PREEMPT_VOLUNTARY,
						      KH_PREEMPT_FULL, KH_PREEMPT_FULL };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char word[16];

		snprintf(word, sizeof(word), "(%s)", names[i]);
		if (strstr(text, word) || strcmp(text, names[i]) == 0)
			return modes[i];
	}
	return KH_PREEMPT_UNKNOWN;
}

static bool read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return n > 0;
}

/*
 * The kernel's preemption model: its debugfs file where mounted (the mode
 * in force), else preempt= on its command line, else its build config.
 */
static enum kh_preempt_mode probe_preempt(const char *release)
{
	char text[4096], path[128], *arg;
	FILE *config;

	if (read_small("/sys/kernel/debug/sched/preempt", text, sizeof(text)))
		return preempt_mode_of(text);
	if (read_small("/proc/cmdline", text, sizeof(text)) && (arg = strstr(text, "preempt="))) {
		arg += strlen("preempt=");
		arg[strcspn(arg, " ")] = '\0';
		return preempt_mode_of(arg);
	}
	snprintf(path, sizeof(path), "/boot/config-%s", release);
	config = fopen(path, "re");
	if (!config)
		return KH_PREEMPT_UNKNOWN;
	while (fgets(text, sizeof(text), config)) {
		enum kh_preempt_mode mode = KH_PREEMPT_UNKNOWN;

		if (strncmp(text, "CONFIG_PREEMPT=y", 16) == 0 ||
		    strncmp(text, "CONFIG_PREEMPT_RT=y", 19) == 0)
			mode = KH_PREEMPT_FULL;
		else if (strncmp(text, "CONFIG_PREEMPT_VOLUNTARY=y", 26) == 0)
			mode = KH_PREEMPT_VOLUNTARY;
		else if (strncmp(text, "CONFIG_PREEMPT_NONE=y", 21) == 0)
			mode = KH_PREEMPT_NONE;
		if (mode != KH_PREEMPT_UNKNOWN) {
			fclose(config);
			return mode;
		}
	}
	fclose(config);
	return KH_PREEMPT_UNKNOWN;
}

/* KHPROF_DISABLE_FEATURES=name,name: the bits of the names; unknown ones are said once. */
static uint32_t disabled_by_env(void)
{
	const char *list = getenv("KHPROF_DISABLE_FEATURES");
	uint32_t bits = 0;

	while (list && *list) {
		size_t len = strcspn(list, ",");
		int found = -1;

		for (int i = 0; i < KH_FEAT_COUNT; i++)
			if (strlen(table[i].name) == len && strncmp(list, table[i].name, len) == 0)
				found = i;
		if (found >= 0)
			bits |= 1u << found;
		else if (len)
			log__warn("ignoring unknown feature '%.*s' in KHPROF_DISABLE_FEATURES "
				  "(see 'khprof features')", (int)len, list);
		list += len + (list[len] == ',');
	}
	return bits;
}

void features__probe(struct kh_features *f, bool btf_bits_known, uint32_t btf_bits)
{
	struct utsname u;
	int err;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0)
		snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->btf_read = btf_bits_known;
	if (!btf_bits_known) {
		err = features__scan_btf(VMLINUX_BTF, &btf_bits);
		if (err)
			log__debug("cannot read the kernel's BTF for its features: %s",
				   strerror(-err));
		f->btf_read = !err;
	}
	f->btf_bits = btf_bits & KH_FEAT_BTF_MASK;
	f->have = f->btf_bits;
	if (probe_uprobe_multi())
		f->have |= 1u << KH_FEAT_UPROBE_MULTI;
	f->preempt = probe_preempt(f->release);
	f->disabled = disabled_by_env() & f->have;
	/* uprobe-multi links always carry cookies: without cookies, without them too. */
	if (f->disabled & (1u << KH_FEAT_BPF_COOKIE))
		f->disabled |= f->have & (1u << KH_FEAT_UPROBE_MULTI);
	f->have &= ~f->disabled;
	/* Without bpf_loop the classic object does without these (kfeatures.h). */
	if (!features__has(f, KH_FEAT_BPF_LOOP)) {
		f->unused = f->have & KH_FEAT_CLASSIC_UNUSED;
		f->have &= ~KH_FEAT_CLASSIC_UNUSED;
	}
}

const char *features__floor_missing(const struct kh_features *f, char *buf, size_t len)
{
	for (int i = 0; i < KH_FEAT_COUNT; i++) {
		if (!(KH_FEAT_FLOOR_MASK & (1u << i)) || features__has(f, (enum kh_kernel_feature)i))
			continue;
		snprintf(buf, len, "%s (%s)%s", table[i].name, table[i].since,
			 (f->disabled & (1u << i)) ? ", disabled by KHPROF_DISABLE_FEATURES" : "");
		return buf;
	}
	return NULL;
}

void features__print(const struct kh_features *f, FILE *out)
{
	static const char *const preempt_names[] = { "unknown", "none", "voluntary", "full" };

	fprintf(out, "kernel %s, preempt=%s\n", f->release, preempt_names[f->preempt]);
	fprintf(out, "%-24s %-9s %-38s %s\n", "feature", "found", "since", "without it");
	for (int i = 0; i < KH_FEAT_COUNT; i++) {
		const char *cost = features__cost(f, (enum kh_kernel_feature)i);
		const char *found = features__has(f, (enum kh_kernel_feature)i) ? "yes"
				    : (f->disabled & (1u << i))                 ? "disabled"
				    : (f->unused & (1u << i))                   ? "unused"
				    : i == KH_FEAT_UPROBE_MULTI && geteuid() != 0 ? "unknown"
										  : "no";

		fprintf(out, "%-24s %-9s %-38s %s\n", table[i].name, found, table[i].since,
			features__has(f, (enum kh_kernel_feature)i) ? "-"
			: cost ? cost : "nothing lost");
	}
}
