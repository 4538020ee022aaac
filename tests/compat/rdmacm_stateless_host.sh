#!/usr/bin/env bash
# librdmacm.so.1 holds no copy of the host layer's state: the opened device, its engine and its
# sockets live once per process, in our libibverbs.so.1, and librdmacm reaches them through that
# library's UROCE_PRIVATE_1 symbols. It links only the host libraries that keep no state.
# Usage: rdmacm_stateless_host.sh LIBRDMACM STATELESS_ARCHIVES... -- STATEFUL_ARCHIVES...
# Fails when an object of a stateless archive has writable data (.data, .bss or thread-local;
# relocated read-only tables are fine), or when librdmacm defines a symbol that a stateful
# archive (the I/O backends, the opened device) defines.
set -euo pipefail
lib=$1
shift
stateless=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	stateless+=("$1")
	shift
done
shift
status=0
for a in "${stateless[@]}"; do
	writable=$(size -A "$a" | awk '
		/^[^ ]+\.o/ { obj = $1 }
		($1 ~ /^\.(data|bss|tdata|tbss)(\.|$)/ && $1 !~ /^\.data\.rel\.ro/ && $2 > 0) { print obj, $1, $2 }')
	if [ -n "$writable" ]; then
		echo "FAIL: $(basename "$a") keeps writable state, which librdmacm would hold a second copy of:"
		echo "$writable"
		status=1
	fi
done
# Global symbols (functions, data) of the stateful archives, against librdmacm's symbol table.
nm --defined-only "$@" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort -u >"${TMPDIR:-/tmp}/stateful.$$"
found=$(nm --defined-only "$lib" | awk '{ print $3 }' | sort -u | comm -12 - "${TMPDIR:-/tmp}/stateful.$$" |
	grep -v '^\.' || true)
rm -f "${TMPDIR:-/tmp}/stateful.$$"
if [ -n "$found" ]; then
	echo "FAIL: $(basename "$lib") holds code or data of the stateful host libraries:"
	echo "$found" | head -20
	status=1
fi
[ $status -eq 0 ] && echo "librdmacm links only stateless host code ($(basename -a "${stateless[@]}" | tr '\n' ' '))"
exit $status
