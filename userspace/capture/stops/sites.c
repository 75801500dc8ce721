// SPDX-License-Identifier: MIT
/*
 * The table of probe sites khprof links, shared with the stop keeper, and
 * a forked child's sites put back as they are in the file (sites.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "array.h"
#include "procfs.h"
#include "sites.h"

/*
 * Room for every site of a few hundred files (kh-scan has 12 sites in one
 * file); the memfd's pages are only allocated as they are written.
 */
#define SITE_FILES_MAX 1024
#define SITE_SITES_MAX 32768
/* The header's hot sites are a 5-byte nop, the others (and <sys/sdt.h>'s) a 1-byte nop. */
#define SITE_BYTES_MAX 5
#define OPCODE_INT3 0xcc
#define OPCODE_CALL 0xe8

static const uint8_t nop5[SITE_BYTES_MAX] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* A file as /proc/PID/maps names it: the device and inode the kernel mapped. */
struct site_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	uint64_t stat_dev, stat_ino; /* as stat(2) gave them: to know a file kept already */
	uint32_t first, count;       /* its sites in site[] */
};

struct site {
	uint64_t offset;             /* in the file */
	uint8_t len;                 /* of the instruction there: 5 or 1 */
	uint8_t orig[SITE_BYTES_MAX];
};

/*
 * One writer (khprof's thread that links files), any number of readers in
 * other processes: a file's sites are written first, then its entry, then
 * files is raised with a release store, which a reader loads with acquire.
 */
struct site_shared {
	uint32_t files;
	uint32_t sites;
	struct site_file file[SITE_FILES_MAX];
	struct site site[SITE_SITES_MAX];
};

struct site_table {
	struct site_shared *shared;
};

static int map_shared(struct site_table **out, int fd)
{
	struct site_table *t = calloc(1, sizeof(*t));
	void *mem;

	if (!t)
		return -ENOMEM;
	mem = mmap(NULL, sizeof(struct site_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		free(t);
		return -errno;
	}
	t->shared = mem;
	*out = t;
	return 0;
}

int sites__create(struct site_table **out, int *fd)
{
	int err;

	*fd = memfd_create("khprof-sites", MFD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, sizeof(struct site_shared)) != 0) {
		err = -errno;
		close(*fd);
		*fd = -1;
		return err;
	}
	err = map_shared(out, *fd);
	if (err) {
		close(*fd);
		*fd = -1;
	}
	return err;
}

int sites__map(struct site_table **out, int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	if ((size_t)st.st_size < sizeof(struct site_shared))
		return -EINVAL;
	return map_shared(out, fd);
}

void sites__unmap(struct site_table *t)
{
	if (!t)
		return;
	munmap(t->shared, sizeof(*t->shared));
	free(t);
}

struct find_mapping {
	uint64_t start;
	struct site_file *file;
};

static int is_mapping_at(const struct procfs_mapping *m, void *ctx)
{
	struct find_mapping *find = ctx;

	if (m->start != find->start)
		return 0;
	find->file->dev_major = m->dev_major;
	find->file->dev_minor = m->dev_minor;
	find->file->ino = m->inode;
	return 1;
}

/*
 * The device and inode a process's maps will show for fd's file: stat(2)'s
 * are not always those (an overlayfs file is mapped from the layer below
 * it), so the file is mapped here for a moment and looked up in khprof's
 * own maps.  stat(2)'s where that fails (an empty file).
 */
static void identify_as_mapped(int fd, const struct stat *st, struct site_file *f)
{
	long page = sysconf(_SC_PAGESIZE);
	void *mem = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0);
	struct find_mapping find = { (uint64_t)(uintptr_t)mem, f };

	f->dev_major = major(st->st_dev);
	f->dev_minor = minor(st->st_dev);
	f->ino = st->st_ino;
	if (mem == MAP_FAILED)
		return;
	procfs__for_each_mapping(getpid(), is_mapping_at, &find);
	munmap(mem, (size_t)page);
}

int sites__publish(struct site_table *t, const char *path, const __u64 *offsets,
		   size_t count)
{
	struct site_shared *s = t->shared;
	uint32_t files = s->files, first = s->sites, n = 0;
	struct site_file *f;
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out;
	}
	for (uint32_t i = 0; i < files; i++)
		if (s->file[i].stat_dev == (uint64_t)st.st_dev &&
		    s->file[i].stat_ino == (uint64_t)st.st_ino)
			goto out;
	if (files == SITE_FILES_MAX || count > SITE_SITES_MAX - first) {
		err = -ENOSPC;
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		struct site *site = &s->site[first + n];
		ssize_t got = pread(fd, site->orig, SITE_BYTES_MAX, (off_t)offsets[i]);

		if (got < 1)
			continue; /* past the file's end: no instruction to restore */
		site->offset = offsets[i];
		site->len = got == SITE_BYTES_MAX && !memcmp(site->orig, nop5, SITE_BYTES_MAX)
				    ? SITE_BYTES_MAX : 1;
		n++;
	}
	f = &s->file[files];
	memset(f, 0, sizeof(*f));
	identify_as_mapped(fd, &st, f);
	f->stat_dev = (uint64_t)st.st_dev;
	f->stat_ino = (uint64_t)st.st_ino;
	f->first = first;
	f->count = n;
	s->sites = first + n;
	__atomic_store_n(&s->files, files + 1, __ATOMIC_RELEASE);
out:
	close(fd);
	return err;
}

/* A site of the child's memory, as found and as it is. */
struct target {
	uint64_t vaddr;
	const struct site *site;
	uint8_t now[SITE_BYTES_MAX];
};

struct collect {
	const struct site_shared *s;
	uint32_t files;
	struct target *targets;
	size_t count, cap;
	int err;
};

static int add_target(struct collect *c, uint64_t vaddr, const struct site *site)
{
	if (array__reserve((void **)&c->targets, &c->cap, c->count + 1, sizeof(*c->targets))) {
		c->err = -ENOMEM;
		return 1;
	}
	c->targets[c->count++] = (struct target){ .vaddr = vaddr, .site = site };
	return 0;
}

/* The kept sites that an executable mapping of the child covers. */
static int collect_mapping(const struct procfs_mapping *m, void *ctx)
{
	struct collect *c = ctx;

	if (!m->inode || m->perms[2] != 'x')
		return 0;
	for (uint32_t i = 0; i < c->files; i++) {
		const struct site_file *f = &c->s->file[i];

		if (f->ino != m->inode || f->dev_major != m->dev_major ||
		    f->dev_minor != m->dev_minor)
			continue;
		for (uint32_t j = 0; j < f->count; j++) {
			const struct site *site = &c->s->site[f->first + j];

			if (site->offset < m->offset || site->offset - m->offset >= m->end - m->start)
				continue;
			if (add_target(c, m->start + (site->offset - m->offset), site))
				return 1;
		}
	}
	return 0;
}

/* Reads every target's bytes from pid's memory, UIO_MAXIOV at a time. */
static int read_targets(pid_t pid, struct target *targets, size_t count)
{
	enum { BATCH = 512 };
	struct iovec local[BATCH], remote[BATCH];

	for (size_t done = 0; done < count;) {
		size_t n = count - done < BATCH ? count - done : BATCH;
		size_t want = 0;
		ssize_t got;

		for (size_t i = 0; i < n; i++) {
			struct target *x = &targets[done + i];

			local[i] = (struct iovec){ x->now, x->site->len };
			remote[i] = (struct iovec){ (void *)(uintptr_t)x->vaddr, x->site->len };
			want += x->site->len;
		}
		got = process_vm_readv(pid, local, n, remote, n, 0);
		if (got < 0)
			return -errno;
		if ((size_t)got != want)
			return -EFAULT;
		done += n;
	}
	return 0;
}

/*
 * What a uprobe leaves at a site: an int3 over its first byte, or (an
 * optimized 5-byte nop) a call.  Anything else is someone else's and kept.
 */
static bool changed_by_uprobe(const struct target *x)
{
	const struct site *site = x->site;

	if (!memcmp(x->now, site->orig, site->len))
		return false;
	if (x->now[0] == OPCODE_INT3 && !memcmp(x->now + 1, site->orig + 1, site->len - 1u))
		return true;
	return site->len == SITE_BYTES_MAX && x->now[0] == OPCODE_CALL;
}

int sites__restore(const struct site_table *t, pid_t pid)
{
	struct collect c = { .s = t->shared };
	char mem_path[64];
	int restored = 0, mem_fd = -1, err;

	c.files = __atomic_load_n(&t->shared->files, __ATOMIC_ACQUIRE);
	if (!c.files)
		return 0;
	err = procfs__for_each_mapping(pid, collect_mapping, &c);
	if (err < 0) {
		err = err == -ENOENT ? -ESRCH : err;
		goto out;
	}
	err = c.err;
	if (!err && c.count)
		err = read_targets(pid, c.targets, c.count);
	for (size_t i = 0; !err && i < c.count; i++) {
		const struct target *x = &c.targets[i];

		if (!changed_by_uprobe(x))
			continue;
		if (mem_fd < 0) {
			snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", (int)pid);
			mem_fd = open(mem_path, O_RDWR | O_CLOEXEC);
			if (mem_fd < 0) {
				err = errno == ENOENT ? -ESRCH : -errno;
				break;
			}
		}
		/* Written through the page tables with FOLL_FORCE: text stays read-only. */
		if (pwrite(mem_fd, x->site->orig, x->site->len, (off_t)x->vaddr) != x->site->len) {
			err = -errno;
			break;
		}
		restored++;
	}
out:
	if (mem_fd >= 0)
		close(mem_fd);
	free(c.targets);
	return err ? err : restored;
}
