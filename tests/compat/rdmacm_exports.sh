#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The exports of uroce's librdmacm.so.1 against Debian's (rdma-core v44):
#   rdmacm_exports.sh LIBDIR [REAL-LIBRDMACM]
# 1. our defined dynamic symbols are exactly Debian's: the same name@@VERSION (or name@VERSION)
#    set, with the same symbol type, and the same version nodes; the lists of missing and extra
#    symbols are printed;
# 2. every RDMACM_* import of each installed consumer (rdmacm-utils, perftest, libfabric, UCX)
#    is defined by us (BIND_NOW would abort the program at load);
# 3. the SONAME, and no unversioned exports.
# Exit 77 (skip) without readelf or without Debian's library to compare with.
set -u -o pipefail

LIBDIR=$1
REAL=${2:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
LIB=$LIBDIR/librdmacm.so.1
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-rdmacm-exports.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
command -v readelf >/dev/null || {
	echo "SKIP: no readelf"
	exit 77
}
[ -e "$REAL" ] || {
	echo "SKIP: no $REAL to compare with (install librdmacm1)"
	exit 77
}
[ -e "$LIB" ] || {
	echo "FAIL: no $LIB" >&2
	exit 1
}

defined() { # LIB: its defined dynamic symbols as "name@@VERSION TYPE", sorted
	readelf --dyn-syms -W "$1" |
		awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" && $8 != "" { print $8, $4 }' |
		sort -u
}
imports() { # ELF: its RDMACM_* imports as name@@VERSION (how we must define them), sorted
	readelf --dyn-syms -W "$1" |
		awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && $8 ~ /@RDMACM_/ { sub(/ \([0-9]+\)$/, "", $8); print $8 }' |
		sed 's/@@*/@@/' | sort -u
}

defined "$LIB" >"$T/ours"
defined "$REAL" >"$T/real"
comm -23 "$T/real" "$T/ours" >"$T/missing"
comm -13 "$T/real" "$T/ours" >"$T/extra"
if [ -s "$T/missing" ]; then
	fail "$(wc -l <"$T/missing") of Debian's $(wc -l <"$T/real") exports are missing from $LIB (name@@VERSION TYPE):"
	sed 's/^/  missing: /' "$T/missing" >&2
fi
if [ -s "$T/extra" ]; then
	fail "$(wc -l <"$T/extra") exports that Debian's librdmacm does not have:"
	sed 's/^/  extra: /' "$T/extra" >&2
fi
echo "$(wc -l <"$T/real") Debian exports, $(wc -l <"$T/ours") ours, $(wc -l <"$T/missing") missing, $(wc -l <"$T/extra") extra"

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = librdmacm.so.1 ] || fail "SONAME is '$soname'"
unversioned=$(readelf --dyn-syms -W "$LIB" |
	awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" && $8 !~ /@/ && $8 !~ /^RDMACM_/ { print $8 }')
[ -z "$unversioned" ] || fail "unversioned exports: $unversioned"

cut -d' ' -f1 "$T/ours" >"$T/ours_names"
checked=0 broken=""
: >"$T/lack_all"
for elf in /usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy /usr/bin/mckey /usr/bin/cmtime \
	/usr/bin/rdma_server /usr/bin/rdma_client /usr/bin/rdma_xserver /usr/bin/rdma_xclient \
	/usr/bin/riostream /usr/bin/rstream /usr/bin/ib_* \
	/usr/lib/x86_64-linux-gnu/libfabric.so.1 /usr/lib/x86_64-linux-gnu/ucx/libuct_rdmacm.so.0; do
	[ -e "$elf" ] || continue
	readelf -h "$elf" >/dev/null 2>&1 || continue # a script
	imports "$elf" >"$T/imp"
	[ -s "$T/imp" ] || continue
	checked=$((checked + 1))
	comm -23 "$T/imp" "$T/ours_names" >"$T/lack"
	if [ -s "$T/lack" ]; then
		broken="$broken ${elf##*/}($(wc -l <"$T/lack"))"
		cat "$T/lack" >>"$T/lack_all"
	fi
done
echo "$checked installed consumers checked"
if [ -n "$broken" ]; then
	fail "installed consumers that would not load (BIND_NOW), with their number of missing imports:"
	echo " $broken" | fold -s -w 100 >&2
	echo "  the imports they lack: $(sort -u "$T/lack_all" | tr '\n' ' ')" | fold -s -w 100 >&2
fi
[ "$failures" -eq 0 ] || exit 1
echo PASS
