/* SPDX-License-Identifier: MIT */
/*
 * khhttp.h - plain HTTP/1.1 from the tests' side, on loopback: a free
 * port, one exchange per connection (Connection: close), every wait
 * bounded.  For khprof's /metrics server and the Prometheus tools the
 * tests start (a Prometheus server, a Pushgateway).
 */
#ifndef KHPROF_TEST_KHHTTP_H
#define KHPROF_TEST_KHHTTP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "khtest.h"

/* A port free on loopback now (the kernel's pick for port 0). */
static inline int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static inline int connect_loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* A bound on every wait, so a server that hangs fails the test instead. */
	struct timeval limit = { .tv_sec = 30 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads until the server closes; the text (malloc'd). */
static inline char *read_to_end(int fd)
{
	size_t len = 0, cap = 4096;
	char *text = malloc(cap);
	ssize_t n;

	assert_non_null(text);
	while ((n = recv(fd, text + len, cap - len - 1, 0)) > 0) {
		len += (size_t)n;
		if (cap - len < 1024) {
			cap *= 2;
			text = realloc(text, cap);
			assert_non_null(text);
		}
	}
	text[len] = '\0';
	return text;
}

/* One exchange with 127.0.0.1:port; the whole answer, or NULL if refused. */
static inline char *http_exchange(int port, const char *request, size_t len)
{
	int fd = connect_loopback(port);
	char *answer;

	if (fd < 0)
		return NULL;
	assert_int_equal(send(fd, request, len, MSG_NOSIGNAL), (ssize_t)len);
	answer = read_to_end(fd);
	close(fd);
	return answer;
}

static inline int http_status(const char *answer)
{
	int status = 0;

	if (!answer || sscanf(answer, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	return status;
}

/* GET path; the body when the status is 200, else NULL. */
static inline char *http_get(int port, const char *path)
{
	char request[2048], *answer, *body = NULL;

	snprintf(request, sizeof(request), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Connection: close\r\n\r\n", path);
	answer = http_exchange(port, request, strlen(request));
	if (http_status(answer) == 200 && strstr(answer, "\r\n\r\n"))
		body = strdup(strstr(answer, "\r\n\r\n") + 4);
	free(answer);
	return body;
}

#endif /* KHPROF_TEST_KHHTTP_H */
