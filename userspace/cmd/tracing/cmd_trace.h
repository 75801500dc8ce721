/* SPDX-License-Identifier: MIT */
/*
 * What `khprof record` (cmd_record.c) and `khprof attach` (cmd_attach.c)
 * share: their command line, where records go, and the event loop that
 * runs while the traced process does.
 */
#ifndef KHPROF_CMD_TRACE_H
#define KHPROF_CMD_TRACE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace.h"

#define MAX_OVERRIDES 32
#define MAX_REPEAT 10000

struct trace_cli {
	const char *output;
	struct identity_override overrides[MAX_OVERRIDES];
	size_t override_count;
	enum kh_trace_mode mode;
	bool mode_is_default;
	pid_t pid;
	double duration_s;
	unsigned repeat; /* 0: a single run, -o names a file */
	unsigned warmup;
	bool append;     /* --repeat adds to the runs already in its directory */
	const char *user; /* --user: whom COMMAND runs as (NULL: the default) */
	bool quiet;
	bool quiet_asked; /* -q itself, not --repeat's: silences notes too */
	uint64_t interval_ns; /* --interval; 0: no series */
	const char *serve; /* --serve ADDR:PORT, or NULL */
	const char *exe;   /* attach --exe PATH, or NULL */
	const char *container; /* attach --exe PATH --container WHICH, or NULL */
	bool all;          /* attach --all */
	unsigned keep;     /* attach --keep N; 0: not given */
	bool from_start;   /* attach --exe --from-start (the default) */
	bool no_stop;      /* attach --exe --no-stop: new processes are not stopped */
	bool follow_forks; /* record --follow-forks (follow.h), or chosen for a wrapper */
	bool follow_chosen; /* follow_forks set because COMMAND has no probes */
	bool no_follow_forks; /* record --no-follow-forks */
	bool default_output; /* no -o: output is KH_DEFAULT_RECORD */
	uint64_t sample_hz; /* --sample[=HZ]; 0: no stack samples */
	int first_arg;
};

struct live_metrics;

/*
 * --keep N (attach --all and --exe): the newest N records this run wrote
 * stay on disk, and the oldest goes when one more is written, so that a
 * watch that runs for months stays bounded.  Files of earlier runs are
 * never touched.
 */
struct retention {
	size_t keep;    /* 0: no bound */
	char **paths;   /* the records written and still kept, oldest first */
	size_t count;
	size_t removed; /* records removed so far */
};

/* path was just written: kept, and the oldest removed beyond r->keep. */
void retention__add(struct retention *r, const char *path);
void retention__free(struct retention *r);

struct output_state {
	const char *path;
	bool keep_old;   /* the default file: the previous one becomes PATH.old */
	bool quiet;
	bool quiet_notes; /* -q itself (--repeat makes quiet alone): the records' notes too */
	size_t records;
	size_t earlier;  /* an earlier run's PATH.2 ... removed at the first record */
	bool write_failed;
	struct live_metrics *metrics; /* --serve: finished records join its totals */
	struct retention *retain;     /* --keep, or NULL */
};

/* A tracer_profile_fn for ctx an output_state: report, notes, record file. */
void output__on_profile(const struct kh_profile *p, void *ctx);
/*
 * At the end of out's trace: names the records of an earlier run's series
 * that this run removed and did not write again (those it wrote again
 * were replaced, as PATH is).
 */
void output__end(struct output_state *out);
/* PATH for the first record, PATH with ".N" before the extension after. */
void record_path(const char *path, size_t n, char *out, size_t len);
/* PATH with tag (".4242") before its extension, or at its end. */
void path_with_tag(const char *path, const char *tag, char *out, size_t len);

/*
 * cli->output, or KH_DEFAULT_RECORD without -o, must be writable before
 * anything runs: 0, or -1 after one line saying why (exit code 2).
 */
int output__prepare(struct trace_cli *cli);

/* Parses record's (attach false) or attach's options; one line on a mistake. */
int parse_cli(int argc, char **argv, bool attach, struct trace_cli *cli);

/*
 * Without --follow-forks or --no-follow-forks, and not with --repeat: a
 * COMMAND without keyhog probes (a shell, make, a script) has the
 * processes it starts followed, with a note (docs/PROBES.md).
 */
void choose_follow_for(const char *path, struct trace_cli *cli);

/*
 * One line when COMMAND is a client whose containers a daemon starts
 * (docker, nerdctl...): record cannot follow into them; what can.
 */
void note_daemon_client(const char *path);

/*
 * The default batch mode turns to span mode for an executable with span
 * probes and no batch probe (a <sys/sdt.h> program: docs/PROBES.md), with
 * a note; an explicit --mode batch gets a warning instead.
 */
void choose_mode_for(const char *path, struct trace_cli *cli);

/* Records go to out, written to output (NULL: not written). */
void trace_options_from(const struct trace_cli *cli, const char *output,
			struct output_state *out, struct trace_options *opts);
/* The exit code once out's records are written: 1 if one could not be. */
int finish_output(struct output_state *out, int code);

/* The signals that end a trace: khprof handles them instead of dying. */
void stop_signals(sigset_t *set);

/*
 * More descriptors for the loop to service when readable: record
 * --follow-forks' tracers (follow.c).  A callback, so that the loop does not
 * depend on what builds on it: follow.c and process_trace.c use this file.
 */
struct loop_source {
	int fd; /* -1: none */
	void (*service)(void *ctx);
	void *ctx;
};

struct event_loop {
	int epoll_fd;
	int signal_fd;
	int pid_fd;
	struct live_metrics *metrics; /* --serve, or NULL */
	struct loop_source extra;     /* --follow-forks, or fd -1 */
};

#define EVENT_LOOP_INIT { -1, -1, -1, NULL, { -1, NULL, NULL } }

/*
 * --serve: listening before tracing starts, so that a bad or busy address
 * fails first; served from loop.  0, or the exit code (2 for an address
 * that is not one).
 */
int serve_open(const struct trace_cli *cli, struct output_state *out, struct event_loop *loop);

/*
 * Whether a stop signal (code: its si_code) already reached the traced
 * command with khprof: SIGINT from the terminal.  Any other is forwarded.
 */
bool signal_reached_group(int signo, int code);

/* Watches pid, the stop signals (blocked; old mask in *old) and t's events. */
int loop__open(struct event_loop *loop, struct tracer *t, pid_t pid, sigset_t *old);
void loop__close(struct event_loop *loop, const sigset_t *old);

enum loop_end { LOOP_PROCESS_EXITED, LOOP_SIGNALLED, LOOP_TIMEOUT };

/*
 * Runs until the process exits, a signal arrives (forwarded to the child
 * with forward_to set) or the deadline passes (0: none).
 */
enum loop_end loop__run(struct event_loop *loop, struct tracer *t, pid_t forward_to,
			uint64_t deadline_ns);

/* A wait status as record's exit code: the status, 128+N for signal N. */
int exit_code_of(int status);

#endif
