#!/bin/bash
# The RoCE v2 sockets follow the interface's addresses: in a network namespace of its own, with a
# veth pair, test_ctx talks over 198.18.60.1, adds 198.18.60.2, and talks over that.
# Needs root (exit 77 otherwise).
set -u
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
TEST=$1
exec unshare -n bash -c '
set -e
ip link set lo up
ip link add d0 type veth peer name d1
ip link set d0 up
ip link set d1 up
ip addr add 198.18.60.1/24 dev d0
d=$(mktemp -d)
trap "rm -rf $d" EXIT
UROCE_RUNDIR=$d UROCE_PORT=24795 "$0" addr uroce_d0 "ip addr add 198.18.60.2/24 dev d0"
' "$TEST"
