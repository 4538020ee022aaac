# SPDX-License-Identifier: MIT
# Shared by tests/interop/vm.sh and case.sh (sourced, not run): uroce in a network namespace of
# this host against Linux's kernel Soft-RoCE (rdma_rxe) in a QEMU VM, both on one bridge, through
# the rxe-vm harness (../shared/rxe-vm, its README). The host side is the namespace IX_HOSTNS
# (eth0, IX_HOST4 and IX_HOST6); the kernel is the VM IX_VM (eth0 with rxe0, IX_VM4 and IX_VM6).
#
# Settings (environment):
#   UROCE_RXEVM_DIR    the harness (default: the shared/ folder beside the repository)
#   UROCE_RXEVM_CACHE  where the harness keeps its image (default /var/cache/uroce-rxevm; built
#                      on first use, about 3 minutes)
#   UROCE_RXEVM_RUN    the VM's run-time state (default /run/uroce-ix; a short path: the VM's
#                      control sockets live there)
# The harness's own failures are this suite's failures: nothing here skips when the VM cannot be
# had (only a run without root skips, as every namespace test does).

IX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IX_HARNESS=${UROCE_RXEVM_DIR:-$IX_ROOT/../shared/rxe-vm}
export RXEVM_CACHE=${UROCE_RXEVM_CACHE:-/var/cache/uroce-rxevm}
export RXEVM_RUN=${UROCE_RXEVM_RUN:-/run/uroce-ix}
# A network of the suite's own, apart from the harness's defaults (a developer's VMs there).
export RXEVM_NETNS=uroce-ix RXEVM_BRIDGE=uroce-ixbr RXEVM_HOSTNS=uroce-ixh
IX_VM=ix IX_HOSTNS=$RXEVM_HOSTNS
IX_VM4=198.18.0.2 IX_HOST4=198.18.0.1
IX_VM6=fd00:198:18::2 IX_HOST6=fd00:198:18::1
IX_STATE=$RXEVM_RUN/uroce-ix.env # GID indices, written by vm.sh up

ix_skip() {
	echo "SKIP: $*"
	exit 77
}
ix_fail() {
	echo "FAIL: $*" >&2
	exit 1
}

ix_need() {
	[ "$(id -u)" -eq 0 ] || ix_skip "needs root (network namespaces, QEMU's tap)"
	[ -x "$IX_HARNESS/start.sh" ] ||
		ix_fail "no rxe-vm harness at $IX_HARNESS (set UROCE_RXEVM_DIR)"
}

# A command in the VM (the harness's guest agent): its output and exit status.
ix_vm() { # [-t SECONDS] CMD...
	"$IX_HARNESS/exec.sh" "$@"
}

# The VM's QEMU is alive (not a zombie: a killed QEMU stays one where nobody reaps it).
ix_vm_running() {
	local p
	p=$(cat "$RXEVM_RUN/$IX_VM/qemu.pid" 2>/dev/null) && [ -n "$p" ] &&
		grep -q qemu-system "/proc/$p/cmdline" 2>/dev/null
}

ix_host() { ip netns exec "$IX_HOSTNS" "$@"; }
