// SPDX-License-Identifier: MIT
/*
 * What khprof record (cmd_record.c) and khprof attach (cmd_attach.c) share:
 * their options, writing a record per session, and the event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd_trace.h"
#include "commands.h"
#include "duration.h"
#include "exit_codes.h"
#include "fileio.h"
#include "json.h"
#include "live_metrics.h"
#include "latency_text.h"
#include "log.h"
#include "notes.h"
#include "sampler.h"
#include "series.h"
#include "text.h"
#include "usdt_notes.h"

void path_with_tag(const char *path, const char *tag, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');

	if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1))
		dot = path + strlen(path);
	snprintf(out, len, "%.*s%s%s", (int)(dot - path), path, tag, dot);
}

void record_path(const char *path, size_t n, char *out, size_t len)
{
	char tag[24];

	if (n == 1) {
		snprintf(out, len, "%s", path);
		return;
	}
	snprintf(tag, sizeof(tag), ".%zu", n);
	path_with_tag(path, tag, out, len);
}

/*
 * The records an earlier run left beside path (PATH.2, PATH.3, ... up to
 * the first missing one) go before this run writes its first: a series in
 * the directory is always one run's, and `diff` never mixes two.  How
 * many, for output__end to name those this run did not write again.
 */
static size_t remove_earlier_series(const char *path)
{
	size_t removed = 0;

	for (size_t n = 2;; n++) {
		char sibling[PATH_MAX];

		record_path(path, n, sibling, sizeof(sibling));
		if (unlink(sibling) != 0) {
			if (errno != ENOENT)
				log__warn("cannot remove '%s' of an earlier run: %s", sibling,
					  strerror(errno));
			return removed;
		}
		removed++;
	}
}

void output__end(struct output_state *out)
{
	size_t first = out->records + 1, last = out->earlier + 1;
	char a[PATH_MAX], b[PATH_MAX];

	/* PATH.2 ... PATH.records were written again: replaced, as PATH was. */
	if (!out->path || first < 2)
		first = 2;
	if (out->path && out->earlier && first <= last) {
		record_path(out->path, first, a, sizeof(a));
		record_path(out->path, last, b, sizeof(b));
		if (first == last)
			log__note("removed '%s', left by an earlier run beyond this run's %zu "
				  "record%s", a, out->records, out->records == 1 ? "" : "s");
		else
			log__note("removed %zu records ('%s' to '%s') left by an earlier run beyond "
				  "this run's %zu", last - first + 1, a, b, out->records);
	}
	out->earlier = 0;
}

int output__prepare(struct trace_cli *cli)
{
	const char *hint = "";
	char *dir;
	int err;

	if (!cli->output) {
		cli->output = KH_DEFAULT_RECORD;
		cli->default_output = true;
		hint = " (-o PATH writes the record elsewhere)";
	}
	err = file__check_writable(cli->output);
	if (!err)
		return 0;
	if (err == -EISDIR) {
		log__error("cannot write record '%s': it is a directory (-o takes a file; "
			   "'--repeat N -o DIR' a directory)", cli->output);
		return -1;
	}
	dir = strdup(cli->output);
	if (err == -ENOENT && dir)
		log__error("cannot write record '%s': directory '%s' does not exist (create it "
			   "first)", cli->output, dirname(dir));
	else
		log__error("cannot write record '%s': %s%s", cli->output, strerror(-err), hint);
	free(dir);
	return -1;
}

/*
 * The default file's previous record is kept as PATH.old, as perf keeps
 * perf.data.old: a second run in the same directory does not lose the
 * first.  Done when this run's first record is written, so a run without
 * one leaves both as they were.
 */
static void keep_previous(const char *path, char *old, size_t len)
{
	snprintf(old, len, "%s.old", path);
	if (rename(path, old) == 0)
		return;
	if (errno != ENOENT)
		log__warn("cannot keep the previous '%s' as '%s': %s (replacing it)", path, old,
			  strerror(errno));
	old[0] = '\0';
}

void retention__add(struct retention *r, const char *path)
{
	char *copy = strdup(path), **grown;

	if (!copy)
		return;
	/* Written again (a pid used again, a session number again): it is the newest now. */
	for (size_t i = 0; i < r->count; i++) {
		if (strcmp(r->paths[i], path) != 0)
			continue;
		free(r->paths[i]);
		memmove(&r->paths[i], &r->paths[i + 1], (r->count - i - 1) * sizeof(*r->paths));
		r->count--;
		break;
	}
	grown = realloc(r->paths, (r->count + 1) * sizeof(*grown));
	if (!grown) {
		free(copy);
		return;
	}
	r->paths = grown;
	r->paths[r->count++] = copy;
	while (r->keep && r->count > r->keep) {
		if (unlink(r->paths[0]) == 0) {
			r->removed++;
			log__debug("removed '%s', older than the newest %zu records (--keep)",
				   r->paths[0], r->keep);
		} else if (errno != ENOENT) {
			log__warn("cannot remove '%s' (--keep): %s", r->paths[0], strerror(errno));
		}
		free(r->paths[0]);
		memmove(&r->paths[0], &r->paths[1], (r->count - 1) * sizeof(*r->paths));
		r->count--;
	}
}

void retention__free(struct retention *r)
{
	for (size_t i = 0; i < r->count; i++)
		free(r->paths[i]);
	free(r->paths);
	r->paths = NULL;
	r->count = 0;
}

void output__on_profile(const struct kh_profile *p, void *ctx)
{
	struct output_state *out = ctx;
	char *text = profile__render_report(p);
	char path[PATH_MAX], old[PATH_MAX + 8] = "";
	char *json;
	int err;

	out->records++;
	if (out->metrics)
		live_metrics__add_profile(out->metrics, p);
	if (text && !out->quiet)
		fputs(text, stderr);
	free(text);
	profile__print_notes(p, out->quiet_notes);
	if (!out->path)
		return;
	if (out->records == 1 && out->keep_old)
		keep_previous(out->path, old, sizeof(old));
	if (out->records == 1)
		out->earlier = remove_earlier_series(out->path);
	record_path(out->path, out->records, path, sizeof(path));
	json = profile__to_json(p);
	if (!json) {
		log__error("cannot write record '%s': out of memory", path);
		out->write_failed = true;
		return;
	}
	err = file__write_atomic(path, json, strlen(json));
	free(json);
	if (err) {
		log__error("cannot write record '%s': %s", path, strerror(-err));
		out->write_failed = true;
		return;
	}
	if (out->retain)
		retention__add(out->retain, path);
	if (out->keep_old) {
		/* Nobody named the file: say where it is, as perf does. */
		log__note("record written to '%s'%s%s%s", path, old[0] ? " (the previous one is "
			  "now '" : "", old, old[0] ? "')" : "");
	}
}

static int parse_identity(const char *command, struct trace_cli *cli, char *arg)
{
	char *eq = strchr(arg, '=');
	struct kh_profile scratch;
	int err;

	if (!eq || eq == arg) {
		usage_error(command, "bad --identity '%s': expected KEY=VALUE", arg);
		return -EINVAL;
	}
	if (cli->override_count == MAX_OVERRIDES) {
		usage_error(command, "too many --identity options (at most %d)", MAX_OVERRIDES);
		return -E2BIG;
	}
	*eq = '\0';
	/* Validate now, so a typo fails before anything runs. */
	profile__init(&scratch);
	err = identity__set(&scratch.identity, arg, eq + 1);
	profile__free(&scratch);
	if (err) {
		usage_error(command, "bad --identity '%s': not a RunIdentity field or bad value '%s'",
			    arg, eq + 1);
		return -EINVAL;
	}
	cli->overrides[cli->override_count++] = (struct identity_override){ arg, eq + 1 };
	return 0;
}

/* attach --duration's bounds (the same syntax as --interval's). */
#define KH_DURATION_MIN_NS 1000000ull
#define KH_DURATION_MAX_NS (1000ull * 3600 * 1000000000)

/* Strict decimal in [min, max] for option: "5", not "5x", "-1" or " 5". */
static int parse_count(const char *command, const char *option, const char *text, unsigned min,
		       unsigned max, unsigned *out)
{
	uint64_t value;

	if (kh_parse_u64(text, &value) || value < min || value > max) {
		usage_error(command, "bad %s '%s': expected a whole number from %u to %u", option,
			    text, min, max);
		return -EINVAL;
	}
	*out = (unsigned)value;
	return 0;
}

/* --sample=HZ: a whole number of samples per second per thread. */
static int parse_sample_rate(const char *command, const char *text, uint64_t *hz)
{
	if (kh_parse_u64(text, hz) || *hz == 0 || *hz > KH_SAMPLE_MAX_HZ) {
		usage_error(command, "bad sampling rate '%s': expected 1 to %d samples per second "
			    "(--sample=99)", text, KH_SAMPLE_MAX_HZ);
		return -EINVAL;
	}
	return 0;
}

int parse_cli(int argc, char **argv, bool attach, struct trace_cli *cli)
{
	const char *command = attach ? "attach" : "record";
	enum { OPT_IDENTITY = 256, OPT_MODE, OPT_DURATION, OPT_REPEAT, OPT_WARMUP, OPT_APPEND,
	       OPT_USER, OPT_INTERVAL, OPT_SERVE, OPT_EXE, OPT_FROM_START, OPT_FOLLOW_FORKS,
	       OPT_NO_STOP, OPT_NO_FOLLOW_FORKS, OPT_SAMPLE, OPT_ALL, OPT_CONTAINER, OPT_KEEP };
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "identity", required_argument, NULL, OPT_IDENTITY },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "append", no_argument, NULL, OPT_APPEND },
		{ "user", required_argument, NULL, OPT_USER },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "serve", required_argument, NULL, OPT_SERVE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "from-start", no_argument, NULL, OPT_FROM_START },
		{ "no-stop", no_argument, NULL, OPT_NO_STOP },
		{ "no-follow-forks", no_argument, NULL, OPT_NO_FOLLOW_FORKS },
		{ "follow-forks", no_argument, NULL, OPT_FOLLOW_FORKS },
		{ "sample", optional_argument, NULL, OPT_SAMPLE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t duration_ns;
	uint32_t mode;
	char *end;
	int c;

	memset(cli, 0, sizeof(*cli));
	cli->mode = KH_MODE_BATCH;
	cli->mode_is_default = true;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:p:qv", options, NULL)) != -1) {
		if (c == ':') {
			usage_error(command, "option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		}
		if (optarg && option_value_refused(argv, optind, optarg))
			return -EINVAL;
		switch (c) {
		case 'o':
			cli->output = optarg;
			break;
		case 'p':
			if (!attach)
				goto bad_option;
			errno = 0;
			cli->pid = (pid_t)strtol(optarg, &end, 10);
			if (errno || *end || cli->pid <= 0) {
				usage_error(command, "bad PID '%s': expected a process id", optarg);
				return -EINVAL;
			}
			break;
		case OPT_DURATION:
			if (!attach)
				goto bad_option;
			if (kh_parse_duration_ns(optarg, KH_DURATION_MIN_NS, KH_DURATION_MAX_NS,
						 &duration_ns)) {
				usage_error(command, "bad duration '%s': expected a duration, 1ms to "
					    "1000h (5s, 100ms, 1m, or 5 for five seconds)", optarg);
				return -EINVAL;
			}
			cli->duration_s = (double)duration_ns / 1e9;
			break;
		case OPT_IDENTITY:
			if (parse_identity(command, cli, optarg))
				return -EINVAL;
			break;
		case OPT_MODE:
			cli->mode_is_default = false;
			if (kh_trace_mode__parse(optarg, &mode)) {
				usage_error(command, "unknown mode '%s' (batch, span or pair)", optarg);
				return -EINVAL;
			}
			cli->mode = mode;
			break;
		case OPT_REPEAT:
			if (attach)
				goto bad_option;
			if (parse_count(command, "--repeat", optarg, 1, MAX_REPEAT, &cli->repeat))
				return -EINVAL;
			break;
		case OPT_WARMUP:
			if (attach)
				goto bad_option;
			if (parse_count(command, "--warmup", optarg, 0, MAX_REPEAT, &cli->warmup))
				return -EINVAL;
			break;
		case OPT_APPEND:
			if (attach)
				goto bad_option;
			cli->append = true;
			break;
		case OPT_USER:
			if (attach)
				goto bad_option;
			cli->user = optarg;
			break;
		case OPT_INTERVAL:
			if (kh_parse_duration_ns(optarg, KH_INTERVAL_MIN_NS, KH_INTERVAL_MAX_NS,
						 &cli->interval_ns)) {
				usage_error(command, "bad interval '%s': expected a duration, 10ms to "
					    "1h (100ms, 1s, 2.5s, or 2 for two seconds)", optarg);
				return -EINVAL;
			}
			break;
		case OPT_SERVE:
			cli->serve = optarg;
			break;
		case OPT_EXE:
			if (!attach)
				goto bad_option;
			cli->exe = optarg;
			break;
		case OPT_ALL:
			if (!attach)
				goto bad_option;
			cli->all = true;
			break;
		case OPT_CONTAINER:
			if (!attach)
				goto bad_option;
			cli->container = optarg;
			break;
		case OPT_KEEP:
			if (!attach)
				goto bad_option;
			if (parse_count(command, "--keep", optarg, 1, 10000000, &cli->keep))
				return -EINVAL;
			break;
		case OPT_FROM_START:
			if (!attach)
				goto bad_option;
			cli->from_start = true;
			break;
		case OPT_NO_STOP:
			if (!attach)
				goto bad_option;
			cli->no_stop = true;
			break;
		case OPT_NO_FOLLOW_FORKS:
			if (attach)
				goto bad_option;
			cli->no_follow_forks = true;
			break;
		case OPT_FOLLOW_FORKS:
			if (attach)
				goto bad_option;
			cli->follow_forks = true;
			break;
		case OPT_SAMPLE:
			cli->sample_hz = KH_SAMPLE_DEFAULT_HZ;
			if (optarg && parse_sample_rate(command, optarg, &cli->sample_hz))
				return -EINVAL;
			break;
		case 'q':
			cli->quiet = true;
			cli->quiet_asked = true;
			break;
		case 'v':
			khprof_verbose = true;
			break;
		default:
			usage_error(command, "unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if ((cli->warmup || cli->append) && !cli->repeat) {
		usage_error(command, "%s needs --repeat", cli->warmup ? "--warmup" : "--append");
		return -EINVAL;
	}
	if (cli->repeat && cli->serve) {
		usage_error(command, "--serve cannot be used with --repeat (each run is its own "
			    "process)");
		return -EINVAL;
	}
	if (cli->follow_forks && cli->no_follow_forks) {
		usage_error(command, "--follow-forks and --no-follow-forks contradict each other");
		return -EINVAL;
	}
	if (cli->repeat && cli->follow_forks) {
		usage_error(command, "--follow-forks cannot be used with --repeat (a run's records "
			    "would not be one file)");
		return -EINVAL;
	}
	if (cli->repeat && !cli->output) {
		usage_error(command, "--repeat needs -o DIR for the records");
		return -EINVAL;
	}
	cli->first_arg = optind;
	if (attach && (!!cli->pid + !!cli->exe + cli->all) > 1) {
		usage_error(command, "attach takes one of -p PID, --exe PATH and --all");
		return -EINVAL;
	}
	if ((cli->from_start || cli->no_stop) && !cli->exe && !cli->all) {
		usage_error(command, "%s needs --exe or --all",
			    cli->from_start ? "--from-start" : "--no-stop");
		return -EINVAL;
	}
	if (cli->container && !cli->exe && !cli->all) {
		usage_error(command, "--container needs --exe PATH (a path inside the container) or --all");
		return -EINVAL;
	}
	if (cli->keep && ((!cli->exe && !cli->all) || !cli->output)) {
		usage_error(command, "--keep needs --exe or --all, and -o for the records");
		return -EINVAL;
	}
	if (cli->from_start && cli->no_stop) {
		usage_error(command, "--from-start and --no-stop contradict each other");
		return -EINVAL;
	}
	if (attach && ((cli->pid == 0 && !cli->exe && !cli->all) || optind != argc)) {
		if (optind == argc)
			usage_error(command, "attach needs -p PID, --exe PATH or --all");
		else
			usage_error(command, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!attach && optind >= argc) {
		usage_error(command, "record needs a command to run after '--'");
		return -EINVAL;
	}
	return 0;
bad_option:
	/*
	 * An option of the other command (all that jump here): name it, not its value (`attach
	 * --user x` said "unknown option 'x'"), cut at a `=VALUE` (or after a short option's letter).
	 */
	{
		const char *opt = optarg && optind >= 2 && argv[optind - 1] == optarg ?
					  argv[optind - 2] : argv[optind - 1];
		int len = opt[1] == '-' ? (int)strcspn(opt, "=") : 2; /* -p5: -p */

		usage_error(command, "option '%.*s' is %s's, not %s's", len, opt,
			    attach ? "record" : "attach", command);
	}
	return -EINVAL;
}

void choose_follow_for(const char *path, struct trace_cli *cli)
{
	struct usdt_note_list notes;
	bool probes = false;
	char pattern[PATH_MAX];
	int err;

	if (cli->follow_forks || cli->no_follow_forks || cli->repeat)
		return;
	/* A script is no ELF file: it has no probes either. */
	err = usdt_notes__read(path, &notes);
	if (err == -EINVAL)
		return; /* malformed: attaching says so, and the command does not run */
	if (err == 0) {
		for (size_t i = 0; i < notes.count && !probes; i++)
			probes = strcmp(notes.notes[i].provider, "keyhog") == 0;
		usdt_notes__free(&notes);
	}
	if (probes)
		return;
	/*
	 * A wrapper (sh -c, make, a test runner) runs the instrumented
	 * program in a child: follow them, as perf follows children, so that
	 * the common CI case is recorded without a flag.  A scanner with
	 * probes of its own keeps to its own process: its children are
	 * rarely instrumented, and each followed one costs a tracer.
	 */
	cli->follow_forks = cli->follow_chosen = true;
	path_with_tag(cli->output ? cli->output : KH_DEFAULT_RECORD, ".PID", pattern,
		      sizeof(pattern));
	log__note("'%s' has no keyhog probes: following the processes it starts, each "
		  "instrumented one recorded as '%s' (--no-follow-forks: not)", path, pattern);
}

/*
 * Clients that hand the container to a daemon khprof did not start: the
 * processes it runs are the daemon's children, not COMMAND's, so no fork
 * of COMMAND leads to them.  (runc, crun, podman, unshare, chroot and
 * nsenter start them themselves and are followed.)
 */
static const struct {
	const char *command;
	const char *daemon;
} daemon_clients[] = {
	{ "docker", "dockerd and containerd" },
	{ "nerdctl", "containerd" },
	{ "ctr", "containerd" },
	{ "crictl", "the node's CRI runtime (containerd, CRI-O)" },
	{ "kubectl", "the kubelet and its CRI runtime" },
	{ "podman-remote", "the Podman service" },
};

void note_daemon_client(const char *path)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

	for (size_t i = 0; i < sizeof(daemon_clients) / sizeof(daemon_clients[0]); i++)
		if (!strcmp(name, daemon_clients[i].command))
			log__warn("'%s' hands its containers to %s, which khprof did not start: "
				  "their processes are not followed; 'khprof attach --all' or "
				  "'khprof attach --exe PATH --container ID' traces them "
				  "(docs/FLEET.md)", name, daemon_clients[i].daemon);
}

void choose_mode_for(const char *path, struct trace_cli *cli)
{
	struct usdt_note_list notes;
	bool spans, batch;

	if (usdt_notes__read(path, &notes) != 0)
		return; /* attaching reads it again and says what is wrong */
	spans = usdt_notes__has(&notes, "keyhog", "span") ||
		usdt_notes__has(&notes, "keyhog", "span_enter");
	batch = usdt_notes__has(&notes, "keyhog", "batch");
	usdt_notes__free(&notes);
	/*
	 * A program that fires the probes by hand (<sys/sdt.h>, another
	 * language) has span probes but no header buffer to batch from: in
	 * batch mode it would be recorded without a single span.
	 */
	if (!spans || batch || cli->mode != KH_MODE_BATCH)
		return;
	if (cli->mode_is_default) {
		log__note("'%s' has span probes but no batch probe (not built with "
			  "keyhog_profile.h): tracing in span mode", path);
		cli->mode = KH_MODE_SPAN;
		cli->mode_is_default = false;
		return;
	}
	log__warn("'%s' has span probes but no batch probe (not built with keyhog_profile.h): "
		  "--mode batch sees none of its spans (--mode span or pair does)", path);
}

/* The live line of --interval, so that a long trace is not silent until its end. */
static void on_interval(const struct kh_profile *p, const struct kh_interval *iv, void *ctx)
{
	const struct output_state *out = ctx;
	char line[256];

	if (out->quiet)
		return;
	interval__render_line(iv, p->identity.logical_cpus, line, sizeof(line));
	fprintf(stderr, "khprof: %s\n", line);
}

void trace_options_from(const struct trace_cli *cli, const char *output,
			struct output_state *out, struct trace_options *opts)
{
	out->path = output;
	out->keep_old = output && cli->default_output && output == cli->output;
	out->quiet = cli->quiet;
	out->quiet_notes = cli->quiet_asked;
	opts->mode = cli->mode;
	opts->mode_is_default = cli->mode_is_default;
	opts->quiet = cli->quiet_asked;
	opts->overrides = cli->overrides;
	opts->override_count = cli->override_count;
	opts->on_profile = output__on_profile;
	opts->ctx = out;
	opts->interval_ns = cli->interval_ns;
	opts->on_interval = on_interval;
	opts->sample_hz = cli->sample_hz;
}

void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

static int block_signals(sigset_t *old)
{
	sigset_t set;

	stop_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, old))
		return -errno;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* One line for a failed setup step; -errno. */
static int loop__fail(const char *what, pid_t pid)
{
	int err = errno;

	log__error("cannot watch PID %d: %s failed: %s", (int)pid, what, strerror(err));
	return -err;
}

int serve_open(const struct trace_cli *cli, struct output_state *out, struct event_loop *loop)
{
	int err;

	if (!cli->serve)
		return 0;
	err = live_metrics__open(&out->metrics, cli->serve);
	if (err)
		return err == -EINVAL ? KHPROF_EXIT_USAGE : KHPROF_EXIT_FAILURE;
	loop->metrics = out->metrics;
	return 0;
}

int loop__open(struct event_loop *loop, struct tracer *t, pid_t pid, sigset_t *old)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fds[4];

	loop->epoll_fd = loop->signal_fd = loop->pid_fd = -1;
	loop->signal_fd = block_signals(old);
	if (loop->signal_fd < 0)
		return loop__fail("signalfd", pid);
	loop->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (loop->pid_fd < 0)
		return errno == ESRCH ? (log__error("cannot watch PID %d: no such process",
						    (int)pid), -ESRCH)
				      : loop__fail("pidfd_open", pid);
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epoll_fd < 0)
		return loop__fail("epoll_create1", pid);
	if (tracer__poll(t, 0) < 0)
		return -EIO; /* the tracer said why */
	fds[0] = loop->signal_fd;
	fds[1] = loop->pid_fd;
	fds[2] = tracer__epoll_fd(t);
	for (int i = 0; i < 3; i++) {
		ev.data.fd = fds[i];
		if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			return loop__fail("epoll_ctl", pid);
}

	if (loop->signal_fd < 0 || loop->pid_fd < 0 || loop->epoll_fd < 0 || tracer__poll(t, 0) < 0)
		return -errno;
	ev.data.fd = loop->signal_fd;
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->signal_fd, &ev);
	ev.data.fd = loop->pid_fd;
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->pid_fd, &ev);
	ev.data.fd = tracer__epoll_fd(t);
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	if (loop->metrics) {
		ev.data.fd = live_metrics__fd(loop->metrics);
		epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	if (loop->extra.fd >= 0) {
		ev.data.fd = loop->extra.fd;
		epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	return 0;
}

void loop__close(struct event_loop *loop, const sigset_t *old)
{
	if (loop->epoll_fd >= 0)
		close(loop->epoll_fd);
	if (loop->pid_fd >= 0)
		close(loop->pid_fd);
	if (loop->signal_fd >= 0)
		close(loop->signal_fd);
	sigprocmask(SIG_SETMASK, old, NULL);
}

bool signal_reached_group(int signo, int code)
{
	/*
	 * Ctrl-C: the terminal sent SIGINT to the whole foreground group, the
	 * command included (the kernel's SI_KERNEL).  Sent to khprof alone
	 * (kill, SI_USER), it is passed on like SIGTERM, as perf record ends
	 * its workload: the command decides, and its end ends the trace.
	 */
	return signo == SIGINT && code == SI_KERNEL;
}

enum loop_end loop__run(struct event_loop *loop, struct tracer *t, pid_t forward_to,
			uint64_t deadline_ns)
{
	for (;;) {
		struct epoll_event events[4];
		uint64_t now = tracer__now_ns(), wake = tracer__sample_due(t, now, 0);
		int n;

		if (deadline_ns && now >= deadline_ns)
			return LOOP_TIMEOUT;
		n = epoll_wait(loop->epoll_fd, events, 4, tracer__wait_ms(now, wake, deadline_ns));
		if (n < 0 && errno != EINTR)
			return LOOP_PROCESS_EXITED;
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == loop->pid_fd) {
				tracer__poll(t, 0);
				return LOOP_PROCESS_EXITED;
			}
			if (fd == loop->signal_fd) {
				struct signalfd_siginfo si;

				if (read(loop->signal_fd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (!forward_to)
					return LOOP_SIGNALLED;
				if (!signal_reached_group(si.ssi_signo, (int)si.ssi_code))
					kill(forward_to, si.ssi_signo);
				continue;
			}
			if (loop->extra.fd >= 0 && fd == loop->extra.fd) {
				loop->extra.service(loop->extra.ctx);
				continue;
			}
			if (loop->metrics && fd == live_metrics__fd(loop->metrics)) {
				live_metrics__service(loop->metrics);
				continue;
			}
			tracer__poll(t, 0);
		}
	}
}

int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return KHPROF_EXIT_FAILURE;
}

int finish_output(struct output_state *out, int code)
{
	output__end(out);
	return out->write_failed && code == 0 ? KHPROF_EXIT_FAILURE : code;
}
