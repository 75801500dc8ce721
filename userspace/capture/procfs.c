// SPDX-License-Identifier: MIT
/*
 * procfs.c - resource snapshots of a traced process, its strings and its
 * memory map.
 *
 * Parsing follows the seed's process_resources() step for step so that a
 * snapshot taken from outside equals the one the process would take of
 * itself.  One difference is deliberate: the seed reads the files as UTF-8
 * and gives up on a process name that is not, while bytes are fine here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"

/* stat is one short line; status is about 1.5 KiB on current kernels. */
#define STAT_BUF_SIZE 4096
#define STATUS_BUF_SIZE 16384

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Rust's str::parse::<u64>: an optional '+', then digits only. */
static bool parse_rust_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t value = 0;
	size_t i = 0;

	if (len > 0 && s[0] == '+')
		i = 1;
	if (i == len)
		return false;
	for (; i < len; i++) {
		unsigned digit = (unsigned)(s[i] - '0');

		if (digit > 9 || value > (UINT64_MAX - digit) / 10)
			return false;
		value = value * 10 + digit;
	}
	*out = value;
	return true;
}

/* Next whitespace-separated word at or after *pos; false at the end. */
static bool next_word(const char *s, size_t *pos, size_t *start, size_t *len)
{
	size_t i = *pos;

	while (s[i] && is_blank(s[i]))
		i++;
	if (!s[i])
		return false;
	*start = i;
	while (s[i] && !is_blank(s[i]))
		i++;
	*len = i - *start;
	*pos = i;
	return true;
}

int procfs__parse_stat(const char *stat, long ticks_per_sec, struct kh_opt_u64 *cpu_ms)
{
	const char *close = strrchr(stat, ')');
	uint64_t ticks[2];
	unsigned __int128 ms;
	size_t pos = 0, start, len;
	const char *fields;

	cpu_ms->present = false;
	cpu_ms->value = 0;
	/* The name may hold ')' and blanks; fields start 2 bytes past the last ')'. */
	if (!close || close[1] == '\0')
		return -EINVAL;
	fields = close + 2;
	for (int i = 0; i < 12; i++) {
		if (!next_word(fields, &pos, &start, &len))
			return -EINVAL;
	}
	if (!parse_rust_u64(fields + start, len, &ticks[0]))
		return -EINVAL;
	if (!next_word(fields, &pos, &start, &len) ||
	    !parse_rust_u64(fields + start, len, &ticks[1]))
		return -EINVAL;
	if (ticks_per_sec <= 0)
		return -EINVAL;
	ms = ((unsigned __int128)ticks[0] + ticks[1]) * 1000 / (unsigned long)ticks_per_sec;
	if (ms > UINT64_MAX)
		return -EINVAL;
	cpu_ms->present = true;
	cpu_ms->value = (uint64_t)ms;
	return 0;
}

/*
 * The first line starting with field whose first word parses and scales
 * without overflow, as the seed's find_map does: a bad line is skipped.
 */
static struct kh_opt_u64 status_value(const char *status, const char *field, uint64_t scale)
{
	struct kh_opt_u64 result = { false, 0 };
	size_t field_len = strlen(field);

	for (const char *line = status; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t line_len = end ? (size_t)(end - line) : strlen(line);
		size_t pos = field_len, start, len;
		uint64_t value;

		if (line_len >= field_len && !strncmp(line, field, field_len) &&
		    next_word(line, &pos, &start, &len) && start < line_len &&
		    parse_rust_u64(line + start, len, &value) &&
		    (scale == 0 || value <= UINT64_MAX / scale)) {
			result.present = true;
			result.value = value * scale;
			return result;
		}
		line = end ? end + 1 : NULL;
	}
	return result;
}

void procfs__parse_status(const char *status, struct kh_resource_snapshot *out)
{
	out->resident_bytes = status_value(status, "VmRSS:", 1024);
	out->virtual_bytes = status_value(status, "VmSize:", 1024);
	out->thread_count = status_value(status, "Threads:", 1);
}

/* Reads a small /proc file (its size is reported as 0) into buf. */
static int read_proc_file(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64];
	size_t len = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return err;
}

int procfs__sample(pid_t pid, struct kh_resource_snapshot *out)
{
	char stat[STAT_BUF_SIZE], status[STATUS_BUF_SIZE];
	int stat_err, status_err;

	memset(out, 0, sizeof(*out));
	stat_err = read_proc_file(pid, "stat", stat, sizeof(stat));
	if (!stat_err)
		procfs__parse_stat(stat, sysconf(_SC_CLK_TCK), &out->cpu_time_ms);
	status_err = read_proc_file(pid, "status", status, sizeof(status));
	if (!status_err)
		procfs__parse_status(status, out);
	return stat_err ? stat_err : status_err;
}

int procfs__read_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t done = 0;

	if (!len)
		return -EINVAL;
	/* Page by page: a short string may end just before an unmapped page. */
	while (done < len) {
		size_t chunk = 4096 - ((addr + done) & 4095);
		struct iovec local, remote;
		ssize_t n;

		if (chunk > len - done)
			chunk = len - done;
		local.iov_base = buf + done;
		local.iov_len = chunk;
		remote.iov_base = (void *)(uintptr_t)(addr + done);
		remote.iov_len = chunk;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return n < 0 ? -errno : -EFAULT;
		if (memchr(buf + done, '\0', (size_t)n))
			return 0;
		done += (size_t)n;
	}
	buf[len - 1] = '\0'; /* cut as the BPF side cuts a long string */
	return 0;
}

int procfs__sample_ns(pid_t pid, struct kh_resource_snapshot *out, struct kh_opt_u64 *cpu_ns)
{
	int err = procfs__sample(pid, out);
	struct timespec ts;
	clockid_t clk;

	*cpu_ns = (struct kh_opt_u64){ false, 0 };
	/* Any process's CPU clock is readable: the kernel checks only that it exists. */
	if (clock_getcpuclockid(pid, &clk) || clock_gettime(clk, &ts))
		return err;
	*cpu_ns = (struct kh_opt_u64){ true, (uint64_t)ts.tv_sec * 1000000000u +
						     (uint64_t)ts.tv_nsec };
	out->cpu_time_ms = (struct kh_opt_u64){ true, cpu_ns->value / 1000000 };
	return err;
}

int procfs__parse_mapping(const char *line, struct procfs_mapping *m)
{
	unsigned long long start, end, offset, inode;

	m->path[0] = '\0';
	/* The path is optional: anonymous mappings have none. */
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, m->perms,
		   &offset, &m->dev_major, &m->dev_minor, &inode, m->path) < 7)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->offset = offset;
	m->inode = inode;
	return 0;
}

int procfs__for_each_mapping(pid_t pid, procfs_mapping_fn fn, void *ctx)
{
	char path[64], line[PATH_MAX + 128];
	struct procfs_mapping m;
	int ret = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return -errno;
	while (fn && !ret && fgets(line, sizeof(line), maps))
		if (procfs__parse_mapping(line, &m) == 0)
			ret = fn(&m, ctx);
	fclose(maps);
	return ret;
}

int procfs__parse_stop_stat(const char *stat, struct procfs_stop_view *out)
{
	const char *close = strrchr(stat, ')');
	size_t pos = 0, start, len;
	const char *fields;

	if (!close || close[1] != ' ' || !close[2])
		return -EINVAL;
	fields = close + 2;
	out->state = fields[0];
	/* starttime is the 22nd field, the 20th after the name. */
	for (int i = 0; i < 20; i++)
		if (!next_word(fields, &pos, &start, &len))
			return -EINVAL;
	return parse_rust_u64(fields + start, len, &out->start_ticks) ? 0 : -EINVAL;
}

int procfs__parse_stop_status(const char *status, struct procfs_stop_view *out)
{
	/* SIGSTOP, SIGTSTP, SIGTTIN and SIGTTOU: bits 18 to 21 of the masks. */
	const uint64_t stops = 0xfull << 18;
	static const char *const masks[] = { "SigPnd:", "ShdPnd:" };
	const char *state = strstr(status, "State:");
	char letter;

	if (!state || sscanf(state + strlen("State:"), " %c", &letter) != 1)
		return -EINVAL;
	out->state = letter;
	out->stop_pending = false;
	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		const char *line = strstr(status, masks[i]);
		unsigned long long mask;

		if (line && sscanf(line + strlen(masks[i]), "%llx", &mask) == 1 && (mask & stops))
			out->stop_pending = true;
	}
	return 0;
}

int procfs__stop_view(pid_t pid, bool with_start, struct procfs_stop_view *out)
{
	char stat[STAT_BUF_SIZE], status[STATUS_BUF_SIZE];
	int err;

	memset(out, 0, sizeof(*out));
	if (with_start) {
		err = read_proc_file(pid, "stat", stat, sizeof(stat));
		if (!err)
			err = procfs__parse_stop_stat(stat, out);
		/* Not stopped: nothing pending to look for. */
		if (err || out->state != 'T')
			return err;
	}
	err = read_proc_file(pid, "status", status, sizeof(status));
	return err ? err : procfs__parse_stop_status(status, out);
}
