#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the premise of bench-archive, the benchmark linked with the static
library: the linker relaxed every TLS access of the library to local-exec,
so the program has no dynamic TLS relocation for it (an access left as a TLS
descriptor, initial-exec or general-dynamic would need one); it does not
load the shared library (whose copy of the functions would be another
program); and it exports the slot, as every program linking the archive
must.

usage: check-archive.py READELF CPU_FAMILY EXECUTABLE
"""
import re
import subprocess
import sys

# Dynamic relocation types (as readelf names them) that a TLS access leaves
# behind when it is not local-exec.
TLS_TYPES = {
    'x86_64': re.compile(r'^R_X86_64_(TLSDESC|TPOFF64|TPOFF32|DTPMOD64|DTPOFF64)$'),
    'aarch64': re.compile(r'^R_AARCH64_(TLSDESC|TLS_TPREL(64)?|TLS_DTPMOD(64)?|TLS_DTPREL(64)?)$'),
}


def readelf(tool, *args):
    return subprocess.run([tool, '-W', *args], check=True, capture_output=True,
                          text=True).stdout


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tool, family, exe = sys.argv[1:]
    if family not in TLS_TYPES:
        sys.exit(f'no expectations for cpu family {family}')
    problems = []

    relocs = []
    for line in readelf(tool, '--relocs', exe).splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2].startswith('R_'):
            relocs.append((fields[2], fields[4] if len(fields) > 4 else ''))
    if not relocs:
        sys.exit(f'{exe}: readelf shows no relocations at all')
    tls = [(t, sym) for t, sym in relocs if TLS_TYPES[family].match(t)]
    # The library's: against its symbols, or against none (its hidden
    # per-thread state is a local symbol); and no TLS descriptor at all.
    # Others may be legitimate: a sanitizer runtime linked into the program
    # exports thread-local variables it reaches as initial-exec.
    ours = [(t, sym) for t, sym in tls
            if sym == '' or sym.startswith('otel') or 'TLSDESC' in t]
    if ours:
        problems.append(f'dynamic TLS relocations left for the library: {sorted(set(ours))}')
    others = sorted({sym for t, sym in tls} - {sym for t, sym in ours})

    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]',
                        readelf(tool, '--dynamic', exe))
    if not needed:
        sys.exit(f'{exe}: readelf shows no NEEDED entries (not the benchmark?)')
    if any(n.startswith('libotel-thread-ctx') for n in needed):
        problems.append(f'loads the shared library: NEEDED {needed}')

    slot = [line for line in readelf(tool, '--dyn-syms', exe).splitlines()
            if line.split()[-1:] == ['otel_thread_ctx_v1']]
    if not any(' TLS ' in f' {line} ' and ' GLOBAL ' in f' {line} ' and ' UND ' not in line
               for line in slot):
        problems.append(f'does not export the slot as a defined TLS symbol: {slot}')

    if problems:
        print(f'{exe}: FAIL: ' + '; '.join(problems))
    else:
        print(f'{exe}: {len(relocs)} dynamic relocations, none for the library\'s TLS'
              f'{" (others: " + ", ".join(others) + ")" if others else ""}; '
              f'NEEDED {needed}; exports otel_thread_ctx_v1: ok')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
