/* SPDX-License-Identifier: MIT */
/* kh-scan: command line, run states and the thread layout. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyhog_profile.h"
#include "kh_scan.h"

static const char usage_text[] =
	"Usage: kh-scan [OPTION]... PATH...\n"
	"Scan files and directories (recursively) for secrets and print one JSON\n"
	"object per finding and line on stdout, sorted by path, line, rule, column.\n"
	"\n"
	"  -t, --threads N          scanner threads (default: logical CPUs, max 256)\n"
	"  -a, --allowlist FILE     skip files whose path or name matches a glob in\n"
	"                           FILE (fnmatch, one per line, '#' comments)\n"
	"      --backend NAME       auto (default), pcre2-jit or pcre2-interp\n"
	"      --workload-class C   label recorded in khprof profiles (default: files)\n"
	"  -h, --help               show this help and exit\n"
	"      --version            show the version and exit\n"
	"\n"
	"Rules: aws-access-key-id, github-pat, github-fine-grained-pat, slack-token,\n"
	"stripe-live-secret, private-key, generic-secret.  Base64 blobs of 24+\n"
	"characters are decoded and rescanned (\"decoded\": true).  Lines containing\n"
	"kh:allow are not reported.  Binary files and symlinks inside directories\n"
	"are skipped.\n"
	"\n"
	"Exit status: 0 no findings, 1 findings reported, 2 error (bad arguments,\n"
	"unreadable path, output failure); 2 wins over 1.\n";

struct options {
	long threads;
	const char *allowlist_file;
	enum regex_backend backend;
	const char *workload_class;
	char **paths;
	int path_count;
};

void scan_error(const char *format, ...)
{
	va_list arguments;
	char message[1024];

	va_start(arguments, format);
	vsnprintf(message, sizeof(message), format, arguments);
	va_end(arguments);
	/* One write per message keeps lines whole when threads report together. */
	fprintf(stderr, "kh-scan: %s\n", message);
}

static long logical_cpus(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 ? cpus : 1;
}

enum parse_result { PARSE_RUN, PARSE_EXIT_OK, PARSE_FAILED };

static enum parse_result parse_options(int argc, char **argv, struct options *options)
{
	enum { OPTION_BACKEND = 256, OPTION_WORKLOAD_CLASS, OPTION_VERSION };
	static const struct option long_options[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "allowlist", required_argument, NULL, 'a' },
		{ "backend", required_argument, NULL, OPTION_BACKEND },
		{ "workload-class", required_argument, NULL, OPTION_WORKLOAD_CLASS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPTION_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int option;

	options->threads = logical_cpus();
	if (options->threads > MAX_SCANNER_THREADS)
		options->threads = MAX_SCANNER_THREADS;
	options->allowlist_file = NULL;
	options->backend = BACKEND_AUTO;
	options->workload_class = "files";
	opterr = 0;
	while ((option = getopt_long(argc, argv, "+t:a:h", long_options, NULL)) != -1) {
		char *end;

		switch (option) {
		case 't':
			errno = 0;
			options->threads = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || options->threads < 1 ||
			    options->threads > MAX_SCANNER_THREADS) {
				scan_error("invalid --threads '%s' (expected 1-%d)", optarg,
					   MAX_SCANNER_THREADS);
				return PARSE_FAILED;
			}
			break;
		case 'a':
			options->allowlist_file = optarg;
			break;
		case OPTION_BACKEND:
			if (strcmp(optarg, "auto") == 0) {
				options->backend = BACKEND_AUTO;
			} else if (strcmp(optarg, "pcre2-jit") == 0) {
				options->backend = BACKEND_PCRE2_JIT;
			} else if (strcmp(optarg, "pcre2-interp") == 0) {
				options->backend = BACKEND_PCRE2_INTERP;
			} else {
				scan_error("invalid --backend '%s' (expected auto, pcre2-jit or pcre2-interp)",
					   optarg);
				return PARSE_FAILED;
			}
			break;
		case OPTION_WORKLOAD_CLASS:
			options->workload_class = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return PARSE_EXIT_OK;
		case OPTION_VERSION:
			puts(KH_SCAN_VERSION);
			return PARSE_EXIT_OK;
		case ':':
			scan_error("option '%s' needs a value (see --help)", argv[optind - 1]);
			return PARSE_FAILED;
		default:
			scan_error("unknown option '%s' (see --help)", argv[optind - 1]);
			return PARSE_FAILED;
		}
	}
	if (optind >= argc) {
		scan_error("no PATH given (see --help)");
		return PARSE_FAILED;
	}
	options->paths = argv + optind;
	options->path_count = argc - optind;
	return PARSE_RUN;
}

/* Stats every PATH up front so a typo fails before any work is done. */
static int acquire_sources(const struct options *options, struct source_root *roots)
{
	int failures = 0;

	for (int i = 0; i < options->path_count; i++) {
		struct stat info;

		roots[i].path = options->paths[i];
		if (stat(options->paths[i], &info) != 0) {
			scan_error("cannot access '%s': %s", options->paths[i], strerror(errno));
			failures++;
		} else if (S_ISDIR(info.st_mode)) {
			roots[i].is_directory = true;
		} else if (S_ISREG(info.st_mode)) {
			roots[i].is_directory = false;
		} else {
			scan_error("'%s' is neither a regular file nor a directory", options->paths[i]);
			failures++;
		}
	}
	return failures ? -1 : 0;
}

/* Loads the allowlist and checks every PATH; errors are already printed. */
static int acquire(const struct options *options, struct allowlist *allowlist,
		   struct source_root **roots)
{
	char error[256];

	if (options->allowlist_file &&
	    allowlist_load(allowlist, options->allowlist_file, error, sizeof(error)) != 0) {
		scan_error("%s", error);
		return -1;
	}
	*roots = calloc((size_t)options->path_count, sizeof(**roots));
	if (!*roots) {
		scan_error("out of memory");
		return -1;
	}
	return acquire_sources(options, *roots);
}

static uint64_t config_digest(const struct options *options, const struct allowlist *allowlist)
{
	char settings[64];
	int length = snprintf(settings, sizeof(settings), "threads=%ld backend=%s",
			      options->threads, backend_name(options->backend));
	uint64_t hash = fnv1a_update(FNV1A_OFFSET_BASIS, settings, (size_t)length);

	for (size_t i = 0; i < allowlist->count; i++)
		hash = fnv1a_update(hash, allowlist->globs[i], strlen(allowlist->globs[i]) + 1);
	return hash;
}

static void announce_identity(const struct options *options, const struct allowlist *allowlist,
			      const struct rule_set *rules)
{
	char number[32];

	KH_IDENTITY("binary_version", KH_SCAN_VERSION);
	snprintf(number, sizeof(number), "%016llx", (unsigned long long)rule_set_digest());
	KH_IDENTITY("detector_digest", number);
	snprintf(number, sizeof(number), "%016llx",
		 (unsigned long long)config_digest(options, allowlist));
	KH_IDENTITY("config_digest", number);
	KH_IDENTITY("source_kind", "filesystem");
	KH_IDENTITY("workload_class", options->workload_class);
	KH_IDENTITY("backend_requested", backend_name(options->backend));
	KH_IDENTITY("backend_selected",
		    backend_name(rules->use_jit ? BACKEND_PCRE2_JIT : BACKEND_PCRE2_INTERP));
	KH_IDENTITY("cache_state", "cold");
	KH_IDENTITY("daemon_state", "off");
	snprintf(number, sizeof(number), "%ld", options->threads);
	KH_IDENTITY("scanner_threads", number);
	KH_IDENTITY("reader_threads", "1");
	snprintf(number, sizeof(number), "%ld", logical_cpus());
	KH_IDENTITY("logical_cpus", number);
}

struct scanner_thread {
	pthread_t thread;
	struct chunk_queue *queue;
	struct scan_worker *worker;
};

static void *scanner_main(void *argument)
{
	struct scanner_thread *self = argument;
	struct chunk *chunk;

	while ((chunk = chunk_queue_pop(self->queue)) != NULL) {
		scan_chunk(self->worker, chunk);
		free(chunk->data);
		free(chunk);
	}
	return NULL;
}

/* Runs the reader and the scanners; returns the number of errors seen. */
static unsigned long scan_sources(const struct options *options, const struct rule_set *rules,
				  struct reader *reader, struct finding_list *findings)
{
	size_t thread_count = (size_t)options->threads;
	struct scanner_thread *scanners = calloc(thread_count, sizeof(*scanners));
	struct chunk_queue queue;
	pthread_t reader_thread;
	unsigned long errors = 0;
	size_t capacity = 4 * thread_count;

	/* Enough slots to keep every scanner busy, few enough to bound memory. */
	if (capacity < 8)
		capacity = 8;
	if (capacity > 64)
		capacity = 64;
	if (!scanners || chunk_queue_init(&queue, capacity) != 0) {
		scan_error("out of memory");
		free(scanners);
		return 1;
	}
	reader->queue = &queue;
	for (size_t i = 0; i < thread_count; i++) {
		scanners[i].queue = &queue;
		scanners[i].worker = scan_worker_create(rules);
		if (!scanners[i].worker) {
			scan_error("out of memory");
			KH_SESSION_FINISH(KH_STATE_FAILED);
			exit(SCAN_EXIT_ERROR);
		}
		if (pthread_create(&scanners[i].thread, NULL, scanner_main, &scanners[i]) != 0) {
			scan_error("cannot start scanner thread");
			KH_SESSION_FINISH(KH_STATE_FAILED);
			exit(SCAN_EXIT_ERROR);
		}
	}
	if (pthread_create(&reader_thread, NULL, reader_main, reader) != 0) {
		scan_error("cannot start reader thread");
		KH_SESSION_FINISH(KH_STATE_FAILED);
		exit(SCAN_EXIT_ERROR);
	}
	pthread_join(reader_thread, NULL);
	errors += reader->errors;
	for (size_t i = 0; i < thread_count; i++) {
		pthread_join(scanners[i].thread, NULL);
		if (scan_worker_failed(scanners[i].worker)) {
			scan_error("out of memory while scanning");
			errors++;
		}
		struct finding_list part = scan_worker_take_findings(scanners[i].worker);

		for (size_t f = 0; f < part.count; f++) {
			if (finding_list_append(findings, &part.items[f]) != 0) {
				scan_error("out of memory");
				errors++;
				break;
			}
		}
		finding_list_free(&part);
		scan_worker_destroy(scanners[i].worker);
	}
	chunk_queue_destroy(&queue);
	free(scanners);
	return errors;
}

static int fail(void)
{
	KH_SESSION_FINISH(KH_STATE_FAILED);
	return SCAN_EXIT_ERROR;
}

int main(int argc, char **argv)
{
	struct options options = { 0 };
	struct allowlist allowlist = { 0 };
	struct source_root *roots = NULL;
	struct rule_set rules;
	struct reader reader = { 0 };
	struct finding_list findings = { 0 };
	unsigned long errors;
	char error[256];
	int acquired = -1;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_ACQUIRING);
	enum parse_result parsed;
	{
		KH_SPAN_SCOPE(KH_STAGE_SOURCE_ACQUIRE);
		parsed = parse_options(argc, argv, &options);
		if (parsed == PARSE_RUN)
			acquired = acquire(&options, &allowlist, &roots);
	}
	if (parsed == PARSE_EXIT_OK) {
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		return SCAN_EXIT_CLEAN;
	}
	if (parsed == PARSE_FAILED || acquired != 0) {
		free(roots);
		allowlist_free(&allowlist);
		return fail();
	}

	int built;
	{
		KH_SPAN_SCOPE(KH_STAGE_BACKEND_SELECT);
		built = rule_set_build(&rules, options.backend, error, sizeof(error));
	}
	if (built != 0) {
		scan_error("%s", error);
		free(roots);
		allowlist_free(&allowlist);
		return fail();
	}
	if (KH_TRACING())
		announce_identity(&options, &allowlist, &rules);

	KH_TRANSITION(KH_STATE_SCANNING);
	reader.allowlist = &allowlist;
	reader.roots = roots;
	reader.root_count = (size_t)options.path_count;
	errors = scan_sources(&options, &rules, &reader, &findings);

	KH_TRANSITION(KH_STATE_RESOLVING);
	{
		KH_SPAN_SCOPE(KH_STAGE_RESULT_MERGE);
		findings_merge(&findings, &reader.files);
	}

	KH_TRANSITION(KH_STATE_REPORTING);
	{
		KH_SPAN_SCOPE(KH_STAGE_REPORTING);
		if (findings_report(&findings, &reader.files, stdout) != 0) {
			scan_error("cannot write findings: %s", strerror(errno));
			errors++;
		}
	}

	int status = errors ? SCAN_EXIT_ERROR : findings.count ? SCAN_EXIT_FINDINGS
							       : SCAN_EXIT_CLEAN;

	finding_list_free(&findings);
	file_table_free(&reader.files);
	rule_set_free(&rules);
	allowlist_free(&allowlist);
	free(roots);
	KH_SESSION_FINISH(errors ? KH_STATE_FAILED : KH_STATE_COMPLETED);
	return status;
}
