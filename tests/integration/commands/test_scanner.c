/* SPDX-License-Identifier: MIT */
/*
 * kh-scan and kh-corpus end to end: the scanner must report exactly the
 * corpus's ground truth, honour suppression, skip what it should skip and
 * print the same bytes whatever the thread count.  Run from the repository
 * root after `make build/kh-scan build/kh-corpus`.
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "khtest.h"

static char scanner_binary[PATH_MAX];
static char corpus_binary[PATH_MAX];

/* Contents of path, NUL-terminated; fails the test when it cannot be read. */
static char *read_file(const char *path, size_t *length_out)
{
	char *data = NULL;
	size_t length;
	int err = file__read_all(path, &data, &length);

	if (err)
		fail_msg("cannot read %s: %s", path, strerror(-err));
	if (length_out)
		*length_out = length;
	return data;
}

static void write_text(const char *path, const char *text)
{
	assert_int_equal(file__write_atomic(path, text, strlen(text)), 0);
}

static char *join(const char *directory, const char *name)
{
	char *path;

	assert_true(asprintf(&path, "%s/%s", directory, name) > 0);
	return path;
}

/* Runs argv[0] in cwd (NULL: here); the tests build argv from constant strings. */
static struct run_result run_in(const char *cwd, const char *const argv[])
{
	return run_cmd(cwd, -1, (char *const *)argv);
}

/* Each test gets a fresh folder as its state, removed with all it holds afterwards. */
static int make_workspace(void **state)
{
	*state = make_temp_dir("kh-scan-test");
	return *state ? 0 : -1;
}

static int remove_workspace(void **state)
{
	remove_tree(*state);
	free(*state);
	return 0;
}

/* "path|line|column|rule|decoded" for each JSON line, sorted: a comparable multiset. */
struct key_list {
	char **keys;
	size_t count;
};

static int compare_strings(const void *left, const void *right)
{
	return strcmp(*(char *const *)left, *(char *const *)right);
}

static struct key_list finding_keys(const char *jsonl)
{
	struct key_list list = { calloc(count_lines(jsonl) + 1, sizeof(char *)), 0 };
	char *copy = strdup(jsonl), *saved = NULL;

	assert_non_null(list.keys);
	for (char *line = strtok_r(copy, "\n", &saved); line; line = strtok_r(NULL, "\n", &saved)) {
		cJSON *object = cJSON_Parse(line);

		assert_non_null(object);
		cJSON *path = cJSON_GetObjectItemCaseSensitive(object, "path");
		cJSON *number = cJSON_GetObjectItemCaseSensitive(object, "line");
		cJSON *column = cJSON_GetObjectItemCaseSensitive(object, "column");
		cJSON *rule = cJSON_GetObjectItemCaseSensitive(object, "rule");
		cJSON *decoded = cJSON_GetObjectItemCaseSensitive(object, "decoded");

		assert_true(cJSON_IsString(path) && cJSON_IsNumber(number) &&
			    cJSON_IsNumber(column) && cJSON_IsString(rule) && cJSON_IsBool(decoded));
		assert_true(asprintf(&list.keys[list.count++], "%s|%.0f|%.0f|%s|%d",
				     path->valuestring, number->valuedouble, column->valuedouble,
				     rule->valuestring, cJSON_IsTrue(decoded)) > 0);
		cJSON_Delete(object);
	}
	free(copy);
	qsort(list.keys, list.count, sizeof(char *), compare_strings);
	return list;
}

static void key_list_free(struct key_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->keys[i]);
	free(list->keys);
}

static void assert_same_findings(const struct key_list *expected, const struct key_list *actual)
{
	size_t e = 0, a = 0;

	/* Print every difference before failing: one missing rule explains many. */
	while (e < expected->count || a < actual->count) {
		int order = e == expected->count ? 1
			    : a == actual->count ? -1
						 : strcmp(expected->keys[e], actual->keys[a]);

		if (order == 0) {
			e++;
			a++;
		} else if (order < 0) {
			print_error("missing: %s\n", expected->keys[e++]);
		} else {
			print_error("unexpected: %s\n", actual->keys[a++]);
		}
	}
	assert_int_equal(expected->count, actual->count);
	for (size_t i = 0; i < expected->count; i++)
		assert_string_equal(expected->keys[i], actual->keys[i]);
}

static void generate_corpus(const char *directory, const char *seed, const char *extra)
{
	const char *argv[] = { corpus_binary, "--seed", seed, "--size", "2",
			       extra ? extra : directory, extra ? directory : NULL, NULL };
	struct run_result result = run_in(NULL, argv);

	assert_int_equal(result.exit_code, 0);
	run_result_free(&result);
}

static const char *const all_rules[] = {
	"aws-access-key-id",  "github-pat",  "github-fine-grained-pat", "slack-token",
	"stripe-live-secret", "private-key", "generic-secret",
};

/* Byte offset where a 1-based line starts in a file. */
static size_t line_start_offset(const char *path, long line)
{
	size_t length;
	char *data = read_file(path, &length);
	size_t offset = 0;

	assert_non_null(data);
	for (long current = 1; current < line && offset < length; offset++)
		current += data[offset] == '\n';
	free(data);
	return offset;
}

static void check_corpus_against_truth(const char *workspace, const char *seed)
{
	char *corpus = join(workspace, seed);
	char *truth_path = join(corpus, "truth.jsonl");
	const char *argv[] = { scanner_binary, "--threads", "2", "tree", NULL };
	struct run_result result;
	struct key_list expected, actual;
	char *truth;
	bool past_first_chunk = false;

	generate_corpus(corpus, seed, NULL);
	truth = read_file(truth_path, NULL);
	assert_non_null(truth);
	/* Without this the comparison below could pass on a corpus that plants nothing. */
	for (size_t i = 0; i < sizeof(all_rules) / sizeof(all_rules[0]); i++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "\"rule\":\"%s\",\"decoded\":false", all_rules[i]);
		assert_non_null(strstr(truth, needle));
	}
	assert_non_null(strstr(truth, "\"decoded\":true"));

	result = run_in(corpus, argv);
	assert_int_equal(result.exit_code, 1);
	assert_string_equal(result.err, "");
	expected = finding_keys(truth);
	actual = finding_keys(result.out);
	assert_same_findings(&expected, &actual);

	/* Some finding must sit past the 1 MiB chunk cut, so line carry-over is checked. */
	for (size_t i = 0; i < expected.count && !past_first_chunk; i++) {
		char *key = strdup(expected.keys[i]);
		char *bar = strchr(key, '|');
		long line;

		*bar = '\0';
		line = strtol(bar + 1, NULL, 10);
		char *file = join(corpus, key);

		past_first_chunk = line_start_offset(file, line) > (1u << 20);
		free(file);
		free(key);
	}
	assert_true(past_first_chunk);

	key_list_free(&expected);
	key_list_free(&actual);
	run_result_free(&result);
	free(truth);
	free(truth_path);
	free(corpus);
}

static void corpus_findings_equal_ground_truth_seed_11(void **state)
{
	check_corpus_against_truth(*state, "11");
}

static void corpus_findings_equal_ground_truth_seed_4242(void **state)
{
	check_corpus_against_truth(*state, "4242");
}

static void decoys_only_corpus_has_no_findings_and_exits_0(void **state)
{
	char *corpus = join(*state, "decoys");
	char *truth_path = join(corpus, "truth.jsonl");
	const char *argv[] = { scanner_binary, "tree", NULL };
	struct run_result result;
	size_t truth_length;
	char *truth;

	generate_corpus(corpus, "3", "--decoys-only");
	truth = read_file(truth_path, &truth_length);
	assert_non_null(truth);
	assert_int_equal(truth_length, 0);
	result = run_in(corpus, argv);
	assert_string_equal(result.out, "");
	assert_string_equal(result.err, "");
	assert_int_equal(result.exit_code, 0);
	run_result_free(&result);
	free(truth);
	free(truth_path);
	free(corpus);
}

static void thread_count_does_not_change_output(void **state)
{
	char *corpus = join(*state, "threads");
	const char *one[] = { scanner_binary, "--threads", "1", "tree", NULL };
	const char *four[] = { scanner_binary, "--threads", "4", "tree", NULL };
	const char *interp[] = { scanner_binary, "--threads", "3", "--backend", "pcre2-interp",
				 "tree", NULL };
	struct run_result single, parallel, interpreted;

	generate_corpus(corpus, "77", NULL);
	single = run_in(corpus, one);
	parallel = run_in(corpus, four);
	interpreted = run_in(corpus, interp);
	assert_int_equal(single.exit_code, 1);
	assert_true(count_lines(single.out) > 50);
	assert_string_equal(single.out, parallel.out);
	assert_string_equal(single.out, interpreted.out);
	run_result_free(&single);
	run_result_free(&parallel);
	run_result_free(&interpreted);
	free(corpus);
}

/* Scans one file holding text and returns the result. */
static struct run_result scan_text_file(const char *workspace, const char *name, const char *text)
{
	char *path = join(workspace, name);
	const char *argv[] = { scanner_binary, "--threads", "2", path, NULL };
	struct run_result result;

	write_text(path, text);
	result = run_in(NULL, argv);
	free(path);
	return result;
}

static const char aws_key[] = "AKIAQ3EGKZ7TW4XN2PLD";
static const char other_aws_key[] = "ASIAJ5RM8TQW2ZKX6VBN";

static void kh_allow_suppresses_only_its_line(void **state)
{
	char text[512];
	struct run_result result;
	struct key_list keys;

	snprintf(text, sizeof(text),
		 "first = \"%s\"  # kh:allow\nsecond = \"%s\"\nthird = \"%s\" // kh:allow\n",
		 aws_key, other_aws_key, other_aws_key);
	result = scan_text_file(*state, "allow.py", text);
	assert_int_equal(result.exit_code, 1);
	keys = finding_keys(result.out);
	assert_int_equal(keys.count, 1);
	assert_non_null(strstr(keys.keys[0], "allow.py|2|11|aws-access-key-id|0"));
	key_list_free(&keys);
	run_result_free(&result);
}

static void allowlist_globs_skip_matching_files(void **state)
{
	const char *workspace = *state;
	char *tree = join(workspace, "allow-tree");
	char *vendor_parent = join(tree, "lib");
	char *vendor = join(vendor_parent, "vendor");
	char *allowlist = join(workspace, "allowlist.txt");
	char text[128];
	char *file;
	struct run_result with, without;
	struct key_list keys;

	assert_int_equal(mkdir(tree, 0755), 0);
	assert_int_equal(mkdir(vendor_parent, 0755), 0);
	assert_int_equal(mkdir(vendor, 0755), 0);
	snprintf(text, sizeof(text), "KEY_ID=%s\n", aws_key);
	file = join(tree, "prod.env");
	write_text(file, text);
	free(file);
	file = join(tree, "notes.txt");
	write_text(file, text);
	free(file);
	file = join(vendor, "dep.txt");
	write_text(file, text);
	free(file);
	write_text(allowlist, "# generated files\n\n*.env\n  */vendor/*\n");

	const char *argv_with[] = { scanner_binary, "--allowlist", allowlist, tree, NULL };
	const char *argv_without[] = { scanner_binary, tree, NULL };

	without = run_in(NULL, argv_without);
	assert_int_equal(without.exit_code, 1);
	assert_int_equal(count_lines(without.out), 3);
	with = run_in(NULL, argv_with);
	assert_int_equal(with.exit_code, 1);
	keys = finding_keys(with.out);
	assert_int_equal(keys.count, 1);
	assert_non_null(strstr(keys.keys[0], "/allow-tree/notes.txt|1|8|aws-access-key-id|0"));
	key_list_free(&keys);
	run_result_free(&with);
	run_result_free(&without);
	free(allowlist);
	free(vendor);
	free(vendor_parent);
	free(tree);
}

static void redacted_field_never_contains_the_secret(void **state)
{
	static const char *const secrets[] = {
		aws_key,
		"ghp_Zq8Lm3Rt7Wx2Nv5Kp9Bc4Hd6Jf1Gs0Ay3Ue8",
		"github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghi",
		"xoxb-1234567890-123456789012-Qw3Er5Ty7Ui9Op1As3Df5Gh7",
		"sk_live_Ab12Cd34Ef56Gh78Ij90Kl12Mn",
		"Q9v2LmR7tZ4nKp8Ws3Bx6Yc1",
	};
	char text[2048];
	struct run_result result;
	cJSON *object;
	size_t findings = 0;

	assert_int_equal(strlen(secrets[2]), strlen("github_pat_") + 82);
	snprintf(text, sizeof(text),
		 "aws = %s\ngh = %s\nfine = %s\nslack = %s\nstripe = %s\nclient_secret = \"%s\"\n",
		 secrets[0], secrets[1], secrets[2], secrets[3], secrets[4], secrets[5]);
	result = scan_text_file(*state, "secrets.txt", text);
	assert_int_equal(result.exit_code, 1);
	assert_int_equal(count_lines(result.out), 6);
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		char prefix[5] = { 0 };

		/* Nowhere in the output, not even as a substring of some field. */
		assert_null(strstr(result.out, secrets[i]));
		memcpy(prefix, secrets[i], 4);
		assert_non_null(strstr(result.out, prefix));
	}
	for (char *line = result.out; *line; line = strchr(line, '\n') + 1) {
		char *end = strchr(line, '\n');

		*end = '\0';
		object = cJSON_Parse(line);
		assert_non_null(object);
		const char *redacted = cJSON_GetObjectItemCaseSensitive(object, "redacted")->valuestring;

		/* Four bytes, "…" (three in UTF-8), "(", at least two digits, ")". */
		assert_true(strlen(redacted) < 16);
		assert_non_null(strstr(redacted, "\xe2\x80\xa6"));
		cJSON_Delete(object);
		*end = '\n';
		findings++;
	}
	assert_int_equal(findings, 6);
	run_result_free(&result);
}

static void binary_file_is_skipped(void **state)
{
	const char *workspace = *state;
	char text[256];
	size_t length = (size_t)snprintf(text, sizeof(text), "ELF\x01\x02 header\naws = %s\n",
					 aws_key);
	char *binary = join(workspace, "image.bin");
	char *textual = join(workspace, "image.txt");
	const char *argv_binary[] = { scanner_binary, binary, NULL };
	const char *argv_text[] = { scanner_binary, textual, NULL };
	struct run_result result;

	/* The same bytes with and without a NUL: only the NUL may change the outcome. */
	assert_int_equal(file__write_atomic(textual, text, length), 0);
	result = run_in(NULL, argv_text);
	assert_int_equal(result.exit_code, 1);
	assert_int_equal(count_lines(result.out), 1);
	run_result_free(&result);

	text[3] = '\0';
	assert_int_equal(file__write_atomic(binary, text, length), 0);
	result = run_in(NULL, argv_binary);
	assert_int_equal(result.exit_code, 0);
	assert_string_equal(result.out, "");
	run_result_free(&result);
	free(binary);
	free(textual);
}

static void nul_after_sniff_window_is_still_text(void **state)
{
	size_t length = 9000 + 64;
	char *data = malloc(length);
	char *path = join(*state, "late-nul.txt");
	const char *argv[] = { scanner_binary, path, NULL };
	struct run_result result;

	assert_non_null(data);
	memset(data, 'a', length);
	for (size_t i = 80; i < 9000; i += 80)
		data[i] = '\n';
	data[8500] = '\0';
	snprintf(data + 9000, 64, "\nkey = %s\n", aws_key);
	assert_int_equal(file__write_atomic(path, data, strlen(data + 9000) + 9000), 0);
	result = run_in(NULL, argv);
	assert_int_equal(result.exit_code, 1);
	assert_int_equal(count_lines(result.out), 1);
	run_result_free(&result);
	free(path);
	free(data);
}

static void symlink_loop_terminates_and_reports_once(void **state)
{
	char *root = join(*state, "loop-root");
	char *sub = join(root, "sub");
	char *loop = join(sub, "loop");
	char *self = join(sub, "self");
	char *secret = join(sub, "key.txt");
	const char *argv[] = { scanner_binary, root, NULL };
	char text[128];
	struct run_result result;

	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink("..", loop), 0);
	assert_int_equal(symlink("self", self), 0);
	snprintf(text, sizeof(text), "key = %s\n", aws_key);
	write_text(secret, text);
	result = run_in(NULL, argv);
	assert_int_equal(result.exit_code, 1);
	assert_int_equal(count_lines(result.out), 1);
	assert_non_null(strstr(result.out, "loop-root/sub/key.txt"));
	run_result_free(&result);
	free(root);
	free(sub);
	free(loop);
	free(self);
	free(secret);
}

static void missing_path_exits_2_with_one_error_line(void **state)
{
	char *missing = join(*state, "does-not-exist");
	const char *argv[] = { scanner_binary, missing, NULL };
	struct run_result result = run_in(NULL, argv);

	assert_int_equal(result.exit_code, 2);
	assert_string_equal(result.out, "");
	assert_int_equal(count_lines(result.err), 1);
	assert_non_null(strstr(result.err, missing));
	assert_non_null(strstr(result.err, "No such file or directory"));
	run_result_free(&result);
	free(missing);
}

static void bad_arguments_exit_2_with_one_error_line(void **state)
{
	const char *zero_threads[] = { scanner_binary, "--threads", "0", *state, NULL };
	const char *no_path[] = { scanner_binary, "--threads", "2", NULL };
	const char *unknown[] = { scanner_binary, "--frobnicate", *state, NULL };
	const char *const *cases[] = { zero_threads, no_path, unknown };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run_result result = run_in(NULL, cases[i]);

		assert_int_equal(result.exit_code, 2);
		assert_string_equal(result.out, "");
		assert_int_equal(count_lines(result.err), 1);
		run_result_free(&result);
	}
}

static void base64_secret_is_reported_decoded_at_blob_line(void **state)
{
	/* base64 of "aws_access_key_id=AKIAQ3EGKZ7TW4XN2PLD" */
	static const char text[] =
		"# settings\n"
		"{\"id\": 1}\n"
		"payload: \"YXdzX2FjY2Vzc19rZXlfaWQ9QUtJQVEzRUdLWjdUVzRYTjJQTEQ=\"\n";
	struct run_result result = scan_text_file(*state, "blob.yaml", text);
	struct key_list keys = finding_keys(result.out);

	assert_int_equal(result.exit_code, 1);
	assert_int_equal(keys.count, 1);
	assert_non_null(strstr(keys.keys[0], "blob.yaml|3|11|aws-access-key-id|1"));
	/* The blob itself never holds the key in clear, so only decoding finds it. */
	assert_null(strstr(text, "AKIA"));
	key_list_free(&keys);
	run_result_free(&result);
}

static void generic_rule_reports_only_high_entropy_values(void **state)
{
	static const char text[] =
		"password = \"changeme\"\n"
		"api_key = \"xxxxxxxxxxxxxxxxxxxx\"\n"
		"token: aaaaaaaabbbbbbbbcccccccc\n"
		"DB_PASSWORD=changeme-changeme-changeme\n"
		"client_secret = \"q8Xv2LmR7tZ4nKp9Ws3B\"\n"
		"apiKey := \"Hj3kL9mN2pQ5rS8tV1wX\"\n";
	struct run_result result = scan_text_file(*state, "generic.go", text);
	struct key_list keys = finding_keys(result.out);

	assert_int_equal(result.exit_code, 1);
	assert_int_equal(keys.count, 2);
	assert_non_null(strstr(keys.keys[0], "generic.go|5|18|generic-secret|0"));
	assert_non_null(strstr(keys.keys[1], "generic.go|6|12|generic-secret|0"));
	key_list_free(&keys);
	run_result_free(&result);
}

static void repeated_secret_on_a_line_is_reported_once(void **state)
{
	char text[256];
	struct run_result result;

	snprintf(text, sizeof(text), "a=%s b=%s\nc=%s d=%s\n", aws_key, aws_key, aws_key,
		 other_aws_key);
	result = scan_text_file(*state, "repeat.txt", text);
	assert_int_equal(result.exit_code, 1);
	/* Line 1 holds one secret twice, line 2 two different secrets. */
	assert_int_equal(count_lines(result.out), 3);
	run_result_free(&result);
}

static void lines_are_counted_across_chunks_and_long_lines(void **state)
{
	const size_t filler_lines = 20000, long_line = 3u << 20;
	size_t capacity = filler_lines * 80 + long_line + 512, length = 0;
	char *data = malloc(capacity);
	char *path = join(*state, "big.log");
	const char *argv[] = { scanner_binary, path, NULL };
	struct run_result result;
	struct key_list keys;
	char expected[2][128];

	assert_non_null(data);
	for (size_t i = 0; i < filler_lines; i++)
		length += (size_t)snprintf(data + length, capacity - length,
					   "2024-03-01 12:00:00.000 INFO worker-%05zu request handled\n", i);
	/* Line 20001 is past the first 1 MiB chunk. */
	length += (size_t)snprintf(data + length, capacity - length, "key=%s\n", aws_key);
	/* Line 20002 is longer than a chunk; the reader must grow, not split it. */
	memset(data + length, '.', long_line);
	length += long_line;
	length += (size_t)snprintf(data + length, capacity - length, " key=%s\nkey=%s\n",
				   other_aws_key, aws_key);
	assert_int_equal(file__write_atomic(path, data, length), 0);

	result = run_in(NULL, argv);
	assert_int_equal(result.exit_code, 1);
	keys = finding_keys(result.out);
	assert_int_equal(keys.count, 3);
	snprintf(expected[0], sizeof(expected[0]), "big.log|20001|5|aws-access-key-id|0");
	snprintf(expected[1], sizeof(expected[1]), "big.log|20002|%zu|aws-access-key-id|0",
		 long_line + 6);
	assert_non_null(strstr(keys.keys[0], expected[0]));
	assert_non_null(strstr(keys.keys[1], expected[1]));
	assert_non_null(strstr(keys.keys[2], "big.log|20003|5|aws-access-key-id|0"));
	key_list_free(&keys);
	run_result_free(&result);
	free(path);
	free(data);
}

static void corpus_is_byte_identical_for_a_seed(void **state)
{
	char *first = join(*state, "same-a");
	char *second = join(*state, "same-b");
	char *third = join(*state, "other");
	const char *diff[] = { "/usr/bin/diff", "-r", first, second, NULL };
	const char *diff_other[] = { "/usr/bin/diff", "-rq", first, third, NULL };
	struct run_result result;

	generate_corpus(first, "5", NULL);
	generate_corpus(second, "5", NULL);
	generate_corpus(third, "6", NULL);
	result = run_in(NULL, diff);
	assert_int_equal(result.exit_code, 0);
	run_result_free(&result);
	result = run_in(NULL, diff_other);
	assert_int_equal(result.exit_code, 1);
	run_result_free(&result);
	free(first);
	free(second);
	free(third);
}

static int locate_binaries(void)
{
	if (!realpath("build/kh-scan", scanner_binary) || !realpath("build/kh-corpus", corpus_binary)) {
		fprintf(stderr, "test_scanner: build/kh-scan and build/kh-corpus are needed; "
				"run from the repository root after make\n");
		return -1;
	}
	return 0;
}

#define WORKSPACE_TEST(name) cmocka_unit_test_setup_teardown(name, make_workspace, remove_workspace)

int main(void)
{
	const struct CMUnitTest tests[] = {
		WORKSPACE_TEST(corpus_findings_equal_ground_truth_seed_11),
		WORKSPACE_TEST(corpus_findings_equal_ground_truth_seed_4242),
		WORKSPACE_TEST(decoys_only_corpus_has_no_findings_and_exits_0),
		WORKSPACE_TEST(thread_count_does_not_change_output),
		WORKSPACE_TEST(kh_allow_suppresses_only_its_line),
		WORKSPACE_TEST(allowlist_globs_skip_matching_files),
		WORKSPACE_TEST(redacted_field_never_contains_the_secret),
		WORKSPACE_TEST(binary_file_is_skipped),
		WORKSPACE_TEST(nul_after_sniff_window_is_still_text),
		WORKSPACE_TEST(symlink_loop_terminates_and_reports_once),
		WORKSPACE_TEST(missing_path_exits_2_with_one_error_line),
		WORKSPACE_TEST(bad_arguments_exit_2_with_one_error_line),
		WORKSPACE_TEST(base64_secret_is_reported_decoded_at_blob_line),
		WORKSPACE_TEST(generic_rule_reports_only_high_entropy_values),
		WORKSPACE_TEST(repeated_secret_on_a_line_is_reported_once),
		WORKSPACE_TEST(lines_are_counted_across_chunks_and_long_lines),
		WORKSPACE_TEST(corpus_is_byte_identical_for_a_seed),
	};

	if (locate_binaries() != 0)
		return 1;
	return cmocka_run_group_tests_name("kh-scan", tests, NULL, NULL);
}
