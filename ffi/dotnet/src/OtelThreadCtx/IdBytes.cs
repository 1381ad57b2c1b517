// SPDX-License-Identifier: Apache-2.0
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;

namespace OtelThreadCtx;

// The bytes of System.Diagnostics ids.  An ActivitySpanId or ActivityTraceId
// holds its id as a string of lowercase hex digits (every way of making one
// checks that, and the default id's string is all zeros), and ToHexString()
// returns that string without allocating.  Their own CopyTo parses it a
// digit at a time; here all 16 digits of a span id (or the two halves of a
// trace id) are converted at once with 128-bit vector instructions.  Where
// those are not accelerated, or the string is not of the expected length,
// CopyTo does it.
internal static unsafe class IdBytes
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static void Span(ActivitySpanId id, byte* dst)
    {
        string hex = id.ToHexString();
        if (Vector128.IsHardwareAccelerated && hex.Length == 16)
            Decode16(ref MemoryMarshal.GetReference(hex.AsSpan()), dst);
        else
            id.CopyTo(new Span<byte>(dst, 8));
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static void Trace(ActivityTraceId id, byte* dst)
    {
        string hex = id.ToHexString();
        if (Vector128.IsHardwareAccelerated && hex.Length == 32)
        {
            ref char digits = ref MemoryMarshal.GetReference(hex.AsSpan());
            Decode16(ref digits, dst);
            Decode16(ref Unsafe.Add(ref digits, 16), dst + 8);
        }
        else
        {
            id.CopyTo(new Span<byte>(dst, 16));
        }
    }

    // 16 hex digits (UTF-16) into 8 bytes, the first digit the high half of
    // the first byte.  Digits '0'-'9' give 0-9, 'a'-'f' (and 'A'-'F') 10-15.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void Decode16(ref char digits, byte* dst)
    {
        ref ushort src = ref Unsafe.As<char, ushort>(ref digits);
        Vector128<byte> c = Vector128.Narrow(Vector128.LoadUnsafe(ref src), Vector128.LoadUnsafe(ref src, 8));
        Vector128<byte> letter = Vector128.GreaterThan(c, Vector128.Create((byte)'9'));
        Vector128<byte> nibbles = (c & Vector128.Create((byte)0x0F)) + (letter & Vector128.Create((byte)9));
        // Each pair of nibbles as a 16-bit lane: the high half in its low byte.
        Vector128<ushort> pairs = nibbles.AsUInt16();
        Vector128<ushort> bytes = Vector128.ShiftLeft(pairs, 4) | Vector128.ShiftRightLogical(pairs, 8);
        *(ulong*)dst = Vector128.Narrow(bytes, bytes).AsUInt64().ToScalar();
    }
}
