// SPDX-License-Identifier: MIT
/* khprof attach: profiles a running process until it exits or khprof stops. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach_exe.h"
#include "cmd_trace.h"
#include "commands.h"
#include "exit_codes.h"
#include "live_metrics.h"
#include "log.h"
#include "privileges.h"
#include "procfs.h"

static const char attach_usage[] =
	"usage: khprof attach -p PID [-o PATH] [--duration DURATION] [--identity KEY=VALUE]...\n"
	"                     [--mode MODE] [--interval DURATION] [--serve [ADDR:]PORT]\n"
	"                     [--sample[=HZ]] [-q] [-v]\n"
	"       khprof attach --exe PATH [--container WHICH] [--no-stop] [--keep N] [same options]\n"
	"       khprof attach --all [--container WHICH] [--no-stop] [--keep N] [same options]\n"
	"\n"
	"Profiles a running process until Ctrl-C (SIGINT), SIGTERM, the duration or\n"
	"the process's exit, and leaves the process running.  A session that was already running when khprof attached\n"
	"is recorded from the moment the probes are live, in the state the program\n"
	"says it is in, and marked as started mid-session.  khprof detaches first,\n"
	"then reads the spans the threads still buffer (batch mode): every span\n"
	"that ended before the detach is in the record.  In batch mode a thread\n"
	"hands its spans over 256 at a time, so an --interval series is as coarse\n"
	"as the batches; --mode span sees every span when it ends.\n"
	"\n"
	"   -p PID               the process to trace\n"
	"   --exe PATH           every process running the executable PATH or with the\n"
	"                        library PATH loaded, those running now and those that\n"
	"                        start later; a new one is stopped at its first\n"
	"                        instruction until it is attached (1-40 ms), so even\n"
	"                        a process of a few milliseconds is recorded whole\n"
	"   --container WHICH    with --exe: PATH is the path inside that container, and\n"
	"                        only its processes are traced; with --all: only the\n"
	"                        processes of that container, or of a cgroup and those\n"
	"                        below it.  WHICH: a host PID of a process in it, its id\n"
	"                        (64 hex digits, or the first 12 or more), or its cgroup\n"
	"                        path (/sys/fs/cgroup/kubepods.slice); docs/FLEET.md\n"
	"   --all                every process of the host that maps an ELF file with\n"
	"                        keyhog probes, in any container, running now or started\n"
	"                        later (stopped at its execve until attached; a file\n"
	"                        without probes is then never stopped again), each in\n"
	"                        records of its own; with --serve, every family carries\n"
	"                        a container label (docs/FLEET.md)\n"
	"   --keep N             with --exe or --all and -o: keep the newest N records\n"
	"                        this run wrote, removing the oldest (--all: 1000 by default)\n"
	"   --no-stop            with --exe or --all: do not stop new processes (an interactive\n"
	"                        shell with job control reports its foreground job as\n"
	"                        stopped); what a process does before it is attached\n"
	"                        is not seen.  --from-start, the default, is accepted\n"
	"   -o PATH              write the JSON record(s) to PATH (as for record; without\n"
	"                        -o, khprof.json here, the previous one kept as\n"
	"                        khprof.json.old); with --exe and --all, PATH with .PID\n"
	"                        before the extension per process, and no record without -o\n"
	"   --duration DURATION  stop after DURATION (5s, 100ms, 1m; a bare number is\n"
	"                        seconds: 2.5)\n"
	"   --identity KEY=VALUE fill or override a RunIdentity field (repeatable)\n"
	"   --mode MODE          batch (default), span or pair\n"
	"   --interval DURATION  sample the session every DURATION (10ms to 1h: 100ms, 1s,\n"
	"                        or 2 for two seconds)\n"
	"                        into the record and print a line per interval on stderr\n"
	"   --sample[=HZ]        also sample every thread's user stack HZ times per second\n"
	"                        of its CPU time (default 99), tagged with the open stage\n"
	"                        (docs/SAMPLING.md); threads started later too; with\n"
	"                        --exe, each process in its own record\n"
	"   --serve [ADDR:]PORT  serve live metrics at http://ADDR:PORT/metrics while\n"
	"                        tracing (ADDR defaults to 127.0.0.1; docs/FLEET.md)\n"
	"   -q, --quiet          do not print the text reports, interval lines or notes\n"
	"                        (the clock, probe sites the linker discarded, a session\n"
	"                        seen in part); warnings and errors stay\n"
	"   -v, --verbose        debug messages\n"
	"\n"
	"examples:\n"
	"   khprof attach -p $(pidof kh-scan) -o live.json\n"
	"   khprof attach -p 4242 --duration 30s\n"
	"   khprof attach -p 4242 --duration 30s --sample=999 -o hot.json\n"
	"   khprof attach -p $(pidof scannerd) --interval 1s -o hour.json\n"
	"   khprof attach --exe /usr/bin/scanner -o worker.json\n"
	"   khprof attach --exe /usr/bin/kh-scan --container $(docker inspect -f '{{.Id}}' scan)\n"
	"   khprof attach --all -q --serve 127.0.0.1:9464 -o /var/lib/khprof/scan.json\n"
	"   khprof attach --all --container /sys/fs/cgroup/kubepods.slice -o /records/scan.json\n"
	"   khprof attach -p $(pidof scanner) --serve 127.0.0.1:9464 -q\n";


/*
 * Attaching reads the process's executable and memory map through /proc,
 * which needs ptrace-read access even for root: a process in another user
 * namespace, or holding capabilities khprof lacks, refuses it.  Checked
 * first, so that the failure names the file and the reason.
 */
static int check_traceable(pid_t pid)
{
	char exe[64], maps[64], target[PATH_MAX];
	int err;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (readlink(exe, target, sizeof(target)) < 0) {
		if (errno == ESRCH || (errno == ENOENT && kill(pid, 0) != 0))
			log__error("cannot attach to PID %d: no such process", (int)pid);
		else if (errno == ENOENT)
			log__error("cannot attach to PID %d: it has no executable (a kernel "
				   "thread or a zombie)", (int)pid);
		else if (errno == EACCES || errno == EPERM)
			log__error("cannot attach to PID %d: cannot read '%s': %s (the process "
				   "holds capabilities khprof lacks or runs in another user "
				   "namespace)", (int)pid, exe, strerror(errno));
		else
			log__error("cannot attach to PID %d: cannot read '%s': %s", (int)pid, exe,
				   strerror(errno));
		return -1;
	}
	err = procfs__for_each_mapping(pid, NULL, NULL);
	if (err < 0) {
		log__error("cannot attach to PID %d: cannot read '%s': %s", (int)pid, maps,
			   strerror(-err));
		return -1;
	}
	return 0;
}

/* attach --exe: attach_exe.c with this command line. */
static int attach_exe_cli(const struct trace_cli *cli)
{
	struct exe_attach_options o = { .path = cli->exe, .output = cli->output,
					 .quiet = cli->quiet, .duration_s = cli->duration_s,
					 .from_start = !cli->no_stop, .serve = cli->serve,
					 .container = cli->container, .all = cli->all,
					 .keep = cli->keep };
	struct output_state unused = { 0 };

	trace_options_from(cli, NULL, &unused, &o.trace);
	return attach_exe(&o);
}

int cmd_attach(int argc, char **argv)
{
	struct output_state out = { 0 };
	struct trace_options opts = { 0 };
	struct event_loop loop = EVENT_LOOP_INIT;
	struct tracer *t = NULL;
	struct trace_cli cli;
	char exe[64];
	sigset_t old_mask;
	uint64_t deadline = 0;
	enum loop_end end = LOOP_SIGNALLED;
	int code = KHPROF_EXIT_FAILURE, err;

	if (wants_help(argc, argv)) {
		fputs(attach_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (parse_cli(argc, argv, true, &cli))
		return KHPROF_EXIT_USAGE;
	/*
	 * attach --exe writes PATH.PID.json only when -o names PATH: a watch
	 * runs as a service, often in /, for many processes, and would litter
	 * its working directory.
	 */
	if ((cli.output || (!cli.exe && !cli.all)) && output__prepare(&cli))
		return KHPROF_EXIT_USAGE;
	if (cli.exe || cli.all)
		return attach_exe_cli(&cli);
	if (check_traceable(cli.pid))
		return KHPROF_EXIT_FAILURE;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", cli.pid);
	choose_mode_for(exe, &cli);

	trace_options_from(&cli, cli.output, &out, &opts);
	opts.joins_running_process = true;
	opts.attach_at_once = true;
	code = serve_open(&cli, &out, &loop);
	if (code)
		return code;
	code = KHPROF_EXIT_FAILURE;
	if (tracer__open(&t, &opts)) {
		live_metrics__close(out.metrics);
		return KHPROF_EXIT_FAILURE;
	}
	sigprocmask(SIG_SETMASK, NULL, &old_mask);
	err = tracer__attach(t, cli.pid, exe);
	live_metrics__add_tracer(out.metrics, t, cli.pid);
	if (!err)
		err = tracer__attach_mapped(t);
	if (err == -ESRCH)
		log__error("cannot attach to PID %d: no such process", cli.pid);
	if (!err)
		err = loop__open(&loop, t, cli.pid, &old_mask);
	if (err)
		goto out;
	/* Loaded and attached: from here khprof needs far less. */
	privileges__drop_own(tracer__attach_needs_admin(t));
	if (tracer__probe_count(t) == 0)
		log__warn("PID %d has no keyhog probes in its executable or libraries; "
			  "waiting for one to be loaded", cli.pid);
	else
		log__note("attached to PID %d (%zu probe sites); stop with Ctrl-C", cli.pid,
			  tracer__probe_count(t));
	if (cli.duration_s > 0)
		deadline = tracer__now_ns() + (uint64_t)(cli.duration_s * 1e9);
	end = loop__run(&loop, t, 0, deadline);
	/* Detach first, then read what the threads still buffer (docs/PROBES.md). */
	if (end != LOOP_PROCESS_EXITED)
		tracer__detach(t);
	tracer__finish(t, end == LOOP_PROCESS_EXITED ? 1 : -1);
	if (tracer__records_emitted(t) == 0)
		log__note("no keyhog activity seen in PID %d: no record written", cli.pid);
	code = finish_output(&out, KHPROF_EXIT_OK);
out:
	loop__close(&loop, &old_mask);
	live_metrics__close(out.metrics);
	/* A live process keeps paying for probes until they are detached. */
	if (end == LOOP_PROCESS_EXITED)
		tracer__close_in_background(t);
	else
		tracer__close(t);
	return code;
}
