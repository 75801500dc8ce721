// SPDX-License-Identifier: MIT
/* USDT note reading and argument-spec parsing, without BPF. */
#include <asm/ptrace.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "usdt_elf.h"
#include "usdt_notes.h"
#include "usdt_where.h"
#include "usdt_spec.h"

static void test_register_and_constant_arguments(void **state)
{
	struct kh_usdt_spec spec;

	(void)state;
	assert_int_equal(usdt_spec__parse("8@%rdi 8@$5 -4@%eax", KH_PROBE_SPAN, &spec), 0);
	assert_int_equal(spec.arg_cnt, 3);
	assert_int_equal(spec.usdt_cookie, KH_PROBE_SPAN);
	assert_int_equal(spec.args[0].arg_type, 1);
	assert_int_equal(spec.args[0].reg_off, offsetof(struct pt_regs, rdi));
	assert_int_equal(spec.args[0].arg_bitshift, 0);
	assert_int_equal(spec.args[1].arg_type, 0);
	assert_int_equal(spec.args[1].val_off, 5);
	/* A signed 4-byte register: the low 32 bits, sign-extended. */
	assert_int_equal(spec.args[2].reg_off, offsetof(struct pt_regs, rax));
	assert_int_equal(spec.args[2].arg_signed, 1);
	assert_int_equal(spec.args[2].arg_bitshift, 32);
}

static void test_memory_arguments(void **state)
{
	struct kh_usdt_spec spec;

	(void)state;
	assert_int_equal(usdt_spec__parse("8@-80(%rbx) 2@(%r12)", 0, &spec), 0);
	assert_int_equal(spec.args[0].arg_type, 2);
	assert_int_equal((int64_t)spec.args[0].val_off, -80);
	assert_int_equal(spec.args[0].reg_off, offsetof(struct pt_regs, rbx));
	assert_int_equal(spec.args[1].val_off, 0);
	assert_int_equal(spec.args[1].reg_off, offsetof(struct pt_regs, r12));
	assert_int_equal(spec.args[1].arg_bitshift, 48);
	assert_int_equal(usdt_spec__parse("", 0, &spec), 0);
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
		if (usdt_spec__parse(bad[i], 0, &spec) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
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
		/* Registers and immediates only: the site moves %rsp. */
		assert_null(strchr(n->args, '('));
		assert_int_equal(usdt_spec__parse(n->args, 0, &spec), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register_and_constant_arguments),
		cmocka_unit_test(test_memory_arguments),
		cmocka_unit_test(test_malformed_arguments),
		cmocka_unit_test(test_notes_of_the_probe_header),
		cmocka_unit_test(test_notes_errors_and_symbols),
		cmocka_unit_test(test_needed_libraries),
		cmocka_unit_test(test_probe_outside_code_is_skipped),
		cmocka_unit_test(test_sites_say_where_they_are),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
