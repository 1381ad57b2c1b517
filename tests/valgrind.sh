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
	exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no \
		--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
		--track-origins=yes --fair-sched=yes "$@"
	;;
*)
	exec "$@"
	;;
esac
