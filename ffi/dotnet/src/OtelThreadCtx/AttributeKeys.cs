// SPDX-License-Identifier: Apache-2.0
using System;
using System.Buffers;
using System.Text;

namespace OtelThreadCtx;

/// <summary>
/// The attribute key registry: the process context's
/// threadlocal.attribute_key_map, whose positions are the key indices of
/// thread attributes.  Indices are handed out in order of registration and
/// never change; at most 256 names.  Registering takes a lock (start-up work);
/// lookups take none.
/// </summary>
public static unsafe class AttributeKeys
{
    /// <summary>Longest key name, in bytes of UTF-8 (255).</summary>
    public const int MaxNameLength = Native.KeyNameMax;

    /// <summary>
    /// Registers <paramref name="name"/> and returns its index (a name
    /// registered before gets its old index).  When the process context is
    /// published, it is republished with the new key before this returns.
    /// </summary>
    /// <exception cref="ThreadContextException">Name (empty, too long, not UTF-8), Keys (256 registered); TooBig or NoMemory republishing.</exception>
    public static int Register(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        uint index;
        int rc = WithName(name, &index, &RegisterCall);
        ThreadContextException.Check(rc, "otel_thread_ctx_key_register");
        return (int)index;
    }

    /// <summary>The index of a registered name, or -1.</summary>
    public static int Find(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        uint index;
        return WithName(name, &index, &FindCall) == 0 ? (int)index : -1;
    }

    /// <summary>The name of key <paramref name="index"/>, or null.</summary>
    public static string? Name(int index) => index < 0 ? null : Native.Utf8(Native.KeyName((uint)index));

    /// <summary>How many keys are registered (the next index).</summary>
    public static int Count => (int)Native.KeyCount();

    private static int RegisterCall(byte* name, uint* index) => Native.KeyRegister(name, index);

    private static int FindCall(byte* name, uint* index) => Native.KeyFind(name, index);

    // The name as NUL-terminated UTF-8.  A NUL inside it or invalid UTF-16
    // cannot be a key name: Name.
    private static int WithName(string name, uint* index, delegate*<byte*, uint*, int> call)
    {
        if (name.Contains('\0'))
            return (int)ThreadContextError.Name;
        int need = Encoding.UTF8.GetByteCount(name) + 1;
        byte[]? rented = null;
        Span<byte> buf = need <= 512 ? stackalloc byte[512] : (rented = ArrayPool<byte>.Shared.Rent(need));
        try
        {
            if (System.Text.Unicode.Utf8.FromUtf16(name, buf, out _, out int len,
                    replaceInvalidSequences: false) != OperationStatus.Done)
                return (int)ThreadContextError.Name;
            buf[len] = 0;
            fixed (byte* b = buf)
                return call(b, index);
        }
        finally
        {
            if (rented != null)
                ArrayPool<byte>.Shared.Return(rented);
        }
    }
}
