# SPDX-License-Identifier: MIT
#
# The start of a bench/apps/<consumer>.sh that takes -r N and -t SECONDS, sourced with the
# script's arguments after it sets APP (its name): parses the options into REPS and SECS
# (default 3 and 3), resolves UROCE, sources tests/run/lib.sh (two namespaces joined by a veth:
# netns_setup), defines skip and fail as a benchmark's (a message on stderr, exit 1) and checks
# for root. stdout is left to the result lines.
# shellcheck shell=bash

# shellcheck disable=SC2034 # read by the script that sources this
REPS=3 SECS=3
while [ $# -gt 0 ]; do
	case $1 in
	-r) REPS=$2; shift 2 ;;
	-t) SECS=$2; shift 2 ;;
	*) echo "usage: UROCE=/path/to/uroce $0 [-r N] [-t SECONDS]" >&2; exit 1 ;;
	esac
done
: "${UROCE:?set UROCE to the uroce binary}"
UROCE=$(realpath "$UROCE")
# shellcheck source=../../tests/run/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tests/run/lib.sh"
skip() { echo "$APP.sh: cannot run: $*" >&2; exit 1; }
fail() { echo "$APP.sh: $*" >&2; exit 1; }
need_root_netns
