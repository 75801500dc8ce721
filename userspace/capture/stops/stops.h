/* SPDX-License-Identifier: MIT */
/*
 * stops.h - processes khprof stops, and how each is let go, whatever
 * becomes of khprof.
 *
 * khprof stops a process (SIGSTOP, from a BPF program: bpf/stops.bpf.h) to
 * catch it before it runs on: at the loader until a library's probes are
 * attached (record), at a watched file's start (attach --exe), at a fork
 * until the child is made safe (sites.h) or followed, after a vforked
 * child's execve (--follow-forks).  khprof lets it go (SIGCONT) once it is
 * attached.  A khprof that is killed (SIGKILL, the OOM killer, a crash) or
 * stuck (stopped, descheduled, blocked) cannot; the stop keeper can.
 *
 * The keeper is a small process of khprof's own, started once per command
 * before anything is stopped (stops__open): khprof's binary run again,
 * with nothing of khprof's but the stops' table, its notes, the probe
 * sites' table and a pidfd of khprof.  Every stop is entered in the table
 * (a BPF hash map every tracer of the command shares) and noted in a ring
 * buffer that wakes the keeper, before the SIGSTOP is sent: so the keeper
 * knows every stop without khprof's help.  Whoever deletes a stop's entry
 * first, khprof or the keeper, lets the process go, and only they: a stop
 * ends once.  The keeper lets a process go
 *  - when khprof has ended: its pidfd turns readable (the kernel's doing,
 *    whatever ended it), and every stop still in the table is let go;
 *  - when a stop has lasted the limit (1 s by default, --stop-limit): the
 *    process runs on untraced, and khprof, when it comes to the stop,
 *    finds it gone and counts it ("let go").
 * A forked child is made safe first (sites.h) by whoever lets it go.  The
 * process keeps whatever else happens to it: it gets SIGCONT only if it is
 * still the process that was stopped (its start time), and not if someone
 * else asked it to stop meanwhile (a stop signal pending: the job-control
 * shell's Ctrl-Z is theirs to end).
 */
#ifndef KHPROF_STOPS_H
#define KHPROF_STOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "khprof_shared.h"

#define STOPS_LIMIT_DEFAULT_NS 1000000000ull

struct stops;
struct bpf_map;

/*
 * The stops of one command: their maps and the site table, and the keeper
 * started (limit_ns 0: no limit, only khprof's end lets them go).
 * hold_group: the processes stopped run in khprof's process group
 * (record's COMMAND), which the keeper then joins (keeper.c, anchor);
 * otherwise it keeps out of it, and of a kill aimed at it.  0, or -errno
 * after one line saying why (khprof then stops nothing).
 */
int stops__open(struct stops **out, uint64_t limit_ns, bool hold_group);
/* Says how many stops the keeper let go, and frees s; the keeper outlives it. */
void stops__close(struct stops *s);
/*
 * The keeper starts on a thread while khprof loads its programs; before
 * anything that stops a process is attached, this waits until it has
 * started.  0, or -errno after one line saying why (s NULL: 0).
 */
int stops__ready(struct stops *s);

/*
 * A tracer's BPF object, before its load: its kh_stops and kh_stop_notes
 * become the command's (every tracer's stops in one table for the keeper).
 * 0 or -errno.
 */
int stops__share_maps(const struct stops *s, struct bpf_map *table, struct bpf_map *notes);

/* The stop a control event says was made (false: the event stopped nothing). */
bool stops__of_event(const struct kh_event *e, pid_t stopped, struct kh_stop_key *key);

/*
 * khprof comes to a stop: false when it is no longer held (the keeper let
 * it go after the limit; counted), and there is nothing to do for it;
 * else *local is the process's pid in khprof's PID namespace (the key has
 * the kernel's).
 */
bool stops__take_up(struct stops *s, const struct kh_stop_key *key, pid_t *local);
/* Drops a stop khprof leaves as it is (a process's own SIGSTOP): nobody lets it go. */
void stops__forget(struct stops *s, const struct kh_stop_key *key);

/*
 * Lets the process a stop holds go.  true when khprof ended the stop;
 * false when the keeper had already let it go (counted in stops__let_go),
 * or the process is gone.
 */
bool stops__release(struct stops *s, const struct kh_stop_key *key);

/* "loader", "start", "fork", "exec", "self", "identity": a stop's kind as the test hooks and -v say it. */
const char *stops__kind_name(uint32_t kind);

/* Stops the keeper let go before khprof came to them, so far. */
size_t stops__let_go(const struct stops *s);

/* sites__publish on the command's site table (attach.c, before it links path). */
int stops__publish_sites(struct stops *s, const char *path, const __u64 *offsets,
			 size_t count);
/* sites__restore on it: a stopped forked child made safe; restored sites or -errno. */
int stops__make_safe(struct stops *s, pid_t pid);

/*
 * Shared by khprof and its keeper: ends the stop key names if its entry
 * is still in the table (map_fd), for whoever takes the entry; a forked
 * child is made safe first with sites when they are given.  late (the
 * keeper): the process is checked to be the one stopped (its start time).
 */
enum stop_end {
	STOP_ENDED,       /* taken and let go (SIGCONT) */
	STOP_HANDED_OVER, /* taken; stopped by someone else meanwhile, left to them */
	STOP_GONE,        /* taken; the process is gone (or its pid is another's now) */
	STOP_NOT_HELD,    /* someone else took it first */
};
struct site_table;
enum stop_end stops__end(int map_fd, const struct kh_stop_key *key, bool late,
			 struct site_table *sites);
/* "ended", "handed-over", "gone", "not-held": for the test hooks. */
const char *stops__end_name(enum stop_end end);

/*
 * The keeper itself: the program khprof's binary runs as when started as
 * STOPS_KEEPER_NAME (main.c).  Returns its exit code.
 */
#define STOPS_KEEPER_NAME "khprof-keeper"
int stops__keeper_main(int argc, char **argv);

#endif
