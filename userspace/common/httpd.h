/* SPDX-License-Identifier: MIT */
/*
 * httpd.h - the smallest HTTP/1.1 server that serves one resource (GET and
 * HEAD of /metrics) from an event loop it does not own: every socket is
 * nonblocking and httpd__service() does a bounded amount of work and
 * returns, so a slow, stuck or malicious client never holds up the caller.
 *
 * Bounds: HTTPD_MAX_CLIENTS connections at once (more are closed at once),
 * HTTPD_REQUEST_MAX bytes of request head (431 past it), HTTPD_DEADLINE_MS
 * from accept to the last byte of the answer (then the connection is
 * closed).  One request per connection (Connection: close).  Answers: 200,
 * 400 malformed, 404 other paths, 405 other methods (with Allow), 431, 505
 * for an HTTP version other than 1.0 and 1.1.
 */
#ifndef KHPROF_HTTPD_H
#define KHPROF_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#define HTTPD_MAX_CLIENTS 8
#define HTTPD_REQUEST_MAX 8192
#define HTTPD_DEADLINE_MS 5000

struct httpd;

/*
 * The body of the served resource for a request whose Accept header is
 * accept (NULL when absent); *content_type is set to a static string.
 * Returns malloc'd text or NULL (answered with 500).
 */
typedef char *(*httpd_render_fn)(void *ctx, const char *accept, const char **content_type);

/*
 * Listens on where: "PORT" (loopback), "ADDR:PORT" or "[ADDR6]:PORT"
 * (ADDR numeric or a host name; PORT 0 picks a free port), and serves path
 * through render.  Prints one line and returns -errno on failure.
 */
int httpd__open(struct httpd **out, const char *where, const char *path,
		httpd_render_fn render, void *ctx);
/* Readable when httpd__service() has work: add it to the caller's epoll set. */
int httpd__fd(const struct httpd *h);
/* Accepts, reads, answers and expires whatever is ready, without blocking. */
void httpd__service(struct httpd *h);
/* "ADDR:PORT" actually bound (the port filled in when 0 was asked). */
const char *httpd__address(const struct httpd *h);
/* Requests answered with an error, or dropped (too many, too slow). */
uint64_t httpd__rejected(const struct httpd *h);
uint64_t httpd__served(const struct httpd *h);
void httpd__close(struct httpd *h);

/*
 * Parses a complete request head (up to and including the blank line):
 * the status it gets and, for 200, the Accept header's value copied into
 * accept (empty when absent).  *head_only is set for HEAD.  Exposed for
 * the unit tests.
 */
int httpd__parse_request(const char *head, size_t len, const char *path, char *accept,
			 size_t accept_len, int *head_only);

#endif /* KHPROF_HTTPD_H */
