# SPDX-License-Identifier: Apache-2.0
"""TLSDESC access windows: find them in unlinked ELF objects, compare them
with a golden file, show them disassembled.

Shared by tests/tlsdesc/check-tlsdesc.py (the comparison), its test
(check-tlsdesc-selftest.py), the flags test (check-tlsdesc-flags.py) and
tools/gen-tlsdesc-golden.py (which writes the golden files).  Python 3
standard library only.

The access window
-----------------
A TLSDESC access to otel_thread_ctx_v1 is found by its relocations, never by
matching instruction bytes.  Its window starts at the first byte of the
instruction that carries the access's first TLSDESC relocation (x86-64: the
lea carrying R_X86_64_GOTPC32_TLSDESC; aarch64: the adrp carrying
R_AARCH64_TLSDESC_ADR_PAGE21) and ends with the last byte of the instruction
that adds the thread pointer to the resolver's result (x86-64: add %fs:0,
%rax; aarch64: add x0, x8, x0).  Everything in between belongs to the window,
whatever it is.  The golden file records the window of the pinned compiler:
its bytes (relocated fields zero, as in an unlinked RELA object), its
instruction boundaries and its relocations (offset in the window, type,
addend, all against otel_thread_ctx_v1).

In an object under test, every TLSDESC relocation against the slot that is
not inside an earlier window starts a window, as long as the golden one; the
bytes and every relocation in it (against any symbol) must be the golden ones,
at the same offsets.  Any other relocation against the slot in a section that
is loaded at run time (SHF_ALLOC) is a TLS access of another model and fails
the check; relocations in sections that are not loaded (debug information)
are listed, not checked.
"""

import hashlib
import os
import re
import struct
import subprocess
import tempfile

SLOT = "otel_thread_ctx_v1"
# The library's own per-thread state (src/slot.S), hidden: every access to it
# must be the same TLSDESC window as an access to the slot.
STATE = "otel__thread_state"
ACCESSED = (SLOT, STATE)
FORMAT = "otel-thread-ctx-tlsdesc-golden 1"
GENERATOR = "tools/gen-tlsdesc-golden.py"
PINNED_COMPILER = "clang-19 (Debian 12: 19.1.7)"

EM_X86_64 = 62
EM_AARCH64 = 183

SHT_SYMTAB = 2
SHT_RELA = 4
SHT_NOBITS = 8
SHT_REL = 9
SHT_SYMTAB_SHNDX = 18
SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_TLS = 0x400
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_ABS = 0xFFF1
SHN_COMMON = 0xFFF2
SHN_XINDEX = 0xFFFF
STT_SECTION = 3
STT_FUNC = 2
STT_FILE = 4
STT_TLS = 6
STB_LOCAL = 0
STB_GLOBAL = 1
STV_DEFAULT = 0

STT_NAMES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS"}
STB_NAMES = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
STV_NAMES = {0: "DEFAULT", 1: "INTERNAL", 2: "HIDDEN", 3: "PROTECTED"}


class CheckError(Exception):
    """Bad input: an unreadable object, archive or golden file."""


class LtoObject(CheckError):
    """An object holding compiler IR instead of machine code."""


# ---------------------------------------------------------------------------
# Relocation types.

X86_64_RELOCS = {
    0: "R_X86_64_NONE", 1: "R_X86_64_64", 2: "R_X86_64_PC32", 3: "R_X86_64_GOT32",
    4: "R_X86_64_PLT32", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S",
    16: "R_X86_64_DTPMOD64", 17: "R_X86_64_DTPOFF64", 18: "R_X86_64_TPOFF64",
    19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD", 21: "R_X86_64_DTPOFF32",
    22: "R_X86_64_GOTTPOFF", 23: "R_X86_64_TPOFF32", 24: "R_X86_64_PC64",
    26: "R_X86_64_GOTPC32", 34: "R_X86_64_GOTPC32_TLSDESC", 35: "R_X86_64_TLSDESC_CALL",
    36: "R_X86_64_TLSDESC", 41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX",
    43: "R_X86_64_CODE_4_GOTPCRELX", 44: "R_X86_64_CODE_4_GOTTPOFF",
    45: "R_X86_64_CODE_4_GOTPC32_TLSDESC", 46: "R_X86_64_CODE_5_GOTPCRELX",
    47: "R_X86_64_CODE_5_GOTTPOFF", 48: "R_X86_64_CODE_5_GOTPC32_TLSDESC",
    49: "R_X86_64_CODE_6_GOTPCRELX", 50: "R_X86_64_CODE_6_GOTTPOFF",
    51: "R_X86_64_CODE_6_GOTPC32_TLSDESC",
}

AARCH64_RELOCS = {
    0: "R_AARCH64_NONE", 257: "R_AARCH64_ABS64", 258: "R_AARCH64_ABS32",
    261: "R_AARCH64_PREL32", 275: "R_AARCH64_ADR_PREL_PG_HI21", 277: "R_AARCH64_ADD_ABS_LO12_NC",
    282: "R_AARCH64_JUMP26", 283: "R_AARCH64_CALL26", 286: "R_AARCH64_LDST64_ABS_LO12_NC",
    311: "R_AARCH64_ADR_GOT_PAGE", 312: "R_AARCH64_LD64_GOT_LO12_NC",
    1028: "R_AARCH64_TLS_DTPMOD", 1029: "R_AARCH64_TLS_DTPREL", 1030: "R_AARCH64_TLS_TPREL",
    1031: "R_AARCH64_TLSDESC",
}
for _number, _name in enumerate([
        "TLSGD_ADR_PREL21", "TLSGD_ADR_PAGE21", "TLSGD_ADD_LO12_NC", "TLSGD_MOVW_G1",
        "TLSGD_MOVW_G0_NC", "TLSLD_ADR_PREL21", "TLSLD_ADR_PAGE21", "TLSLD_ADD_LO12_NC",
        "TLSLD_MOVW_G1", "TLSLD_MOVW_G0_NC", "TLSLD_LD_PREL19", "TLSLD_MOVW_DTPREL_G2",
        "TLSLD_MOVW_DTPREL_G1", "TLSLD_MOVW_DTPREL_G1_NC", "TLSLD_MOVW_DTPREL_G0",
        "TLSLD_MOVW_DTPREL_G0_NC", "TLSLD_ADD_DTPREL_HI12", "TLSLD_ADD_DTPREL_LO12",
        "TLSLD_ADD_DTPREL_LO12_NC", "TLSLD_LDST8_DTPREL_LO12", "TLSLD_LDST8_DTPREL_LO12_NC",
        "TLSLD_LDST16_DTPREL_LO12", "TLSLD_LDST16_DTPREL_LO12_NC", "TLSLD_LDST32_DTPREL_LO12",
        "TLSLD_LDST32_DTPREL_LO12_NC", "TLSLD_LDST64_DTPREL_LO12", "TLSLD_LDST64_DTPREL_LO12_NC",
        "TLSIE_MOVW_GOTTPREL_G1", "TLSIE_MOVW_GOTTPREL_G0_NC", "TLSIE_ADR_GOTTPREL_PAGE21",
        "TLSIE_LD64_GOTTPREL_LO12_NC", "TLSIE_LD_GOTTPREL_PREL19", "TLSLE_MOVW_TPREL_G2",
        "TLSLE_MOVW_TPREL_G1", "TLSLE_MOVW_TPREL_G1_NC", "TLSLE_MOVW_TPREL_G0",
        "TLSLE_MOVW_TPREL_G0_NC", "TLSLE_ADD_TPREL_HI12", "TLSLE_ADD_TPREL_LO12",
        "TLSLE_ADD_TPREL_LO12_NC", "TLSLE_LDST8_TPREL_LO12", "TLSLE_LDST8_TPREL_LO12_NC",
        "TLSLE_LDST16_TPREL_LO12", "TLSLE_LDST16_TPREL_LO12_NC", "TLSLE_LDST32_TPREL_LO12",
        "TLSLE_LDST32_TPREL_LO12_NC", "TLSLE_LDST64_TPREL_LO12", "TLSLE_LDST64_TPREL_LO12_NC",
        "TLSDESC_LD_PREL19", "TLSDESC_ADR_PREL21", "TLSDESC_ADR_PAGE21", "TLSDESC_LD64_LO12",
        "TLSDESC_ADD_LO12", "TLSDESC_OFF_G1", "TLSDESC_OFF_G0_NC", "TLSDESC_LDR",
        "TLSDESC_ADD", "TLSDESC_CALL", "TLSLE_LDST128_TPREL_LO12", "TLSLE_LDST128_TPREL_LO12_NC",
        "TLSLD_LDST128_DTPREL_LO12", "TLSLD_LDST128_DTPREL_LO12_NC"]):
    AARCH64_RELOCS[512 + _number] = "R_AARCH64_" + _name


class Arch:
    """What differs between the two architectures."""

    def __init__(self, name, e_machine, relocs, tlsdesc, call_type, tls_types, decoder,
                 header):
        self.name = name
        self.e_machine = e_machine
        self.relocs = relocs
        self.reloc_numbers = {v: k for k, v in relocs.items()}
        # TLSDESC relocation types used in code: type -> bytes from the start
        # of the instruction that carries it to the relocated field.
        self.tlsdesc = tlsdesc
        self.call_type = call_type
        self.tls_types = tls_types
        self.decode = decoder
        self.header = header      # where the library's access is written

    def reloc_name(self, rtype):
        return self.relocs.get(rtype, "R_%s_%d" % (self.name.upper(), rtype))

    def golden_name(self):
        return "tlsdesc-%s.txt" % self.name


# ---------------------------------------------------------------------------
# A tiny x86-64 decoder: exactly the instructions a TLSDESC window and its
# usual neighbours and variants are made of.  Anything else is one unknown
# byte.  AT&T syntax, as objdump prints it.

X86_REG64 = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
X86_REG32 = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
             "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"]
X86_REG16 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
             "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w"]


class Insn:
    """One decoded instruction.  `tp_load` is the register that receives
    the thread pointer, `adds` is (destination, other operand) of an add of
    two registers or of the thread pointer ("tp") to a register."""

    def __init__(self, offset, raw, text, tp_load=None, adds=None, known=True):
        self.offset = offset
        self.raw = raw
        self.text = text
        self.tp_load = tp_load
        self.adds = adds
        self.known = known

    def hex(self, arch_name):
        if arch_name == "aarch64" and len(self.raw) == 4:
            return "%08x" % struct.unpack("<I", self.raw)[0]
        return " ".join("%02x" % b for b in self.raw)


def _hexnum(value):
    return "-0x%x" % -value if value < 0 else "0x%x" % value


def _s8(b):
    return b - 256 if b > 127 else b


def _s32(code, pos):
    return struct.unpack_from("<i", code, pos)[0]


def decode_x86_64(code, pos):
    start = pos
    seg = None
    opsize = False
    addrsize = False
    prefixes = []
    while pos < len(code) and code[pos] in (0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67,
                                             0xF2, 0xF3):
        b = code[pos]
        if b == 0x64:
            seg = "fs"
        elif b == 0x65:
            seg = "gs"
        elif b == 0x66:
            opsize = True
            prefixes.append("data16")
        elif b == 0x67:
            addrsize = True
        pos += 1
    rex = 0
    if pos < len(code) and 0x40 <= code[pos] <= 0x4F:
        rex = code[pos]
        pos += 1
    if pos >= len(code):
        return _unknown_byte(code, start)
    rex_w, rex_r, rex_x, rex_b = rex & 8, (rex >> 2) & 1, (rex >> 1) & 1, rex & 1
    if rex_w:
        regs = X86_REG64
    elif opsize:
        regs = X86_REG16
        prefixes = [p for p in prefixes if p != "data16"]
    else:
        regs = X86_REG32
    addr_regs = X86_REG32 if addrsize else X86_REG64
    op = code[pos]
    pos += 1

    def modrm():
        nonlocal pos
        if pos >= len(code):
            raise IndexError
        m = code[pos]
        pos += 1
        mod, reg, rm = m >> 6, ((m >> 3) & 7) | (rex_r << 3), m & 7
        if mod == 3:
            return reg, ("reg", rm | (rex_b << 3)), None
        base = index = None
        scale = 1
        disp = 0
        absolute = False
        if rm == 4:
            sib = code[pos]
            pos += 1
            scale = 1 << (sib >> 6)
            idx = ((sib >> 3) & 7) | (rex_x << 3)
            index = None if idx == 4 else idx
            b = sib & 7
            if b == 5 and mod == 0:
                disp = _s32(code, pos)
                pos += 4
                absolute = index is None
            else:
                base = b | (rex_b << 3)
        elif rm == 5 and mod == 0:
            disp = _s32(code, pos)
            pos += 4
            text = "%s(%%rip)" % _hexnum(disp)
            return reg, ("mem", ("%" + seg + ":" if seg else "") + text, False), None
        else:
            base = rm | (rex_b << 3)
        if mod == 1:
            disp = _s8(code[pos])
            pos += 1
        elif mod == 2:
            disp = _s32(code, pos)
            pos += 4
        if absolute:
            text = _hexnum(disp)
        else:
            inner = "%" + addr_regs[base] if base is not None else ""
            if index is not None:
                inner += ",%%%s,%d" % (addr_regs[index], scale)
            text = ("%s(%s)" % (_hexnum(disp), inner)) if (mod != 0 or base is None) else "(%s)" % inner
        return reg, ("mem", (("%" + seg + ":") if seg else "") + text, absolute and disp == 0), None

    def rm_text(operand):
        if operand[0] == "reg":
            return "%" + regs[operand[1]]
        return operand[1]

    def done(text, **kw):
        full = " ".join(prefixes + [text]) if prefixes else text
        return Insn(start, bytes(code[start:pos]), full, **kw)

    try:
        if op == 0x8D:                                   # lea m, r
            reg, rm, _ = modrm()
            return done("lea    %s,%%%s" % (rm_text(rm), regs[reg]))
        if op in (0x8B, 0x03, 0x89, 0x01):               # mov/add
            reg, rm, _ = modrm()
            name = "mov" if op in (0x8B, 0x89) else "add"
            to_reg = op in (0x8B, 0x03)
            if to_reg:
                text = "%-6s %s,%%%s" % (name, rm_text(rm), regs[reg])
            else:
                text = "%-6s %%%s,%s" % (name, regs[reg], rm_text(rm))
            tp_mem = rm[0] == "mem" and seg == "fs" and rm[2]
            kw = {}
            if name == "mov" and to_reg and tp_mem and rex_w:
                kw["tp_load"] = regs[reg]
            if name == "add" and rex_w:
                if to_reg:
                    kw["adds"] = (regs[reg], "tp" if tp_mem else
                                  (regs[rm[1]] if rm[0] == "reg" else None))
                elif rm[0] == "reg":
                    kw["adds"] = (regs[rm[1]], regs[reg])
            return done(text, **kw)
        if op == 0xFF:
            reg, rm, _ = modrm()
            sub = reg & 7
            names = {2: "call", 4: "jmp", 6: "push"}
            if sub in names:
                star = "*" if sub in (2, 4) else ""
                operand = rm_text(rm) if rm[0] == "mem" else "%" + X86_REG64[rm[1]]
                return done("%-6s %s%s" % (names[sub], star, operand))
        if op in (0xE8, 0xE9):
            rel = _s32(code, pos)
            pos += 4
            name = "call" if op == 0xE8 else "jmp"
            if rex_w:
                prefixes.append("rex.W")
            return done("%-6s 0x%x" % (name, pos + rel))
        if op == 0xEB:
            rel = _s8(code[pos])
            pos += 1
            return done("jmp    0x%x" % (pos + rel))
        if op == 0x90 and not rex_b:
            return done("xchg   %ax,%ax" if opsize else "nop")
        if op == 0x0F and pos < len(code):
            op2 = code[pos]
            pos += 1
            if op2 == 0x1F:
                reg, rm, _ = modrm()
                return done("%s %s" % ("nopw  " if opsize else "nopl  ", rm_text(rm)))
            if op2 == 0x0B:
                return done("ud2")
        if op == 0xC3:
            return done("ret")
        if op == 0xCC:
            return done("int3")
        if 0x50 <= op <= 0x57:
            return done("push   %%%s" % X86_REG64[(op - 0x50) | (rex_b << 3)])
        if 0x58 <= op <= 0x5F:
            return done("pop    %%%s" % X86_REG64[(op - 0x58) | (rex_b << 3)])
        if op in (0x83, 0x81):
            reg, rm, _ = modrm()
            names = {0: "add", 5: "sub", 7: "cmp"}
            if op == 0x83:
                imm = _s8(code[pos])
                pos += 1
            else:
                imm = _s32(code, pos)
                pos += 4
            if (reg & 7) in names:
                return done("%-6s $%s,%s" % (names[reg & 7], _hexnum(imm), rm_text(rm)))
        if 0xB8 <= op <= 0xBF:
            width = 8 if rex_w else 4
            imm = int.from_bytes(code[pos:pos + width], "little")
            pos += width
            name = "movabs" if rex_w else "mov"
            return done("%-6s $0x%x,%%%s" % (name, imm, regs[(op - 0xB8) | (rex_b << 3)]))
    except (IndexError, struct.error):
        pass
    return _unknown_byte(code, start)


def _unknown_byte(code, start):
    return Insn(start, bytes(code[start:start + 1]), "(unknown to this decoder)", known=False)


# ---------------------------------------------------------------------------
# A tiny aarch64 decoder, likewise.

AARCH64_SYSREGS = {(3, 3, 13, 0, 2): "tpidr_el0", (3, 3, 13, 0, 3): "tpidrro_el0",
                   (3, 0, 13, 0, 4): "tpidr_el1"}


def _xreg(n, sp=False):
    if n == 31:
        return "sp" if sp else "xzr"
    return "x%d" % n


def _sext(value, bits):
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


def decode_aarch64(code, pos):
    raw = bytes(code[pos:pos + 4])
    if len(raw) < 4:
        return Insn(pos, raw, "(truncated)", known=False)
    w = struct.unpack("<I", raw)[0]
    rd, rn, rm = w & 31, (w >> 5) & 31, (w >> 16) & 31

    def done(text, **kw):
        return Insn(pos, raw, text, **kw)

    if w & 0x9F000000 in (0x90000000, 0x10000000):
        imm = _sext(((w >> 5) & 0x7FFFF) << 2 | ((w >> 29) & 3), 21)
        if w & 0x80000000:
            return done("adrp   %s, 0x%x" % (_xreg(rd), (pos & ~0xFFF) + (imm << 12)))
        return done("adr    %s, 0x%x" % (_xreg(rd), pos + imm))
    for mask, value, name, reg, scale in ((0xFFC00000, 0xF9400000, "ldr", "x", 8),
                                         (0xFFC00000, 0xB9400000, "ldr", "w", 4),
                                         (0xFFC00000, 0xF9000000, "str", "x", 8)):
        if w & mask == value:
            imm = ((w >> 10) & 0xFFF) * scale
            rt = ("w%d" % rd if rd != 31 else "wzr") if reg == "w" else _xreg(rd)
            mem = "[%s]" % _xreg(rn, True) if imm == 0 else "[%s, #%d]" % (_xreg(rn, True), imm)
            return done("%-6s %s, %s" % (name, rt, mem))
    if w & 0xFF000000 == 0x58000000:
        return done("ldr    %s, 0x%x" % (_xreg(rd), pos + (_sext((w >> 5) & 0x7FFFF, 19) << 2)))
    if w & 0xFFE00C00 in (0xF8000C00, 0xF8400400, 0xF8000400, 0xF8400C00):
        imm = _sext((w >> 12) & 0x1FF, 9)
        name = "ldr" if w & 0x00400000 else "str"
        if w & 0x800:
            mem = "[%s, #%d]!" % (_xreg(rn, True), imm)
        else:
            mem = "[%s], #%d" % (_xreg(rn, True), imm)
        return done("%-6s %s, %s" % (name, _xreg(rd), mem))
    if w & 0xFE000000 == 0xA8000000 or w & 0xFE000000 == 0xA9000000:
        kind = (w >> 23) & 3
        name = "ldp" if w & 0x00400000 else "stp"
        imm = _sext((w >> 15) & 0x7F, 7) * 8
        rt2 = (w >> 10) & 31
        base = _xreg(rn, True)
        mem = {1: "[%s], #%d" % (base, imm), 2: "[%s, #%d]" % (base, imm),
               3: "[%s, #%d]!" % (base, imm)}.get(kind)
        if mem:
            return done("%-6s %s, %s, %s" % (name, _xreg(rd), _xreg(rt2), mem))
    if w & 0xFF800000 in (0x91000000, 0xD1000000):
        imm = (w >> 10) & 0xFFF
        shift = ", lsl #12" if w & 0x00400000 else ""
        name = "add" if w & 0xFF800000 == 0x91000000 else "sub"
        if name == "add" and imm == 0 and not shift and (rd == 31 or rn == 31):
            return done("mov    %s, %s" % (_xreg(rd, True), _xreg(rn, True)))
        return done("%-6s %s, %s, #0x%x%s" % (name, _xreg(rd, True), _xreg(rn, True), imm, shift))
    if w & 0xFF200000 == 0x8B000000:
        imm6 = (w >> 10) & 63
        shift = ", %s #%d" % (("lsl", "lsr", "asr", "ror")[(w >> 22) & 3], imm6) if imm6 else ""
        adds = None if imm6 else (_xreg(rd), {_xreg(rn), _xreg(rm)} - {_xreg(rd)})
        if adds is not None:
            others = adds[1]
            adds = (adds[0], others.pop() if len(others) == 1 else None)
        return done("add    %s, %s, %s%s" % (_xreg(rd), _xreg(rn), _xreg(rm), shift), adds=adds)
    if w & 0xFF200000 == 0xAA000000 and rn == 31 and not (w >> 10) & 63:
        return done("mov    %s, %s" % (_xreg(rd), _xreg(rm)))
    if w & 0xFFFFFC1F in (0xD63F0000, 0xD61F0000, 0xD65F0000):
        name = {0xD63F0000: "blr", 0xD61F0000: "br", 0xD65F0000: "ret"}[w & 0xFFFFFC1F]
        if name == "ret" and rn == 30:
            return done("ret")
        return done("%-6s %s" % (name, _xreg(rn)))
    if w & 0x7C000000 == 0x14000000:
        name = "bl" if w & 0x80000000 else "b"
        return done("%-6s 0x%x" % (name, pos + (_sext(w & 0x3FFFFFF, 26) << 2)))
    if w & 0xFFF00000 in (0xD5300000, 0xD5100000):
        fields = (2 + ((w >> 19) & 1), (w >> 16) & 7, (w >> 12) & 15, (w >> 8) & 15, (w >> 5) & 7)
        name = AARCH64_SYSREGS.get(fields, "s%d_%d_c%d_c%d_%d" % fields)
        if w & 0x00200000:
            return done("mrs    %s, %s" % (_xreg(rd), name),
                        tp_load=_xreg(rd) if name == "tpidr_el0" else None)
        return done("msr    %s, %s" % (name, _xreg(rd)))
    if w == 0xD503201F:
        return done("nop")
    if w & 0x7F800000 in (0x52800000, 0x72800000):
        name = "movz" if w & 0x7F800000 == 0x52800000 else "movk"
        hw = (w >> 21) & 3
        return done("%-6s %s, #0x%x%s" % (name, _xreg(rd) if w >> 31 else "w%d" % rd,
                                          (w >> 5) & 0xFFFF, ", lsl #%d" % (16 * hw) if hw else ""))
    return done(".inst  0x%08x" % w, known=False)


ARCHES = {
    "x86_64": Arch(
        "x86_64", EM_X86_64, X86_64_RELOCS,
        tlsdesc={34: 3, 45: 4, 48: 5, 51: 6, 35: 0}, call_type=35,
        tls_types={16, 17, 18, 19, 20, 21, 22, 23, 34, 35, 36, 44, 45, 47, 48, 50, 51},
        decoder=decode_x86_64, header="arch/x86_64/tlsdesc.h"),
    "aarch64": Arch(
        "aarch64", EM_AARCH64, AARCH64_RELOCS,
        tlsdesc={t: 0 for t in range(560, 570)}, call_type=569,
        tls_types=set(range(512, 574)) | {1028, 1029, 1030, 1031},
        decoder=decode_aarch64, header="arch/aarch64/tlsdesc.h"),
}
ARCH_BY_MACHINE = {a.e_machine: a for a in ARCHES.values()}


def decode_range(arch, code, start, end):
    """Decode [start, end); the last instruction may run past `end`."""
    out = []
    pos = start
    while pos < end and pos < len(code):
        insn = arch.decode(code, pos)
        out.append(insn)
        pos += len(insn.raw)
    return out


def access_end(arch, code, call_offset, strict, limit=8):
    """Offset just past the instruction that adds the thread pointer to the
    resolver's result, searching at most `limit` instructions after the call
    at `call_offset`; None if there is none.  Strict (for the generator): the
    thread pointer must be read after the call, inside the window (x86-64:
    the add reads %fs:0 itself, or a register loaded from %fs:0; aarch64: a
    register loaded from tpidr_el0).  Otherwise (to show what a mismatching
    object does) any add of another register to the result counts."""
    result = "rax" if arch.name == "x86_64" else "x0"
    pos = call_offset
    call = arch.decode(code, pos)
    if not call.known:
        return None
    pos += len(call.raw)
    tp_regs = set()
    for _ in range(limit):
        if pos >= len(code):
            return None
        insn = arch.decode(code, pos)
        if not insn.known:
            return None
        pos += len(insn.raw)
        if insn.tp_load:
            tp_regs.add(insn.tp_load)
        if insn.adds and insn.adds[0] == result and insn.adds[1]:
            other = insn.adds[1]
            if not strict or other == "tp" or other in tp_regs:
                return pos
    return None


# ---------------------------------------------------------------------------
# ELF64 little-endian relocatable objects and ar archives.

class Section:
    __slots__ = ("index", "name", "type", "flags", "offset", "size", "link", "info",
                 "addralign", "entsize", "data")


class Symbol:
    __slots__ = ("index", "name", "value", "size", "bind", "type", "visibility", "shndx")


class Reloc:
    __slots__ = ("offset", "type", "addend", "symbol")


class ElfObject:
    def __init__(self, data, name):
        self.name = name
        self.raw = data
        if data[:4] == b"BC\xc0\xde":
            raise LtoObject("%s: LLVM bitcode (LTO), not machine code" % name)
        if data[:4] != b"\x7fELF":
            raise CheckError("%s: not an ELF object" % name)
        if data[4] != 2 or data[5] != 1:
            raise CheckError("%s: not a 64-bit little-endian ELF object" % name)
        try:
            self._parse(data)
        except (struct.error, IndexError) as exc:
            raise CheckError("%s: truncated or malformed ELF object (%s)" % (name, exc))

    def _parse(self, data):
        (e_type, e_machine, _, _, _, e_shoff, _, _, _, _, e_shentsize, e_shnum,
         e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        if e_type != 1:
            raise CheckError("%s: not a relocatable object (e_type %d)" % (self.name, e_type))
        self.machine = e_machine
        if e_shoff == 0:
            raise CheckError("%s: no section headers" % self.name)
        if e_shentsize != 64:
            raise CheckError("%s: unexpected section header size %d" % (self.name, e_shentsize))
        first = struct.unpack_from("<IIQQQQIIQQ", data, e_shoff)
        if e_shnum == 0:
            e_shnum = first[5]
        if e_shstrndx == SHN_XINDEX:
            e_shstrndx = first[6]
        self.sections = []
        for i in range(e_shnum):
            (name, stype, flags, _, offset, size, link, info, align,
             entsize) = struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + 64 * i)
            s = Section()
            s.index, s.name, s.type, s.flags = i, name, stype, flags
            s.offset, s.size, s.link, s.info = offset, size, link, info
            s.addralign, s.entsize = align, entsize
            if stype == SHT_NOBITS:
                s.data = b""
            else:
                if offset + size > len(data):
                    raise CheckError("%s: section %d runs past the end of the file" % (self.name, i))
                s.data = data[offset:offset + size]
            self.sections.append(s)
        shstr = self.sections[e_shstrndx].data
        for s in self.sections:
            s.name = _cstr(shstr, s.name)
        self.symbols = []
        symtabs = [s for s in self.sections if s.type == SHT_SYMTAB]
        if len(symtabs) > 1:
            raise CheckError("%s: more than one symbol table" % self.name)
        if symtabs:
            symtab = symtabs[0]
            strtab = self.sections[symtab.link].data
            xindex = None
            for s in self.sections:
                if s.type == SHT_SYMTAB_SHNDX and s.link == symtab.index:
                    xindex = s.data
            for i in range(len(symtab.data) // 24):
                name, info, other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", symtab.data, 24 * i)
                sym = Symbol()
                sym.index, sym.name = i, _cstr(strtab, name)
                sym.value, sym.size = value, size
                sym.bind, sym.type, sym.visibility = info >> 4, info & 15, other & 3
                if shndx == SHN_XINDEX and xindex is not None:
                    shndx = struct.unpack_from("<I", xindex, 4 * i)[0]
                sym.shndx = shndx
                if sym.type == STT_SECTION and 0 < shndx < len(self.sections):
                    sym.name = self.sections[shndx].name
                self.symbols.append(sym)
        # Relocations by the index of the section they apply to.
        self.relocs = {}
        for s in self.sections:
            if s.type == SHT_REL:
                raise CheckError("%s: SHT_REL section %s (x86-64 and aarch64 objects use RELA)"
                                 % (self.name, s.name))
            if s.type != SHT_RELA:
                continue
            out = self.relocs.setdefault(s.info, [])
            for i in range(len(s.data) // 24):
                offset, info, addend = struct.unpack_from("<QQq", s.data, 24 * i)
                r = Reloc()
                r.offset, r.type, r.addend = offset, info & 0xFFFFFFFF, addend
                r.symbol = self.symbols[info >> 32]
                out.append(r)
            out.sort(key=lambda r: r.offset)
        self.lto = any(s.name.startswith((".gnu.lto_", ".llvm.lto", ".llvmbc")) for s in self.sections)

    def slot_definition(self):
        for sym in self.symbols:
            if sym.name == SLOT and sym.shndx != SHN_UNDEF and sym.type != STT_SECTION:
                return sym
        return None

    def function_at(self, shndx, offset):
        """The symbol whose extent holds `offset` (a function if several do),
        else NAME+0xN from the nearest symbol before it, else None."""
        containing, before = [], []
        for sym in self.symbols:
            if sym.shndx != shndx or sym.type in (STT_SECTION, STT_FILE) or not sym.name or \
                    sym.value > offset:
                continue
            (containing if offset < sym.value + sym.size else before).append(sym)
        if containing:
            return max(containing, key=lambda s: (s.type == STT_FUNC, s.value)).name
        if before:
            sym = max(before, key=lambda s: s.value)
            return "%s+0x%x" % (sym.name, offset - sym.value)
        return None


def _cstr(table, offset):
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")


def read_archive(data, name, directory):
    """Members of an ar archive (GNU and BSD names, thin archives) as
    (member name, bytes)."""
    thin = data[:8] == b"!<thin>\n"
    if data[:8] != b"!<arch>\n" and not thin:
        raise CheckError("%s: not an ar archive" % name)
    pos = 8
    longnames = b""
    members = []
    while pos < len(data):
        if pos + 60 > len(data):
            raise CheckError("%s: truncated member header at %d" % (name, pos))
        header = data[pos:pos + 60]
        if header[58:60] != b"`\n":
            raise CheckError("%s: bad member header at %d" % (name, pos))
        raw_name = header[0:16].decode("ascii", "replace").rstrip(" ")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise CheckError("%s: bad member size at %d" % (name, pos))
        pos += 60
        special = raw_name in ("/", "//", "/SYM64/") or raw_name.startswith("__.SYMDEF")
        in_file = not thin or special
        body = data[pos:pos + size] if in_file else None
        if in_file and len(body) != size:
            raise CheckError("%s: member %r truncated" % (name, raw_name))
        if raw_name == "//":
            longnames = body
        elif not special:
            if raw_name.startswith("#1/"):            # BSD: name before the data
                n = int(raw_name[3:])
                member = body[:n].rstrip(b"\0").decode("utf-8", "replace")
                body = body[n:]
            elif raw_name.startswith("/") and raw_name[1:].isdigit():
                off = int(raw_name[1:])
                end = longnames.find(b"/\n", off)
                member = longnames[off:end if end >= 0 else None].decode("utf-8", "replace")
            else:
                member = raw_name[:-1] if raw_name.endswith("/") else raw_name
            if member.startswith("__.SYMDEF"):       # BSD symbol table
                pos += size + (size & 1)
                continue
            if thin:
                path = os.path.join(directory, member)
                try:
                    with open(path, "rb") as f:
                        body = f.read()
                except OSError as exc:
                    raise CheckError("%s: thin archive member %s: %s" % (name, path, exc))
            members.append((member, body))
        if in_file:
            pos += size + (size & 1)
    return members


def load_input(path, display=None):
    """Objects from an object file or an ar archive: list of ElfObject."""
    display = display or path
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CheckError("%s: %s" % (display, exc.strerror or exc))
    if data[:8] in (b"!<arch>\n", b"!<thin>\n"):
        members = read_archive(data, display, os.path.dirname(path))
        if not members:
            raise CheckError("%s: empty archive" % display)
        return [ElfObject(body, "%s(%s)" % (display, member)) for member, body in members]
    return [ElfObject(data, display)]


# ---------------------------------------------------------------------------
# The golden file.

class Golden:
    """A golden window.  insns: [(offset, bytes, text)]; relocs: [(offset,
    type, addend)], all against the slot."""

    def __init__(self, arch):
        self.arch = arch
        self.path = None
        self.compiler = ""
        self.command = ""
        self.source = []
        self.insns = []
        self.relocs = []

    @property
    def data(self):
        return b"".join(raw for _, raw, _ in self.insns)

    @property
    def length(self):
        return len(self.data)

    def sha256(self):
        return hashlib.sha256(self.data).hexdigest()

    def render(self):
        a = self.arch
        lines = [
            "# The TLSDESC access window to %s that the pinned compiler emits, %s." % (SLOT, a.name),
            "# Written by %s; do not edit: regenerate (README, \"The golden" % GENERATOR,
            "# TLSDESC test\").  tests/tlsdesc/check-tlsdesc.py compares every access window in",
            "# the library's objects with this one.",
            "#",
            "# The window starts at the first byte of the instruction that carries the",
            "# access's first TLSDESC relocation and ends with the last byte of the",
            "# instruction that adds the thread pointer to the resolver's result.",
            "#",
            "# Lines: `format`; `arch` and `e_machine` of the objects it applies to;",
            "# `compiler` (first line of its --version) and `command`, which compiled the",
            "# `source` lines in an empty directory; `insn OFFSET HEX... | DISASSEMBLY`,",
            "# one per instruction, OFFSET in the window, bytes as in the unlinked object",
            "# (relocated fields zero), disassembly for people only; `reloc OFFSET TYPE",
            "# NAME ADDEND`, the relocations against %s, OFFSET in the window;" % SLOT,
            "# `length`, the window's size; `sha256` of the window's bytes.",
            "format " + FORMAT,
            "arch " + a.name,
            "e_machine %d" % a.e_machine,
            "symbol " + SLOT,
            "compiler " + self.compiler,
            "command " + self.command,
        ]
        lines += [("source " + s) if s else "source" for s in self.source]
        for off, raw, text in self.insns:
            hexbytes = (Insn(off, raw, text).hex(a.name))
            lines.append("insn %d %s | %s" % (off, hexbytes, text))
        for off, rtype, addend in self.relocs:
            lines.append("reloc %d %d %s %d" % (off, rtype, a.reloc_name(rtype), addend))
        lines.append("length %d" % self.length)
        lines.append("sha256 " + self.sha256())
        return "\n".join(lines) + "\n"


def read_golden(path, arch):
    """Parse and verify a golden file; CheckError on anything inconsistent."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CheckError("golden file %s: %s" % (path, exc.strerror or exc))
    g = Golden(arch)
    g.path = path
    seen = {}
    length = sha = None

    def bad(lineno, why):
        raise CheckError("golden file %s:%d: %s" % (path, lineno, why))

    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, _, rest = line.partition(" ")
        seen[key] = seen.get(key, 0) + 1
        if key not in ("source", "insn", "reloc") and seen[key] > 1:
            bad(lineno, "`%s` given twice" % key)
        if key == "format":
            if rest != FORMAT:
                bad(lineno, "format %r, this checker reads %r" % (rest, FORMAT))
        elif key == "arch":
            if rest != arch.name:
                bad(lineno, "arch %s, expected %s" % (rest, arch.name))
        elif key == "e_machine":
            if rest != str(arch.e_machine):
                bad(lineno, "e_machine %s, expected %d" % (rest, arch.e_machine))
        elif key == "symbol":
            if rest != SLOT:
                bad(lineno, "symbol %s, expected %s" % (rest, SLOT))
        elif key == "compiler":
            g.compiler = rest
        elif key == "command":
            g.command = rest
        elif key == "source":
            g.source.append(rest)
        elif key == "insn":
            m = re.fullmatch(r"(\d+) ([0-9a-f ]+?) \| (.*)", rest)
            if not m:
                bad(lineno, "malformed insn line")
            off = int(m.group(1))
            words = m.group(2).split()
            if arch.name == "aarch64":
                if any(len(w) != 8 for w in words) or len(words) != 1:
                    bad(lineno, "an aarch64 insn is one 8-digit word")
                raw = struct.pack("<I", int(words[0], 16))
            else:
                if any(len(w) != 2 for w in words):
                    bad(lineno, "x86-64 insn bytes are 2-digit hex")
                raw = bytes(int(w, 16) for w in words)
            if off != len(g.data):
                bad(lineno, "insn at %d, but the previous ones end at %d" % (off, len(g.data)))
            g.insns.append((off, raw, m.group(3)))
        elif key == "reloc":
            m = re.fullmatch(r"(\d+) (\d+) (\S+) (-?\d+)", rest)
            if not m:
                bad(lineno, "malformed reloc line")
            off, rtype, name, addend = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
            if arch.reloc_name(rtype) != name:
                bad(lineno, "relocation type %d is %s, not %s" % (rtype, arch.reloc_name(rtype), name))
            g.relocs.append((off, rtype, addend))
        elif key == "length":
            length = int(rest) if rest.isdigit() else -1
        elif key == "sha256":
            sha = rest
        else:
            bad(lineno, "unknown line `%s`" % key)
    for key in ("format", "arch", "e_machine", "symbol", "compiler", "command", "insn", "reloc",
                "length", "sha256"):
        if key not in seen:
            raise CheckError("golden file %s: no `%s` line" % (path, key))
    if length != g.length:
        raise CheckError("golden file %s: length %s, but the insn lines hold %d bytes"
                         % (path, length, g.length))
    if sha != g.sha256():
        raise CheckError("golden file %s: sha256 %s, but the insn lines hash to %s (edited by "
                         "hand?  regenerate it)" % (path, sha, g.sha256()))
    starts = {off for off, _, _ in g.insns}
    for off, rtype, _ in g.relocs:
        lead = arch.tlsdesc.get(rtype)
        if lead is None:
            raise CheckError("golden file %s: %s is not a TLSDESC relocation"
                             % (path, arch.reloc_name(rtype)))
        if off >= g.length or off - lead not in starts:
            raise CheckError("golden file %s: relocation at %d is not where its instruction "
                             "puts it" % (path, off))
    if min(off - arch.tlsdesc[t] for off, t, _ in g.relocs) != 0:
        raise CheckError("golden file %s: the window does not start at its first TLSDESC "
                         "instruction" % path)
    if not any(t == arch.call_type for _, t, _ in g.relocs):
        raise CheckError("golden file %s: no %s" % (path, arch.reloc_name(arch.call_type)))
    return g


# ---------------------------------------------------------------------------
# Finding and comparing windows.

class Window:
    """An access window found in an object, and how it differs."""

    def __init__(self, obj, section, start, function, target=SLOT):
        self.obj = obj
        self.section = section
        self.start = start
        self.function = function
        self.target = target      # the variable accessed: SLOT or STATE
        self.data = b""
        self.relocs = []          # (offset in window, type, addend, symbol name)
        self.findings = []        # (kind, offset in window, message)

    @property
    def ok(self):
        return not self.findings

    def where(self):
        fn = " (in %s)" % self.function if self.function else ""
        to = "" if self.target == SLOT else ", access to %s" % self.target
        return "%s %s+0x%x%s%s" % (self.obj.name, self.section.name, self.start, fn, to)


class Stray:
    """A relocation against the slot outside every TLSDESC window."""

    def __init__(self, obj, section, reloc, function, loaded, target=SLOT):
        self.obj = obj
        self.section = section
        self.reloc = reloc
        self.function = function
        self.loaded = loaded
        self.target = target

    def where(self):
        fn = " (in %s)" % self.function if self.function else ""
        return "%s %s+0x%x%s" % (self.obj.name, self.section.name, self.reloc.offset, fn)

    def message(self, arch):
        return "%s: %s against %s%s: a TLS access that is not TLSDESC" % (
            self.where(), arch.reloc_name(self.reloc.type), self.target,
            "%+d" % self.reloc.addend if self.reloc.addend else "")


def _target(obj, sym, slot_shndx):
    """SLOT or STATE when `sym` names one of them, else None."""
    if sym.name in ACCESSED and sym.type != STT_SECTION:
        return sym.name
    # In the object that defines them, their section or a local alias.
    if slot_shndx is not None and sym.shndx == slot_shndx and \
            (sym.type == STT_SECTION or sym.bind == STB_LOCAL):
        return SLOT
    return None


def analyze(objects, golden):
    """Every window and stray relocation in `objects` (one architecture),
    compared with `golden`.  Returns (windows, strays, notes)."""
    arch = golden.arch
    windows, strays, notes = [], [], []
    L = golden.length
    golden_relocs = {(off, t, a, SLOT) for off, t, a in golden.relocs}
    for obj in objects:
        if obj.machine != arch.e_machine:
            raise CheckError("%s: e_machine %d, the golden file is for %s"
                             % (obj.name, obj.machine, arch.name))
        slot = obj.slot_definition()
        slot_shndx = slot.shndx if slot is not None and slot.shndx < SHN_LORESERVE else None
        for shndx in sorted(obj.relocs):
            section = obj.sections[shndx]
            relocs = obj.relocs[shndx]
            loaded = bool(section.flags & SHF_ALLOC)
            claimed = set()
            for i, r in enumerate(relocs):
                if i in claimed:
                    continue
                target = _target(obj, r.symbol, slot_shndx)
                if target is None:
                    if r.type in arch.tls_types and loaded:
                        notes.append("%s %s+0x%x: %s against %s (not the library's: not checked)"
                                     % (obj.name, section.name, r.offset, arch.reloc_name(r.type),
                                        r.symbol.name or "?"))
                    continue
                if not loaded:
                    notes.append("%s %s+0x%x: %s against %s in a section that is not loaded "
                                 "(debug information: not an access)"
                                 % (obj.name, section.name, r.offset, arch.reloc_name(r.type),
                                    SLOT))
                    continue
                if r.type not in arch.tlsdesc:
                    strays.append(Stray(obj, section, r, obj.function_at(shndx, r.offset), loaded,
                                        target))
                    continue
                start = r.offset - arch.tlsdesc[r.type]
                w = Window(obj, section, start, obj.function_at(shndx, start), target)
                w.data = section.data[max(start, 0):start + L]
                for j in range(i, len(relocs)):
                    rj = relocs[j]
                    if rj.offset >= start + L:
                        break
                    claimed.add(j)
                    # Against the window's own variable: compared as the
                    # golden window's.
                    name = SLOT if _target(obj, rj.symbol, slot_shndx) == target else \
                        (rj.symbol.name or "?")
                    w.relocs.append((rj.offset - start, rj.type, rj.addend, name))
                _compare(w, golden, golden_relocs)
                windows.append(w)
    return windows, strays, notes


def _compare(w, golden, golden_relocs):
    arch = golden.arch
    gdata = golden.data
    if w.start < 0 or len(w.data) < len(gdata):
        w.findings.append(("truncated", len(w.data),
                           "the section ends %d bytes into the window, which is %d bytes long"
                           % (len(w.data), len(gdata))))
    for k in range(min(len(w.data), len(gdata))):
        if w.data[k] != gdata[k]:
            w.findings.append(("bytes", k, "bytes differ from window offset +%d on (golden %02x, "
                               "found %02x)" % (k, gdata[k], w.data[k])))
            break
    found = set(w.relocs)

    def describe(r):
        off, t, a, sym = r
        return "%s against %s%s at +%d" % (arch.reloc_name(t), sym, "%+d" % a if a else "", off)

    for r in sorted(golden_relocs - found):
        w.findings.append(("reloc-missing", r[0], "no " + describe(r)))
    for r in sorted(found - golden_relocs):
        w.findings.append(("reloc-unexpected", r[0], "unexpected " + describe(r)))


def check_slot_definition(objects):
    """Problems with the definition of the slot in one library's objects:
    defined exactly once, STT_TLS, GLOBAL, DEFAULT, size 8, 8-aligned, in
    .tbss.  Returns (description of the definition, problems)."""
    defs = []
    problems = []
    for obj in objects:
        for sym in obj.symbols:
            if sym.name != SLOT or sym.type == STT_SECTION:
                continue
            if sym.shndx == SHN_UNDEF:
                if sym.type not in (STT_TLS, 0):
                    problems.append("%s: undefined %s has type %s, not TLS"
                                    % (obj.name, SLOT, STT_NAMES.get(sym.type, sym.type)))
                continue
            defs.append((obj, sym))
    if len(defs) != 1:
        where = ", ".join(o.name for o, _ in defs) or "nowhere"
        return None, problems + ["%s is defined %d times (%s), not once" % (SLOT, len(defs), where)]
    obj, sym = defs[0]
    if sym.shndx in (SHN_COMMON, SHN_ABS) or sym.shndx >= len(obj.sections):
        return None, problems + ["%s: %s is not in a section (st_shndx 0x%x)"
                                 % (obj.name, SLOT, sym.shndx)]
    sec = obj.sections[sym.shndx]
    facts = "%s in %s: %s %s %s, size %d, offset %d in %s (align %d)" % (
        SLOT, obj.name, STT_NAMES.get(sym.type, sym.type), STB_NAMES.get(sym.bind, sym.bind),
        STV_NAMES.get(sym.visibility), sym.size, sym.value, sec.name, sec.addralign)
    bad = []
    if sym.type != STT_TLS:
        bad.append("type %s, not TLS" % STT_NAMES.get(sym.type, sym.type))
    if sym.bind != STB_GLOBAL:
        bad.append("binding %s, not GLOBAL" % STB_NAMES.get(sym.bind, sym.bind))
    if sym.visibility != STV_DEFAULT:
        bad.append("visibility %s, not DEFAULT" % STV_NAMES.get(sym.visibility))
    if sym.size != 8:
        bad.append("size %d, not 8" % sym.size)
    if sec.name != ".tbss" or sec.type != SHT_NOBITS:
        bad.append("in section %s, not .tbss (SHT_NOBITS)" % sec.name)
    want = SHF_ALLOC | SHF_WRITE | SHF_TLS
    if sec.flags & want != want:
        bad.append("in a section with flags 0x%x, not writable, allocated and TLS" % sec.flags)
    if sec.addralign < 8 or sec.addralign % 8 or sym.value % 8:
        bad.append("not 8-aligned (section alignment %d, offset %d)" % (sec.addralign, sym.value))
    if sym.value + sym.size > sec.size:
        bad.append("runs past the end of its section")
    return facts, problems + ["%s: %s %s" % (obj.name, SLOT, b) for b in bad]


# ---------------------------------------------------------------------------
# Showing a window.

def display_end(w, golden):
    """Where to stop showing a found window: the golden length, or a little
    further when the access's own thread-pointer add lies beyond it."""
    arch = golden.arch
    section = w.section.data
    end = w.start + golden.length
    calls = [off for off, t, _, _ in w.relocs if t == arch.call_type]
    if calls and w.start >= 0:
        found_end = access_end(arch, section, w.start + calls[0], strict=False)
        if found_end is not None and found_end <= w.start + golden.length + 32:
            end = max(end, found_end)
    return min(end, len(section))


def side_by_side(w, golden):
    """The golden window and the found one, instruction by instruction."""
    arch = golden.arch
    section = w.section.data
    end = display_end(w, golden)
    found = decode_range(arch, section, max(w.start, 0), end)
    for insn in found:
        insn.offset -= w.start
    gins = [Insn(off, raw, text) for off, raw, text in golden.insns]
    grel = [(off, t, a, SLOT) for off, t, a in golden.relocs]

    def cell(insn, relocs):
        if insn is None:
            return ["", ""]
        text = "+%-3d %-*s %s" % (insn.offset, 26 if arch.name == "x86_64" else 8,
                                  insn.hex(arch.name), insn.text)
        sub = "       %s" % "; ".join("+%d %s %s%s" % (off, arch.reloc_name(t), sym,
                                                        "%+d" % a if a else "")
                                      for off, t, a, sym in relocs) if relocs else ""
        return [text, sub]

    left = [(i, [r for r in grel if i.offset <= r[0] < i.offset + len(i.raw)]) for i in gins]
    right = [(i, [r for r in w.relocs if i.offset <= r[0] < i.offset + len(i.raw)]) for i in found]
    width = max([len(cell(i, r)[k]) for i, r in left for k in (0, 1)] + [40])
    lines = ["   %-*s | %s" % (width, "golden (%s)" % (golden.compiler or "?"), "found")]
    for n in range(max(len(left), len(right))):
        li, lr = left[n] if n < len(left) else (None, [])
        ri, rr = right[n] if n < len(right) else (None, [])
        same = li is not None and ri is not None and li.raw == ri.raw and \
            li.offset == ri.offset and sorted(lr) == sorted(rr)
        lc, rc = cell(li, lr), cell(ri, rr)
        lines.append("%s  %-*s | %s" % (" " if same else "!", width, lc[0], rc[0]))
        if lc[1] or rc[1]:
            lines.append("   %-*s | %s" % (width, lc[1], rc[1]))
    return lines


def objdump_window(objdump, w, golden):
    """objdump's own disassembly of what side_by_side() shows, or None."""
    if not objdump:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "object.o")
        with open(path, "wb") as f:
            f.write(w.obj.raw)
        cmd = [objdump, "-dr", "-j", w.section.name, "--start-address=0x%x" % max(w.start, 0),
               "--stop-address=0x%x" % display_end(w, golden), path]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return ["(objdump failed: %s)" % proc.stderr.strip()]
    out = proc.stdout.splitlines()
    # Drop the header up to the first address line.
    for i, line in enumerate(out):
        if line.startswith("Disassembly of section"):
            out = out[i:]
            break
    return [l for l in out if l.strip()]


def regenerate_command(arch):
    return "%s --arch %s" % (GENERATOR, arch.name)
