// SPDX-License-Identifier: MIT
/*
 * stackstore.c - samples kept while tracing, symbolized when a record is
 * written (stackstore.h).  Symbols come from elfutils' libdwfl (Debian's
 * libdw): it reads .symtab and .dynsym and finds Debian's separate debug
 * files by build id, which a hand-written ELF reader would have to redo.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>

#include "log.h"
#include "ns.h"
#include "procfs.h"
#include "record.h"
#include "stackstore.h"

#define BUILD_ID_MAX 20

struct stack_entry {
	uint64_t hash;
	uint32_t tag, stage, attribution;
	uint32_t frames;   /* ips kept */
	bool truncated, unwind_failed, in_kernel;
	bool leaf_restored; /* its second frame came from the CFI (restore_leaf_caller) */
	uint64_t *ips;     /* innermost first */
};

struct mapping {
	uint64_t start, end, pgoff; /* start first: count_at_or_below's key */
	bool exec;
	char *path;        /* NULL: anonymous */
	/*
	 * A file of a process with another root (a container's): opened when
	 * it was mapped, through that root (capture/ns), and read later as
	 * /proc/self/fd/N, which outlives the process.  -1 and NULL: path is
	 * khprof's own.
	 */
	int fd;
	char *file;
	unsigned char build_id[BUILD_ID_MAX];
	size_t build_id_len; /* 0: none read */
};

/* A function symbol: [addr, addr + size) in the module's addresses. */
struct symbol {
	GElf_Addr addr; /* first: count_at_or_below's key */
	GElf_Xword size;
	const char *name; /* libdwfl's, alive with the Dwfl */
};

/*
 * A file's libdwfl session, opened at the first frame in it, with its
 * function symbols sorted by address: dwfl_module_addrinfo searches the
 * whole table on every call, ~300 us per frame in libc here (100,000
 * samples took 6.8 s to symbolize); a binary search takes ~1 us.
 */
struct symbol_file {
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	bool failed;
	struct symbol *syms;
	size_t sym_count;
	struct symbol_file *next;
};

struct symbol_cache {
	struct symbol_file *files;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

void stack_store__init(struct stack_store *s, pid_t pid, uint64_t rate_hz)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->rate_hz = rate_hz;
}

static void symbols__free(struct symbol_cache *c)
{
	struct symbol_file *f, *next;

	if (!c)
		return;
	for (f = c->files; f; f = next) {
		next = f->next;
		if (f->dwfl)
			dwfl_end(f->dwfl);
		free(f->syms);
		free(f->path);
		free(f);
	}
	free(c);
}

/* What a mapping owns: its path, and a container's file kept open. */
static void mapping_release(struct mapping *m)
{
	free(m->path);
	free(m->file);
	if (m->fd >= 0)
		close(m->fd);
}

/* The name khprof opens a mapping's file by. */
static const char *file_of(const struct mapping *m)
{
	return m->file ? m->file : m->path;
}

void stack_store__free(struct stack_store *s)
{
	for (size_t i = 0; i < s->stack_count; i++)
		free(s->stacks[i].ips);
	for (size_t i = 0; i < s->map_count; i++)
		mapping_release(&s->maps[i]);
	free(s->stacks);
	free(s->buckets);
	free(s->samples);
	free(s->maps);
	free(s->cfa_cache);
	symbols__free(s->symbols);
	memset(s, 0, sizeof(*s));
}

_Static_assert(offsetof(struct mapping, start) == 0, "count_at_or_below's key");
_Static_assert(offsetof(struct symbol, addr) == 0 && sizeof(GElf_Addr) == 8,
	       "count_at_or_below's key");

/*
 * Elements of a sorted array whose first member, a u64 key, is at or below
 * x: the index just past the last of them.  For the mappings by start and
 * the symbols by address.
 */
static size_t count_at_or_below(const void *base, size_t n, size_t size, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, (const char *)base + mid * size, sizeof(key));
		if (key <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct mapping *mapping_of(const struct stack_store *s, uint64_t ip)
{
	size_t lo = count_at_or_below(s->maps, s->map_count, sizeof(*s->maps), ip);

	if (lo && ip < s->maps[lo - 1].end)
		return &s->maps[lo - 1];
	return NULL;
}

static void read_build_id(struct mapping *m)
{
	int fd = open(file_of(m), O_RDONLY | O_CLOEXEC);
	const void *id;
	Elf *elf;
	ssize_t n;

	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		n = dwelf_elf_gnu_build_id(elf, &id);
		if (n > 0 && n <= BUILD_ID_MAX) {
			memcpy(m->build_id, id, (size_t)n);
			m->build_id_len = (size_t)n;
		}
		elf_end(elf);
	}
	close(fd);
}

/* Inserts m (taking its path) in start order; -ENOMEM leaves it to the caller. */
static int keep_mapping(struct stack_store *s, struct mapping *m)
{
	size_t at = 0;

	if (s->map_count == s->map_cap) {
		size_t cap = s->map_cap ? s->map_cap * 2 : 64;
		struct mapping *grown = realloc(s->maps, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->maps = grown;
		s->map_cap = cap;
	}
	while (at < s->map_count && s->maps[at].start < m->start)
		at++;
	memmove(&s->maps[at + 1], &s->maps[at], (s->map_count - at) * sizeof(*s->maps));
	s->maps[at] = *m;
	s->map_count++;
	return 0;
}

/* stack_store__add_mapping with the file open at fd (-1: open path itself), which it takes. */
static int add_mapping(struct stack_store *s, uint64_t start, uint64_t end, uint64_t pgoff,
		       bool exec, const char *path, int fd)
{
	struct mapping m = { .start = start, .end = end, .pgoff = pgoff, .exec = exec, .fd = fd };
	size_t at = 0;

	if (fd >= 0 && asprintf(&m.file, "/proc/self/fd/%d", fd) < 0) {
		m.file = NULL;
		close(fd);
		m.fd = -1;
	}
	if (path && path[0] == '/') {
		m.path = strdup(path);
		if (!m.path) {
			mapping_release(&m);
			return -ENOMEM;
		}
		read_build_id(&m);
	} else if (path && path[0]) {
		m.path = strdup(path); /* [vdso], [heap], [anon:...] */
		if (!m.path)
			return -ENOMEM;
	}
	while (at < s->map_count && s->maps[at].start < start)
		at++;
	if (at < s->map_count && s->maps[at].start == start) {
		/* The same address mapped again: the newer mapping wins. */
		mapping_release(&s->maps[at]);
		s->maps[at] = m;
		return 0;
	}
	if (keep_mapping(s, &m)) {
		mapping_release(&m);
		return -ENOMEM;
	}
	return 0;
}

int stack_store__add_mapping(struct stack_store *s, uint64_t start, uint64_t end, uint64_t pgoff,
			     bool exec, const char *path)
{
	return add_mapping(s, start, end, pgoff, exec, path, -1);
}

static bool overlaps(const struct mapping *a, const struct mapping *b)
{
	return a->start < b->end && b->start < a->end;
}

/* What keep_code_mapping needs besides the store: how to reach the process's files. */
struct maps_read {
	struct stack_store *s;
	struct ns_view view;
	bool own_root;
};

/*
 * An executable mapping of the process, kept, its file opened through the
 * process's root when that is not khprof's (a container's files, kept open
 * for after it exits).  procfs.c reads /proc/PID/maps.
 */
static int keep_code_mapping(const struct procfs_mapping *m, void *ctx)
{
	struct maps_read *r = ctx;
	char file[PATH_MAX];
	int fd = -1;

	if (m->perms[2] != 'x')
		return 0;
	if (!r->own_root && m->path[0] == '/' &&
	    ns__shown_path(&r->view, m->path, file, sizeof(file)) == 0)
		fd = open(file, O_RDONLY | O_CLOEXEC);
	add_mapping(r->s, m->start, m->end, m->offset, true, m->path, fd);
	return 0;
}

void stack_store__read_maps(struct stack_store *s)
{
	struct maps_read r = { .s = s };
	struct mapping *old = s->maps;
	size_t old_count = s->map_count, old_cap = s->map_cap;

	r.own_root = ns__view(s->pid, &r.view) != 0 || r.view.own_root;
	/*
	 * The mappings now, and of the earlier ones those nothing maps over
	 * since (a library closed: its samples are still named).  An earlier
	 * one something else maps over is gone: after an execve, `record`'s
	 * first reading is the image before it (khprof's own fork).
	 */
	s->maps = NULL;
	s->map_count = s->map_cap = 0;
	if (procfs__for_each_mapping(s->pid, keep_code_mapping, &r) < 0) {
		/* It exited: the mappings seen so far stay. */
		free(s->maps);
		s->maps = old;
		s->map_count = old_count;
		s->map_cap = old_cap;
		return;
	}
	for (size_t i = 0; i < old_count; i++) {
		bool covered = false;

		for (size_t j = 0; j < s->map_count && !covered; j++)
			covered = overlaps(&old[i], &s->maps[j]);
		if (covered || keep_mapping(s, &old[i]))
			mapping_release(&old[i]);
	}
	free(old);
}

static struct symbol_file *symbol_file(struct stack_store *s, const struct mapping *m);
static bool vaddr_of(Elf *elf, uint64_t offset, uint64_t *vaddr);

/*
 * The DWARF number of the stack pointer (x86-64's rsp, aarch64's sp): a
 * function whose CFA is still a distance from it has not set up its frame
 * pointer yet (a leaf, or a prologue).
 */
#if defined(__aarch64__)
#define DWARF_SP 31
#else
#define DWARF_SP 7
#endif

/* Where a return address is, as ra_location says (and caches). */
#define RA_NOWHERE 0     /* the frame-pointer walk has it, or the CFI does not say */
#define RA_IN_REGISTER -1 /* still in the link register (aarch64's x30, sampled as lr) */

/*
 * Where the function at ip keeps its return address while its CFA is
 * sp-based, from its CFI (.eh_frame): the CFA's distance from sp plus
 * the return-address column's saved offset from the CFA, as a byte offset
 * from sp plus 1 (x86-64: always CFA - 8, pushed by the call; aarch64:
 * where the prologue stored x30, or RA_IN_REGISTER before it did), else
 * RA_NOWHERE.  Cached per address: a hot loop asks again and again.
 */
static int64_t ra_location(struct stack_store *s, uint64_t ip)
{
	const struct mapping *m = mapping_of(s, ip);
	struct symbol_file *f;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias, start, end;
	Dwarf_Op *ops, ops_mem[3];
	bool signalp;
	uint64_t vaddr;
	int64_t where = RA_NOWHERE, cfa = 0;
	size_t nops, at;
	int ra;
	Elf *elf;

	if (s->cfa_count && s->cfa_cache) {
		for (at = mix(0, ip) & (s->cfa_count - 1); s->cfa_cache[at].ip;
		     at = (at + 1) & (s->cfa_count - 1))
			if (s->cfa_cache[at].ip == ip)
				return s->cfa_cache[at].offset;
	}
	if (m && m->path && m->path[0] == '/' && (f = symbol_file(s, m)) && !f->failed &&
	    (elf = dwfl_module_getelf(f->mod, &f->bias)) &&
	    vaddr_of(elf, ip - m->start + m->pgoff, &vaddr) &&
	    (cfi = dwfl_module_eh_cfi(f->mod, &bias)) &&
	    dwarf_cfi_addrframe(cfi, vaddr + f->bias - bias, &frame) == 0 &&
	    dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_bregx && ops[0].number == DWARF_SP &&
	    (cfa = (int64_t)ops[0].number2, true) &&
	    (ra = dwarf_frame_info(frame, &start, &end, &signalp)) >= 0 &&
	    dwarf_frame_register(frame, ra, ops_mem, &ops, &nops) == 0) {
		/* Saved at CFA + N: DW_OP_call_frame_cfa, then DW_OP_plus_uconst N unless 0. */
		if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa)
			where = cfa + 1;
		else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			 ops[1].atom == DW_OP_plus_uconst)
			where = cfa + (int64_t)ops[1].number + 1;
		else if (nops == 0)
			where = RA_IN_REGISTER; /* unsaved: the register still holds it */
		if (where != RA_IN_REGISTER && where < 1)
			where = RA_NOWHERE;
	}
	free(frame);
	if ((s->cfa_used + 1) * 2 > s->cfa_count) {
		size_t n = s->cfa_count ? s->cfa_count * 2 : 256;
		struct cfa_entry *grown = calloc(n, sizeof(*grown));

		if (!grown)
			return where;
		for (size_t i = 0; i < s->cfa_count; i++) {
			if (!s->cfa_cache[i].ip)
				continue;
			for (at = mix(0, s->cfa_cache[i].ip) & (n - 1); grown[at].ip;
			     at = (at + 1) & (n - 1))
				;
			grown[at] = s->cfa_cache[i];
		}
		free(s->cfa_cache);
		s->cfa_cache = grown;
		s->cfa_count = n;
	}
	for (at = mix(0, ip) & (s->cfa_count - 1); s->cfa_cache[at].ip;
	     at = (at + 1) & (s->cfa_count - 1))
		;
	s->cfa_cache[at] = (struct cfa_entry){ ip, where };
	s->cfa_used++;
	return where;
}

/*
 * The frame-pointer walk misses the caller of a function that has not
 * set up its frame pointer (a leaf, or any function in its prologue): the
 * frame pointer is still its caller's, so the walk's second frame is the
 * caller's caller.  The CFI says where the return address is: in the
 * copied stack words (x86-64's call pushed it; an aarch64 prologue that
 * stored x30), or on aarch64 still in the link register, which the
 * sampler copied too.  Returns whether the caller was put back.
 */
static bool restore_leaf_caller(struct stack_store *s, struct kh_sample_event *e)
{
	int64_t where;
	uint64_t ret;

	if (e->frames < 1 || !e->sp)
		return false;
	where = ra_location(s, e->ips[0]);
	if (where == RA_IN_REGISTER) {
		if (!e->lr)
			return false;
		ret = e->lr;
	} else {
		if (where < 1 || where - 1 > 8 * (KH_SAMPLE_STACK_WORDS - 1) || (where - 1) % 8)
			return false;
		ret = e->words[(where - 1) / 8];
	}
	if (e->frames > 1 && e->ips[1] == ret)
		return false;
	if (e->frames == KH_SAMPLE_MAX_FRAMES)
		e->frames--; /* the outermost frame gives way: the stack was cut anyway */
	memmove(&e->ips[2], &e->ips[1], (size_t)(e->frames - 1) * sizeof(e->ips[0]));
	e->ips[1] = ret;
	e->frames++;
	return true;
}

static uint64_t entry_hash(const struct kh_sample_event *e, uint32_t frames)
{
	uint64_t h = mix(mix(mix(1, e->tag), e->tag == KH_SAMPLE_TAG_STAGE ? e->stage : 0),
			 e->attribution);

	h = mix(h, (uint64_t)frames << 1 | (e->frames <= 0));
	for (uint32_t i = 0; i < frames; i++)
		h = mix(h, e->ips[i]);
	return h;
}

static bool entry_equal(const struct stack_entry *x, const struct kh_sample_event *e,
			uint32_t frames, uint64_t hash, bool leaf_restored)
{
	return x->hash == hash && x->tag == e->tag &&
	       x->stage == (e->tag == KH_SAMPLE_TAG_STAGE ? e->stage : 0) &&
	       x->attribution == e->attribution && x->frames == frames &&
	       x->unwind_failed == (e->frames <= 0) && x->in_kernel == (e->in_kernel != 0) &&
	       x->leaf_restored == leaf_restored &&
	       !memcmp(x->ips, e->ips, frames * sizeof(*x->ips));
}

static int rehash(struct stack_store *s)
{
	size_t n = s->bucket_count ? s->bucket_count * 2 : 1024;
	uint32_t *b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < s->stack_count; i++) {
		size_t at = s->stacks[i].hash & (n - 1);

		while (b[at])
			at = (at + 1) & (n - 1);
		b[at] = (uint32_t)i + 1;
	}
	free(s->buckets);
	s->buckets = b;
	s->bucket_count = n;
	return 0;
}

/* The index of e's stack, added if new; -1 without memory. */
static long stack_index(struct stack_store *s, const struct kh_sample_event *e, bool leaf_restored)
{
	uint32_t frames = e->frames < 0 ? 0 : (uint32_t)e->frames;
	struct stack_entry *x;
	uint64_t hash;
	size_t at;

	if (frames > KH_SAMPLE_MAX_FRAMES)
		frames = KH_SAMPLE_MAX_FRAMES;
	hash = mix(entry_hash(e, frames), leaf_restored);
	if ((s->stack_count + 1) * 2 > s->bucket_count && rehash(s))
		return -1;
	for (at = hash & (s->bucket_count - 1); s->buckets[at];
	     at = (at + 1) & (s->bucket_count - 1))
		if (entry_equal(&s->stacks[s->buckets[at] - 1], e, frames, hash, leaf_restored))
			return (long)s->buckets[at] - 1;
	if (s->stack_count == s->stack_cap) {
		size_t cap = s->stack_cap ? s->stack_cap * 2 : 256;
		struct stack_entry *grown = realloc(s->stacks, cap * sizeof(*grown));

		if (!grown)
			return -1;
		s->stacks = grown;
		s->stack_cap = cap;
	}
	x = &s->stacks[s->stack_count];
	x->ips = malloc((frames ? frames : 1) * sizeof(*x->ips));
	if (!x->ips)
		return -1;
	memcpy(x->ips, e->ips, frames * sizeof(*x->ips));
	x->hash = hash;
	x->tag = e->tag;
	x->stage = e->tag == KH_SAMPLE_TAG_STAGE ? e->stage : 0;
	x->attribution = e->attribution;
	x->frames = frames;
	x->truncated = e->frames >= KH_SAMPLE_MAX_FRAMES;
	x->leaf_restored = leaf_restored;
	x->unwind_failed = e->frames <= 0;
	x->in_kernel = e->in_kernel != 0;
	s->buckets[at] = (uint32_t)s->stack_count + 1;
	/* A new stack with an address in no known mapping: a library or JIT code mapped since. */
	for (uint32_t i = 0; i < frames; i++)
		if (!mapping_of(s, x->ips[i])) {
			stack_store__read_maps(s);
			break;
		}
	return (long)s->stack_count++;
}

void stack_store__add(struct stack_store *s, const struct kh_sample_event *sample)
{
	struct kh_sample_event copy = *sample, *e = &copy;
	long stack;

	/* The walk may have met a function the maps do not show yet. */
	if (e->frames > 0 && !mapping_of(s, e->ips[0]))
		stack_store__read_maps(s);
	stack = stack_index(s, e, restore_leaf_caller(s, e));

	if (stack < 0) {
		s->dropped_nomem++;
		return;
	}
	if (s->sample_count == s->sample_cap) {
		size_t cap = s->sample_cap ? s->sample_cap * 2 : 4096;
		struct store_sample *grown = realloc(s->samples, cap * sizeof(*grown));

		if (!grown) {
			s->dropped_nomem++;
			return;
		}
		s->samples = grown;
		s->sample_cap = cap;
	}
	s->samples[s->sample_count++] = (struct store_sample){ e->ts_ns, (uint32_t)stack, e->tid };
}

/* ------------------------------------------------------------------ */
/* Symbolization                                                        */
/* ------------------------------------------------------------------ */

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int by_addr(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address, a sized symbol before an unsized alias. */
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

/* The module's function symbols (.symtab, else .dynsym, with its debug file's), sorted. */
static void read_symbols(struct symbol_file *f)
{
	int n = dwfl_module_getsymtab(f->mod);

	if (n <= 0)
		return;
	f->syms = calloc((size_t)n, sizeof(*f->syms));
	if (!f->syms)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || !name[0] || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		f->syms[f->sym_count++] = (struct symbol){ addr, sym.st_size, name };
	}
	qsort(f->syms, f->sym_count, sizeof(*f->syms), by_addr);
}

/* The function at addr (the module's addresses), or NULL. */
static const char *symbol_at(const struct symbol_file *f, GElf_Addr addr)
{
	size_t lo = count_at_or_below(f->syms, f->sym_count, sizeof(*f->syms), addr);

	/* The closest symbol at or below addr whose extent holds it (aliases share one). */
	for (size_t i = lo; i-- > 0 && f->syms[i].addr == f->syms[lo - 1].addr;)
		if (addr < f->syms[i].addr + (f->syms[i].size ? f->syms[i].size : 1))
			return f->syms[i].name;
	return NULL;
}

static struct symbol_file *symbol_file(struct stack_store *s, const struct mapping *m)
{
	struct symbol_file *f;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n;

	if (!s->symbols) {
		s->symbols = calloc(1, sizeof(*s->symbols));
		if (!s->symbols)
			return NULL;
	}
	for (f = s->symbols->files; f; f = f->next)
		if (!strcmp(f->path, file_of(m)))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(file_of(m)))) {
		free(f);
		return NULL;
	}
	f->next = s->symbols->files;
	s->symbols->files = f;
	f->dwfl = dwfl_begin(&offline_callbacks);
	if (f->dwfl) {
		dwfl_report_begin(f->dwfl);
		f->mod = dwfl_report_offline(f->dwfl, base_name(m->path), file_of(m), -1);
		dwfl_report_end(f->dwfl, NULL, NULL);
	}
	if (!f->mod || !dwfl_module_getelf(f->mod, &f->bias)) {
		f->failed = true;
		return f;
	}
	/* The file read now must be the one that was mapped. */
	n = dwfl_module_build_id(f->mod, &bits, &vaddr);
	if (m->build_id_len && (n != (int)m->build_id_len || memcmp(bits, m->build_id, (size_t)n)))
		f->failed = true;
	else
		read_symbols(f);
	return f;
}

/* The ELF virtual address of a file offset, through the segment that maps it. */
static bool vaddr_of(Elf *elf, uint64_t offset, uint64_t *vaddr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) {
			*vaddr = offset - ph.p_offset + ph.p_vaddr;
			return true;
		}
	}
	return false;
}

/*
 * The name of one frame: the function, "[file]" in a file without a
 * symbol there, "[jit]" in anonymous executable memory, "[unknown]" where
 * no mapping is known; never a guess.  ret: a return address (every frame
 * but the innermost), looked up one byte back, inside its call.  A
 * function's symbol is returned as the file has it, whatever its length
 * (a C++ or Rust symbol is often longer than buf, and cut short it would
 * no longer demangle); the bracketed names are written in buf.
 */
static const char *frame_name(struct stack_store *s, uint64_t ip, bool ret, char *buf,
			      size_t len, const struct mapping **mapped)
{
	const struct mapping *m = mapping_of(s, ip);
	struct symbol_file *f;
	uint64_t vaddr;
	const char *name;
	Elf *elf;

	*mapped = m;
	if (!m)
		return "[unknown]";
	if (!m->path || m->path[0] != '/') {
		/*
		 * Anonymous executable memory is code made at run time; the
		 * kernel's own mappings ([vdso], [uprobes], the uprobe
		 * trampolines) keep their names.
		 */
		bool made = !m->path || !m->path[0] || !strncmp(m->path, "[anon:", 6) ||
			    !strcmp(m->path, "[heap]") || !strcmp(m->path, "[stack]");

		snprintf(buf, len, "%s", made ? "[jit]" : m->path);
		return buf;
	}
	f = symbol_file(s, m);
	if (!f || f->failed) {
		snprintf(buf, len, "[%s%s]", base_name(m->path),
			 f && m->build_id_len ? " build-id mismatch" : "");
		return buf;
	}
	elf = dwfl_module_getelf(f->mod, &f->bias);
	if (!elf || !vaddr_of(elf, ip - ret - m->start + m->pgoff, &vaddr)) {
		snprintf(buf, len, "[%s]", base_name(m->path));
		return buf;
	}
	name = symbol_at(f, vaddr + f->bias);
	if (name && name[0])
		return name;
	snprintf(buf, len, "[%s]", base_name(m->path));
	return buf;
}

/* A name table for one fill: names to their index in out, hashed. */
struct name_index {
	uint64_t *hashes;
	uint32_t *ids; /* index + 1; 0 empty */
	size_t count;
};

static uint64_t str_hash(const char *p)
{
	uint64_t h = 1469598103934665603ull;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	return h;
}

static uint32_t name_id(struct name_index *ni, struct kh_stacks *out, const char *name)
{
	uint64_t h = str_hash(name);
	size_t at;
	uint32_t id;

	if ((out->name_count + 1) * 2 > ni->count) {
		size_t n = ni->count ? ni->count * 2 : 1024;
		uint64_t *hashes = calloc(n, sizeof(*hashes));
		uint32_t *ids = calloc(n, sizeof(*ids));

		if (!hashes || !ids) {
			free(hashes);
			free(ids);
			return UINT32_MAX;
		}
		for (size_t i = 0; i < ni->count; i++) {
			if (!ni->ids[i])
				continue;
			for (at = ni->hashes[i] & (n - 1); ids[at]; at = (at + 1) & (n - 1))
				;
			ids[at] = ni->ids[i];
			hashes[at] = ni->hashes[i];
		}
		free(ni->hashes);
		free(ni->ids);
		ni->hashes = hashes;
		ni->ids = ids;
		ni->count = n;
	}
	for (at = h & (ni->count - 1); ni->ids[at]; at = (at + 1) & (ni->count - 1))
		if (ni->hashes[at] == h && !strcmp(out->names[ni->ids[at] - 1], name))
			return ni->ids[at] - 1;
	if (out->name_count == out->name_cap) {
		size_t cap = out->name_cap ? out->name_cap * 2 : 64;
		char **grown = realloc(out->names, cap * sizeof(*grown));

		if (!grown)
			return UINT32_MAX;
		out->names = grown;
		out->name_cap = cap;
	}
	if (!(out->names[out->name_count] = strdup(name)))
		return UINT32_MAX;
	id = (uint32_t)out->name_count++;
	ni->ids[at] = id + 1;
	ni->hashes[at] = h;
	return id;
}

/*
 * Where every thread's stack begins: a walk that reaches one of these
 * unwound the whole stack.  _start and clone3 zero the frame pointer (rbp,
 * x29), so the walk ends
 * there; glibc's start_thread and __libc_start_call_main are the outermost
 * functions with a frame.
 */
static bool is_thread_entry(const char *name)
{
	static const char *const entries[] = {
		"_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
		"clone", "clone3", "__clone3", "thread_start",
	};

	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(name, entries[i]))
			return true;
	return false;
}

/* Symbolizes stack x into out with count samples. */
static int fill_stack(struct stack_store *s, const struct stack_entry *x, uint64_t count,
		      struct name_index *ni, struct kh_stacks *out)
{
	uint32_t names[KH_SAMPLE_MAX_FRAMES + 1];
	const struct mapping *maps[KH_SAMPLE_MAX_FRAMES];
	const char *name[KH_SAMPLE_MAX_FRAMES];
	char buf[KH_SAMPLE_MAX_FRAMES][256];
	uint32_t n = x->frames;
	bool complete = false;
	int err;

	if (!n) {
		/* No user frame at all: one frame says so. */
		names[0] = name_id(ni, out, "[unknown]");
		n = 1;
	} else {
		for (uint32_t i = 0; i < n; i++)
			name[i] = frame_name(s, x->ips[i], i > 0, buf[i], sizeof(buf[i]), &maps[i]);
		/*
		 * JIT code called from libpcre2 is pcre2's: pcre2_jit_match calls
		 * the compiled pattern directly, so its caller says whose it is.
		 */
		for (uint32_t i = 0; i + 1 < n; i++)
			if (!strcmp(name[i], "[jit]") && maps[i + 1] && maps[i + 1]->path &&
			    !strncmp(base_name(maps[i + 1]->path), "libpcre2", 8))
				name[i] = "[pcre2 jit]";
		for (uint32_t i = 0; i < n; i++)
			names[n - 1 - i] = name_id(ni, out, name[i]);
		complete = !x->truncated && is_thread_entry(name[n - 1]);
	}
	for (uint32_t i = 0; i < n; i++)
		if (names[i] == UINT32_MAX)
			return -ENOMEM;
	err = kh_stacks__add(out, x->tag == KH_SAMPLE_TAG_STAGE ? x->stage : KH_NO_STAGE,
			     x->attribution, names, n, count);
	if (err)
		return err;
	out->stacks[out->stack_count - 1].unwind = x->leaf_restored ? KH_UNWIND_FP_CFI : KH_UNWIND_FP;
	out->stacks[out->stack_count - 1].incomplete = !complete;
	out->incomplete += complete ? 0 : count;
	return 0;
}

/* The record's samples in time order, every timeline_every-th when there are many. */
static void fill_timeline(const struct stack_store *s, uint64_t start_ns, uint64_t end_ns,
			  const uint32_t *index, struct kh_stacks *out)
{
	uint64_t n = 0, seen = 0;

	for (size_t i = 0; i < s->sample_count; i++)
		n += s->samples[i].ts_ns >= start_ns && s->samples[i].ts_ns <= end_ns &&
		     index[s->samples[i].stack] != UINT32_MAX;
	out->timeline_every = n > KH_STACK_TIMELINE_MAX
				      ? (n + KH_STACK_TIMELINE_MAX - 1) / KH_STACK_TIMELINE_MAX : 1;
	out->timeline = calloc(n ? (size_t)(n / out->timeline_every + 1) : 1, sizeof(*out->timeline));
	if (!out->timeline)
		return;
	for (size_t i = 0; i < s->sample_count; i++) {
		const struct store_sample *smp = &s->samples[i];

		if (smp->ts_ns < start_ns || smp->ts_ns > end_ns || index[smp->stack] == UINT32_MAX ||
		    seen++ % out->timeline_every)
			continue;
		out->timeline[out->timeline_count++] = (struct kh_stack_sample){
			smp->ts_ns - start_ns, smp->tid, index[smp->stack]
		};
	}
}

void stack_store__fill(struct stack_store *s, uint64_t start_ns, uint64_t end_ns,
		       uint64_t ring_full, struct kh_stacks *out)
{
	uint64_t *counts = calloc(s->stack_count ? s->stack_count : 1, sizeof(*counts));
	uint32_t *index = calloc(s->stack_count ? s->stack_count : 1, sizeof(*index));
	struct name_index ni = { 0 };
	bool nomem = !counts || !index;

	kh_stacks__free(out);
	out->present = true;
	out->rate_hz = s->rate_hz;
	out->unwinding = strdup("frame-pointer");
	out->ring_full = ring_full - s->ring_full_seen;
	s->ring_full_seen = ring_full;
	out->threads_missed = s->threads_missed;
	for (size_t i = 0; counts && i < s->sample_count; i++)
		if (s->samples[i].ts_ns >= start_ns && s->samples[i].ts_ns <= end_ns)
			counts[s->samples[i].stack]++;
	for (size_t i = 0; counts && i < s->stack_count; i++) {
		const struct stack_entry *x = &s->stacks[i];

		if (!counts[i])
			continue;
		out->samples += counts[i];
		out->tags[x->tag < KH_SAMPLE_TAG_COUNT ? x->tag : KH_SAMPLE_TAG_UNREADABLE] += counts[i];
		out->in_kernel += x->in_kernel ? counts[i] : 0;
		out->truncated += x->truncated ? counts[i] : 0;
		out->unwind_failed += x->unwind_failed ? counts[i] : 0;
		out->leaf_restored += x->leaf_restored ? counts[i] : 0;
		/* A stage that could not be read is counted, not filed under a guess. */
		index[i] = UINT32_MAX;
		if (x->tag == KH_SAMPLE_TAG_UNREADABLE || x->tag == KH_SAMPLE_TAG_TOO_DEEP)
			continue;
		if (fill_stack(s, x, counts[i], &ni, out))
			nomem = true;
		else
			index[i] = (uint32_t)out->stack_count - 1;
	}
	if (!nomem)
		fill_timeline(s, start_ns, end_ns, index, out);
	if (nomem || s->dropped_nomem)
		log__warn("stack samples: out of memory, %" PRIu64 " samples not kept",
			  s->dropped_nomem);
	free(ni.hashes);
	free(ni.ids);
	free(counts);
	free(index);
}
