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
# The crate is built with the feature `inspect` (libotel-thread-ctx-inspect
# linked too) everywhere, so that every mode shares one build.
#
# usage: cargo-test.sh SKIP_REASON CRATE_DIR MODE
#   tests           the unit and integration tests and the API's doctests,
#                   but for the live inspector's and the README's examples
#   readme          the README's first example, as printed (a doctest
#                   build.rs takes from doc/bindings.md); fails unless
#                   exactly that one test ran and passed
#   readme-inspect  the same for its second example, which reads a second
#                   process with the inspector
#   inspect         tests/inspect.rs: the inspector against a live child
#                   (SKIP where OTEL_TEST_NO_PTRACE says ptrace cannot work)
#   doc             cargo doc, with and without the feature: no warnings
#   clippy          cargo clippy -D warnings, with and without the feature
#                   (SKIP without clippy)
#   package         cargo package --list: what a published crate holds, and
#                   the manifest's license, readme and links
# The last three are static checks of the crate: they run in the native
# builds without sanitizers, and skip in the others, which would repeat them.
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
no_ptrace=${OTEL_TEST_NO_PTRACE:-}
case $what in
readme | readme-inspect)
	if [ -n "$target" ]; then
		echo "skip: cross build: the example is a doctest, which rustdoc cannot run through the exe wrapper"
		exit 77
	fi
	if [ -n "$preload" ]; then
		echo "skip: sanitizer build: the example is a doctest, which rustdoc runs without the sanitizer runtime it needs"
		exit 77
	fi
	;;
doc | clippy | package)
	if [ -n "$target" ] || [ -n "$preload" ]; then
		echo "skip: a static check of the crate, the same in every build: it runs in the native builds without sanitizers"
		exit 77
	fi
	;;
esac
if [ "$what" = readme-inspect ] || [ "$what" = inspect ]; then
	if [ -n "$no_ptrace" ]; then
		echo "skip: $no_ptrace"
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
features="--features inspect"
# run_doctest NAME: the doctest src/lib.rs NAME (a README example) alone;
# fails unless exactly it ran and passed.
run_doctest() {
	mkdir -p "$CARGO_TARGET_DIR"
	log=$CARGO_TARGET_DIR/$1.log
	rc=0
	# shellcheck disable=SC2086
	cargo test --offline --locked $features --doc -- "$1" >"$log" 2>&1 || rc=$?
	cat "$log"
	[ "$rc" -eq 0 ] || exit "$rc"
	if ! grep -q "^test src/lib.rs - $1 (line [0-9]*) \.\.\. ok\$" "$log" ||
		! grep -q '^test result: ok\. 1 passed;' "$log"; then
		echo "FAIL: the README's Rust example ($1) did not run as a doctest" >&2
		exit 1
	fi
}
case $what in
tests)
	# shellcheck disable=SC2086
	# Under ThreadSanitizer, the multi-threaded executor of tests/task.rs
	# hands tasks between threads through the Rust standard library's
	# Mutex and Condvar, which are not instrumented (futexes): TSan cannot
	# see that order and would report the handed-over context as a race.
	tsan_skip=
	case $preload in
	*tsan*)
		tsan_skip='--skip each_poll_publishes_its_tasks_context'
		echo "each_poll_publishes_its_tasks_context not run: under TSan its executor's std::sync order is invisible"
		;;
	esac
	# shellcheck disable=SC2086
	cargo test --offline --locked $target_args $features --lib --tests -- --skip inspect_ $tsan_skip
	if [ -n "$preload" ]; then
		echo "doctests not run: rustdoc cannot preload the sanitizer runtime into them"
	elif [ -n "$target" ]; then
		echo "doctests not run: rustdoc cannot run them through the exe wrapper"
	else
		# shellcheck disable=SC2086
		cargo test --offline --locked $features --doc -- --skip readme_
	fi
	;;
readme)
	run_doctest readme_example
	;;
readme-inspect)
	run_doctest readme_inspect_example
	;;
inspect)
	# shellcheck disable=SC2086
	cargo test --offline --locked $target_args $features --test inspect -- inspect_
	;;
doc)
	# shellcheck disable=SC2086
	RUSTDOCFLAGS="${RUSTDOCFLAGS:+$RUSTDOCFLAGS }-D warnings" cargo doc --offline --locked --no-deps $features
	RUSTDOCFLAGS="${RUSTDOCFLAGS:+$RUSTDOCFLAGS }-D warnings" cargo doc --offline --locked --no-deps
	;;
clippy)
	if ! cargo clippy --version >/dev/null 2>&1; then
		echo "skip: no clippy for $(command -v cargo) (Debian: apt-get install rust-clippy; tools/run test installs it; rustup: rustup component add clippy)"
		exit 77
	fi
	echo "clippy: $(cargo clippy --version)"
	# shellcheck disable=SC2086
	cargo clippy --offline --locked $features --all-targets -- -D warnings
	cargo clippy --offline --locked --lib -- -D warnings
	;;
package)
	list=$(cargo package --list --offline --locked --allow-dirty)
	echo "$list"
	for f in Cargo.toml README.md build.rs src/lib.rs src/sys.rs src/process.rs \
		src/task.rs src/inspect.rs; do
		if ! echo "$list" | grep -qx "$f"; then
			echo "FAIL: cargo package leaves out $f" >&2
			exit 1
		fi
	done
	meta=$(cargo metadata --offline --locked --no-deps --format-version 1)
	for field in '"license":"Apache-2.0"' '"links":"otel-thread-ctx"' '"readme":"README.md"' \
		'"rust_version":"1.63"'; do
		if ! echo "$meta" | grep -qF "$field"; then
			echo "FAIL: the manifest lacks $field" >&2
			exit 1
		fi
	done
	echo "the crate's manifest and files are those of a publishable crate"
	;;
*)
	echo "usage: cargo-test.sh SKIP_REASON CRATE_DIR tests|readme|readme-inspect|inspect|doc|clippy|package" >&2
	exit 2
	;;
esac
