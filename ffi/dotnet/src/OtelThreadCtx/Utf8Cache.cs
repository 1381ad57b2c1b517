// SPDX-License-Identifier: Apache-2.0
using System;
using System.Buffers;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;

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
                    Copy(ref l.Bytes[i * Max], dst, len);
                    return OperationStatus.Done;
                }
            }
        }
        return EncodeAndKeep(s, dst, room, out len);
    }

    // A value is short (a route, a method name): one of 8 to 32 bytes is
    // copied with two overlapping loads and stores, without a call; others
    // with Span.CopyTo.  The caller keeps len within the line and within
    // the destination, and nothing past len is written.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void Copy(ref byte src, byte* dst, int len)
    {
        if (len >= 16 && len <= 32)
        {
            Unsafe.WriteUnaligned(dst, Unsafe.ReadUnaligned<Vector128<byte>>(ref src));
            Unsafe.WriteUnaligned(dst + len - 16,
                Unsafe.ReadUnaligned<Vector128<byte>>(ref Unsafe.Add(ref src, len - 16)));
        }
        else if (len >= 8 && len < 16)
        {
            Unsafe.WriteUnaligned(dst, Unsafe.ReadUnaligned<ulong>(ref src));
            Unsafe.WriteUnaligned(dst + len - 8, Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref src, len - 8)));
        }
        else
        {
            MemoryMarshal.CreateReadOnlySpan(ref src, len).CopyTo(new Span<byte>(dst, len));
        }
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
