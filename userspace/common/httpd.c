// SPDX-License-Identifier: MIT
/*
 * A nonblocking HTTP/1.1 server for one resource, driven by the caller's
 * event loop through one epoll descriptor of its own (listening socket,
 * clients and a timerfd for the earliest client deadline).
 *
 * Why not Debian's libmicrohttpd (0.9.75), with its connection limit,
 * per-connection timeout and per-IP limit: bench/serve-siege/run.sh ran
 * it as khprof would have to (no thread of its own, its epoll descriptor
 * in the caller's loop) beside this server.  A scraper scrapes every
 * 500 ms for 20 s (answered: a whole 200 within 1 s) beside attackers
 * opened again as soon as they are closed; scrapes answered of 37
 * (2 vCPUs, load 2-3):
 *
 *   attack               before  mhd 8,5s  mhd 64,2s  mhd 64,2s,ip 8  this file
 *   8 idle                    0        18         37              37         37
 *   12 idle                   1        18         37              37         37
 *   200 idle                  0        13         17              37         37
 *   200 slowloris             0         0         12              37         37
 *   20 without a line end     0         0         37              37         37
 *
 * ("before": this file with 8 clients and 5 s, closing a ninth at once,
 * the khprof of ffd8c98 given to run.sh; "mhd L,Ts": its connection
 * limit L and timeout T; "ip 8": a per-IP limit of 8 with the attackers
 * on 127.0.0.2, the scraper on 127.0.0.1.)
 * Its timeout is one of inactivity, which a byte every 500 ms renews
 * for ever, and at its limit it stops accepting, so the scraper waits in
 * the backlog behind the attackers.  Its per-IP limit saves the scraper
 * only when the attackers come from another address: with them on
 * 127.0.0.1 too, as a local attacker beside a local Prometheus is, it
 * answered 0 of 37 beside 12 idle connections and 0 beside 200 slowloris
 * ones.  Waiting only as long as MHD_get_timeout() said, it even stopped
 * accepting for good after a flood at its limit (calling MHD_run() every
 * second was needed).  What it lacks is a policy, which client gives way
 * when all are taken, and that is what this file is about; parsing one
 * GET is the small part.  So khprof keeps its own server, and a library
 * less.
 *
 * The policy: HTTPD_MAX_CLIENTS slots; a deadline from accept to the whole
 * request head that bytes do not renew, and one to the last byte of the
 * answer; when all slots are taken, the oldest client still without a
 * whole request gives way to the new connection (read once more first),
 * else the oldest being answered.  A scraper's request is in when it is
 * accepted (TCP_DEFER_ACCEPT below), so it is answered at once and never
 * waits in a slot an attacker could take.  TCP_DEFER_ACCEPT also keeps
 * silent connections in the kernel for a second: against 200 idle
 * attackers, 2,585 reconnections in the 20 s and no measurable CPU of
 * khprof's, where without it there were 209,376 and 20% of a CPU.  200
 * slowloris attackers, whose bytes do get them accepted, cost khprof 22%
 * of a CPU in accepting and closing them (255,079 reconnections in 20 s);
 * each turn of the loop does at most HTTPD_ACCEPT_BATCH accepts, so
 * tracing goes on: a span-mode record of 400,000 spans under that attack
 * lost none (no drop of any kind) and every scrape was answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "httpd.h"
#include "log.h"

/*
 * Connections waiting in the kernel before khprof accepts them: the kernel
 * caps it at net.core.somaxconn (4096 by default).  A full backlog drops
 * new handshakes, and the client's retry comes a second later; 1024 covers
 * a flood khprof drains at HTTPD_ACCEPT_BATCH per turn of its loop.
 */
#define HTTPD_BACKLOG 1024
/* Accepts per httpd__service(): the rest waits for the next turn of the loop. */
#define HTTPD_ACCEPT_BATCH 64
/* Epoll tags of the listening socket and the timer; a client's is (seq << 8) | slot. */
#define TAG_LISTEN UINT64_MAX
#define TAG_TIMER (UINT64_MAX - 1)
_Static_assert(HTTPD_MAX_CLIENTS <= 255, "a client's slot fits the low byte of its tag");

static const char *const reject_names[] = {
	[HTTPD_REJECT_MALFORMED] = "malformed",
	[HTTPD_REJECT_TOO_LARGE] = "too_large",
	[HTTPD_REJECT_TOO_SLOW] = "too_slow",
	[HTTPD_REJECT_TOO_MANY] = "too_many",
	[HTTPD_REJECT_METHOD] = "method",
	[HTTPD_REJECT_PATH] = "path",
	[HTTPD_REJECT_VERSION] = "version",
	[HTTPD_REJECT_PIPELINED] = "pipelined",
	[HTTPD_REJECT_ABORTED] = "aborted",
	[HTTPD_REJECT_INTERNAL] = "internal",
};
_Static_assert(sizeof(reject_names) / sizeof(reject_names[0]) == HTTPD_REJECT_COUNT,
	       "a name for every rejection reason");

const char *httpd__reject_name(uint32_t reason)
{
	return reason < HTTPD_REJECT_COUNT ? reject_names[reason] : "unknown";
}

struct client {
	int fd;                 /* -1: free */
	uint64_t seq;           /* accept order: the oldest connection has the lowest */
	uint64_t accepted_ns;
	uint64_t deadline_ns;   /* of the request head while answer is NULL, then of the answer */
	bool counted;           /* its outcome is counted (an error answer is when made) */
	bool ok;                /* answering 200: bytes after its request are a pipelined one */
	bool pipelined;         /* that one counted */
	size_t got;
	char *answer;           /* malloc'd status line, headers and body */
	size_t answer_len;
	size_t sent;
	char head[HTTPD_REQUEST_MAX];
};

struct httpd {
	int epoll_fd;
	int listen_fd;
	int timer_fd;
	char *path;
	httpd_render_fn render;
	void *ctx;
	char address[96];
	uint64_t accepted;
	uint64_t rejected[HTTPD_REJECT_COUNT];
	uint64_t served;
	struct client clients[HTTPD_MAX_CLIENTS];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- request parsing ------------------------------------------------------ */

static bool is_token_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

int httpd__parse_request(const char *head, size_t len, const char *path, char *accept,
			 size_t accept_len, int *head_only)
{
	const char *end = head + len, *p = head, *method, *target, *line_end;
	size_t method_len, target_len, path_len = strlen(path);

	accept[0] = '\0';
	*head_only = 0;
	/* Empty lines before the request line are ignored (RFC 9112 section 2.2). */
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	line_end = memchr(p, '\n', (size_t)(end - p));
	if (!line_end)
		return 400;
	/* request-line = method SP request-target SP HTTP-version CRLF */
	method = p;
	while (p < line_end && is_token_char(*p))
		p++;
	method_len = (size_t)(p - method);
	if (method_len == 0 || p >= line_end || *p != ' ')
		return 400;
	target = ++p;
	while (p < line_end && *p != ' ' && (unsigned char)*p > ' ' && *p != 0x7f)
		p++;
	target_len = (size_t)(p - target);
	if (target_len == 0 || p >= line_end || *p != ' ')
		return 400;
	p++;
	/* HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 section 2.3). */
	if ((size_t)(line_end - p) < 8 || strncmp(p, "HTTP/", 5) != 0 || p[5] < '0' ||
	    p[5] > '9' || p[6] != '.' || p[7] < '0' || p[7] > '9')
		return 400;
	if (p + 8 != line_end && !(p + 9 == line_end && p[8] == '\r'))
		return 400;
	/*
	 * 505 is for a major version the server does not speak; a higher
	 * minor one (HTTP/1.9) is read as the highest this server knows,
	 * 1.1 (RFC 9110 sections 2.5 and 15.6.6).
	 */
	if (p[5] != '1')
		return 505;
	/*
	 * The absolute form (RFC 9112 section 3.2.2), which a server must
	 * accept: "http://host:port/path" is served as "/path".
	 */
	if (target_len > 8 && (strncasecmp(target, "http://", 7) == 0 ||
			       strncasecmp(target, "https://", 8) == 0)) {
		const char *authority = memchr(target, '/', target_len) + 2;
		const char *slash = memchr(authority, '/', (size_t)(target + target_len - authority));

		target_len = slash ? (size_t)(target + target_len - slash) : 1;
		target = slash ? slash : "/";
	}

	/* Header lines: find Accept; anything without a colon is malformed. */
	for (p = line_end + 1; p < end;) {
		const char *colon, *value, *next = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!next)
			return 400;
		if (p == next || (p + 1 == next && *p == '\r'))
			break; /* the blank line */
		colon = memchr(p, ':', (size_t)(next - p));
		if (!colon || colon == p)
			return 400;
		if ((size_t)(colon - p) == 6 && strncasecmp(p, "accept", 6) == 0) {
			value = colon + 1;
			while (value < next && (*value == ' ' || *value == '\t'))
				value++;
			n = (size_t)(next - value);
			while (n && (value[n - 1] == '\r' || value[n - 1] == ' '))
				n--;
			if (n >= accept_len)
				n = accept_len - 1;
			memcpy(accept, value, n);
			accept[n] = '\0';
		}
		p = next + 1;
	}

	/* The path, without a query string. */
	for (size_t i = 0; i < target_len; i++) {
		if (target[i] == '?') {
			target_len = i;
			break;
		}
	}
	if (target_len != path_len || strncmp(target, path, path_len) != 0)
		return 404;
	if (method_len == 4 && strncmp(method, "HEAD", 4) == 0) {
		*head_only = 1;
		return 200;
	}
	if (method_len == 3 && strncmp(method, "GET", 3) == 0)
		return 200;
	return 405;
}

/* --- connections ---------------------------------------------------------- */

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

static enum httpd_reject reject_of_status(int status)
{
	switch (status) {
	case 400: return HTTPD_REJECT_MALFORMED;
	case 404: return HTTPD_REJECT_PATH;
	case 405: return HTTPD_REJECT_METHOD;
	case 431: return HTTPD_REJECT_TOO_LARGE;
	case 505: return HTTPD_REJECT_VERSION;
	default: return HTTPD_REJECT_INTERNAL;
	}
}

static uint64_t tag_of(const struct httpd *h, const struct client *c)
{
	return c->seq << 8 | (uint64_t)(c - h->clients);
}

/* Closes c; its outcome counted under reason unless it already was. */
static void client_end(struct httpd *h, struct client *c, enum httpd_reject reason)
{
	if (!c->counted)
		h->rejected[reason]++;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->answer);
	c->fd = -1;
	c->answer = NULL;
}

/* Sends what the socket takes now; closes when all is sent or it failed. */
static void client_send(struct httpd *h, struct client *c)
{
	while (c->sent < c->answer_len) {
		ssize_t n = send(c->fd, c->answer + c->sent, c->answer_len - c->sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* EPOLLOUT brings us back */
		if (n <= 0) {
			client_end(h, c, HTTPD_REJECT_ABORTED);
			return;
		}
		c->sent += (size_t)n;
	}
	if (c->ok) {
		h->served++;
		c->counted = true;
	}
	shutdown(c->fd, SHUT_WR);
	/*
	 * Closing with unread bytes (a body, the rest of an oversized head)
	 * makes the kernel send a reset, which can cost the client the answer:
	 * read what has arrived first, a bounded amount, without waiting.
	 * After a GET or HEAD that is a pipelined request, which
	 * "Connection: close" leaves unanswered (RFC 9112 section 9.6).
	 */
	for (int i = 0; i < 8; i++) {
		if (recv(c->fd, c->head, sizeof(c->head), MSG_DONTWAIT) <= 0)
			break;
		if (c->ok && !c->pipelined) {
			h->rejected[HTTPD_REJECT_PIPELINED]++;
			c->pipelined = true;
		}
	}
	client_end(h, c, HTTPD_REJECT_ABORTED); /* counted: nothing added */
}

/* extra: bytes came after the request head. */
static void client_answer(struct httpd *h, struct client *c, int status, int head_only,
			  const char *accept, bool extra)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = tag_of(h, c) };
	const char *type = "text/plain; charset=utf-8";
	char *body = NULL, header[512];
	size_t body_len;
	int n;

	if (status == 200) {
		body = h->render(h->ctx, accept[0] ? accept : NULL, &type);
		if (!body)
			status = 500;
	}
	if (status != 200) {
		h->rejected[reject_of_status(status)]++;
		c->counted = true;
		if (asprintf(&body, "%d %s\n", status, status_text(status)) < 0)
			body = NULL;
		type = "text/plain; charset=utf-8";
	} else {
		c->ok = true;
		if (extra) {
			h->rejected[HTTPD_REJECT_PIPELINED]++;
			c->pipelined = true;
		}
	}
	body_len = body ? strlen(body) : 0;
	n = snprintf(header, sizeof(header),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n",
		     status, status_text(status), type, body_len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (head_only)
		body_len = 0;
	c->answer = malloc((size_t)n + body_len);
	if (!c->answer) {
		free(body);
		client_end(h, c, HTTPD_REJECT_INTERNAL);
		return;
	}
	memcpy(c->answer, header, (size_t)n);
	if (body_len)
		memcpy(c->answer + n, body, body_len);
	free(body);
	c->answer_len = (size_t)n + body_len;
	c->sent = 0;
	c->deadline_ns = c->accepted_ns + HTTPD_DEADLINE_MS * 1000000ull;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
	client_send(h, c);
}

/* The end of the request head (just past its blank line), or NULL; from: where to look. */
static const char *head_end(const char *s, size_t len, size_t from)
{
	for (size_t i = from; i + 1 < len; i++) {
		if (s[i] != '\n')
			continue;
		if (s[i + 1] == '\n')
			return s + i + 2;
		if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n')
			return s + i + 3;
	}
	return NULL;
}

/* Reads what has arrived and answers once the head is whole; without waiting. */
static void client_read(struct httpd *h, struct client *c)
{
	char accept[512];
	const char *end;
	int status, head_only;

	for (;;) {
		size_t before = c->got;
		ssize_t n = recv(c->fd, c->head + c->got, sizeof(c->head) - c->got, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* Closed or reset inside its request; without a byte it was none. */
			c->counted = c->got == 0;
			client_end(h, c, HTTPD_REJECT_MALFORMED);
			return;
		}
		c->got += (size_t)n;
		/* Not HTTP from its first byte (TLS, binary): no need to wait for more. */
		if (!is_token_char(c->head[0]) && c->head[0] != '\r' && c->head[0] != '\n') {
			client_answer(h, c, 400, 0, "", false);
			return;
		}
		/* The blank line may have begun in what came before: look from 3 bytes back. */
		end = head_end(c->head, c->got, before > 3 ? before - 3 : 0);
		if (end) {
			status = httpd__parse_request(c->head, (size_t)(end - c->head), h->path,
						      accept, sizeof(accept), &head_only);
			client_answer(h, c, status, head_only, accept,
				      end < c->head + c->got);
			return;
		}
		if (c->got == sizeof(c->head)) {
			client_answer(h, c, 431, 0, "", false);
			return;
		}
	}
}

/*
 * A slot for a new connection: a free one, else the one of the oldest
 * connection still without a whole request, read once more first (its
 * request may just have come; then it is answered and the next oldest
 * looked at), else the one of the oldest being answered.  Idle and slow
 * clients thus give way to new ones, whatever their number, and a
 * scraper whose request is in is never the one dropped for them.
 */
static struct client *take_slot(struct httpd *h)
{
	for (;;) {
		struct client *reading = NULL, *oldest = NULL;

		for (int i = 0; i < HTTPD_MAX_CLIENTS; i++) {
			struct client *c = &h->clients[i];

			if (c->fd < 0)
				return c;
			if (!c->answer && (!reading || c->seq < reading->seq))
				reading = c;
			if (!oldest || c->seq < oldest->seq)
				oldest = c;
		}
		if (reading) {
			client_read(h, reading);
			if (reading->fd < 0)
				return reading;
			if (reading->answer)
				continue;
		}
		oldest = reading ? reading : oldest;
		client_end(h, oldest, HTTPD_REJECT_TOO_MANY);
		return oldest;
	}
}

static void accept_clients(struct httpd *h)
{
	for (int i = 0; i < HTTPD_ACCEPT_BATCH; i++) {
		int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct client *c;

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return; /* EAGAIN, or a client that vanished: nothing to do */
		c = take_slot(h);
		c->fd = fd;
		c->seq = ++h->accepted;
		c->accepted_ns = now_ns();
		c->deadline_ns = c->accepted_ns + HTTPD_REQUEST_DEADLINE_MS * 1000000ull;
		c->got = 0;
		c->counted = c->ok = c->pipelined = false;
		ev.data.u64 = tag_of(h, c);
		if (epoll_ctl(h->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			h->rejected[HTTPD_REJECT_INTERNAL]++;
			close(fd);
			c->fd = -1;
			continue;
		}
		/* The request often comes with the connection: answered at once. */
		client_read(h, c);
	}
}

/*
 * Closes clients past their deadline and arms the timer for the next one.
 * A request that came but was not read yet is read first: the deadline is
 * the client's, not khprof's own delays.
 */
static void expire_clients(struct httpd *h)
{
	struct itimerspec when = { 0 };
	uint64_t now = now_ns(), next = 0;

	for (int i = 0; i < HTTPD_MAX_CLIENTS; i++) {
		struct client *c = &h->clients[i];

		if (c->fd >= 0 && !c->answer && c->deadline_ns <= now)
			client_read(h, c);
		if (c->fd < 0)
			continue;
		if (c->deadline_ns <= now) {
			client_end(h, c, HTTPD_REJECT_TOO_SLOW);
			continue;
		}
		if (!next || c->deadline_ns < next)
			next = c->deadline_ns;
	}
	if (next) {
		when.it_value.tv_sec = (time_t)(next / 1000000000ull);
		when.it_value.tv_nsec = (long)(next % 1000000000ull);
	}
	timerfd_settime(h->timer_fd, TFD_TIMER_ABSTIME, &when, NULL);
}

void httpd__service(struct httpd *h)
{
	struct epoll_event events[HTTPD_MAX_CLIENTS + 2];
	int n = epoll_wait(h->epoll_fd, events, HTTPD_MAX_CLIENTS + 2, 0);

	for (int i = 0; i < n; i++) {
		uint64_t tag = events[i].data.u64, ticks;
		struct client *c;

		if (tag == TAG_LISTEN) {
			accept_clients(h);
			continue;
		}
		if (tag == TAG_TIMER) {
			if (read(h->timer_fd, &ticks, sizeof(ticks)) < 0)
				ticks = 0;
			continue;
		}
		c = &h->clients[tag & 0xff];
		if (c->fd < 0 || c->seq != tag >> 8)
			continue; /* ended earlier in this batch, its slot maybe taken since */
		if (c->answer)
			client_send(h, c);
		else
			client_read(h, c);
	}
	expire_clients(h);
}

/* --- setup ---------------------------------------------------------------- */

/* Splits "PORT", "ADDR:PORT" or "[ADDR]:PORT"; loopback when ADDR is absent. */
static int split_listen(const char *where, char *host, size_t host_len, char *port,
			size_t port_len)
{
	const char *colon = strrchr(where, ':');
	size_t n;

	if (!colon) {
		snprintf(host, host_len, "127.0.0.1");
		snprintf(port, port_len, "%s", where);
	} else {
		n = (size_t)(colon - where);
		if (n >= 2 && where[0] == '[' && where[n - 1] == ']') {
			where++;
			n -= 2;
		}
		if (n == 0 || n >= host_len)
			return -EINVAL;
		memcpy(host, where, n);
		host[n] = '\0';
		snprintf(port, port_len, "%s", colon + 1);
	}
	if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    atoi(port) > 65535)
		return -EINVAL;
	return 0;
}

/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104: reachable from this machine alone. */
static bool is_loopback(const struct sockaddr_storage *a)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in *in = (const struct sockaddr_in *)a;

	if (a->ss_family == AF_INET)
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	if (a->ss_family != AF_INET6)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
}

/* The warning for a wide address, once per khprof. */
static bool warned_wide;

static int bind_listen(struct httpd *h, const char *where)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *found = NULL;
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	char host[64], port[8], bound_host[64], bound_port[8];
	int err, one = 1;

	if (split_listen(where, host, sizeof(host), port, sizeof(port))) {
		log__error("bad --serve '%s': expected PORT, ADDR:PORT or [ADDR]:PORT", where);
		return -EINVAL;
	}
	err = getaddrinfo(host, port, &hints, &found);
	if (err) {
		log__error("cannot serve metrics on '%s': %s", where, gai_strerror(err));
		return -EINVAL;
	}
	h->listen_fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->listen_fd < 0 ||
	    setsockopt(h->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    /* Handed over once its first bytes came, a silent one after 1 s. */
	    setsockopt(h->listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof(one)) ||
	    bind(h->listen_fd, found->ai_addr, found->ai_addrlen) ||
	    listen(h->listen_fd, HTTPD_BACKLOG) ||
	    getsockname(h->listen_fd, (struct sockaddr *)&bound, &bound_len)) {
		err = -errno;
		log__error("cannot serve metrics on '%s': %s", where, strerror(errno));
		freeaddrinfo(found);
		return err;
	}
	freeaddrinfo(found);
	if (getnameinfo((struct sockaddr *)&bound, bound_len, bound_host, sizeof(bound_host),
			bound_port, sizeof(bound_port), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(h->address, sizeof(h->address),
			 strchr(bound_host, ':') ? "[%s]:%s" : "%s:%s", bound_host, bound_port);
	if (!is_loopback(&bound) && !warned_wide) {
		warned_wide = true;
		log__warn("serving metrics on '%s', beyond loopback: the endpoint has no "
			  "authentication (serve on loopback, or behind a proxy: docs/FLEET.md)",
			  h->address);
	}
	return 0;
}

int httpd__open(struct httpd **out, const char *where, const char *path,
		httpd_render_fn render, void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct httpd *h;
	int err;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->epoll_fd = h->listen_fd = h->timer_fd = -1;
	for (int i = 0; i < HTTPD_MAX_CLIENTS; i++)
		h->clients[i].fd = -1;
	h->render = render;
	h->ctx = ctx;
	h->path = strdup(path);
	err = h->path ? bind_listen(h, where) : -ENOMEM;
	if (err)
		goto fail;
	h->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	h->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (h->epoll_fd < 0 || h->timer_fd < 0) {
		err = -errno;
		log__error("cannot serve metrics: %s", strerror(errno));
		goto fail;
	}
	ev.data.u64 = TAG_LISTEN;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_ADD, h->listen_fd, &ev);
	ev.data.u64 = TAG_TIMER;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_ADD, h->timer_fd, &ev);
	*out = h;
	return 0;
fail:
	httpd__close(h);
	return err;
}

int httpd__fd(const struct httpd *h)
{
	return h->epoll_fd;
}

const char *httpd__address(const struct httpd *h)
{
	return h->address;
}

void httpd__rejected(const struct httpd *h, uint64_t out[HTTPD_REJECT_COUNT])
{
	memcpy(out, h->rejected, sizeof(h->rejected));
}

uint64_t httpd__served(const struct httpd *h)
{
	return h->served;
}

void httpd__close(struct httpd *h)
{
	if (!h)
		return;
	for (int i = 0; i < HTTPD_MAX_CLIENTS; i++)
		if (h->clients[i].fd >= 0)
			client_end(h, &h->clients[i], HTTPD_REJECT_ABORTED);
	if (h->timer_fd >= 0)
		close(h->timer_fd);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->epoll_fd >= 0)
		close(h->epoll_fd);
	free(h->path);
	free(h);
}
