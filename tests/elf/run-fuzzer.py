#!/usr/bin/env bash
# Fuzzes the ELF reader with libFuzzer (clang's -fsanitize=fuzzer, Debian
# package libclang-rt-19-dev), with AddressSanitizer and UBSan.
#
#   tests/elf/run-elf-fuzzer [SECONDS] [SEED_ELF...]
#
# Builds build-fuzz/fuzz-elf from tests/elf/fuzz-elf.c and src/elf_reader.c,
# seeds build-fuzz/corpus with the given ELF files (default: the native
# build's shared library and a system binary), each also with its section
# headers removed so that the dynamic-section paths are fuzzed too, and runs
# for SECONDS (default 60).  Crashes are written to build-fuzz/ and make the
# script fail.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
cc=${CC:-clang-19}
out=build-fuzz
mkdir -p "$out/corpus"
"$cc" -g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Isrc tests/elf/fuzz-elf.c src/elf_reader.c -o "$out/fuzz-elf"
seeds=("$@")
if [ ${#seeds[@]} -eq 0 ]; then
	for f in build/src/libotel-thread-ctx.so.1 /bin/true; do
		[ -f "$f" ] && seeds+=("$f")
	done
fi
for f in "${seeds[@]}"; do
	name=$(basename "$f")
	cp "$f" "$out/corpus/$name"
	# The same file without section headers (e_shoff, e_shnum, e_shstrndx = 0).
	python3 - "$f" "$out/corpus/noshdr-$name" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
if b[:4] == b"\x7fELF" and b[4] == 2:
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    struct.pack_into("<Q", b, 0x28, 0)
    struct.pack_into("<HH", b, 0x3c, 0, 0)
    open(sys.argv[2], "wb").write(b[:shoff] if 0 < shoff <= len(b) else b)
PY
done
cd "$out"
exec ./fuzz-elf -max_total_time="$seconds" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 corpus
