// SPDX-License-Identifier: MIT
/*
 * ns.c - namespaces and cgroups of a traced process (ns.h): its root as
 * /proc/PID/root gives it, its pid as it sees itself (NSpid), its cgroup,
 * cgroup id and container id.  Plain /proc and cgroupfs reads, so that the
 * unit tests check them without root.
 *
 * Why /proc/PID/root and the shown root instead of /proc/PID/map_files:
 * map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), which khprof
 * gives up once attached (docs/PRIVILEGES.md), while libraries mapped
 * later still have to be opened; /proc/PID/root needs only the ptrace
 * read access khprof keeps.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "ns.h"

/* The kernel's inode number of the initial PID namespace (PROC_PID_INIT_INO). */
#define INITIAL_PID_NS_INO 0xEFFFFFFCu

static bool same_ns(pid_t pid, const char *kind)
{
	char path[64], own[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	snprintf(own, sizeof(own), "/proc/self/ns/%s", kind);
	return stat(path, &a) == 0 && stat(own, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

int ns__view(pid_t pid, struct ns_view *v)
{
	char link[64];
	ssize_t n;

	memset(v, 0, sizeof(*v));
	v->pid = pid;
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, v->root, sizeof(v->root) - 1);
	if (n <= 0)
		return n == 0 ? -EINVAL : (errno == ENOENT ? -ESRCH : -errno);
	v->root[n] = '\0';
	v->same_mount_ns = same_ns(pid, "mnt");
	v->own_root = v->same_mount_ns && strcmp(v->root, "/") == 0;
	return 0;
}

static int join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int ns__shown_path(const struct ns_view *v, const char *shown, char *out, size_t len)
{
	char prefix[64];
	size_t root_len = strlen(v->root);
	const char *inner = NULL;

	if (v->own_root)
		return join(out, len, shown, "");
	if (strcmp(v->root, "/") == 0)
		inner = shown;
	else if (!strncmp(shown, v->root, root_len) &&
		 (shown[root_len] == '/' || shown[root_len] == '\0'))
		inner = shown[root_len] ? shown + root_len : "/";
	if (!inner) {
		/*
		 * Outside its root: mapped before it entered a chroot.  In
		 * khprof's mount namespace the shown path is khprof's own;
		 * in another, nothing khprof can open names it.
		 */
		return v->same_mount_ns ? join(out, len, shown, "") : -ENOENT;
	}
	snprintf(prefix, sizeof(prefix), "/proc/%d/root", (int)v->pid);
	return join(out, len, prefix, inner);
}

int ns__inner_of(const struct ns_view *v, const char *shown, char *out, size_t len)
{
	size_t root_len = strlen(v->root);

	if (strcmp(v->root, "/") == 0)
		return join(out, len, shown, "");
	if (strncmp(shown, v->root, root_len) != 0 ||
	    (shown[root_len] != '/' && shown[root_len] != '\0'))
		return -ENOENT;
	return join(out, len, shown[root_len] ? shown + root_len : "/", "");
}

int ns__inner_path(const struct ns_view *v, const char *inner, char *out, size_t len)
{
	char prefix[64];

	if (v->own_root)
		return join(out, len, inner, "");
	snprintf(prefix, sizeof(prefix), "/proc/%d/root%s", (int)v->pid,
		 inner[0] == '/' ? "" : "/");
	return join(out, len, prefix, inner);
}

pid_t ns__parse_nspid(const char *status)
{
	const char *line = strstr(status, "\nNSpid:");
	long last = 0;

	if (!strncmp(status, "NSpid:", 6))
		line = status;
	else if (line)
		line++;
	if (!line)
		return 0;
	line += 6;
	/* From khprof's namespace down to the process's own: the last is what getpid() says. */
	while (*line && *line != '\n') {
		char *end;
		long pid;

		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\n' || !*line)
			break;
		pid = strtol(line, &end, 10);
		if (end == line || pid <= 0)
			return 0;
		last = pid;
		line = end;
	}
	return (pid_t)last;
}

int ns__parse_cgroup(const char *text, char *path, size_t len)
{
	const char *first = NULL, *chosen = NULL;

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		const char *colon = memchr(line, ':', end ? (size_t)(end - line) : strlen(line));
		const char *second = colon ? strchr(colon + 1, ':') : NULL;

		if (second && (!end || second < end)) {
			if (!strncmp(line, "0::", 3)) {
				chosen = second + 1;
				break;
			}
			if (!first)
				first = second + 1;
		}
		line = end ? end + 1 : NULL;
	}
	if (!chosen)
		chosen = first;
	if (!chosen)
		return -ENOENT;
	snprintf(path, len, "%.*s", (int)strcspn(chosen, "\n"), chosen);
	return 0;
}

bool ns__container_id(const char *cgroup, char *out)
{
	size_t n = strlen(cgroup), run = 0;

	out[0] = '\0';
	/* The last run of exactly 64 hex digits: the innermost container. */
	for (size_t i = 0; i <= n; i++) {
		if (i < n && isxdigit((unsigned char)cgroup[i])) {
			run++;
			continue;
		}
		if (run == NS_CONTAINER_ID_LEN) {
			memcpy(out, cgroup + i - run, run);
			out[run] = '\0';
		}
		run = 0;
	}
	return out[0] != '\0';
}

/* mountinfo's octal escapes (\040 for a blank) undone in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/*
 * The cgroup2 mount and the cgroup at its root as /proc/PID/cgroup paths
 * name it for khprof: "/" in the host's cgroup namespace, "/../.." seen
 * from a container's own, whose /sys is the host's.  The whole hierarchy
 * where a mount has it.
 */
static char cgroup2_point[PATH_MAX], cgroup2_root[PATH_MAX];

const char *ns__cgroup2_mount(void)
{
	static bool looked;
	char line[PATH_MAX * 2];
	FILE *f;

	if (looked)
		return cgroup2_point;
	looked = true;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return cgroup2_point;
	while (fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], point[PATH_MAX];
		const char *dash = strstr(line, " - ");

		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
			continue;
		unescape(root);
		unescape(point);
		/* The first, unless a later one has the hierarchy's root. */
		if (!cgroup2_point[0] || strcmp(root, "/") == 0) {
			snprintf(cgroup2_point, sizeof(cgroup2_point), "%s", point);
			snprintf(cgroup2_root, sizeof(cgroup2_root), "%s", root);
		}
		if (strcmp(root, "/") == 0)
			break;
	}
	fclose(f);
	return cgroup2_point;
}

/* The directory of a cgroup path as /proc shows it; -ENOENT outside the mount. */
static int cgroup_dir(const char *cgroup, char *dir, size_t len)
{
	const char *mount = ns__cgroup2_mount();
	size_t root_len = strlen(cgroup2_root);

	if (!mount[0])
		return -ENOENT;
	if (strcmp(cgroup2_root, "/") == 0)
		return join(dir, len, mount, cgroup);
	if (strncmp(cgroup, cgroup2_root, root_len) != 0 ||
	    (cgroup[root_len] != '/' && cgroup[root_len] != '\0'))
		return -ENOENT;
	return join(dir, len, mount, cgroup + root_len);
}

/* A path below the mount (its leading '/' kept) as /proc shows the cgroup. */
static void cgroup_of_dir(const char *below, char *cgroup, size_t len)
{
	int err = strcmp(cgroup2_root, "/") == 0 ? join(cgroup, len, below[0] ? below : "/", "")
						 : join(cgroup, len, cgroup2_root, below);

	if (err)
		cgroup[0] = '\0'; /* too long to name: no cgroup */
}

/* The cgroup2 id of path: the inode number of its directory (kernfs's id). */
static uint64_t cgroup_id_of(const char *cgroup)
{
	char dir[PATH_MAX];
	struct stat st;

	if (cgroup_dir(cgroup, dir, sizeof(dir)) || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0;
	return (uint64_t)st.st_ino;
}

int ns__identity(pid_t pid, struct ns_identity *id)
{
	char path[64], *text;
	size_t len;
	int status_err, cgroup_err;

	memset(id, 0, sizeof(*id));
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status_err = file__read_all(path, &text, &len);
	if (!status_err) {
		id->ns_pid = ns__parse_nspid(text);
		free(text);
	}
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	cgroup_err = file__read_all(path, &text, &len);
	if (!cgroup_err && ns__parse_cgroup(text, id->cgroup, sizeof(id->cgroup)) == 0) {
		ns__container_id(id->cgroup, id->container_id);
		/* Only a v2 path names a cgroup2 directory. */
		if (strstr(text, "0::") == text || strstr(text, "\n0::"))
			id->cgroup_id = cgroup_id_of(id->cgroup);
	}
	if (!cgroup_err)
		free(text);
	return status_err && cgroup_err ? status_err : 0;
}

/* The first pid in dir's cgroup.procs, or in a cgroup below it (a pod's containers). */
static pid_t first_process_below(const char *dir, int depth)
{
	char path[PATH_MAX], *text;
	size_t len;
	pid_t pid = 0;
	DIR *d;
	struct dirent *e;

	if (join(path, sizeof(path), dir, "/cgroup.procs") == 0 &&
	    file__read_all(path, &text, &len) == 0) {
		pid = (pid_t)atoi(text);
		free(text);
		if (pid > 0)
			return pid;
	}
	if (depth == 0 || !(d = opendir(dir)))
		return 0;
	while (!pid && (e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			pid = first_process_below(path, depth - 1);
	}
	closedir(d);
	return pid;
}

/* The shortest container id prefix taken: what `docker ps` shows. */
#define ID_PREFIX_MIN 12

static bool is_hex_id(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= ID_PREFIX_MIN && n <= NS_CONTAINER_ID_LEN && !s[n];
}

/*
 * The cgroup directory below dir whose name carries a container id
 * starting with prefix (docker-ID.scope, /docker/ID...), into found.
 */
static bool find_container_cgroup(const char *dir, const char *prefix, int depth, char *found,
				  size_t len)
{
	char path[PATH_MAX], id[NS_CONTAINER_ID_LEN + 1];
	struct dirent *e;
	bool hit = false;
	DIR *d;

	if (depth == 0 || !(d = opendir(dir)))
		return false;
	while (!hit && (e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (ns__container_id(e->d_name, id) && !strncmp(id, prefix, strlen(prefix))) {
			snprintf(found, len, "%s", path);
			hit = true;
		} else {
			hit = find_container_cgroup(path, prefix, depth - 1, found, len);
		}
	}
	closedir(d);
	return hit;
}

int ns__container_process(const char *which, pid_t *pid, char *cgroup)
{
	const char *mount = ns__cgroup2_mount();
	size_t mount_len = strlen(mount);
	char dir[PATH_MAX], proc[64];
	struct ns_identity id;
	char *end;
	long n;

	*pid = 0;
	cgroup[0] = '\0';
	errno = 0;
	n = strtol(which, &end, 10);
	if (end != which && !*end && strlen(which) < ID_PREFIX_MIN) {
		snprintf(proc, sizeof(proc), "/proc/%ld", n);
		if (errno || n <= 0 || access(proc, F_OK) != 0)
			return -ENOENT;
		*pid = (pid_t)n;
		if (ns__identity(*pid, &id) == 0)
			snprintf(cgroup, NS_CGROUP_MAX, "%s", id.cgroup);
		return 0;
	}
	if (is_hex_id(which)) {
		/* A container id (or its first 12 digits): the cgroup that names it. */
		if (!mount_len || !find_container_cgroup(mount, which, 8, dir, sizeof(dir)))
			return -ENOENT;
		cgroup_of_dir(dir + mount_len, cgroup, NS_CGROUP_MAX);
		*pid = first_process_below(dir, 2);
		return 0;
	}
	if (which[0] != '/')
		return -EINVAL;
	/* /sys/fs/cgroup/X or the path /proc/PID/cgroup shows: the same cgroup. */
	if (mount_len && !strncmp(which, mount, mount_len) &&
	    (which[mount_len] == '/' || !which[mount_len]))
		cgroup_of_dir(which + mount_len, cgroup, NS_CGROUP_MAX);
	else
		snprintf(cgroup, NS_CGROUP_MAX, "%s", which);
	if (cgroup_dir(cgroup, dir, sizeof(dir)) || access(dir, F_OK) != 0)
		return -ENOENT;
	/* A pod's cgroup holds its containers' one level or two below. */
	*pid = first_process_below(dir, 2);
	return 0;
}

uint32_t ns__own_pid_ns_inum(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
}

bool ns__in_initial_pid_ns(void)
{
	uint32_t inum = ns__own_pid_ns_inum();

	/* Without /proc/self/ns (no namespaces at all) every pid is the kernel's. */
	return inum == 0 || inum == INITIAL_PID_NS_INO;
}

int ns__cgroup_open(const char *cgroup)
{
	char dir[PATH_MAX];
	int fd;

	if (!ns__cgroup2_mount()[0])
		return -EOPNOTSUPP;
	if (cgroup_dir(cgroup, dir, sizeof(dir)))
		return -ENOENT;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int members_below(const char *dir, int (*fn)(pid_t pid, void *ctx), void *ctx, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	int ret = 0;
	FILE *procs;
	DIR *d;

	if (join(path, sizeof(path), dir, "/cgroup.procs") == 0 && (procs = fopen(path, "re"))) {
		long pid;

		while (!ret && fscanf(procs, "%ld", &pid) == 1)
			ret = fn((pid_t)pid, ctx);
		fclose(procs);
	}
	if (ret || depth == 0 || !(d = opendir(dir)))
		return ret;
	while (!ret && (e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			ret = members_below(path, fn, ctx, depth - 1);
	closedir(d);
	return ret;
}

int ns__for_each_member(const char *cgroup, int (*fn)(pid_t pid, void *ctx), void *ctx)
{
	char dir[PATH_MAX];

	if (!ns__cgroup2_mount()[0])
		return -EOPNOTSUPP;
	if (cgroup_dir(cgroup, dir, sizeof(dir)) || access(dir, F_OK) != 0)
		return -ENOENT;
	/* A cgroup tree is shallow: a node's pods, their containers, what runs in them. */
	return members_below(dir, fn, ctx, 16);
}
