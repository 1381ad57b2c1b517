#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that each baseline library of the benchmark reaches its
thread-local variable through the TLS model its name promises, from the
dynamic relocations readelf shows.  A baseline built with the wrong flags
would make the benchmark compare against the wrong thing.

usage: check-baselines.py READELF CPU_FAMILY LIB...   (libbench_{ie,desc,gd}.so)
"""
import os
import re
import subprocess
import sys

# Relocation types (as readelf names them) against the variable, per model:
# those that must be there, and those that must not.
MODELS = {
    'x86_64': {
        'ie': ({'R_X86_64_TPOFF64'}, {'R_X86_64_TLSDESC', 'R_X86_64_DTPMOD64'}),
        'desc': ({'R_X86_64_TLSDESC'}, {'R_X86_64_TPOFF64', 'R_X86_64_DTPMOD64'}),
        'gd': ({'R_X86_64_DTPMOD64', 'R_X86_64_DTPOFF64'},
               {'R_X86_64_TLSDESC', 'R_X86_64_TPOFF64'}),
    },
    'aarch64': {
        'ie': ({'R_AARCH64_TLS_TPREL'}, {'R_AARCH64_TLSDESC', 'R_AARCH64_TLS_DTPMOD'}),
        'desc': ({'R_AARCH64_TLSDESC'}, {'R_AARCH64_TLS_TPREL', 'R_AARCH64_TLS_DTPMOD'}),
        'gd': ({'R_AARCH64_TLS_DTPMOD', 'R_AARCH64_TLS_DTPREL'},
               {'R_AARCH64_TLSDESC', 'R_AARCH64_TLS_TPREL'}),
    },
}


def normalize(rtype):
    # readelf spells some aarch64 types with and without the trailing 64.
    return re.sub(r'^(R_AARCH64_TLS_(?:TPREL|DTPMOD|DTPREL))64$', r'\1', rtype)


def relocations(readelf, lib):
    out = subprocess.run([readelf, '-W', '--relocs', lib], check=True,
                         capture_output=True, text=True).stdout
    relocs = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2].startswith('R_'):
            relocs.append((normalize(fields[2]), fields[4] if len(fields) > 4 else ''))
    if not relocs:
        sys.exit(f'{lib}: readelf shows no relocations at all')
    return relocs


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    readelf, family, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
    if family not in MODELS:
        sys.exit(f'no expectations for cpu family {family}')
    seen = set()
    failed = False
    for lib in libs:
        m = re.match(r'libbench_(ie|desc|gd)\.so', os.path.basename(lib))
        if not m:
            sys.exit(f'{lib}: not a baseline library')
        model = m.group(1)
        seen.add(model)
        var = f'bench_{model}_slot'
        relocs = relocations(readelf, lib)
        types = {t for t, sym in relocs if sym.startswith(var)}
        need, forbid = MODELS[family][model]
        problems = []
        if not need <= types:
            problems.append(f'missing {sorted(need - types)}')
        if types & forbid:
            problems.append(f'unexpected {sorted(types & forbid)}')
        calls_tga = any(sym.startswith('__tls_get_addr') for _, sym in relocs)
        if calls_tga != (model == 'gd'):
            problems.append('calls __tls_get_addr' if calls_tga
                            else 'does not call __tls_get_addr')
        status = 'FAIL: ' + '; '.join(problems) if problems else 'ok'
        print(f'{os.path.basename(lib)}: {var}: {sorted(types)}: {status}')
        failed |= bool(problems)
    if seen != set(MODELS[family]):
        sys.exit(f'expected the libraries {sorted(MODELS[family])}, got {sorted(seen)}')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
