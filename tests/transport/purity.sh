#!/bin/sh
# The sans-I/O libraries (wire, transport, cm, pace): no sockets, clocks, threads, sleeping,
# stdio, signals, or process control among their undefined symbols. Usage: purity.sh LIB.a...
status=0
deny='^(socket|bind|connect|send|sendto|sendmsg|sendmmsg|recv|recvfrom|recvmsg|recvmmsg|read|write|open|open64|close|poll|epoll_.*|select|ioctl|clock_gettime|gettimeofday|time|nanosleep|usleep|sleep|pthread_.*|printf|fprintf|puts|fputs|putchar|perror|fopen|fwrite|fread|getenv|exit|abort|syslog|rand|srand|random|sigaction|signal|raise|kill|sigprocmask|pthread_sigmask|setjmp|_setjmp|__sigsetjmp|sigsetjmp|longjmp|siglongjmp)$'
for lib in "$@"; do
	bad=$(nm -u "$lib" | awk '{print $NF}' | sed 's/@.*//' | grep -E "$deny" | sort -u)
	if [ -n "$bad" ]; then
		echo "$lib uses: $bad"
		status=1
	fi
	nm -u "$lib" >/dev/null || status=1
done
[ $status -eq 0 ] && echo "sans-I/O: ok ($*)"
exit $status
