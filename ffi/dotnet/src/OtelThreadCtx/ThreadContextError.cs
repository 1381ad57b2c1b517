// SPDX-License-Identifier: Apache-2.0
using System;

namespace OtelThreadCtx;

/// <summary>
/// The return values of the C library (enum otel_thread_ctx_error): 0 or a
/// negative code.  <see cref="ThreadContextException"/> carries one with the
/// library's own text; the Try methods return one.
/// </summary>
public enum ThreadContextError
{
    /// <summary>Success.</summary>
    Ok = 0,
    /// <summary>The process context payload would be too large.</summary>
    TooBig = -7,
    /// <summary>Out of memory.</summary>
    NoMemory = -12,
    /// <summary>The attributes do not fit in the context's capacity.</summary>
    NoSpace = -28,
    /// <summary>A required pointer was NULL (a disposed context, say).</summary>
    Null = -4001,
    /// <summary>The ids would be set half-way (one id without the other, flags without ids, an all-zero id).</summary>
    Ids = -4002,
    /// <summary>Attribute key index above 255.</summary>
    Key = -4003,
    /// <summary>Attribute value longer than 255 bytes.</summary>
    Value = -4004,
    /// <summary>Attribute value is not valid UTF-8 (or, from .NET, a string that is not valid UTF-16).</summary>
    Utf8 = -4005,
    /// <summary>The thread-exit cleanup could not be set up, or has already run on this thread.</summary>
    Thread = -4007,
    /// <summary>The thread publishes nothing, or the context holds no record.</summary>
    NoContext = -4008,
    /// <summary>Readers: the record's valid byte is not 1.</summary>
    Invalid = -4009,
    /// <summary>Readers: fewer bytes than a record header.</summary>
    Truncated = -4010,
    /// <summary>Self-check: a profiler would not find the slot the library writes.</summary>
    Slot = -4011,
    /// <summary>Key name empty, too long or not valid UTF-8.</summary>
    Name = -4012,
    /// <summary>All 256 key indices are taken.</summary>
    Keys = -4013,
    /// <summary>No attribute key of that name is registered.</summary>
    UnknownKey = -4014,
    /// <summary>The process context is published already.</summary>
    Published = -4015,
    /// <summary>The process context is not published.</summary>
    NotPublished = -4016,
    /// <summary>A resource attribute is invalid.</summary>
    Attribute = -4017,
    /// <summary>No mapping readers can find could be made.</summary>
    Map = -4018,
    /// <summary>A system call failed.</summary>
    System = -4019,
    /// <summary>The same attribute key twice.</summary>
    DuplicateKey = -4020,
    /// <summary>Options out of range.</summary>
    Options = -4021,
    /// <summary>The library was built without thread-context support for this platform (the no-op build).</summary>
    Unsupported = -4023,
    /// <summary>No (more) attributes: the record has no attribute of that key.</summary>
    NoAttribute = -4024,
    /// <summary>Called from a signal handler that interrupted a publishing call on the same thread; nothing changed.</summary>
    Nested = -4025,
    /// <summary>A thread's first publication: the pool's records for 129,024 threads are all in use.</summary>
    PoolFull = -4026,
}

/// <summary>
/// A call into libotel-thread-ctx failed.  The message is the C function's
/// name and the library's own description of the code
/// (otel_thread_ctx_strerror).  A call that fails changes nothing.
/// </summary>
public sealed class ThreadContextException : Exception
{
    /// <summary>The code the library returned.</summary>
    public ThreadContextError Error { get; }

    /// <summary>The C function that returned it.</summary>
    public string Function { get; }

    /// <summary>Wraps a code returned by <paramref name="function"/>.</summary>
    public ThreadContextException(string function, ThreadContextError error)
        : base(function + ": " + Describe(error))
    {
        Function = function;
        Error = error;
        HResult = (int)error;
    }

    /// <summary>The library's description of a code (otel_thread_ctx_strerror).</summary>
    public static unsafe string Describe(ThreadContextError error) =>
        Native.Utf8(Native.StrError((int)error)) ?? error.ToString();

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
    internal static void Check(int rc, string function)
    {
        if (rc != 0)
            Throw(rc, function);
    }

    [System.Diagnostics.CodeAnalysis.DoesNotReturn]
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    internal static void Throw(int rc, string function) =>
        throw new ThreadContextException(function, (ThreadContextError)rc);
}
