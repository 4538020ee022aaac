#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The exports of uroce's libibverbs.so.1 against what Debian's programs import:
#   exports.sh LIBDIR IMPORTS-FILE
# 1. every symbol@version of IMPORTS-FILE (the Appendix A list) is defined, at that version, as
#    the default version;
# 2. when Debian's own libibverbs.so.1 is installed: our default exports are exactly its (plus
#    uroce's own UROCE_PRIVATE_1 node, which no rdma-core program imports);
# 3. every IBVERBS_* import of each installed consumer (ibverbs-utils, perftest, rdmacm-utils,
#    Debian's libmlx5/libefa/librdmacm) is defined by us, and `ldd -r` over it with our library
#    first reports no missing version or symbol (BIND_NOW would abort the program);
# 4. the SONAME, and verbs_allow_disassociate_destroy is data (libmlx5 binds it as an object).
set -u -o pipefail

LIBDIR=$1 IMPORTS=$2
LIB=$LIBDIR/libibverbs.so.1
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-exports.XXXXXX") || exit 1
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

defined() { # LIB: its defined default-version exports as name@VERSION, sorted
	readelf --dyn-syms -W "$1" | awk '$7 != "UND" && $8 ~ /@@/ { sub(/@@/, "@", $8); print $8 }' |
		sort -u
}
imports() { # ELF: its IBVERBS_* imports as name@VERSION, sorted
	readelf --dyn-syms -W "$1" |
		awk '$7 == "UND" && $8 ~ /@IBVERBS_/ { sub(/ \([0-9]+\)$/, "", $8); print $8 }' |
		sed 's/@@*/@/' | sort -u
}

# Our own UROCE_PRIVATE_1 node (librdmacm's interface to us) is left out of the comparison.
defined "$LIB" | grep -v '@UROCE_PRIVATE_1$' >"$T/ours"
[ -s "$T/ours" ] || fail "no versioned exports in $LIB"

grep -v '^#' "$IMPORTS" | sort -u >"$T/want"
comm -23 "$T/want" "$T/ours" >"$T/missing"
if [ -s "$T/missing" ]; then
	fail "missing exports (Appendix A):"
	cat "$T/missing" >&2
fi
echo "$(wc -l <"$T/want") Appendix A imports checked, $(wc -l <"$T/ours") exports"

REAL=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
if [ -e "$REAL" ]; then
	defined "$REAL" >"$T/real"
	if ! diff -u "$T/real" "$T/ours" >"$T/diff"; then
		fail "default exports differ from Debian's libibverbs ('-' theirs, '+' ours):"
		cat "$T/diff" >&2
	fi
fi

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = libibverbs.so.1 ] || fail "SONAME is '$soname'"
readelf --dyn-syms -W "$LIB" >"$T/syms"
grep -qE 'OBJECT +GLOBAL .* verbs_allow_disassociate_destroy@@IBVERBS_PRIVATE_34' "$T/syms" ||
	fail "verbs_allow_disassociate_destroy is not a data object at IBVERBS_PRIVATE_34"
unversioned=$(awk '$7 != "UND" && $5 == "GLOBAL" && $8 !~ /@/ && $8 !~ /^(IBVERBS_|UROCE_PRIVATE_)/ { print $8 }' "$T/syms")
[ -z "$unversioned" ] || fail "unversioned exports: $unversioned"

checked=0
for elf in /usr/bin/ibv_* /usr/bin/ib_* /usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy \
	/usr/lib/x86_64-linux-gnu/libmlx5.so.1 /usr/lib/x86_64-linux-gnu/libefa.so.1 \
	/usr/lib/x86_64-linux-gnu/librdmacm.so.1; do
	[ -e "$elf" ] || continue
	readelf -h "$elf" >/dev/null 2>&1 || continue # a script
	imports "$elf" >"$T/imp"
	[ -s "$T/imp" ] || continue
	checked=$((checked + 1))
	comm -23 "$T/imp" "$T/ours" >"$T/missing"
	if [ -s "$T/missing" ]; then
		fail "$elf imports symbols we lack:"
		cat "$T/missing" >&2
	fi
	LD_LIBRARY_PATH=$LIBDIR ldd -r "$elf" >"$T/ldd" 2>&1
	if grep -qE 'not found|no version information|undefined symbol' "$T/ldd"; then
		fail "ldd -r $elf with our library:"
		grep -E 'not found|no version information|undefined symbol' "$T/ldd" >&2
	fi
	grep -q "libibverbs.so.1 => $LIBDIR/libibverbs.so.1" "$T/ldd" ||
		fail "ldd $elf does not resolve libibverbs.so.1 to ours"
done
echo "$checked installed consumers checked"
[ "$failures" -eq 0 ] || exit 1
echo PASS
