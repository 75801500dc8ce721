/* SPDX-License-Identifier: MIT */
/*
 * httpd.h - the smallest HTTP/1.1 server that serves one resource (GET and
 * HEAD of /metrics) from an event loop it does not own: every socket is
 * nonblocking and httpd__service() does a bounded amount of work and
 * returns, so a slow, stuck or malicious client never holds up the caller.
 *
 * Bounds: HTTPD_MAX_CLIENTS connections at once; when all are taken, a new
 * connection takes the slot of the oldest one still without a whole
 * request (else of the oldest being answered), so idle or slow clients
 * cannot keep a scraper out.  HTTPD_REQUEST_MAX bytes of request head (431
 * past it), HTTPD_REQUEST_DEADLINE_MS from accept to the end of the request
 * head, whatever arrives meanwhile, and HTTPD_DEADLINE_MS to the last byte
 * of the answer (then the connection is closed).  One request per
 * connection (Connection: close).  Answers: 200, 400 malformed, 404 other
 * paths, 405 other methods (with Allow), 431, 505 for an HTTP major
 * version other than 1.
 */
#ifndef KHPROF_HTTPD_H
#define KHPROF_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#define HTTPD_MAX_CLIENTS 64
#define HTTPD_REQUEST_MAX 8192
#define HTTPD_REQUEST_DEADLINE_MS 2000
#define HTTPD_DEADLINE_MS 5000

/*
 * Why a connection got no metrics: the `reason` label of
 * khprof_http_requests_rejected_total.  Wire values (label names): append
 * only.  Every connection ends served or under exactly one of these, but
 * for one closed by its client before sending a byte (no request at all);
 * a pipelined request is counted besides the one before it.
 */
enum httpd_reject {
	HTTPD_REJECT_MALFORMED = 0, /* 400, or closed by the client inside its request */
	HTTPD_REJECT_TOO_LARGE = 1, /* 431: a head over HTTPD_REQUEST_MAX */
	HTTPD_REJECT_TOO_SLOW = 2,  /* past a deadline: no whole request, or the answer not taken */
	HTTPD_REJECT_TOO_MANY = 3,  /* closed to make room for a newer connection */
	HTTPD_REJECT_METHOD = 4,    /* 405 */
	HTTPD_REJECT_PATH = 5,      /* 404 */
	HTTPD_REJECT_VERSION = 6,   /* 505 */
	HTTPD_REJECT_PIPELINED = 7, /* a request after the first on a connection: not answered */
	HTTPD_REJECT_ABORTED = 8,   /* closed by the client before it had the whole answer */
	HTTPD_REJECT_INTERNAL = 9,  /* 500: the exposition could not be made */
	HTTPD_REJECT_COUNT
};

/* "too_many"..., or "unknown" out of range. */
const char *httpd__reject_name(uint32_t reason);

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
 * through render.  Prints one line and returns -errno on failure; warns
 * once when the address is not a loopback one (no authentication).
 */
int httpd__open(struct httpd **out, const char *where, const char *path,
		httpd_render_fn render, void *ctx);
/* Readable when httpd__service() has work: add it to the caller's epoll set. */
int httpd__fd(const struct httpd *h);
/* Accepts, reads, answers and expires whatever is ready, without blocking. */
void httpd__service(struct httpd *h);
/* "ADDR:PORT" actually bound (the port filled in when 0 was asked). */
const char *httpd__address(const struct httpd *h);
/* Connections that got no metrics, by reason (HTTPD_REJECT_COUNT values). */
void httpd__rejected(const struct httpd *h, uint64_t out[HTTPD_REJECT_COUNT]);
/* Answers of 200 sent whole. */
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
