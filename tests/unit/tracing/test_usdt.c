// SPDX-License-Identifier: MIT
/*
 * USDT note reading and argument-spec parsing, without BPF: x86-64's
 * operands here, aarch64's in test_usdt_arm64.c (every build has both
 * parsers); the notes of programs built for this machine.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elfcraft.h"
#include "usdt_elf.h"
#include "usdt_notes.h"
#include "usdt_where.h"
#include "usdt_spec.h"
#include "utf8.h"

/* x86-64's struct pt_regs, by word (usdt/usdt_x86_64.c). */
enum { R12 = 3 * 8, RBX = 5 * 8, RAX = 10 * 8, RDI = 14 * 8 };

static const struct usdt_arch *x86(void)
{
	return usdt_arch__of(EM_X86_64);
}

/*
 * What this machine's sites look like (no longer than the target's
 * transition arguments, "8@%rdi" or "8@x0", which they replace): an
 * argument in a register and one khprof cannot read; and a machine khprof
 * does not read here, with the message about such a file.
 */
#if defined(__aarch64__)
#define NATIVE_REG_ARG "8@x7"
#define NATIVE_BAD_ARG "8@q0"
#define OTHER_MACHINE EM_X86_64
#define OTHER_MACHINE_PROBLEM "a 64-bit little-endian x86-64 file (khprof reads aarch64 ones)"
#else
#define NATIVE_REG_ARG "8@%rbx"
#define NATIVE_BAD_ARG "8@%xyz"
#define OTHER_MACHINE EM_AARCH64
#define OTHER_MACHINE_PROBLEM "a 64-bit little-endian aarch64 file (khprof reads x86-64 ones)"
#endif

static void test_register_and_constant_arguments(void **state)
{
	struct kh_usdt_spec spec;

	(void)state;
	assert_int_equal(usdt_spec__parse(x86(), "8@%rdi 8@$5 -4@%eax", KH_PROBE_SPAN, &spec), 0);
	assert_int_equal(spec.arg_cnt, 3);
	assert_int_equal(spec.usdt_cookie, KH_PROBE_SPAN);
	assert_int_equal(spec.args[0].arg_type, 1);
	assert_int_equal(spec.args[0].reg_off, RDI);
	assert_int_equal(spec.args[0].arg_bitshift, 0);
	assert_int_equal(spec.args[1].arg_type, 0);
	assert_int_equal(spec.args[1].val_off, 5);
	/* A signed 4-byte register: the low 32 bits, sign-extended. */
	assert_int_equal(spec.args[2].reg_off, RAX);
	assert_int_equal(spec.args[2].arg_signed, 1);
	assert_int_equal(spec.args[2].arg_bitshift, 32);
}

static void test_memory_arguments(void **state)
{
	struct kh_usdt_spec spec;

	(void)state;
	assert_int_equal(usdt_spec__parse(x86(), "8@-80(%rbx) 2@(%r12)", 0, &spec), 0);
	assert_int_equal(spec.args[0].arg_type, 2);
	assert_int_equal((int64_t)spec.args[0].val_off, -80);
	assert_int_equal(spec.args[0].reg_off, RBX);
	assert_int_equal(spec.args[1].val_off, 0);
	assert_int_equal(spec.args[1].reg_off, R12);
	assert_int_equal(spec.args[1].arg_bitshift, 48);
	assert_int_equal(usdt_spec__parse(x86(), "", 0, &spec), 0);
	assert_int_equal(spec.arg_cnt, 0);
}

static void test_malformed_arguments(void **state)
{
	/* "8@%" and "8@(%)" name no register (they once read as %rip). */
	static const char *const bad[] = { "8@%xyz", "3@%rax", "8%rax", "8@$", "8@-8(%rax",
					   "8@%rax8@%rbx", "8@[sp, 8]", "8@%", "8@-8(%)",
					   "8@%rax 8@%" };
	struct kh_usdt_spec spec;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (usdt_spec__parse(x86(), bad[i], 0, &spec) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

/*
 * Sizes and numbers at the edges of 64 bits: the size was read with
 * strtol and labs(), which overflowed for the most negative long, and a
 * constant out of range was clamped to LLONG_MAX instead of refused.
 */
static void test_argument_numbers_at_the_edges(void **state)
{
	static const char *const bad[] = { "-9223372036854775808@%rax", "9223372036854775808@%rax",
					   "16@%rax", "+8@%rax", " 8@%rax8", "8@$ 5", "8@$+5",
					   "8@$99999999999999999999", "8@$-99999999999999999999",
					   "8@99999999999999999999(%rax)", "08@%rax" };
	struct kh_usdt_spec spec;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (usdt_spec__parse(x86(), bad[i], 0, &spec) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
	assert_int_equal(usdt_spec__parse(x86(),
					  "8@$18446744073709551615 -8@$-9223372036854775808 "
					  "1@$0x7f", 0, &spec), 0);
	assert_true(spec.args[0].val_off == UINT64_MAX);
	assert_true(spec.args[1].val_off == (uint64_t)INT64_MIN);
	assert_int_equal(spec.args[1].arg_signed, 1);
	assert_int_equal(spec.args[2].val_off, 0x7f);
	assert_int_equal(spec.args[2].arg_bitshift, 56);
	/* No architecture (a build for a machine without a row): nothing is read. */
	assert_int_equal(usdt_spec__parse(NULL, "8@%rax", 0, &spec), -EINVAL);
}

/* The workload is built from include/keyhog_profile.h alone. */
static void test_notes_of_the_probe_header(void **state)
{
	struct usdt_note_list notes;
	bool span = false, session = false;

	(void)state;
	assert_int_equal(usdt_notes__read("build/workloads/workload", &notes), 0);
	assert_true(notes.count > 0);
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *n = &notes.notes[i];
		struct kh_usdt_spec spec;

		assert_string_equal(n->provider, "keyhog");
		assert_true(n->file_offset != 0);
		/* Registers and immediates only (on x86-64 the site moves %rsp). */
		assert_null(strchr(n->args, '('));
		assert_null(strchr(n->args, '['));
		assert_int_equal(usdt_spec__parse(usdt_arch__native(), n->args, 0, &spec), 0);
		if (!strcmp(n->name, "span")) {
			span = true;
			assert_int_equal(spec.arg_cnt, 3);
			assert_true(n->semaphore && n->semaphore_offset);
		}
		if (!strcmp(n->name, "session_start")) {
			session = true;
			assert_int_equal(n->semaphore, 0);
		}
	}
	assert_true(span && session);
	assert_true(usdt_notes__has(&notes, "keyhog", "batch"));
	assert_false(usdt_notes__has(&notes, "keyhog", "no_such_probe"));
	usdt_notes__free(&notes);
}

static void test_notes_errors_and_symbols(void **state)
{
	struct usdt_note_list notes;
	uint64_t offset = 0, vaddr = 0;

	(void)state;
	assert_int_equal(usdt_notes__read("README.md", &notes), -ENOEXEC);
	assert_int_equal(usdt_notes__read("/no/such/file", &notes), -ENOENT);
	assert_int_equal(elf__symbol("build/workloads/libkhwork.so", "khwork_entropy_span",
				     &vaddr, &offset), 0);
	assert_true(offset != 0 && vaddr != 0);
	assert_int_equal(elf__symbol("build/workloads/libkhwork.so", "nope", &vaddr, &offset),
			 -ENOENT);
}

struct needed {
	char names[8][64];
	size_t count;
};

static void note_needed(const char *name, void *ctx)
{
	struct needed *n = ctx;

	if (n->count < 8)
		snprintf(n->names[n->count++], sizeof(n->names[0]), "%s", name);
}

/*
 * What attach --all reads of a new program: the libraries it names and
 * where its loader looks first (the workload: libkhwork.so by $ORIGIN).
 */
static void test_needed_libraries(void **state)
{
	struct needed n = { .count = 0 };
	char runpath[256];

	(void)state;
	assert_int_equal(elf__needed("build/workloads/workload", note_needed, &n, runpath,
				     sizeof(runpath)), 0);
	assert_string_equal(runpath, "$ORIGIN");
	assert_true(n.count >= 2);
	assert_string_equal(n.names[0], "libkhwork.so");
	assert_string_equal(n.names[n.count - 1], "libc.so.6");
	/* A static file names none, without an error. */
	n.count = 0;
	assert_int_equal(elf__needed("build/fixtures/usdt_note", note_needed, &n, runpath,
				     sizeof(runpath)), 0);
	assert_int_equal(n.count, 0);
	assert_string_equal(runpath, "");
	assert_int_equal(elf__needed("README.md", note_needed, &n, runpath, sizeof(runpath)),
			 -ENOEXEC);
	assert_int_equal(elf__needed("/no/such/file", note_needed, &n, runpath, sizeof(runpath)),
			 -ENOENT);
}

/*
 * A probe must lie in an executable segment (libbpf's usdt.c refuses the
 * others): build/fixtures/usdt_note has its probe on a nop in .text,
 * usdt_note_in_data the same note pointing into .data, which is skipped
 * and counted so that it is never attached.
 */
static void test_probe_outside_code_is_skipped(void **state)
{
	struct usdt_note_list notes;

	(void)state;
	assert_int_equal(usdt_notes__read("build/fixtures/usdt_note", &notes), 0);
	assert_int_equal(notes.count, 1);
	assert_string_equal(notes.notes[0].provider, "fixture");
	assert_string_equal(notes.notes[0].name, "site");
	assert_true(notes.notes[0].file_offset != 0);
	assert_int_equal(notes.outside_code, 0);
	usdt_notes__free(&notes);
	assert_int_equal(usdt_notes__read("build/fixtures/usdt_note_in_data", &notes), 0);
	assert_int_equal(notes.count, 0);
	assert_int_equal(notes.outside_code, 1);
	usdt_notes__free(&notes);
}

/* Whether line (from 1) of the file at path contains what. */
static bool line_has(const char *path, unsigned int line, const char *what)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	bool found = false;

	for (unsigned int i = 1; f && fgets(buf, sizeof(buf), f); i++)
		if (i == line) {
			found = strstr(buf, what) != NULL;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

/*
 * Where each site is: the fixture's probe is the nop on line 14 of its
 * assembly source, in _start (built with -g); the workload's input_bytes
 * sites are in its own functions, on the lines that call KH_INPUT_BYTES.
 */
static void test_sites_say_where_they_are(void **state)
{
	struct usdt_note_list notes;
	struct usdt_where_ctx *ctx;
	struct usdt_where w;
	size_t input_sites = 0;

	(void)state;
	assert_int_equal(usdt_notes__read("build/fixtures/usdt_note", &notes), 0);
	assert_int_equal(usdt_where__open("build/fixtures/usdt_note", &ctx), 0);
	assert_true(usdt_where__has_dwarf(ctx));
	usdt_where__find(ctx, notes.notes[0].address, &w);
	assert_string_equal(w.function, "_start");
	assert_non_null(strstr(w.file, "usdt_note.S"));
	assert_int_equal(w.line, 14);
	usdt_where__close(ctx);
	usdt_notes__free(&notes);

	assert_int_equal(usdt_notes__read("build/workloads/workload", &notes), 0);
	assert_int_equal(usdt_where__open("build/workloads/workload", &ctx), 0);
	for (size_t i = 0; i < notes.count; i++) {
		if (strcmp(notes.notes[i].name, "input_bytes"))
			continue;
		usdt_where__find(ctx, notes.notes[i].address, &w);
		input_sites++;
		assert_true(!strcmp(w.function, "nested") || !strcmp(w.function, "thread_main") ||
			    !strcmp(w.function, "leaf"));
		assert_non_null(strstr(w.file, "tests/workloads/workload.c"));
		assert_true(line_has("tests/workloads/workload.c", w.line, "KH_INPUT_BYTES("));
	}
	assert_true(input_sites > 0);
	usdt_where__close(ctx);
	usdt_notes__free(&notes);
	assert_int_equal(usdt_where__open("README.md", &ctx), -ENOEXEC);
}

/* --- crafted files: build/workloads/target, changed as an attacker would --- */

/* The crafted file c, written out and read back by the parser; *out to free. */
static int read_crafted(const struct crafted *c, struct usdt_note_list *out)
{
	char *path = craft_save(c);
	int err = usdt_notes__read(path, out);

	unlink(path);
	free(path);
	return err;
}

/* What became of keyhog:name: USDT_SITE_OK when usable; the test fails if it is gone. */
static enum usdt_refusal refusal_of(const struct usdt_note_list *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->notes[i].provider, "keyhog") && !strcmp(l->notes[i].name, name))
			return USDT_SITE_OK;
	for (size_t i = 0; i < l->refused_count; i++)
		if (!strcmp(l->refused[i].provider, "keyhog") && !strcmp(l->refused[i].name, name))
			return l->refused[i].refusal;
	fail_msg("keyhog:%s is in neither list", name);
	return USDT_REFUSAL_COUNT;
}

/* The refusal of keyhog:name in the target changed by change(c, arg); the others stay usable. */
static enum usdt_refusal refusal_after(void (*change)(struct crafted *c, uint64_t arg),
				       uint64_t arg, const char *name)
{
	struct usdt_note_list l;
	struct crafted c;
	enum usdt_refusal r;

	craft_load(&c, CRAFT_TARGET);
	change(&c, arg);
	assert_int_equal(read_crafted(&c, &l), 0);
	r = refusal_of(&l, name);
	assert_int_equal(l.refused_count, r == USDT_SITE_OK ? 0 : 1);
	usdt_notes__free(&l);
	craft_free(&c);
	return r;
}

static void test_target_is_clean(void **state)
{
	struct usdt_note_list l;
	struct crafted c;

	(void)state;
	craft_load(&c, CRAFT_TARGET);
	assert_int_equal(read_crafted(&c, &l), 0);
	assert_true(l.count >= 7);
	assert_int_equal(l.refused_count, 0);
	usdt_notes__free(&l);
	craft_free(&c);
}

static void move_session_start(struct crafted *c, uint64_t address)
{
	craft_set_note_address(c, "session_start", address);
}

/*
 * The code segment's memory grown up to the next segment, the site moved
 * into the grown end: memory the loader fills with zeros, while the same
 * file offset holds the next segment's bytes.  libbpf, and khprof before,
 * measured the segment by p_memsz and put the breakpoint there.
 */
static void into_zero_filled_tail(struct crafted *c, uint64_t unused)
{
	Elf64_Phdr *code = craft_load_segment(c, PF_R | PF_X), *next = craft_next_load(c, code);

	(void)unused;
	assert_non_null(next);
	code->p_memsz = next->p_vaddr - code->p_vaddr;
	move_session_start(c, code->p_vaddr + code->p_filesz + 16);
}

static void test_probe_past_the_file_bytes_is_refused(void **state)
{
	(void)state;
	assert_int_equal(refusal_after(into_zero_filled_tail, 0, "session_start"),
			 USDT_SITE_NOT_IN_FILE);
}

/*
 * The site on an instruction rather than a no-op: on "movl $0x41, %eax"
 * and inside it, on the immediate, where a breakpoint changes what the
 * program computes (test_hostile.c runs it).
 */
static void test_probe_off_a_nop_is_refused(void **state)
{
	struct crafted c;
	uint64_t value;

	(void)state;
	craft_load(&c, CRAFT_TARGET);
	value = craft_symbol(&c, "target_value");
#if defined(__aarch64__)
	/* "mov w0, #0x41": an aligned word; value + 1 is no instruction at all. */
	assert_memory_equal(&c.bytes[craft_offset_of(&c, value)], "\x20\x08\x80\x52", 4);
#else
	assert_int_equal(c.bytes[craft_offset_of(&c, value) + 1], 0x41);
#endif
	craft_free(&c);
	assert_int_equal(refusal_after(move_session_start, value, "session_start"),
			 USDT_SITE_NOT_A_NOP);
	assert_int_equal(refusal_after(move_session_start, value + 1, "session_start"),
			 USDT_SITE_NOT_A_NOP);
}

static void set_transition_args(struct crafted *c, uint64_t text)
{
	craft_set_note_string(c, "transition", 2, (const char *)(uintptr_t)text);
}

static void test_unreadable_arguments_are_refused(void **state)
{
	(void)state;
	assert_int_equal(refusal_after(set_transition_args, (uintptr_t)NATIVE_BAD_ARG, "transition"),
			 USDT_SITE_ARGUMENTS);
	assert_int_equal(refusal_after(set_transition_args, (uintptr_t)NATIVE_REG_ARG, "transition"),
			 USDT_SITE_OK);
}

static void set_span_semaphore(struct crafted *c, uint64_t address)
{
	craft_set_note_semaphore(c, "span", address);
}

/* The address of a symbol of the target. */
static uint64_t target_symbol(const char *name)
{
	struct crafted c;
	uint64_t address;

	craft_load(&c, CRAFT_TARGET);
	address = craft_symbol(&c, name);
	craft_free(&c);
	return address;
}

/*
 * A semaphore must be a 2-byte word in writable data the file holds: the
 * kernel increments it in the writable mapping of its file offset, which
 * code, constants, RELRO data (read-only once relocated) and .bss (not in
 * the file: its offset is other bytes) do not have.
 */
static void test_semaphores_are_checked(void **state)
{
	static const struct {
		const char *symbol;
		uint64_t plus;
		enum usdt_refusal refusal;
	} cases[] = {
		{ "target_data", 0, USDT_SITE_OK },
		{ "target_data", 1, USDT_SEMAPHORE_MISALIGNED },
		{ "target_rodata", 0, USDT_SEMAPHORE_READ_ONLY },
		{ "target_value", 0, USDT_SEMAPHORE_READ_ONLY },
		{ "target_relro", 0, USDT_SEMAPHORE_READ_ONLY },
		{ "target_bss", 8, USDT_SEMAPHORE_OUTSIDE },
		{ NULL, 0x7fff0000, USDT_SEMAPHORE_OUTSIDE }, /* in no segment at all */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t address = (cases[i].symbol ? target_symbol(cases[i].symbol) : 0) +
				   cases[i].plus;
		enum usdt_refusal r = refusal_after(set_span_semaphore, address, "span");

		if (r != cases[i].refusal)
			fail_msg("semaphore at %s+%" PRIu64 ": %s, wanted %s",
				 cases[i].symbol ? cases[i].symbol : "0", cases[i].plus,
				 usdt_refusal__name(r), usdt_refusal__name(cases[i].refusal));
	}
}

/* Site name moved onto site onto's address (arg: the two names, "name onto"). */
static void move_onto(struct crafted *c, uint64_t names)
{
	char name[32], onto[32];

	assert_int_equal(sscanf((const char *)(uintptr_t)names, "%31s %31s", name, onto), 2);
	craft_set_note_address(c, name, craft_get64(c, craft_note(c, onto)));
}

/*
 * Two sites at one address are one uprobe: the kernel refuses the second
 * registration when its semaphore differs, and the whole link with it.
 * Both are refused; with the same semaphore both stay.
 */
static void test_conflicting_semaphores_are_refused(void **state)
{
	struct usdt_note_list l;
	struct crafted c;

	(void)state;
	craft_load(&c, CRAFT_TARGET);
	move_onto(&c, (uintptr_t)"batch_register batch");
	assert_int_equal(read_crafted(&c, &l), 0);
	assert_int_equal(l.refused_count, 2);
	assert_int_equal(refusal_of(&l, "batch"), USDT_SEMAPHORE_CONFLICT);
	assert_int_equal(refusal_of(&l, "batch_register"), USDT_SEMAPHORE_CONFLICT);
	usdt_notes__free(&l);
	craft_free(&c);
	assert_int_equal(refusal_after(move_onto, (uintptr_t)"span_exit span", "span"),
			 USDT_SITE_OK);
}

/* The parser's answer for the target changed by change(c, arg), with its problem. */
static int read_after(void (*change)(struct crafted *c, uint64_t arg), uint64_t arg,
		      char *problem, size_t len)
{
	struct usdt_note_list l;
	struct crafted c;
	int err;

	craft_load(&c, CRAFT_TARGET);
	change(&c, arg);
	err = read_crafted(&c, &l);
	snprintf(problem, len, "%s", l.problem);
	if (!err)
		usdt_notes__free(&l);
	craft_free(&c);
	return err;
}

static void set_class(struct crafted *c, uint64_t v) { c->bytes[EI_CLASS] = (unsigned char)v; }
static void set_data(struct crafted *c, uint64_t v) { c->bytes[EI_DATA] = (unsigned char)v; }
static void set_machine(struct crafted *c, uint64_t v) { craft_ehdr(c)->e_machine = (Elf64_Half)v; }

/* 32-bit, big-endian and other machines' files are not read as this machine's. */
static void test_other_architectures_are_unsupported(void **state)
{
	char problem[160];

	(void)state;
	assert_int_equal(read_after(set_class, ELFCLASS32, problem, sizeof(problem)), -ENOTSUP);
	assert_non_null(strstr(problem, "32-bit"));
	assert_int_equal(read_after(set_data, ELFDATA2MSB, problem, sizeof(problem)), -ENOTSUP);
	assert_non_null(strstr(problem, "big-endian"));
	assert_int_equal(read_after(set_machine, OTHER_MACHINE, problem, sizeof(problem)), -ENOTSUP);
	assert_string_equal(problem, OTHER_MACHINE_PROBLEM);
}

static void truncate_to(struct crafted *c, uint64_t size) { c->size = (size_t)size; }
static void shoff_past_end(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_ehdr(c)->e_shoff = c->size - 10;
}
static void notes_past_end(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_section(c, ".note.stapsdt")->sh_offset = c->size;
}
static void load_past_end(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_load_segment(c, PF_R | PF_X)->p_filesz = c->size;
}
static void files_over_memory(struct crafted *c, uint64_t unused)
{
	Elf64_Phdr *data = craft_load_segment(c, PF_R | PF_W);

	(void)unused;
	data->p_memsz = data->p_filesz - 1;
}
static void load_misplaced(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_load_segment(c, PF_R | PF_X)->p_vaddr += 8;
}
static void tail_over_next(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_grow_code_over_rodata(c, "session_start");
}
static void relro_over_code(struct crafted *c, uint64_t unused)
{
	(void)unused;
	for (size_t i = 0; i < craft_ehdr(c)->e_phnum; i++)
		if (craft_phdr(c, i)->p_type == PT_GNU_RELRO)
			craft_phdr(c, i)->p_vaddr = craft_load_segment(c, PF_R | PF_X)->p_vaddr;
}
static void note_overruns(struct crafted *c, uint64_t unused)
{
	size_t desc = craft_note(c, "batch");

	(void)unused;
	((Elf64_Nhdr *)(c->bytes + desc - 20))->n_descsz = 0x10000;
}
static void note_unterminated(struct crafted *c, uint64_t unused)
{
	size_t desc = craft_note(c, "batch");
	Elf64_Nhdr *n = (Elf64_Nhdr *)(c->bytes + desc - 20);

	(void)unused;
	memset(c->bytes + desc + 24, 'x', n->n_descsz - 24); /* no NUL left */
}
static void bad_phentsize(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_ehdr(c)->e_phentsize = 48;
}
static void bad_shstrndx(struct crafted *c, uint64_t unused)
{
	(void)unused;
	craft_ehdr(c)->e_shstrndx = craft_ehdr(c)->e_shnum + 3;
}

/*
 * Files whose headers do not hold together are malformed, said with what
 * is wrong, never read as a file without probes (exit 0 "has no USDT
 * probes" from khprof probes, before).
 */
static void test_malformed_files_are_refused(void **state)
{
	static const struct {
		const char *what;
		void (*change)(struct crafted *c, uint64_t arg);
		uint64_t arg;
	} cases[] = {
		{ "truncated to its first 4000 bytes", truncate_to, 4000 },
		{ "truncated to 40 bytes", truncate_to, 40 },
		{ "section headers past the end", shoff_past_end, 0 },
		{ ".note.stapsdt past the end", notes_past_end, 0 },
		{ "code segment past the end", load_past_end, 0 },
		{ "more file bytes than memory", files_over_memory, 0 },
		{ "segment address not in step with its offset", load_misplaced, 0 },
		{ "code segment grown over the next one", tail_over_next, 0 },
		{ "RELRO moved over the code", relro_over_code, 0 },
		{ "note longer than its section", note_overruns, 0 },
		{ "note strings without NUL", note_unterminated, 0 },
		{ "program header entries of the wrong size", bad_phentsize, 0 },
		{ "section name table out of range", bad_shstrndx, 0 },
	};
	char problem[160];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = read_after(cases[i].change, cases[i].arg, problem, sizeof(problem));

		if (err != -EINVAL || !problem[0])
			fail_msg("%s: %d '%s', wanted -EINVAL and a problem", cases[i].what, err,
				 problem);
	}
}

/*
 * A note's strings are the file's: escaped wherever khprof prints them, so
 * that a crafted one can neither start a line of khprof's own nor drive a
 * terminal.
 */
static void test_note_strings_are_escaped(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(utf8__escape("\nkhprof: error: forged line", buf, sizeof(buf)),
			    "\\nkhprof: error: forged line");
	assert_string_equal(utf8__escape("a\nb\r\tc\x1b[31m\x7f", buf, sizeof(buf)),
			    "a\\nb\\r\\tc\\x1b[31m\\x7f");
	/* Invalid UTF-8 byte by byte; C1 controls and bidi overrides as code points. */
	assert_string_equal(utf8__escape("\xff\xc2\x9b\xe2\x80\xae\xc3\xa9", buf, sizeof(buf)),
			    "\\xff\\u009b\\u202e\xc3\xa9");
	assert_string_equal(utf8__escape("back\\slash", buf, sizeof(buf)), "back\\\\slash");
	/* Cut short with "...", never inside an escape or a character. */
	assert_string_equal(utf8__escape("abcdefghijklmnop", buf, 10), "abcdef...");
	assert_string_equal(utf8__escape("abcdefg\n", buf, 9), "abcde...");
	assert_string_equal(utf8__escape("abcde\n", buf, 8), "abcde\\n");
	assert_string_equal(utf8__escape("\xc3\xa9\xc3\xa9\xc3\xa9", buf, 6), "\xc3\xa9...");
	assert_string_equal(utf8__escape("abcdef", buf, 7), "abcdef");
	assert_string_equal(utf8__escape(NULL, buf, sizeof(buf)), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register_and_constant_arguments),
		cmocka_unit_test(test_memory_arguments),
		cmocka_unit_test(test_malformed_arguments),
		cmocka_unit_test(test_argument_numbers_at_the_edges),
		cmocka_unit_test(test_notes_of_the_probe_header),
		cmocka_unit_test(test_notes_errors_and_symbols),
		cmocka_unit_test(test_needed_libraries),
		cmocka_unit_test(test_probe_outside_code_is_skipped),
		cmocka_unit_test(test_sites_say_where_they_are),
		cmocka_unit_test(test_target_is_clean),
		cmocka_unit_test(test_probe_past_the_file_bytes_is_refused),
		cmocka_unit_test(test_probe_off_a_nop_is_refused),
		cmocka_unit_test(test_unreadable_arguments_are_refused),
		cmocka_unit_test(test_semaphores_are_checked),
		cmocka_unit_test(test_conflicting_semaphores_are_refused),
		cmocka_unit_test(test_other_architectures_are_unsupported),
		cmocka_unit_test(test_malformed_files_are_refused),
		cmocka_unit_test(test_note_strings_are_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
