/* t_net.h: one raw HTTP exchange with a server under test on 127.0.0.1,
 * for the unit tests of core/http and core/app. */
#ifndef FB_T_NET_H
#define FB_T_NET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>

/* Sends req (len bytes), reads until EOF (or 5 s without a byte) into out,
 * NUL-terminated. Returns the bytes read; 0 when it could not connect. */
static inline size_t t_exchange(int port, const char *req, size_t len, char *out, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	out[0] = '\0';
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return 0;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (got + 1 >= size || poll(&p, 1, 5000) <= 0)
			break;
		n = recv(fd, out + got, size - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	return got;
}

#endif
