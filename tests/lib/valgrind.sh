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
	# --track-origins=yes says where an uninitialised value came from, and
	# made the slowest tests three times slower (thread-exit-shared: 157 s
	# instead of 53): memcheck reports the same errors without it, so it is
	# asked for when one is to be explained (OTEL_VALGRIND_ORIGINS=1).
	origins=
	if [ "${OTEL_VALGRIND_ORIGINS:-}" = 1 ]; then
		origins=--track-origins=yes
	fi
	exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no \
		--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
		$origins --fair-sched=yes "$@"
	;;
*)
	exec "$@"
	;;
esac
