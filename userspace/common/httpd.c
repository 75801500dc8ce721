// SPDX-License-Identifier: MIT
/*
 * A nonblocking HTTP/1.1 server for one resource, driven by the caller's
 * event loop through one epoll descriptor of its own (listening socket,
 * clients and a timerfd for the earliest client deadline).
 */
#include <errno.h>
#include <netdb.h>
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

struct client {
	int fd;                 /* -1: free */
	uint64_t deadline_ns;
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
	uint64_t rejected;
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
	line_end = memchr(head, '\n', len);
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
	if ((size_t)(line_end - p) < 8 || strncmp(p, "HTTP/", 5) != 0 || p[5] < '0' ||
	    p[5] > '9' || p[6] != '.' || p[7] < '0' || p[7] > '9')
		return 400;
	if (p + 8 != line_end && !(p + 9 == line_end && p[8] == '\r'))
		return 400;
	if (p[5] != '1')
		return 505;

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

static const char *reason_of(int status)
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

static void client_close(struct httpd *h, struct client *c)
{
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
			h->rejected++;
			client_close(h, c);
			return;
		}
		c->sent += (size_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	/*
	 * Closing with unread bytes (a body, the rest of an oversized head)
	 * makes the kernel send a reset, which can cost the client the answer:
	 * read what has arrived first, a bounded amount, without waiting.
	 */
	for (int i = 0; i < 8; i++)
		if (recv(c->fd, c->head, sizeof(c->head), MSG_DONTWAIT) <= 0)
			break;
	client_close(h, c);
}

static void client_answer(struct httpd *h, struct client *c, int status, int head_only,
			  const char *accept)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
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
		h->rejected++;
		if (asprintf(&body, "%d %s\n", status, reason_of(status)) < 0)
			body = NULL;
		type = "text/plain; charset=utf-8";
	} else {
		h->served++;
	}
	body_len = body ? strlen(body) : 0;
	n = snprintf(header, sizeof(header),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n",
		     status, reason_of(status), type, body_len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (head_only)
		body_len = 0;
	c->answer = malloc((size_t)n + body_len);
	if (!c->answer) {
		free(body);
		client_close(h, c);
		return;
	}
	memcpy(c->answer, header, (size_t)n);
	if (body_len)
		memcpy(c->answer + n, body, body_len);
	free(body);
	c->answer_len = (size_t)n + body_len;
	c->sent = 0;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
	client_send(h, c);
}

/* The end of the request head (just past its blank line), or NULL. */
static const char *head_end(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\n')
			continue;
		if (s[i + 1] == '\n')
			return s + i + 2;
		if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n')
			return s + i + 3;
	}
	return NULL;
}

static void client_read(struct httpd *h, struct client *c)
{
	char accept[512];
	const char *end;
	int status, head_only;

	for (;;) {
		ssize_t n = recv(c->fd, c->head + c->got, sizeof(c->head) - c->got, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) { /* closed before a whole request */
			h->rejected++;
			client_close(h, c);
			return;
		}
		c->got += (size_t)n;
		end = head_end(c->head, c->got);
		if (end) {
			status = httpd__parse_request(c->head, (size_t)(end - c->head), h->path,
						      accept, sizeof(accept), &head_only);
			client_answer(h, c, status, head_only, accept);
			return;
		}
		if (c->got == sizeof(c->head)) {
			client_answer(h, c, 431, 0, "");
			return;
		}
	}
}

static void accept_clients(struct httpd *h)
{
	for (;;) {
		int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct client *c = NULL;

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return; /* EAGAIN, or a client that vanished: nothing to do */
		for (int i = 0; i < HTTPD_MAX_CLIENTS && !c; i++)
			if (h->clients[i].fd < 0)
				c = &h->clients[i];
		if (!c) {
			h->rejected++;
			close(fd);
			continue;
		}
		c->fd = fd;
		c->got = 0;
		c->deadline_ns = now_ns() + HTTPD_DEADLINE_MS * 1000000ull;
		ev.data.ptr = c;
		if (epoll_ctl(h->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			h->rejected++;
			close(fd);
			c->fd = -1;
		}
	}
}

/* Closes clients past their deadline and arms the timer for the next one. */
static void expire_clients(struct httpd *h)
{
	struct itimerspec when = { 0 };
	uint64_t now = now_ns(), next = 0;

	for (int i = 0; i < HTTPD_MAX_CLIENTS; i++) {
		struct client *c = &h->clients[i];

		if (c->fd < 0)
			continue;
		if (c->deadline_ns <= now) {
			h->rejected++;
			client_close(h, c);
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
		void *tag = events[i].data.ptr;
		struct client *c = tag;
		uint64_t ticks;

		if (tag == &h->listen_fd) {
			accept_clients(h);
		} else if (tag == &h->timer_fd) {
			if (read(h->timer_fd, &ticks, sizeof(ticks)) < 0)
				ticks = 0;
		} else if (c->fd >= 0 && c->answer) {
			client_send(h, c);
		} else if (c->fd >= 0) {
			client_read(h, c);
		}
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
	    bind(h->listen_fd, found->ai_addr, found->ai_addrlen) ||
	    listen(h->listen_fd, HTTPD_MAX_CLIENTS) ||
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
	ev.data.ptr = &h->listen_fd;
	epoll_ctl(h->epoll_fd, EPOLL_CTL_ADD, h->listen_fd, &ev);
	ev.data.ptr = &h->timer_fd;
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

uint64_t httpd__rejected(const struct httpd *h)
{
	return h->rejected;
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
			client_close(h, &h->clients[i]);
	if (h->timer_fd >= 0)
		close(h->timer_fd);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->epoll_fd >= 0)
		close(h->epoll_fd);
	free(h->path);
	free(h);
}
