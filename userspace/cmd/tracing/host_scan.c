// SPDX-License-Identifier: MIT
/*
 * attach --all: which processes map an ELF file with keyhog probes
 * (host_scan.h).  Files are opened where the process's root has them
 * (capture/ns), and each distinct file (device and inode of what khprof
 * opened) is read once: a verdict table, open addressing on a hash of the
 * two, grown at half full.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_scan.h"
#include "ns.h"
#include "procfs.h"
#include "usdt_notes.h"

struct verdict {
	dev_t dev;
	ino_t ino;
	bool used;
	bool probes;
};

struct host_scan {
	struct verdict *table;
	size_t cap;   /* a power of two */
	size_t count;
	size_t files_read;
};

struct host_scan *host_scan__new(void)
{
	struct host_scan *s = calloc(1, sizeof(*s));

	if (s) {
		s->cap = 256;
		s->table = calloc(s->cap, sizeof(*s->table));
		if (!s->table) {
			free(s);
			return NULL;
		}
	}
	return s;
}

void host_scan__free(struct host_scan *s)
{
	if (!s)
		return;
	free(s->table);
	free(s);
}

size_t host_scan__files_read(const struct host_scan *s)
{
	return s->files_read;
}

static size_t slot_of(const struct host_scan *s, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xff51afd7ed558ccdull);
	size_t i = (size_t)(h ^ (h >> 29)) & (s->cap - 1);

	while (s->table[i].used && (s->table[i].dev != dev || s->table[i].ino != ino))
		i = (i + 1) & (s->cap - 1);
	return i;
}

static void remember(struct host_scan *s, dev_t dev, ino_t ino, bool probes)
{
	size_t i;

	if (2 * (s->count + 1) > s->cap) {
		struct verdict *old = s->table;
		size_t old_cap = s->cap;
		struct verdict *grown = calloc(old_cap * 2, sizeof(*grown));

		/* Out of memory: the file is read again next time. */
		if (!grown)
			return;
		s->table = grown;
		s->cap = old_cap * 2;
		for (size_t j = 0; j < old_cap; j++)
			if (old[j].used)
				s->table[slot_of(s, old[j].dev, old[j].ino)] = old[j];
		free(old);
	}
	i = slot_of(s, dev, ino);
	if (!s->table[i].used)
		s->count++;
	s->table[i] = (struct verdict){ dev, ino, true, probes };
}

/*
 * Whether the file at path (as khprof opens it) carries keyhog probes;
 * read once.  -1: it cannot be looked at (gone, not a file).
 */
static int probes_in(struct host_scan *s, const char *path)
{
	struct usdt_note_list notes;
	struct stat st;
	bool probes = false;
	size_t i;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	i = slot_of(s, st.st_dev, st.st_ino);
	if (s->table[i].used)
		return s->table[i].probes;
	s->files_read++;
	if (usdt_notes__read(path, &notes) == 0) {
		for (size_t n = 0; n < notes.count && !probes; n++)
			probes = !strcmp(notes.notes[n].provider, "keyhog");
		usdt_notes__free(&notes);
	}
	remember(s, st.st_dev, st.st_ino, probes);
	return probes;
}

static bool file_has_probes(struct host_scan *s, const char *path)
{
	return probes_in(s, path) > 0;
}

struct mapped_scan {
	struct host_scan *s;
	struct ns_view view;
	bool probes;
};

static int scan_mapping(const struct procfs_mapping *m, void *ctx)
{
	struct mapped_scan *ms = ctx;
	char path[PATH_MAX];

	if (m->perms[2] != 'x' || m->inode == 0 || m->path[0] != '/' ||
	    ns__shown_path(&ms->view, m->path, path, sizeof(path)) != 0)
		return 0;
	ms->probes = file_has_probes(ms->s, path);
	return ms->probes;
}

bool host_scan__running(struct host_scan *s, pid_t pid)
{
	struct mapped_scan ms = { .s = s };

	if (ns__view(pid, &ms.view) != 0)
		return false; /* gone, a kernel thread, or not khprof's to read */
	procfs__for_each_mapping(pid, scan_mapping, &ms);
	return ms.probes;
}

/*
 * Where the loader looks for a DT_NEEDED name, after the program's
 * RUNPATH or RPATH: Debian's and Ubuntu's multiarch folders, the classic
 * ones, and /usr/local/lib (musl's and most distributions' defaults).
 */
static const char *const library_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
};

struct needed_scan {
	struct host_scan *s;
	const struct ns_view *view;
	const char *origin;    /* the program's folder, as the process names it */
	const char *runpath;
	bool probes;
};

/* dir/name as khprof opens it, with $ORIGIN expanded; false when too long. */
static bool candidate(const struct needed_scan *n, const char *dir, size_t dir_len,
		      const char *name, char *out, size_t len)
{
	char inner[PATH_MAX];
	int used;

	if (dir_len >= 7 && !strncmp(dir, "$ORIGIN", 7))
		used = snprintf(inner, sizeof(inner), "%s%.*s/%s", n->origin, (int)(dir_len - 7),
				dir + 7, name);
	else if (dir_len >= 9 && !strncmp(dir, "${ORIGIN}", 9))
		used = snprintf(inner, sizeof(inner), "%s%.*s/%s", n->origin, (int)(dir_len - 9),
				dir + 9, name);
	else
		used = snprintf(inner, sizeof(inner), "%.*s/%s", (int)dir_len, dir, name);
	return used > 0 && (size_t)used < sizeof(inner) && inner[0] == '/' &&
	       ns__inner_path(n->view, inner, out, len) == 0;
}

static void scan_needed(const char *name, void *ctx)
{
	struct needed_scan *n = ctx;
	char path[PATH_MAX];

	if (n->probes)
		return;
	if (strchr(name, '/')) {
		if (name[0] == '/' && ns__inner_path(n->view, name, path, sizeof(path)) == 0)
			n->probes = file_has_probes(n->s, path);
		return;
	}
	/* The first folder that has the name is the one the loader takes. */
	for (const char *dir = n->runpath; *dir;) {
		size_t dir_len = strcspn(dir, ":");

		if (dir_len && candidate(n, dir, dir_len, name, path, sizeof(path)) &&
		    access(path, F_OK) == 0) {
			n->probes = file_has_probes(n->s, path);
			return;
		}
		dir += dir_len + (dir[dir_len] == ':');
	}
	for (size_t i = 0; i < sizeof(library_dirs) / sizeof(library_dirs[0]); i++) {
		if (candidate(n, library_dirs[i], strlen(library_dirs[i]), name, path,
			      sizeof(path)) && access(path, F_OK) == 0) {
			n->probes = file_has_probes(n->s, path);
			return;
		}
	}
}

int host_scan__execed(struct host_scan *s, pid_t pid)
{
	char exe[64], shown[PATH_MAX], inner[PATH_MAX], runpath[PATH_MAX];
	struct needed_scan n = { .s = s, .runpath = runpath };
	struct ns_view view;
	ssize_t len;
	char *slash;
	int probes;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	probes = probes_in(s, exe);
	if (probes != 0)
		return probes;
	len = readlink(exe, shown, sizeof(shown) - 1);
	if (len <= 0 || ns__view(pid, &view) != 0)
		return -1;
	shown[len] = '\0';
	/* $ORIGIN: the program's folder as the process itself names it. */
	if (ns__inner_of(&view, shown, inner, sizeof(inner)) != 0)
		inner[0] = '\0';
	slash = strrchr(inner, '/');
	if (slash)
		*slash = '\0';
	n.origin = inner;
	n.view = &view;
	if (elf__needed(exe, scan_needed, &n, runpath, sizeof(runpath)) != 0)
		return -1;
	return n.probes;
}
