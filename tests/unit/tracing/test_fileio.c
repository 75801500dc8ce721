// SPDX-License-Identifier: MIT
/*
 * Whole-file reads and atomic replacement, in a private temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "outbuf.h"
#include "khtest.h"

/* Each test gets a fresh folder as its state, removed with all it holds afterwards. */
static int scratch_setup(void **state)
{
	*state = make_temp_dir("khprof-fileio");
	return *state ? 0 : -1;
}

static int scratch_teardown(void **state)
{
	int err = remove_tree(*state);

	free(*state);
	return err;
}

static char *in_scratch(void **state, const char *name)
{
	char *path;

	assert_true(asprintf(&path, "%s/%s", (char *)*state, name) > 0);
	return path;
}

static size_t count_entries(void **state)
{
	DIR *d = opendir(*state);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Writes len bytes of data to path, reads them back whole and NUL-terminated. */
static void assert_round_trip(const char *path, const void *data, size_t len)
{
	char *text;
	size_t got;

	assert_int_equal(file__write_atomic(path, data, len), 0);
	assert_int_equal(file__read_all(path, &text, &got), 0);
	assert_int_equal(got, len);
	assert_memory_equal(text, data, len);
	assert_int_equal(text[got], '\0');
	free(text);
}

static void test_write_then_read(void **state)
{
	char *path = in_scratch(state, "record.json");

	assert_round_trip(path, "{\"a\": 1}\n", 9);
	/* Replacing leaves exactly the new content and no temporary file. */
	assert_round_trip(path, "xy", 2);
	assert_int_equal(count_entries(state), 1);
	free(path);
}

static void test_empty_and_binary(void **state)
{
	static const char bytes[] = { 'a', 0, 'b', (char)0xff };
	char *path = in_scratch(state, "bin");

	assert_round_trip(path, "", 0);
	assert_round_trip(path, bytes, sizeof(bytes));
	free(path);
}

static void test_mode_follows_umask(void **state)
{
	char *path = in_scratch(state, "mode");
	mode_t old = umask(027);
	struct stat st;

	assert_int_equal(file__write_atomic(path, "x", 1), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	free(path);
}

static void test_large_write(void **state)
{
	size_t size = 3 * 1024 * 1024 + 17;
	char *data = malloc(size), *path = in_scratch(state, "large");

	assert_non_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (char)('a' + i % 26);
	assert_round_trip(path, data, size);
	free(data);
	free(path);
}

static void test_write_failures_leave_nothing(void **state)
{
	char *missing = in_scratch(state, "no-such-dir/record.json");
	char *dir_target = in_scratch(state, "sub");

	assert_int_equal(file__write_atomic(missing, "x", 1), -ENOENT);
	assert_int_equal(count_entries(state), 0);
	/* rename() cannot replace a directory with a file. */
	assert_int_equal(mkdir(dir_target, 0755), 0);
	assert_int_equal(file__write_atomic(dir_target, "x", 1), -EISDIR);
	assert_int_equal(count_entries(state), 1);
	assert_int_equal(file__write_atomic("", "x", 1), -EINVAL);
	assert_int_equal(file__write_atomic(dir_target, NULL, 1), -EINVAL);
	free(dir_target);
	free(missing);
}

static void test_read_failures(void **state)
{
	char *missing = in_scratch(state, "missing");
	char *text = (char *)1;
	size_t len = 1;

	assert_int_equal(file__read_all(missing, &text, &len), -ENOENT);
	assert_null(text);
	assert_int_equal(len, 0);
	assert_int_equal(file__read_all(*state, &text, &len), -EISDIR);
	free(missing);
}

/* /proc files report size 0; the whole content must still arrive. */
static void test_read_sizeless_file(void **state)
{
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(file__read_all("/proc/self/status", &text, &len), 0);
	assert_true(len > 0);
	assert_non_null(strstr(text, "Threads:"));
	assert_int_equal(strlen(text), len);
	free(text);
}

static void make_sparse(const char *path, off_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

static void test_read_limit(void **state)
{
	char *path = in_scratch(state, "sparse");
	char *text;
	size_t len;

	make_sparse(path, (off_t)FILE_READ_MAX + 1);
	assert_int_equal(file__read_all(path, &text, &len), -EFBIG);
	make_sparse(path, (off_t)FILE_READ_MAX);
	assert_int_equal(file__read_all(path, &text, &len), 0);
	assert_int_equal(len, FILE_READ_MAX);
	free(text);
	free(path);
}

/* An outbuf that was never written to still finishes as a string. */
static void test_outbuf_empty_finish(void **state)
{
	struct outbuf b;
	char *text;

	(void)state;
	outbuf__init(&b);
	text = outbuf__finish(&b);
	assert_non_null(text);
	assert_string_equal(text, "");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outbuf_empty_finish),
		cmocka_unit_test_setup_teardown(test_write_then_read, scratch_setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_binary, scratch_setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_mode_follows_umask, scratch_setup,
						scratch_teardown),
		cmocka_unit_test_setup_teardown(test_large_write, scratch_setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_write_failures_leave_nothing, scratch_setup,
						scratch_teardown),
		cmocka_unit_test_setup_teardown(test_read_failures, scratch_setup, scratch_teardown),
		cmocka_unit_test(test_read_sizeless_file),
		cmocka_unit_test_setup_teardown(test_read_limit, scratch_setup, scratch_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
