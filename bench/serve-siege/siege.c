// SPDX-License-Identifier: MIT
/*
 * siege PORT ATTACK N SECONDS [ATTACKER_ADDR]: how many of a legitimate
 * scraper's scrapes a metrics server answers while N attacking
 * connections hold on, each opened again as soon as the server closes it
 * (bench/serve-siege/run.sh; the figures in userspace/common/httpd.c).
 *
 * ATTACK: idle       connect, send nothing;
 *         slowloris  a request line, then a header line every 500 ms, never the end;
 *         noeol      "GET /" and then a byte every 500 ms, never a line end.
 * The scraper, a process of its own, opens a connection every 500 ms on
 * 127.0.0.1:PORT and sends a GET of /metrics; a scrape is answered when a
 * 200 and its whole body (Content-Length) come within 1 s.  The attackers connect from
 * ATTACKER_ADDR when given (127.0.0.2: another source address than the
 * scraper's, which per-IP limits tell apart).  Prints one line:
 *   answered=A scrapes=S attackers_reopened=R
 * A measurement, not a test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ATTACKERS 4096
#define PACE_MS 500
#define SCRAPE_LIMIT_MS 1000

enum attack { IDLE, SLOWLORIS, NOEOL };

struct attacker {
	int fd;
	uint64_t next_ms; /* its next byte */
	bool opened;      /* its opening is sent */
};

struct scrape {
	int fd;
	uint64_t limit_ms;
	bool sent;
	size_t got;
	char buf[1 << 20];
};

static struct sockaddr_in server, attacker_from;
static bool attacker_bound;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int open_conn(bool attacker)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (attacker && attacker_bound &&
	    bind(fd, (struct sockaddr *)&attacker_from, sizeof(attacker_from)) != 0) {
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&server, sizeof(server)) != 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What an attacker sends now: its opening when first is set, else its next byte or line. */
static void attack_send(int fd, enum attack attack, bool first)
{
	static const char *const opening[] = { "", "GET /metrics HTTP/1.1\r\nHost: x\r\n", "GET /" };
	static const char *const next[] = { "", "X-a: b\r\n", "a" };
	const char *s = first ? opening[attack] : next[attack];

	if (*s && send(fd, s, strlen(s), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return; /* not connected yet, or closed: the poll loop sees it */
}

/* A whole answer of 200 in c->buf: its head and Content-Length bytes of body. */
static bool answered(const struct scrape *c)
{
	const char *end = memmem(c->buf, c->got, "\r\n\r\n", 4), *len;

	if (!end || strncmp(c->buf, "HTTP/1.1 200 ", 13) != 0)
		return false;
	len = strcasestr(c->buf, "\r\nContent-Length:");
	return len && len < end && (size_t)(end + 4 - c->buf) + strtoul(len + 17, NULL, 10) == c->got;
}

/* The attackers, in a process of their own, until end; how often they were reopened. */
static long attack_until(uint64_t end, enum attack attack, long n)
{
	static struct attacker attackers[MAX_ATTACKERS];
	static struct pollfd fds[MAX_ATTACKERS];
	long reopened = 0;

	for (long i = 0; i < n; i++) {
		attackers[i].fd = open_conn(true);
		attackers[i].next_ms = now_ms();
		attackers[i].opened = false;
	}
	while (now_ms() < end) {
		uint64_t now = now_ms();

		for (long i = 0; i < n; i++) {
			struct attacker *a = &attackers[i];

			if (a->fd >= 0 && now >= a->next_ms) {
				attack_send(a->fd, attack, !a->opened);
				a->opened = true;
				a->next_ms = now + PACE_MS;
			}
			fds[i] = (struct pollfd){ .fd = a->fd, .events = POLLIN };
		}
		if (poll(fds, (nfds_t)n, PACE_MS / 10) < 0 && errno != EINTR)
			break;
		for (long i = 0; i < n; i++) {
			struct attacker *a = &attackers[i];
			char drop[4096];

			if (a->fd < 0 || !fds[i].revents)
				continue;
			if (recv(a->fd, drop, sizeof(drop), MSG_DONTWAIT) > 0 &&
			    !(fds[i].revents & (POLLHUP | POLLERR)))
				continue;
			close(a->fd); /* closed by the server: open it again */
			a->fd = open_conn(true);
			a->opened = false;
			a->next_ms = now_ms();
			reopened++;
		}
	}
	return reopened;
}

/* One scrape, as a scraper makes it (blocking); whether it was answered within the limit. */
static bool scrape_once(struct scrape *s)
{
	static const char request[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	struct timeval limit = { .tv_sec = SCRAPE_LIMIT_MS / 1000 };
	uint64_t start = now_ms();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t got;
	bool ok = false;

	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
	s->got = 0;
	if (connect(fd, (struct sockaddr *)&server, sizeof(server)) == 0 &&
	    send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(request) - 1) {
		while ((got = recv(fd, s->buf + s->got, sizeof(s->buf) - s->got - 1, 0)) > 0 &&
		       now_ms() - start < SCRAPE_LIMIT_MS)
			s->got += (size_t)got;
		s->buf[s->got] = '\0';
		ok = got == 0 && now_ms() - start < SCRAPE_LIMIT_MS && answered(s);
	}
	close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	static struct scrape scraper;
	enum attack attack;
	long n, answers = 0, scrapes = 0, reopened = -1;
	uint64_t end, next;
	int counts[2];
	pid_t pid;

	if (argc < 5 || (n = atol(argv[3])) < 0 || n > MAX_ATTACKERS) {
		fprintf(stderr, "usage: siege PORT idle|slowloris|noeol N SECONDS [ATTACKER_ADDR]\n");
		return 2;
	}
	attack = !strcmp(argv[2], "idle") ? IDLE : !strcmp(argv[2], "slowloris") ? SLOWLORIS : NOEOL;
	server.sin_family = AF_INET;
	server.sin_port = htons((uint16_t)atoi(argv[1]));
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (argc > 5) {
		attacker_from.sin_family = AF_INET;
		attacker_bound = inet_pton(AF_INET, argv[5], &attacker_from.sin_addr) == 1;
	}
	end = now_ms() + (uint64_t)atol(argv[4]) * 1000;
	if (pipe(counts) != 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		reopened = attack_until(end, attack, n);
		if (write(counts[1], &reopened, sizeof(reopened)) != sizeof(reopened))
			_exit(1);
		_exit(0);
	}
	close(counts[1]);
	/* The scraper, another process as a real one is; the attackers start a pace ahead. */
	for (next = now_ms() + PACE_MS; next + SCRAPE_LIMIT_MS < end; next += PACE_MS) {
		struct timespec pause;
		uint64_t now = now_ms();

		if (now < next) {
			pause.tv_sec = (time_t)((next - now) / 1000);
			pause.tv_nsec = (long)((next - now) % 1000) * 1000000;
			nanosleep(&pause, NULL);
		}
		scrapes++;
		answers += scrape_once(&scraper);
	}
	if (read(counts[0], &reopened, sizeof(reopened)) != sizeof(reopened))
		reopened = -1;
	waitpid(pid, NULL, 0);
	printf("answered=%ld scrapes=%ld attackers_reopened=%ld\n", answers, scrapes, reopened);
	return 0;
}
