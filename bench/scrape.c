// SPDX-License-Identifier: MIT
/*
 * scrape PORT N: N scrapes of http://127.0.0.1:PORT/metrics, one after the
 * other, as Prometheus makes them (OpenMetrics asked for, one connection
 * each).  Prints scrapes=N bytes=TOTAL failed=F.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char request[] =
	"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	"Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
	"Connection: close\r\n\r\n";

static long scrape(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[65536];
	long total = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    send(fd, request, sizeof(request) - 1, 0) != (ssize_t)(sizeof(request) - 1)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		total += n;
	close(fd);
	return strncmp(buf, "HTTP/1.1 200", 12) == 0 || total > 0 ? total : -1;
}

int main(int argc, char **argv)
{
	long bytes = 0, failed = 0;
	int port, n;

	if (argc != 3) {
		fprintf(stderr, "usage: scrape PORT N\n");
		return 2;
	}
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		long got = scrape(port);

		if (got < 0)
			failed++;
		else
			bytes += got;
	}
	printf("scrapes=%d bytes=%ld failed=%ld\n", n, bytes, failed);
	return failed ? 1 : 0;
}
