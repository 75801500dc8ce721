// SPDX-License-Identifier: MIT
/*
 * mhd_serve PORT LIMIT TIMEOUT_S PER_IP BYTES: GET /metrics (BYTES of
 * text) served by Debian's libmicrohttpd on 127.0.0.1:PORT as khprof would
 * have to run it: no thread of its own, its epoll descriptor in the
 * caller's loop, MHD_run() when it is ready or its timeout comes.  LIMIT
 * is MHD_OPTION_CONNECTION_LIMIT, TIMEOUT_S MHD_OPTION_CONNECTION_TIMEOUT
 * (whole seconds of inactivity), PER_IP MHD_OPTION_PER_IP_CONNECTION_LIMIT
 * (0: none).  The alternative measured against userspace/common/httpd.c
 * by bench/serve-siege/run.sh; not part of khprof.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <microhttpd.h>

static char *body;
static size_t body_len;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	int ok = strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0;

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	r = MHD_create_response_from_buffer(ok ? body_len : 0, ok ? body : "",
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(c, ok ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, r);
	MHD_destroy_response(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EPOLLIN };
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	int loop;

	if (argc != 6) {
		fprintf(stderr, "usage: mhd_serve PORT LIMIT TIMEOUT_S PER_IP BYTES\n");
		return 2;
	}
	at.sin_port = htons((uint16_t)atoi(argv[1]));
	body_len = strtoul(argv[5], NULL, 10);
	body = malloc(body_len + 1);
	if (!body)
		return 1;
	for (size_t i = 0; i < body_len; i++)
		body[i] = i % 64 == 63 ? '\n' : 'x';
	d = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, answer, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&at,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)atoi(argv[2]),
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)atoi(argv[3]),
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)atoi(argv[4]),
			     MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
	info = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!info) {
		fprintf(stderr, "mhd_serve: cannot start\n");
		return 1;
	}
	/* The caller's loop: one more descriptor in its epoll set. */
	loop = epoll_create1(EPOLL_CLOEXEC);
	if (loop < 0 || epoll_ctl(loop, EPOLL_CTL_ADD, info->epoll_fd, &ev) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	/*
	 * MHD_run() at least every second: waiting as long as MHD_get_timeout()
	 * says (forever with no connection), 0.9.75 stopped accepting for good
	 * after a flood at its connection limit (the backlog full, nothing
	 * woke the loop again).
	 */
	for (;;) {
		MHD_UNSIGNED_LONG_LONG timeout_ms;
		int wait = 1000;

		if (MHD_get_timeout(d, &timeout_ms) == MHD_YES && timeout_ms < 1000)
			wait = (int)timeout_ms;
		epoll_wait(loop, &ev, 1, wait);
		MHD_run(d);
	}
}
