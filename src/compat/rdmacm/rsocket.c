/* SPDX-License-Identifier: MIT */
/*
 * The rsocket API (<rdma/rsocket.h>): not supported by uroce, a known gap.
 *
 * rdma-core's rsockets run a byte stream (and a UD datagram service) over RC/UD QPs with their
 * own credit and iomap protocol, on top of rdma_cm. uroce does not carry it. The calls exist
 * because rstream and riostream import them and load with BIND_NOW; each fails before touching
 * its arguments with -1 and errno EOPNOTSUPP ((off_t)-1 for riomap, (size_t)-1 for riowrite,
 * rdma-core's ERR() through their return types), so rstream prints
 * "rsocket failed: Operation not supported". rpoll and rselect fail too, even for ordinary
 * file descriptors: a program gets there only after an rsocket it could not have made.
 */
#include <errno.h>
#include <stdarg.h>

#include <rdma/rsocket.h>

static int not_supported(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return not_supported();
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_supported();
}

int rlisten(int socket, int backlog)
{
	(void)socket;
	(void)backlog;
	return not_supported();
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_supported();
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_supported();
}

int rshutdown(int socket, int how)
{
	(void)socket;
	(void)how;
	return not_supported();
}

int rclose(int socket)
{
	(void)socket;
	return not_supported();
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return not_supported();
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return not_supported();
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return not_supported();
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return not_supported();
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return not_supported();
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return not_supported();
}

ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return not_supported();
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return not_supported();
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return not_supported();
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return not_supported();
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds;
	(void)nfds;
	(void)timeout;
	return not_supported();
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	(void)nfds;
	(void)readfds;
	(void)writefds;
	(void)exceptfds;
	(void)timeout;
	return not_supported();
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_supported();
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_supported();
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return not_supported();
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return not_supported();
}

int rfcntl(int socket, int cmd, ... /* arg */)
{
	(void)socket;
	(void)cmd;
	return not_supported();
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return not_supported();
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return not_supported();
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	return (size_t)not_supported();
}
