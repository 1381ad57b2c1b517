#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Rust crate's tests under `meson test` (ffi/rust/meson.build sets the
# environment: CARGO_TARGET_DIR in the build directory, PKG_CONFIG_PATH at
# its uninstalled .pc, LD_LIBRARY_PATH at its library).  Whichever cargo is
# first on PATH runs them, with the rustc next to it on PATH.
#
# In a sanitizer build OTEL_FFI_PRELOAD names the sanitizer's runtimes
# (colon-separated): the test programs run with them in LD_PRELOAD, through
# cargo's runner for the host target, and cargo and rustc without.  rustdoc
# runs the doctests itself, with no runner on stable Rust, so they are left
# to the other builds there.
#
# In a cross build OTEL_RUST_TARGET is cargo's target, OTEL_RUST_LINKER the
# linker of its programs and OTEL_RUST_RUNNER how to run them (the exe
# wrapper); they skip if rustc has no standard library for that target, and
# the doctests are left to the native builds, for the same reason as above.
#
# usage: cargo-test.sh SKIP_REASON CRATE_DIR tests|readme
#   tests    the unit and integration tests and the API's doctests
#   readme   the README's example, as printed (a doctest build.rs takes from
#            README.md); fails unless exactly that one test ran and passed
set -eu
skip=$1
dir=$2
what=$3
if [ -n "$skip" ]; then
	echo "skip: $skip"
	exit 77
fi
if ! command -v cargo >/dev/null 2>&1; then
	echo "skip: no cargo on PATH (Debian: apt-get install cargo; tools/run test installs it)"
	exit 77
fi
cd "$dir"
echo "cargo: $(command -v cargo), $(cargo --version); rustc: $(rustc --version)"
preload=${OTEL_FFI_PRELOAD:-}
target=${OTEL_RUST_TARGET:-}
target_args=
if [ "$what" = readme ]; then
	if [ -n "$target" ]; then
		echo "skip: cross build: the example is a doctest, which rustdoc cannot run through the exe wrapper"
		exit 77
	fi
	if [ -n "$preload" ]; then
		echo "skip: sanitizer build: the example is a doctest, which rustdoc runs without the sanitizer runtime it needs"
		exit 77
	fi
fi
# cargo_var TRIPLE NAME: cargo's environment variable NAME for target TRIPLE.
cargo_var() {
	echo "CARGO_TARGET_$(echo "$1" | tr 'a-z-' 'A-Z_')_$2"
}
if [ -n "$target" ]; then
	sysroot=$(rustc --print sysroot)
	if ! ls "$sysroot/lib/rustlib/$target/lib/"libstd-*.rlib >/dev/null 2>&1; then
		echo "skip: rustc has no standard library for $target in $sysroot (Debian's rustc: apt-get install libstd-rust-dev for that architecture; rustup: rustup target add $target)"
		exit 77
	fi
	export "$(cargo_var "$target" LINKER)=$OTEL_RUST_LINKER"
	export "$(cargo_var "$target" RUNNER)=$OTEL_RUST_RUNNER"
	target_args="--target $target"
	echo "cross build: tests built for $target, linked by $OTEL_RUST_LINKER, run by $OTEL_RUST_RUNNER"
fi
if [ -n "$preload" ]; then
	export "$(cargo_var "$(rustc -vV | sed -n 's/^host: //p')" RUNNER)=env LD_PRELOAD=$preload"
	# A library built by clang leaves the sanitizer's symbols to the
	# executable, which gets them from the preloaded runtime.
	export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C link-arg=-Wl,--allow-shlib-undefined"
	echo "sanitizer runtimes preloaded into the test programs: $preload"
fi
case $what in
tests)
	# shellcheck disable=SC2086
	cargo test --offline --locked $target_args --lib --tests
	if [ -n "$preload" ]; then
		echo "doctests not run: rustdoc cannot preload the sanitizer runtime into them"
	elif [ -n "$target" ]; then
		echo "doctests not run: rustdoc cannot run them through the exe wrapper"
	else
		cargo test --offline --locked --doc -- --skip readme_example
	fi
	;;
readme)
	mkdir -p "$CARGO_TARGET_DIR"
	log=$CARGO_TARGET_DIR/readme-example.log
	rc=0
	cargo test --offline --locked --doc -- readme_example >"$log" 2>&1 || rc=$?
	cat "$log"
	[ "$rc" -eq 0 ] || exit "$rc"
	if ! grep -q '^test src/lib.rs - readme_example (line [0-9]*) \.\.\. ok$' "$log" ||
		! grep -q '^test result: ok\. 1 passed;' "$log"; then
		echo "FAIL: the README's Rust example did not run as a doctest" >&2
		exit 1
	fi
	;;
*)
	echo "usage: cargo-test.sh SKIP_REASON CRATE_DIR tests|readme" >&2
	exit 2
	;;
esac
