# SPDX-License-Identifier: MIT
# Sourced by the ceiling tools' tests and compare.sh: wait for a ceiling receiver to print its
# "listening" line (both tools print it once their socket is bound).
#   wait_listening FILE PID TRIES STEP: polls FILE every STEP seconds, at most TRIES times, while
#   PID lives; status 0 once the line is there, 1 otherwise.
wait_listening() {
	local _
	for _ in $(seq "$3"); do
		grep -q '^listening' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep "$4"
	done
	grep -q '^listening' "$1" 2>/dev/null
}
