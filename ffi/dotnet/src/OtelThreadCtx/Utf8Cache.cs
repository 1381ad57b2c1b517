// SPDX-License-Identifier: Apache-2.0
using System;
using System.Buffers;
using System.Runtime.CompilerServices;

namespace OtelThreadCtx;

// An attribute value's UTF-8, remembered per thread by the string it came
// from.  The value a thread publishes is usually the same string object
// publication after publication (a route template, a method name), and a
// string never changes: its bytes are copied from the last few a thread
// encoded instead of being transcoded again.  Only whole values of at most
// 255 bytes are kept (what one attribute holds), four per thread: about
// 1 KiB on each thread that publishes attribute text.
internal static unsafe class Utf8Cache
{
    private const int Ways = 4;
    private const int Max = ThreadContext.MaxValueLength;

    private sealed class Lines
    {
        internal readonly string?[] Keys = new string?[Ways];
        internal readonly int[] Lengths = new int[Ways];
        internal readonly byte[] Bytes = new byte[Ways * Max];
        internal int Next;
    }

    [ThreadStatic]
    private static Lines? t_lines;

    // Utf8.FromUtf16(s, [dst, dst + room), replaceInvalidSequences: false):
    // the same status, bytes and length.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static OperationStatus Encode(string s, byte* dst, int room, out int len)
    {
        Lines? l = t_lines;
        if (l != null)
        {
            for (int i = 0; i < Ways; i++)
            {
                if (ReferenceEquals(l.Keys[i], s) && l.Lengths[i] <= room)
                {
                    len = l.Lengths[i];
                    l.Bytes.AsSpan(i * Max, len).CopyTo(new Span<byte>(dst, len));
                    return OperationStatus.Done;
                }
            }
        }
        return EncodeAndKeep(s, dst, room, out len);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static OperationStatus EncodeAndKeep(string s, byte* dst, int room, out int len)
    {
        OperationStatus st = System.Text.Unicode.Utf8.FromUtf16(s, new Span<byte>(dst, room), out _, out len,
            replaceInvalidSequences: false);
        if (st == OperationStatus.Done && len <= Max)
        {
            Lines l = t_lines ??= new Lines();
            int i = l.Next;
            l.Next = (i + 1) % Ways;
            new ReadOnlySpan<byte>(dst, len).CopyTo(l.Bytes.AsSpan(i * Max, len));
            l.Lengths[i] = len;
            l.Keys[i] = s;
        }
        return st;
    }

    // Forgets what the calling thread kept (tests).
    internal static void Clear() => t_lines = null;
}
