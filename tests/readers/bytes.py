#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
r"""The Python readers on bytes no careful writer publishes, as doctests
against a live target (target.c, kind "bytes": records written byte by
byte), and the example of otel_thread_ctx.inspect's docstring run as it
is printed there.

usage: bytes.py TARGET [--skip REASON]

>>> insp = Inspector(pid)
>>> by_name = {t.name: t for t in insp.threads()}

Values that are not UTF-8: the bytes, their text (never raising), repr.

>>> rec = by_name["bytes-0"].record
>>> rec.raw_attrs[0], rec.raw_attrs[1], rec.raw_attrs[2], rec.raw_attrs[3]
(b'\xff\xfe', b'ok\xc3(', b'\xed\xa0\x80', b'\xc0\xaf')
>>> dict(rec.named_attrs())
{'value.a': '\\xff\\xfe', 'value.b': 'ok\\xc3(', 'value.c': '\\xed\\xa0\\x80', 'value.d': '\\xc0\\xaf'}
>>> dict(rec.named_raw_attrs())["value.d"]
b'\xc0\xaf'
>>> rec
Record(trace_id=404142434445464748494a4b4c4d4e4f, span_id=b0b1b2b3b4b5b6b7, flags=0x01, attrs={'value.a': '\\xff\\xfe', 'value.b': 'ok\\xc3(', 'value.c': '\\xed\\xa0\\x80', 'value.d': '\\xc0\\xaf'})
>>> [escape(v) for v in rec.raw_attrs.values()]
['\\xff\\xfe', 'ok\\xc3(', '\\xed\\xa0\\x80', '\\xc0\\xaf']

Control characters (NUL, ESC, a newline, DEL, the C1 CSI), a quote and a
backslash: the text keeps them (repr escapes them); escape() gives the
form that is safe on a terminal, the one the command line prints.

>>> rec = by_name["bytes-1"].record
>>> dict(rec.named_attrs())
{'value.a': '\x00\x01\x1b[31m\n\r\t', 'value.b': '\x7f', 'value.c': '\x9b2J', 'value.d': '"\\'}
>>> print(", ".join(escape(v) for v in rec.raw_attrs.values()))
\x00\x01\x1b[31m\x0a\x0d\x09, \x7f, \xc2\x9b2J, \x22\x5c
>>> any(0 <= ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in repr(rec))
False

Maximum lengths: three values of 255, 255 and 96 bytes fill the 612 bytes
of attributes; the second is continuation bytes only.

>>> rec = by_name["bytes-2"].record
>>> [len(v) for v in rec.raw_attrs.values()], by_name["bytes-2"].attrs_data_size
([255, 255, 96], 612)
>>> [len(v) for v in rec.named_attrs().values()]
[255, 1020, 96]
>>> escape(rec.raw_attrs[1]) == rec.attrs[1] == "".join("\\x%02x" % b for b in rec.raw_attrs[1])
True
>>> len(repr(rec)) > 1500
True

Every byte value but 0 in one 255-byte value, and an empty one.

>>> rec = by_name["bytes-3"].record
>>> rec.raw_attrs[0] == bytes(range(1, 256)), rec.raw_attrs[1]
(True, b'')
>>> text = escape(rec.raw_attrs[0])
>>> text[:12], text[-8:], all(0x20 <= ord(c) < 0x7f for c in text)
('\\x01\\x02\\x03', '\\xfe\\xff', True)
>>> insp.close()
"""
import contextlib
import doctest
import io
import subprocess
import sys


def docstring_example(pid):
    """Runs the example of otel_thread_ctx.inspect's docstring, as printed
    there (the indented block after its first paragraph of text), against
    the target; returns what it printed."""
    import otel_thread_ctx.inspect as module
    lines, block = [], False
    for line in module.__doc__.splitlines():
        if line.startswith("    with Inspector(pid)"):
            block = True
        if block:
            if line.strip() == "":
                break
            lines.append(line[4:])
    assert lines, "no example in otel_thread_ctx.inspect's docstring"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile("\n".join(lines) + "\n", "inspect-docstring", "exec"),  # pylint: disable=exec-used
             {"Inspector": module.Inspector, "pid": pid})
    return out.getvalue()


def main(argv):
    if "--skip" in argv:
        print("skip:", argv[argv.index("--skip") + 1])
        return 77
    target = subprocess.Popen([argv[1], "bytes"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        line = target.stdout.readline()
        assert line.startswith("ready"), line
        import otel_thread_ctx
        from otel_thread_ctx.inspect import Inspector
        escape = getattr(otel_thread_ctx, "escape", None)
        failed, tried = doctest.testmod(
            sys.modules[__name__], verbose=False,
            extraglobs={"pid": target.pid, "Inspector": Inspector, "escape": escape})
        print(f"doctests: {tried - failed} of {tried} passed")
        printed = docstring_example(target.pid)
        lines = printed.splitlines()
        print(f"the docstring's example printed {len(lines)} lines")
        if len(lines) != 4:
            print("FAIL: the example should print the four records:\n" + printed)
            failed += 1
        target.stdin.write("check\n")
        target.stdin.flush()
        answer = target.stdout.readline().strip()
        if answer != "ok":
            print("FAIL: the target does not run on:", answer)
            failed += 1
        target.stdin.close()
        if target.wait(timeout=60) != 0:
            print("FAIL: the target ended badly")
            failed += 1
        return 1 if failed else 0
    finally:
        if target.poll() is None:
            target.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
