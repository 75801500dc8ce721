// SPDX-License-Identifier: MIT
/*
 * Scanners in containers, with a real OCI runtime (Debian's runc) and
 * bundles built here from the project's own binaries: record through the
 * runtime and through unshare and chroot, attach -p by the host's PID,
 * attach --exe by the path inside the container, attach --all catching two
 * containers and a host process started after it (and no process outside
 * the watched cgroup).  Each record is checked for exact counts, the
 * identity the program set, its run_id beginning with the pid the program
 * printed for itself (1 in its own PID namespace), and the container's
 * cgroup and id in the extension.
 *
 * The containers' program is the workload, placed at the path where the
 * host has another instrumented program (build/workloads/sdt) and beside
 * copies of its libraries: khprof must open the container's files, not
 * the host's at the same paths, or it counts nothing.
 *
 * Everything runs below a cgroup of the test's own (/khprof-test-PID), and
 * attach --all is kept to it with --container, so that other processes of
 * the machine are neither stopped nor traced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "khchild.h"
#include "khhttp.h"
#include "khtest.h"
#include "ns.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"
#define SDT "build/workloads/sdt"

static char *khprof, *tmpdir, *runc;
static char inner[PATH_MAX];       /* the containers' program: the host's path of sdt */
static char rootfs[PATH_MAX];      /* their root, shared by every bundle (read-only) */
static char state[PATH_MAX];       /* runc --root */
static char cgroup[64];            /* /khprof-test-PID, as /proc/PID/cgroup shows it */
static char cgroup_dir[PATH_MAX];  /* the same under the cgroup2 mount */
static unsigned containers;        /* ids handed out */

static void copy_file(const char *from, const char *to)
{
	char *data;
	size_t len;
	struct stat st;

	assert_int_equal(file__read_all(from, &data, &len), 0);
	assert_int_equal(stat(from, &st), 0);
	assert_int_equal(file__write_atomic(to, data, len), 0);
	assert_int_equal(chmod(to, st.st_mode & 07777), 0);
	free(data);
}

/* mkdir -p of path's folder. */
static void make_parents(const char *path)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(dir, 0755) != 0)
			assert_int_equal(errno, EEXIST);
		*slash = '/';
	}
}

/* host's file at the same path inside root (path absolute). */
static void copy_into(const char *root, const char *host, const char *path)
{
	char to[PATH_MAX];

	path_in(to, sizeof(to), root, "%s", path);
	make_parents(to);
	copy_file(host, to);
}

static void copy_in(const char *host, const char *path)
{
	copy_into(rootfs, host, path);
}

/* The libraries binary needs, at their paths inside root, as ldd finds them; how many. */
static size_t copy_libraries(const char *root, const char *binary)
{
	char *ldd[] = { "/usr/bin/ldd", (char *)binary, NULL };
	struct run_result r = run_here(ldd);
	size_t libs = 0;

	assert_int_equal(r.exit_code, 0);
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char *path = strstr(line, "=> /");

		path = path ? path + 3 : strchr(line, '/');
		if (!path)
			continue; /* linux-vdso.so.1 */
		path[strcspn(path, " ")] = '\0';
		copy_into(root, path, path);
		libs++;
	}
	run_result_free(&r);
	return libs;
}

/* mkdir of root/name for a mount point. */
static void mount_point(const char *root, const char *name)
{
	char dir[PATH_MAX];

	path_in(dir, sizeof(dir), root, "%s", name);
	assert_int_equal(mkdir(dir, 0755), 0);
}

/*
 * The root every container runs in: the workload at the sdt's host path,
 * its libraries (libkhwork.so, the dlopen'ed libkhplugin.so, libc, the
 * loader) at theirs, as ldd finds them, and a /proc to mount.
 */
static void make_rootfs(void)
{
	char workload[PATH_MAX], dir[PATH_MAX], plugin[PATH_MAX];

	assert_non_null(realpath(WORKLOAD, workload));
	assert_non_null(realpath(SDT, inner));
	path_in(rootfs, sizeof(rootfs), tmpdir, "rootfs");
	copy_in(workload, inner);
	/* libkhwork.so, libc, the loader */
	assert_true(copy_libraries(rootfs, workload) >= 3);
	snprintf(dir, sizeof(dir), "%s", workload);
	*strrchr(dir, '/') = '\0';
	path_in(plugin, sizeof(plugin), dir, "libkhplugin.so");
	copy_in(plugin, plugin);
	mount_point(rootfs, "proc");
}

static void prepare(void)
{
	const char *mount = ns__cgroup2_mount();
	char host[PATH_MAX];

	if (rootfs[0])
		return;
	runc = access("/usr/sbin/runc", X_OK) == 0 ? "/usr/sbin/runc" : "/usr/bin/runc";
	if (access(runc, X_OK) != 0)
		fail_msg("runc is not installed (make test installs it: TEST_PACKAGES)");
	if (!mount[0])
		fail_msg("no cgroup2 file system mounted: the containers need one");
	make_rootfs();
	path_in(state, sizeof(state), tmpdir, "runc");
	snprintf(cgroup, sizeof(cgroup), "/khprof-test-%d", (int)getpid());
	path_in(cgroup_dir, sizeof(cgroup_dir), mount, "%s", cgroup + 1);
	assert_int_equal(mkdir(cgroup_dir, 0755), 0);
	/* Host processes of the test's own: a leaf, as cgroup v2 wants processes. */
	path_in(host, sizeof(host), cgroup_dir, "host");
	assert_int_equal(mkdir(host, 0755), 0);
}

/*
 * The children a test spawned (khprof, runc run): a test that fails half
 * way leaves none running, above all no attach --all, past its end.
 */
static struct {
	pid_t pid;
	/*
	 * runc run hands a SIGTERM to the container's init, which as its
	 * namespace's init ignores a signal it has no handler for: runc gets
	 * SIGKILL, and the init then reads the end of the stdin runc relayed.
	 */
	bool runc;
} spawned[8];
static size_t spawned_count;

static struct child spawn(char *const argv[], bool capture_stderr)
{
	struct child c = child_spawn(argv, capture_stderr);

	if (spawned_count < sizeof(spawned) / sizeof(spawned[0])) {
		spawned[spawned_count].pid = c.pid;
		spawned[spawned_count++].runc = strcmp(argv[0], runc) == 0;
	}
	return c;
}

/* Teardown: SIGTERM (runc: SIGKILL) to each child still running, then reaped. */
static int end_spawned(void **state_)
{
	(void)state_;
	for (size_t i = 0; i < spawned_count; i++) {
		if (waitpid(spawned[i].pid, NULL, WNOHANG) != 0)
			continue;
		kill(spawned[i].pid, spawned[i].runc ? SIGKILL : SIGTERM);
		waitpid(spawned[i].pid, NULL, 0);
	}
	spawned_count = 0;
	return 0;
}

/* A fresh container id: 64 hex digits, as Docker's and containerd's are. */
static void new_id(char *id)
{
	/* The first 12 digits differ between containers: the metrics' label is those. */
	snprintf(id, NS_CONTAINER_ID_LEN + 1, "%08x%08x%048x", ++containers, (unsigned)getpid(),
		 0xc0ffeeu);
}

/*
 * A bundle in tmpdir/ID whose container runs the workload with args in
 * the shared root, in cgroup CGROUP/ID, with PID, mount, IPC and UTS
 * namespaces of its own.
 */
static void make_bundle(const char *id, const char *args)
{
	char dir[PATH_MAX], config[PATH_MAX], *json;

	path_in(dir, sizeof(dir), tmpdir, "%s", id);
	assert_int_equal(mkdir(dir, 0755), 0);
	path_in(config, sizeof(config), dir, "config.json");
	assert_true(asprintf(&json,
		"{\"ociVersion\": \"1.0.2\",\n"
		" \"process\": {\"terminal\": false, \"user\": {\"uid\": 0, \"gid\": 0},\n"
		"  \"args\": [\"%s\", %s], \"env\": [\"PATH=/usr/bin:/bin\"], \"cwd\": \"/\",\n"
		"  \"noNewPrivileges\": true},\n"
		" \"root\": {\"path\": \"%s\", \"readonly\": true},\n"
		" \"hostname\": \"khprof-test\",\n"
		" \"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}],\n"
		" \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"mount\"},\n"
		"   {\"type\": \"ipc\"}, {\"type\": \"uts\"}], \"cgroupsPath\": \"%s/%s\"}}\n",
		inner, args, rootfs, cgroup, id) > 0);
	assert_int_equal(file__write_atomic(config, json, strlen(json)), 0);
	free(json);
}

/* runc run of a bundle, in argv (static strings of the caller's). */
static void runc_run_argv(char **argv, char *bundle, size_t len, const char *id)
{
	path_in(bundle, len, tmpdir, "%s", id);
	argv[0] = runc;
	argv[1] = "--root";
	argv[2] = state;
	argv[3] = "run";
	argv[4] = "--bundle";
	argv[5] = bundle;
	argv[6] = (char *)id;
	argv[7] = NULL;
}

/* The host's pid of the first process in a container's cgroup: its init. */
static pid_t container_pid(const char *id)
{
	char path[PATH_MAX], *text;
	size_t len;
	pid_t pid;

	path_in(path, sizeof(path), cgroup_dir, "%s/cgroup.procs", id);
	assert_int_equal(file__read_all(path, &text, &len), 0);
	pid = (pid_t)atoi(text);
	free(text);
	assert_true(pid > 0);
	return pid;
}

/* The pid a workload printed for itself ("nested n=N pid=P"). */
static long printed_pid(const char *out)
{
	const char *at = strstr(out, " pid=");

	assert_non_null(at);
	return atol(at + 5);
}

/* The run_id begins with pid: the seed's RunIdentity::new uses getpid(). */
static void assert_run_id_pid(const struct kh_profile *p, long pid)
{
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "%ld-", pid);
	if (strncmp(p->identity.run_id, prefix, strlen(prefix)) != 0)
		fail_msg("run_id '%s' does not begin with the pid the program saw, %ld",
			 p->identity.run_id, pid);
	assert_int_equal(p->ext.namespace_pid, (uint64_t)pid);
}

/* `workload nested n`'s record: its counts and identity, exactly. */
static void assert_nested(const struct kh_profile *p, uint64_t n)
{
	assert_int_equal(p->status, KH_STATE_COMPLETED);
	assert_false(p->ext.started_mid_session);
	assert_int_equal(calls_of(p, KH_STAGE_HOT_PATTERNS), n);
	assert_int_equal(calls_of(p, KH_STAGE_ENTROPY), 2 * n);
	assert_int_equal(calls_of(p, KH_STAGE_DECODE), n);
	assert_int_equal(calls_of(p, KH_STAGE_SOURCE_WALK), 1);
	assert_int_equal(p->input_bytes, n * 4096);
	assert_int_equal(p->input_units, n);
	assert_string_equal(p->identity.binary_version, "workload 1.0");
	assert_string_equal(p->identity.detector_digest, "det-test");
}

/* The record is of container id: its cgroup, its id, its own pid 1. */
static void assert_in_container(const struct kh_profile *p, const char *id)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", cgroup, id);
	assert_non_null(p->ext.cgroup);
	assert_string_equal(p->ext.cgroup, path);
	assert_non_null(p->ext.container_id);
	assert_string_equal(p->ext.container_id, id);
	assert_true(p->ext.cgroup_id.present && p->ext.cgroup_id.value > 1);
	assert_run_id_pid(p, 1);
	assert_true(p->ext.traced_pid > 1); /* the host's pid */
}

/* The records in dir, sorted; exactly count of them. */
static void records_in(const char *dir, size_t count, glob_t *found)
{
	char pattern[PATH_MAX];

	path_in(pattern, sizeof(pattern), dir, "*.json");
	assert_int_equal(glob(pattern, 0, NULL, found), count ? 0 : GLOB_NOMATCH);
	if (found->gl_pathc != count)
		fail_msg("%zu records in %s, wanted %zu", found->gl_pathc, dir, count);
}

static void fresh_dir(const char *name, char *dir, size_t len)
{
	path_in(dir, len, tmpdir, "%s", name);
	assert_int_equal(mkdir(dir, 0700), 0);
}

/*
 * khprof record -q -o DIR/scan.json -- runc run of a new container whose
 * workload runs with args: the one record it wrote (path in record) in
 * *p, the run in *r, the container's id in id.
 */
static void record_in_container(const char *name, const char *args, char *id,
				struct kh_profile *p, struct run_result *r, char *record, size_t len)
{
	char dir[PATH_MAX], out[PATH_MAX], bundle[PATH_MAX];
	char *argv[16] = { khprof, "record", "-q", "-o", out, "--" };
	glob_t found;

	prepare();
	new_id(id);
	make_bundle(id, args);
	fresh_dir(name, dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "scan.json");
	runc_run_argv(argv + 6, bundle, sizeof(bundle), id);
	*r = run_here(argv);
	if (r->exit_code != 0)
		fail_msg("khprof record -- runc run exited %d: %s", r->exit_code, r->err);
	records_in(dir, 1, &found);
	snprintf(record, len, "%s", found.gl_pathv[0]);
	globfree(&found);
	load_record(record, p);
}

/*
 * khprof record -- runc run: followed through runc's forks into the
 * container, whose program is attached through its own root.
 */
static void test_record_through_runc(void **state_)
{
	char id[80], record[PATH_MAX];
	struct run_result r;
	struct kh_profile p;

	(void)state_;
	record_in_container("record-runc", "\"nested\", \"7\"", id, &p, &r, record,
			    sizeof(record));
	assert_non_null(strstr(r.out, "nested n=7 pid=1\n"));
	assert_nested(&p, 7);
	assert_in_container(&p, id);
	assert_seed_conformance_of(khprof, record);
	profile__free(&p);
	run_result_free(&r);
}

/*
 * A library the container's program dlopens is attached at the stop of
 * the container's own loader, which is not the host's file.
 */
static void test_record_runc_dlopen(void **state_)
{
	char id[80], record[PATH_MAX];
	struct run_result r;
	struct kh_profile p;

	(void)state_;
	record_in_container("record-runc-dlopen", "\"library\", \"6\"", id, &p, &r, record,
			    sizeof(record));
	/* 6 in the linked library, 6 in the one it opened. */
	assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 12);
	assert_in_container(&p, id);
	profile__free(&p);
	run_result_free(&r);
}

/* khprof record -- unshare -pmf chroot ROOT: a PID namespace and a root of its own. */
static void test_record_through_unshare_chroot(void **state_)
{
	char dir[PATH_MAX], out[PATH_MAX], proc[PATH_MAX + 32];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", "/usr/bin/unshare", "-pmf",
			 proc, "/usr/sbin/chroot", rootfs, inner, "nested", "5", NULL };
	struct run_result r;
	struct kh_profile p;
	glob_t found;

	(void)state_;
	prepare();
	fresh_dir("record-unshare", dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "scan.json");
	/* A /proc in the root: the loader finds $ORIGIN through /proc/self/exe. */
	snprintf(proc, sizeof(proc), "--mount-proc=%s/proc", rootfs);
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("khprof record -- unshare exited %d: %s", r.exit_code, r.err);
	assert_non_null(strstr(r.out, "nested n=5 pid=1\n"));
	records_in(dir, 1, &found);
	load_record(found.gl_pathv[0], &p);
	assert_nested(&p, 5);
	assert_run_id_pid(&p, 1);
	assert_true(p.ext.traced_pid > 1);
	profile__free(&p);
	globfree(&found);
	run_result_free(&r);
}

/* A container whose program serves sessions on its stdin (`workload serve`), once ready. */
static struct child start_serving(const char *id)
{
	char bundle[PATH_MAX];
	char *argv[8];
	struct child c;

	make_bundle(id, "\"serve\"");
	runc_run_argv(argv, bundle, sizeof(bundle), id);
	c = spawn(argv, false);
	child_wait_for_line(&c, "ready");
	return c;
}

/*
 * khprof record -- nsenter into a running container: followed into its
 * namespaces and root.  nsenter waits for its child with WUNTRACED and
 * stops itself when the child stops, as it does for khprof at its fork
 * and execve: khprof resumes it, or the run never ends.
 */
static void test_record_through_nsenter(void **state_)
{
	char id[80], dir[PATH_MAX], out[PATH_MAX], pid_text[16];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", "/usr/bin/nsenter", "-t",
			 pid_text, "-a", inner, "nested", "3", NULL };
	struct run_result r;
	struct kh_profile p;
	struct child w;
	glob_t found;

	(void)state_;
	prepare();
	new_id(id);
	w = start_serving(id);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)container_pid(id));
	fresh_dir("record-nsenter", dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "scan.json");
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("khprof record -- nsenter exited %d: %s", r.exit_code, r.err);
	records_in(dir, 1, &found);
	load_record(found.gl_pathv[0], &p);
	assert_nested(&p, 3);
	/* Its pid in the container's namespace, after the container's first process. */
	assert_run_id_pid(&p, printed_pid(r.out));
	assert_true(printed_pid(r.out) > 1);
	profile__free(&p);
	globfree(&found);
	run_result_free(&r);
	serve_loop_stop(&w);
}

/* khprof attach as argv says, once its line saying so came; stderr captured. */
static struct child khprof_start(char *const argv[], const char *line)
{
	struct child k = spawn(argv, true);

	child_wait_for_line(&k, line);
	return k;
}

/* SIGTERM ends a watch; khprof exits 0. */
static void khprof_stop(struct child *k)
{
	assert_int_equal(kill(k->pid, SIGTERM), 0);
	assert_int_equal(child_wait(k), 0);
}

/*
 * khprof (argv) attaches to the container's process pid, serving on w; one
 * session runs, the process ends, and khprof with it: its record at out
 * has that session, exactly, and the container's identity.
 */
static void attach_one_session(char *const argv[], struct child *w, pid_t pid, const char *out,
			       const char *id)
{
	struct kh_profile p;
	struct child k;
	char needle[64];

	snprintf(needle, sizeof(needle), "attached to PID %d ", (int)pid);
	k = khprof_start(argv, needle);
	serve_loop_command(w, "session\n");
	serve_loop_stop(w);
	assert_int_equal(child_wait(&k), 0);
	load_record(out, &p);
	assert_nested(&p, 10);
	assert_in_container(&p, id);
	assert_int_equal(p.ext.traced_pid, (uint64_t)pid);
	profile__free(&p);
}

/* attach -p with the container's init's host PID. */
static void test_attach_host_pid(void **state_)
{
	char id[80], out[PATH_MAX], pid_text[16];
	char *argv[] = { khprof, "attach", "-p", pid_text, "--mode", "span", "-q", "-o", out, NULL };
	struct child w;
	pid_t pid;

	(void)state_;
	prepare();
	new_id(id);
	path_in(out, sizeof(out), tmpdir, "attach-p.json");
	w = start_serving(id);
	pid = container_pid(id);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	attach_one_session(argv, &w, pid, out, id);
}

/*
 * attach --exe with the path inside the container and the container's id:
 * its running process and one started in it later (runc exec, stopped at
 * its start until attached) are traced; the host's own program at that
 * path, run meanwhile, is another file and is not.
 */
static void test_attach_exe_in_container(void **state_)
{
	char id[80], dir[PATH_MAX], out[PATH_MAX], needle[64];
	char *argv[] = { khprof, "attach", "--exe", inner, "--container", id, "--mode", "span",
			 "-q", "-o", out, NULL };
	char *exec_argv[] = { runc, "--root", state, "exec", id, inner, "nested", "3", NULL };
	char *host_argv[] = { inner, "spans", "3", "2", NULL };
	struct run_result r;
	struct kh_profile p;
	struct child w, k;
	glob_t found;
	pid_t pid;
	long later;

	(void)state_;
	prepare();
	new_id(id);
	fresh_dir("exe-container", dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "exe.json");
	w = start_serving(id);
	pid = container_pid(id);
	snprintf(needle, sizeof(needle), "attached to PID %d ", (int)pid);
	k = khprof_start(argv, needle);
	r = run_here(exec_argv);
	assert_int_equal(r.exit_code, 0);
	later = printed_pid(r.out);
	run_result_free(&r);
	assert_run_exits(host_argv, 0, NULL);
	serve_loop_command(&w, "session\n");
	serve_loop_stop(&w);
	khprof_stop(&k);

	records_in(dir, 2, &found);
	for (size_t i = 0; i < found.gl_pathc; i++) {
		load_record(found.gl_pathv[i], &p);
		if (p.ext.traced_pid == (uint64_t)pid) {
			assert_nested(&p, 10);
			assert_in_container(&p, id);
		} else {
			/* runc exec's process: its own pid in the container's namespace. */
			assert_nested(&p, 3);
			assert_run_id_pid(&p, later);
			assert_true(later > 1);
			assert_string_equal(p.ext.container_id, id);
		}
		profile__free(&p);
	}
	globfree(&found);
}

/* A host process in the test's cgroup (below it: LEAF), running the workload. */
static void run_in_cgroup(const char *leaf, const char *n)
{
	char procs[PATH_MAX], workload[PATH_MAX];
	pid_t pid;

	path_in(procs, sizeof(procs), cgroup_dir, "%s/cgroup.procs", leaf);
	assert_non_null(realpath(WORKLOAD, workload));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *f = fopen(procs, "we");
		int devnull = open("/dev/null", O_WRONLY);

		if (!f || fprintf(f, "0\n") < 0 || fclose(f) != 0)
			_exit(RUN_SETUP_FAILED);
		dup2(devnull, STDOUT_FILENO);
		execl(workload, workload, "nested", n, (char *)NULL);
		_exit(RUN_EXEC_FAILED);
	}
	assert_int_equal(wait_exit(pid), 0);
}

/* The one sample of name{labels} in a scrape, as a number; fails without it. */
static long metric(const char *text, const char *series)
{
	const char *at = strstr(text, series);

	if (!at)
		fail_msg("no series '%s' in the scrape:\n%s", series, text);
	return atol(at + strlen(series) + 1);
}

/*
 * attach --all, kept to the test's cgroup: two containers and a host
 * process started after the watch began are each traced from their first
 * instruction, one record each; a process outside the cgroup is not.  The
 * live families carry each one's container.
 */
static void test_attach_all(void **state_)
{
	char ids[2][80], dir[PATH_MAX], out[PATH_MAX], bundle[PATH_MAX], line[512];
	char series[256], workload[PATH_MAX];
	char *argv[] = { khprof, "attach", "--all", "--container", cgroup, "--mode", "span", "-q",
			 "-o", out, "--serve", "127.0.0.1:0", NULL };
	char *outside[] = { workload, "nested", "6", NULL };
	char *run_argv[8], *text;
	const char *ns[] = { "3", "4" };
	struct kh_profile p;
	struct child k;
	glob_t found;
	size_t host = 0, in_containers = 0;
	int port;

	(void)state_;
	prepare();
	assert_non_null(realpath(WORKLOAD, workload));
	fresh_dir("all", dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "all.json");
	k = spawn(argv, true);
	child_read_line(&k, "serving metrics at http://127.0.0.1:", line, sizeof(line));
	port = atoi(strstr(line, "127.0.0.1:") + 10);
	child_wait_for_line(&k, "watching");
	for (int i = 0; i < 2; i++) {
		new_id(ids[i]);
		make_bundle(ids[i], i ? "\"nested\", \"4\"" : "\"nested\", \"3\"");
		runc_run_argv(run_argv, bundle, sizeof(bundle), ids[i]);
		assert_run_exits(run_argv, 0, NULL);
	}
	run_in_cgroup("host", "5");
	assert_run_exits(outside, 0, NULL);

	/* Each container's calls under its own label: its id's first 12 digits. */
	text = http_get(port, "/metrics");
	assert_non_null(text);
	for (int i = 0; i < 2; i++) {
		snprintf(series, sizeof(series),
			 "khprof_stage_calls_total{container=\"%.12s\",stage=\"hot-patterns\"}", ids[i]);
		assert_int_equal(metric(text, series), atol(ns[i]));
	}
	snprintf(series, sizeof(series),
		 "khprof_stage_calls_total{container=\"%s/host\",stage=\"hot-patterns\"}", cgroup);
	assert_int_equal(metric(text, series), 5);
	assert_null(strstr(text, "stage=\"hot-patterns\"} 6\n"));
	free(text);
	khprof_stop(&k);

	records_in(dir, 3, &found);
	for (size_t i = 0; i < found.gl_pathc; i++) {
		load_record(found.gl_pathv[i], &p);
		assert_non_null(p.ext.cgroup);
		if (!p.ext.container_id) {
			/* The host process: its pid is the host's, its cgroup the test's leaf. */
			snprintf(series, sizeof(series), "%s/host", cgroup);
			assert_string_equal(p.ext.cgroup, series);
			assert_nested(&p, 5);
			assert_run_id_pid(&p, (long)p.ext.traced_pid);
			host++;
			profile__free(&p);
			continue;
		}
		for (int j = 0; j < 2; j++) {
			if (strcmp(p.ext.container_id, ids[j]) != 0)
				continue;
			assert_nested(&p, (uint64_t)atol(ns[j]));
			assert_in_container(&p, ids[j]);
			in_containers++;
		}
		profile__free(&p);
	}
	assert_int_equal(host, 1);
	assert_int_equal(in_containers, 2);
	globfree(&found);
}

/*
 * khprof in a PID namespace of its own, tracing its child there (the
 * kernel's pids are not khprof's: its thread peaks and thread ends are
 * seen all the same), and a program in a namespace nested in it.
 */
static void test_khprof_in_pid_namespace(void **state_)
{
	char out[PATH_MAX], dir[PATH_MAX], proc[PATH_MAX + 32], workload[PATH_MAX];
	char *threads[] = { "/usr/bin/unshare", "-pf", "--mount-proc", khprof, "record", "-q",
			    "-o", out, "--", workload, "threads", "500", NULL };
	char *nested[] = { "/usr/bin/unshare", "-pf", "--mount-proc", khprof, "record", "-q", "-o",
			   out, "--", "/usr/bin/unshare", "-pmf", proc, "/usr/sbin/chroot", rootfs,
			   inner, "nested", "4", NULL };
	struct run_result r;
	struct kh_profile p;
	glob_t found;

	(void)state_;
	prepare();
	assert_non_null(realpath(WORKLOAD, workload));
	path_in(out, sizeof(out), tmpdir, "pidns.json");
	r = run_here(threads);
	if (r.exit_code != 0)
		fail_msg("unshare -pf khprof record exited %d: %s", r.exit_code, r.err);
	assert_null(strstr(r.err, "ended unseen"));
	run_result_free(&r);
	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 500);
	assert_int_equal(calls_of(&p, KH_STAGE_GENERIC_DETECTION), 500);
	/* Its two threads, seen starting, and seen ending: nothing unknown. */
	assert_true(p.resources.max_observed_threads.present);
	assert_int_equal(p.resources.max_observed_threads.value, 3);
	assert_int_equal(p.ext.drops[KH_DROP_EXIT_UNKNOWN], 0);
	/* khprof and its child share the namespace: the pid khprof sees is the program's own. */
	assert_run_id_pid(&p, (long)p.ext.traced_pid);
	profile__free(&p);

	fresh_dir("pidns-nested", dir, sizeof(dir));
	path_in(out, sizeof(out), dir, "scan.json");
	snprintf(proc, sizeof(proc), "--mount-proc=%s/proc", rootfs);
	r = run_here(nested);
	if (r.exit_code != 0)
		fail_msg("nested unshare under khprof exited %d: %s", r.exit_code, r.err);
	records_in(dir, 1, &found);
	load_record(found.gl_pathv[0], &p);
	assert_nested(&p, 4);
	assert_run_id_pid(&p, 1);
	assert_true(p.ext.traced_pid > 1); /* its pid in khprof's namespace */
	profile__free(&p);
	globfree(&found);
	run_result_free(&r);
}

/*
 * What a container needs to run khprof (docs/PRIVILEGES.md): the host's PID
 * namespace, /proc and /sys (the kernel's BTF), CAP_BPF, CAP_PERFMON,
 * CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (and CAP_SYS_ADMIN where
 * perf_event_paranoid is 3, Debian's kernels' default), no seccomp filter
 * that refuses bpf() and perf_event_open().  The root holds khprof and its
 * libraries only; it attaches by the host's PID to a program in another
 * container and writes its record to a folder bound into it.
 */
static void make_khprof_bundle(const char *id, pid_t target, const char *out_dir)
{
	char dir[PATH_MAX], root[PATH_MAX], config[PATH_MAX], caps[512], *json, *level;
	size_t len;
	bool admin;

	path_in(root, sizeof(root), tmpdir, "%s-root", id);
	copy_into(root, khprof, "/usr/bin/khprof");
	assert_true(copy_libraries(root, khprof) >= 5);
	mount_point(root, "proc");
	mount_point(root, "sys");
	mount_point(root, "out");
	mount_point(root, "tmp");
	assert_int_equal(file__read_all("/proc/sys/kernel/perf_event_paranoid", &level, &len), 0);
	admin = atoi(level) >= 3;
	free(level);
	snprintf(caps, sizeof(caps), "[\"CAP_BPF\", \"CAP_PERFMON\", \"CAP_SYS_PTRACE\", "
		 "\"CAP_DAC_READ_SEARCH\"%s]", admin ? ", \"CAP_SYS_ADMIN\"" : "");
	path_in(dir, sizeof(dir), tmpdir, "%s", id);
	assert_int_equal(mkdir(dir, 0755), 0);
	path_in(config, sizeof(config), dir, "config.json");
	assert_true(asprintf(&json,
		"{\"ociVersion\": \"1.0.2\",\n"
		" \"process\": {\"terminal\": false, \"user\": {\"uid\": 0, \"gid\": 0},\n"
		"  \"args\": [\"/usr/bin/khprof\", \"attach\", \"-p\", \"%d\", \"--mode\", \"span\",\n"
		"   \"-q\", \"-o\", \"/out/in-container.json\"],\n"
		"  \"env\": [\"PATH=/usr/bin:/bin\"], \"cwd\": \"/\", \"noNewPrivileges\": true,\n"
		"  \"capabilities\": {\"bounding\": %s, \"effective\": %s, \"permitted\": %s}},\n"
		" \"root\": {\"path\": \"%s\", \"readonly\": true},\n"
		" \"hostname\": \"khprof\",\n"
		" \"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},\n"
		"  {\"destination\": \"/sys\", \"type\": \"bind\", \"source\": \"/sys\",\n"
		"   \"options\": [\"rbind\", \"ro\"]},\n"
		"  {\"destination\": \"/out\", \"type\": \"bind\", \"source\": \"%s\",\n"
		"   \"options\": [\"bind\", \"rw\"]},\n"
		"  {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"}],\n"
		" \"linux\": {\"namespaces\": [{\"type\": \"mount\"}, {\"type\": \"ipc\"},\n"
		"   {\"type\": \"uts\"}], \"cgroupsPath\": \"%s/%s\"}}\n",
		(int)target, caps, caps, caps, root, out_dir, cgroup, id) > 0);
	assert_int_equal(file__write_atomic(config, json, strlen(json)), 0);
	free(json);
}

/* khprof in a container of its own traces a program in another one. */
static void test_khprof_in_a_container(void **state_)
{
	char target_id[80], id[80], out_dir[PATH_MAX], out[PATH_MAX + 32], bundle[PATH_MAX];
	char *argv[8];
	struct child w;
	pid_t pid;

	(void)state_;
	prepare();
	new_id(target_id);
	new_id(id);
	fresh_dir("khprof-out", out_dir, sizeof(out_dir));
	w = start_serving(target_id);
	pid = container_pid(target_id);
	make_khprof_bundle(id, pid, out_dir);
	runc_run_argv(argv, bundle, sizeof(bundle), id);
	snprintf(out, sizeof(out), "%s/in-container.json", out_dir);
	attach_one_session(argv, &w, pid, out, target_id);
}

/* record of a client whose containers a daemon starts: one line saying so and what works. */
static void test_daemon_client_named(void **state_)
{
	char docker[PATH_MAX], out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", docker, NULL };

	(void)state_;
	path_in(docker, sizeof(docker), tmpdir, "docker");
	path_in(out, sizeof(out), tmpdir, "docker.json");
	assert_int_equal(symlink("/bin/true", docker), 0);
	assert_run_exits(argv, 0, "'docker' hands its containers to dockerd and containerd, which "
			 "khprof did not start: their processes are not followed; 'khprof attach "
			 "--all' or 'khprof attach --exe PATH --container ID' traces them");
}

/*
 * Processes left in the test's cgroups: khprof's helper that holds uprobe
 * links while the kernel detaches them outlives a khprof whose container
 * had no PID namespace of its own (runc then cannot remove that cgroup).
 * Ended and waited for through a pidfd, so that the cgroups can go.
 */
static void end_leftovers(const char *dir)
{
	char path[PATH_MAX + 16], *text;
	size_t len;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (file__read_all(path, &text, &len) == 0) {
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
			int fd = (int)syscall(SYS_pidfd_open, atoi(line), 0);
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (fd < 0)
				continue;
			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			poll(&p, 1, 10000);
			close(fd);
		}
		free(text);
	}
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			end_leftovers(path);
		}
	closedir(d);
}

/* dir and every cgroup below it, deepest first. */
static void remove_below(const char *dir)
{
	char path[PATH_MAX + 16];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			remove_below(path);
		}
	closedir(d);
	rmdir(dir);
}

/* The test's cgroup in the cgroup2 tree and in each v1 hierarchy runc used beside it. */
static void remove_cgroups(void)
{
	char line[PATH_MAX * 2], point[PATH_MAX], dir[PATH_MAX + 80];
	FILE *f;

	if (!cgroup[0])
		return;
	end_leftovers(cgroup_dir);
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, " - cgroup") ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		snprintf(dir, sizeof(dir), "%s%s", point, cgroup);
		remove_below(dir);
	}
	if (f)
		fclose(f);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_containers",
		.need = "container tests need root (runc, cgroups, CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-containers",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_record_through_runc, end_spawned),
		cmocka_unit_test_teardown(test_record_runc_dlopen, end_spawned),
		cmocka_unit_test_teardown(test_record_through_unshare_chroot, end_spawned),
		cmocka_unit_test_teardown(test_record_through_nsenter, end_spawned),
		cmocka_unit_test_teardown(test_attach_host_pid, end_spawned),
		cmocka_unit_test_teardown(test_attach_exe_in_container, end_spawned),
		cmocka_unit_test_teardown(test_attach_all, end_spawned),
		cmocka_unit_test_teardown(test_khprof_in_pid_namespace, end_spawned),
		cmocka_unit_test_teardown(test_khprof_in_a_container, end_spawned),
		cmocka_unit_test_teardown(test_daemon_client_named, end_spawned),
	};

	int failed;

	khprof = tool_path("KH_KHPROF", "build/khprof");
	failed = run_root_tests(&rt, tests);
	remove_cgroups();
	return failed;
}
