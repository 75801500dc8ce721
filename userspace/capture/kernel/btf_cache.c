// SPDX-License-Identifier: MIT
/* The CO-RE target cache (btf_cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "btf_cache.h"
#include "kfeatures.h"
#include "fileio.h"
#include "khprof_object_id.h"
#include "log.h"

#define NT_GNU_BUILD_ID_TYPE 3

/* In the order of enum btf_cache_id. */
static const char *const id_names[BTF_ID_COUNT] = { "task_struct", "mm_struct", "signal_struct" };

static const char *cache_dir(void)
{
	const char *dir = getenv("KHPROF_CACHE_DIR");

	return dir && *dir ? dir : "/var/cache/khprof";
}

/* Root's, and writable by no one else: what khprof may load from or write. */
static bool trusted(const struct stat *st, mode_t type)
{
	return (st->st_mode & S_IFMT) == type && st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The running kernel's GNU build id in hex, from its ELF notes. */
static int kernel_build_id(char *hex, size_t len)
{
	unsigned char buf[4096];
	size_t n, pos = 0;
	FILE *f = fopen("/sys/kernel/notes", "re");

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (pos + 12 <= n) {
		__u32 namesz, descsz, type;
		size_t name_at = pos + 12, desc_at;

		memcpy(&namesz, buf + pos, 4);
		memcpy(&descsz, buf + pos + 4, 4);
		memcpy(&type, buf + pos + 8, 4);
		desc_at = name_at + ((namesz + 3u) & ~3u);
		if (namesz > n || descsz > n || desc_at + descsz > n)
			break;
		if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 && !memcmp(buf + name_at, "GNU", 4) &&
		    descsz * 2 < len && descsz > 0) {
			for (__u32 i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", buf[desc_at + i]);
			return 0;
		}
		pos = desc_at + ((descsz + 3u) & ~3u);
	}
	return -ENOENT;
}

static bool read_ids(const char *path, __u32 *ids, __u32 *features)
{
	__u32 known = 0;
	char text[256];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = fstat(fd, &st) == 0 && trusted(&st, S_IFREG) ? read(fd, text, sizeof(text) - 1) : -1;
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	/* Features found by an older khprof, which knew fewer, are looked for again. */
	return sscanf(text, "task_struct=%u mm_struct=%u signal_struct=%u features=%x/%x", &ids[0],
		      &ids[1], &ids[2], features, &known) == 5 && ids[0] && ids[1] && ids[2] &&
	       known == KH_FEAT_BTF_MASK;
}

void btf_cache__find(struct btf_cache *c)
{
	char build_id[128];
	struct stat st;
	int err;

	memset(c, 0, sizeof(*c));
	if (geteuid() != 0)
		return;
	err = kernel_build_id(build_id, sizeof(build_id));
	if (err) {
		log__debug("no CO-RE target cache: the kernel's build id: %s", strerror(-err));
		return;
	}
	snprintf(c->btf_path, sizeof(c->btf_path), "%s/%s-%s.btf", cache_dir(), build_id,
		 KH_BPF_OBJECT_ID);
	snprintf(c->ids_path, sizeof(c->ids_path), "%s/%s-%s.ids", cache_dir(), build_id,
		 KH_BPF_OBJECT_ID);
	if (stat(cache_dir(), &st) == 0 && !trusted(&st, S_IFDIR)) {
		log__debug("no CO-RE target cache: '%s' is not root's alone", cache_dir());
		return;
	}
	c->fillable = true;
	if (lstat(c->btf_path, &st) != 0 || !trusted(&st, S_IFREG) || !read_ids(c->ids_path, c->ids, &c->features))
		return;
	c->usable = true;
	c->fillable = false;
}

void btf_cache__forget(struct btf_cache *c)
{
	unlink(c->btf_path);
	unlink(c->ids_path);
	c->usable = false;
	c->fillable = true;
	c->features_known = false; /* the run's features came from it: read them anew */
}

/*
 * Writes all of len bytes to path (new, 0600); false on any failure.  Not
 * file__write_atomic: under sudo that gives new files to the invoking user,
 * and the cache must stay root's.
 */
static bool write_new(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && fd__write_all(fd, data, len) == 0;

	if (fd >= 0 && close(fd) != 0)
		ok = false;
	return ok;
}

/* bpftool gen min_core_btf: the kernel's layouts of the types object uses. */
static bool run_min_core_btf(const char *out, const char *object)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execlp("bpftool", "bpftool", "gen", "min_core_btf", VMLINUX_BTF, out, object,
		       (char *)NULL);
		/* Debian's, when PATH has no sbin (a cron job, a service). */
		execl("/usr/sbin/bpftool", "bpftool", "gen", "min_core_btf", VMLINUX_BTF, out,
		      object, (char *)NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* The ids file; its features as this run found them, or read from the BTF now. */
static bool write_ids(const char *path, const struct btf_cache *c)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	__s32 ids[BTF_ID_COUNT];
	__u32 features;
	char text[256];
	int n;

	if (!vmlinux)
		return false;
	for (int i = 0; i < BTF_ID_COUNT; i++)
		ids[i] = btf__find_by_name_kind(vmlinux, id_names[i], BTF_KIND_STRUCT);
	btf__free(vmlinux);
	for (int i = 0; i < BTF_ID_COUNT; i++)
		if (ids[i] <= 0)
			return false;
	features = c->features;
	if (!c->features_known && features__scan_btf(VMLINUX_BTF, &features) != 0)
		return false;
	n = snprintf(text, sizeof(text),
		     "task_struct=%d mm_struct=%d signal_struct=%d features=%x/%x\n", ids[0], ids[1],
		     ids[2], features, (unsigned)KH_FEAT_BTF_MASK);
	return write_new(path, text, (size_t)n);
}

/*
 * The background writer: everything under temporary names, renamed into
 * place ids first, so a reader that finds the BTF finds its ids.
 */
static void __attribute__((noreturn)) fill(const struct btf_cache *c, const void *object,
					   size_t object_len)
{
	char obj_tmp[PATH_MAX + 16], btf_tmp[PATH_MAX + 16], ids_tmp[PATH_MAX + 16];
	struct stat st;
	bool ok;

	/* None of khprof's descriptors: its BPF links above all, which must end with it. */
	close_range(3, ~0u, 0);
	setpriority(PRIO_PROCESS, 0, 19);
	if (mkdir(cache_dir(), 0755) != 0 && errno != EEXIST)
		_exit(1);
	if (stat(cache_dir(), &st) != 0 || !trusted(&st, S_IFDIR))
		_exit(1);
	snprintf(obj_tmp, sizeof(obj_tmp), "%s.%d.o", c->btf_path, (int)getpid());
	snprintf(btf_tmp, sizeof(btf_tmp), "%s.%d.tmp", c->btf_path, (int)getpid());
	snprintf(ids_tmp, sizeof(ids_tmp), "%s.%d.tmp", c->ids_path, (int)getpid());
	ok = write_new(obj_tmp, object, object_len) && run_min_core_btf(btf_tmp, obj_tmp) &&
	     write_ids(ids_tmp, c) && rename(ids_tmp, c->ids_path) == 0 &&
	     rename(btf_tmp, c->btf_path) == 0;
	unlink(obj_tmp);
	if (!ok) {
		unlink(btf_tmp);
		unlink(ids_tmp);
	}
	_exit(ok ? 0 : 1);
}

void btf_cache__fill(struct btf_cache *c, const void *object, size_t object_len)
{
	static bool started;
	pid_t pid;

	if (!c->fillable || started)
		return;
	started = true;
	/* Reparented at once: nobody waits for it, nor it for anyone's output. */
	pid = process__fork_quiet();
	if (pid == 0) {
		if (process__fork_quiet() == 0)
			fill(c, object, object_len);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}
