// SPDX-License-Identifier: Apache-2.0
using System;
using System.Buffers;
using System.Text;

namespace OtelThreadCtx;

/// <summary>
/// One attribute of a thread context: a key index (0..255, a position in the
/// process context's attribute key map: see <see cref="AttributeKeys"/>) and
/// a value of at most 255 bytes of UTF-8, given as a string or as UTF-8
/// bytes.
/// </summary>
public readonly struct ThreadAttribute
{
    /// <summary>The key index.</summary>
    public int Key { get; }

    /// <summary>The value as a string (null when given as UTF-8 bytes).</summary>
    public string? Text { get; }

    /// <summary>The value as UTF-8 bytes (empty when given as a string).</summary>
    public ReadOnlyMemory<byte> Utf8 { get; }

    /// <summary>An attribute whose value is a string.</summary>
    public ThreadAttribute(int key, string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        Key = key;
        Text = value;
        Utf8 = default;
    }

    /// <summary>An attribute whose value is UTF-8 bytes (checked by the library).</summary>
    public ThreadAttribute(int key, ReadOnlyMemory<byte> utf8)
    {
        Key = key;
        Text = null;
        Utf8 = utf8;
    }
}

// Turns attributes into the C library's struct otel_thread_ctx_attr array,
// on the stack (a scratch buffer from the pool only when they do not fit),
// and calls the library with it: no allocation.
internal static unsafe class AttrMarshal
{
    private const int StackBytes = 1024;
    private const int StackAttrs = 32;

    internal static int Call<TState>(ReadOnlySpan<ThreadAttribute> attrs, in TState state,
        delegate*<in TState, Native.Attr*, nuint, int> call)
    {
        // Most attributes fit in the stack buffer: encode them straight
        // into it, in one pass.
        int n = attrs.Length;
        if (n <= StackAttrs)
        {
            byte* buf = stackalloc byte[StackBytes];
            Native.Attr* na = stackalloc Native.Attr[StackAttrs];
            int off = 0;
            int i = 0;
            for (; i < n; i++)
            {
                ref readonly ThreadAttribute a = ref attrs[i];
                int len;
                if (a.Text != null)
                {
                    OperationStatus st = Utf8Cache.Encode(a.Text, buf + off, StackBytes - off, out len);
                    if (st == OperationStatus.InvalidData)
                        return (int)ThreadContextError.Utf8;
                    if (st != OperationStatus.Done)
                        break;
                }
                else
                {
                    len = a.Utf8.Length;
                    if (len > StackBytes - off)
                        break;
                    a.Utf8.Span.CopyTo(new Span<byte>(buf + off, len));
                }
                na[i].Key = unchecked((uint)a.Key);
                na[i].Len = (uint)len;
                na[i].Value = buf + off;
                off += len;
            }
            if (i == n)
                return call(in state, n == 0 ? null : na, (nuint)n);
        }
        return CallLarge(attrs, in state, call);
    }

    // Attributes too many or too long for the stack buffer.
    private static int CallLarge<TState>(ReadOnlySpan<ThreadAttribute> attrs, in TState state,
        delegate*<in TState, Native.Attr*, nuint, int> call)
    {
        int n = attrs.Length;
        long need = 0;
        for (int i = 0; i < n; i++)
        {
            ref readonly ThreadAttribute a = ref attrs[i];
            need += a.Text != null ? Encoding.UTF8.GetByteCount(a.Text) : a.Utf8.Length;
        }
        if (need > int.MaxValue / 2)
            return (int)ThreadContextError.Value;

        byte[]? rentedBytes = null;
        Native.Attr[]? rentedAttrs = null;
        Span<byte> buf = need <= StackBytes
            ? stackalloc byte[StackBytes]
            : (rentedBytes = ArrayPool<byte>.Shared.Rent((int)need));
        Span<Native.Attr> native = n <= StackAttrs
            ? stackalloc Native.Attr[StackAttrs]
            : (rentedAttrs = ArrayPool<Native.Attr>.Shared.Rent(n));
        try
        {
            fixed (byte* b = buf)
            fixed (Native.Attr* na = native)
            {
                int off = 0;
                for (int i = 0; i < n; i++)
                {
                    ref readonly ThreadAttribute a = ref attrs[i];
                    int len;
                    if (a.Text != null)
                    {
                        if (System.Text.Unicode.Utf8.FromUtf16(a.Text, buf.Slice(off), out _, out len,
                                replaceInvalidSequences: false) != OperationStatus.Done)
                            return (int)ThreadContextError.Utf8;
                    }
                    else
                    {
                        a.Utf8.Span.CopyTo(buf.Slice(off));
                        len = a.Utf8.Length;
                    }
                    na[i].Key = unchecked((uint)a.Key);
                    na[i].Len = (uint)len;
                    na[i].Value = b + off;
                    off += len;
                }
                return call(in state, n == 0 ? null : na, (nuint)n);
            }
        }
        finally
        {
            if (rentedBytes != null)
                ArrayPool<byte>.Shared.Return(rentedBytes);
            if (rentedAttrs != null)
                ArrayPool<Native.Attr>.Shared.Return(rentedAttrs);
        }
    }

    // One value, as UTF-8, for a call that takes (pointer, length).
    internal static int CallOne<TState>(string value, in TState state, delegate*<in TState, byte*, nuint, int> call)
    {
        int need = Encoding.UTF8.GetByteCount(value);
        byte[]? rented = null;
        Span<byte> buf = need <= 256 ? stackalloc byte[256] : (rented = ArrayPool<byte>.Shared.Rent(need));
        try
        {
            if (System.Text.Unicode.Utf8.FromUtf16(value, buf, out _, out int len,
                    replaceInvalidSequences: false) != OperationStatus.Done)
                return (int)ThreadContextError.Utf8;
            fixed (byte* b = buf)
                return call(in state, b, (nuint)len);
        }
        finally
        {
            if (rented != null)
                ArrayPool<byte>.Shared.Return(rented);
        }
    }
}
