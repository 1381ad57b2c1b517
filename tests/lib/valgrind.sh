#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The exe_wrapper of `meson test --setup valgrind`: runs the project's own
# executables (those under BUILD_ROOT) under valgrind memcheck, and anything
# else a test starts with (python3, a system tool) as it is.  Any memcheck
# error or definite leak fails the test.
#
# usage: valgrind.sh BUILD_ROOT PROGRAM [ARGS...]
set -eu
root=$1
shift
case "$1" in
"$root"/*)
	# memcheck cannot replace malloc in a static executable, so it would
	# report the static libc's own allocations: run those as they are.
	if ! LC_ALL=C readelf -lW "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; then
		exec "$@"
	fi
	exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no \
		--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
		--track-origins=yes --fair-sched=yes "$@"
	;;
*)
	exec "$@"
	;;
esac
