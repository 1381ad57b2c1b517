// SPDX-License-Identifier: Apache-2.0
using System;
using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace OtelThreadCtx;

/// <summary>
/// A thread context (otel_thread_ctx): a value holding trace id, span id,
/// trace flags and attributes, and nothing of any thread.
/// </summary>
/// <remarks>
/// <para>
/// <see cref="Attach()"/> and <see cref="Update"/> copy what the context holds
/// into the calling thread's own record and publish that copy: no thread ever
/// points into a context.  So any number of threads may attach one context at
/// once, and a context may be changed, attached again, disposed, or collected
/// at any time: what threads publish changes only when they publish again.
/// Like any value, a context may be read by several threads at once (attach,
/// update, copy, get) and written by one thread while no other uses it (the
/// setters).
/// </para>
/// <para>
/// The setters change the context only; a thread that attached it publishes
/// the change when it attaches or updates it again.  Every method throws
/// <see cref="ThreadContextException"/> with the library's error, and a
/// call that throws changed nothing.  A disposed context throws
/// <see cref="ObjectDisposedException"/>.
/// </para>
/// <para>
/// The native context is freed by the finalizer, never by
/// <see cref="Dispose"/>, which only marks the context disposed: every call
/// keeps the object reachable until the library returns, so the finalizer
/// cannot free the memory a call is reading, even when another thread
/// disposes the context meanwhile.  That makes the calls free of the
/// reference count a SafeHandle takes and gives back (two atomic
/// read-modify-writes per context per call).  The memory of a disposed
/// context (about 700 bytes) stays allocated until the object is collected;
/// the garbage collector is told of it (GC.AddMemoryPressure).
/// </para>
/// </remarks>
public sealed unsafe class ThreadContext : IDisposable
{
    // What the context costs outside the managed heap: the record and the
    // context's header (src/thread_ctx.c), rounded up.
    private const long NativeBytes = 704;

    // The otel_thread_ctx; set once, by the constructor, freed only by the
    // finalizer.
    private readonly nint _ctx;
    private volatile bool _disposed;

    /// <summary>Bytes of attribute entries a record holds at most (612).</summary>
    public const int MaxAttributesCapacity = Native.AttrsMax;

    /// <summary>Longest attribute value, in bytes (255).</summary>
    public const int MaxValueLength = Native.ValueMax;

    /// <summary>Highest attribute key index (255).</summary>
    public const int MaxKey = Native.KeyMax;

    /// <summary>Bytes of attribute entries this context can hold.</summary>
    public int AttributesCapacity { get; }

    /// <summary>An empty context (no ids, no attributes) with room for 612 bytes of attributes.</summary>
    public ThreadContext() : this(MaxAttributesCapacity)
    {
    }

    /// <summary>
    /// An empty context with room for <paramref name="attributesCapacity"/>
    /// bytes of attribute entries (0 for ids only; at most 612).
    /// </summary>
    /// <exception cref="ThreadContextException">Options (capacity out of range), NoMemory.</exception>
    public ThreadContext(int attributesCapacity)
    {
        Native.Options options = new()
        {
            Size = (nuint)sizeof(Native.Options),
            AttrsCapacity = unchecked((uint)attributesCapacity),
            // The C options' zero is the default capacity: ids only is a flag.
            Flags = attributesCapacity == 0 ? Native.OptionIdsOnly : 0u,
        };
        nint ctx;
        int rc = Native.CreateWith(&ctx, &options);
        if (rc != 0)
        {
            GC.SuppressFinalize(this);
            ThreadContextException.Check(rc, "otel_thread_ctx_create_with");
        }
        _ctx = ctx;
        GC.AddMemoryPressure(NativeBytes);
        AttributesCapacity = attributesCapacity;
    }

    /// <summary>A context holding these ids and flags.</summary>
    public ThreadContext(ActivityTraceId traceId, ActivitySpanId spanId,
        ActivityTraceFlags flags = ActivityTraceFlags.None) : this()
    {
        SetIds(traceId, spanId, flags);
    }

    /// <summary>Frees the native context, once nothing can use it.</summary>
    ~ThreadContext()
    {
        // Never fails, on any thread, whatever the threads that attached the
        // context are doing: they publish copies.
        if (_ctx != 0)
        {
            Native.Destroy(_ctx);
            GC.RemoveMemoryPressure(NativeBytes);
        }
    }

    /// <summary>
    /// Marks the context disposed: every later call throws
    /// <see cref="ObjectDisposedException"/> (the Try methods return
    /// <see cref="ThreadContextError.Null"/>).  Calls running on other
    /// threads finish with the context as it was.  A second call does
    /// nothing.
    /// </summary>
    public void Dispose() => _disposed = true;

    /// <summary>True once <see cref="Dispose"/> has been called.</summary>
    public bool IsClosed => _disposed;

    // The native context for a call, or ObjectDisposedException.  The caller
    // keeps `this` reachable until the call returns (GC.KeepAlive).
    internal nint CallPtr => Ptr;

    private nint Ptr
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get
        {
            if (_disposed)
                ThrowDisposed();
            return _ctx;
        }
    }

    // The native context of a context only the binding holds and never
    // disposes while in use (the scopes' saved contexts).
    internal nint OwnedPtr => _ctx;

    [DoesNotReturn]
    private static void ThrowDisposed() => throw new ObjectDisposedException(nameof(ThreadContext));

    /// <summary>Sets both ids and the flags (otel_thread_ctx_set_ids).</summary>
    /// <exception cref="ThreadContextException">Ids when exactly one id is all zero, or flags without ids.</exception>
    public void SetIds(ActivityTraceId traceId, ActivitySpanId spanId, ActivityTraceFlags flags = ActivityTraceFlags.None)
    {
        byte* ids = stackalloc byte[24];
        IdBytes.Trace(traceId, ids);
        IdBytes.Span(spanId, ids + 16);
        int rc = Native.SetIds(Ptr, ids, ids + 16, (byte)flags);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_ids");
    }

    /// <summary>Sets both ids (16 and 8 bytes) and the flags.</summary>
    /// <exception cref="ArgumentException">An id of the wrong length.</exception>
    /// <exception cref="ThreadContextException">Ids.</exception>
    public void SetIds(ReadOnlySpan<byte> traceId, ReadOnlySpan<byte> spanId, byte flags = 0)
    {
        if (traceId.Length != 16)
            throw new ArgumentException("a trace id is 16 bytes", nameof(traceId));
        if (spanId.Length != 8)
            throw new ArgumentException("a span id is 8 bytes", nameof(spanId));
        int rc;
        fixed (byte* t = traceId)
        fixed (byte* s = spanId)
            rc = Native.SetIds(Ptr, t, s, flags);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_ids");
    }

    /// <summary>Changes the span id only (otel_thread_ctx_set_span_id).</summary>
    /// <exception cref="ThreadContextException">Ids when the span id is all zero or there is no trace id.</exception>
    public void SetSpanId(ActivitySpanId spanId)
    {
        ulong s;
        IdBytes.Span(spanId, (byte*)&s);
        int rc = Native.SetSpanId(Ptr, (byte*)&s);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_span_id");
    }

    /// <summary>Changes the trace flags only (otel_thread_ctx_set_trace_flags).</summary>
    /// <exception cref="ThreadContextException">Ids when the flags are not zero and there are no ids.</exception>
    public void SetTraceFlags(ActivityTraceFlags flags)
    {
        int rc = Native.SetTraceFlags(Ptr, (byte)flags);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_trace_flags");
    }

    /// <summary>Removes both ids and the flags.</summary>
    public void ClearIds()
    {
        int rc = Native.ClearIds(Ptr);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_clear_ids");
    }

    /// <summary>
    /// Sets attribute <paramref name="key"/> (replacing its value if set).
    /// Register the key first (<see cref="AttributeKeys.Register"/>): readers
    /// ignore an index the process context's key map does not name.
    /// </summary>
    /// <exception cref="ThreadContextException">Key, Value (over 255 bytes), Utf8, NoSpace.</exception>
    public void SetAttribute(int key, string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        (nint, uint) state = (Ptr, unchecked((uint)key));
        int rc = AttrMarshal.CallOne(value, in state, &SetAttrCall);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_attr");
    }

    private static int SetAttrCall(in (nint Ctx, uint Key) s, byte* value, nuint len) =>
        Native.SetAttr(s.Ctx, s.Key, value, len);

    /// <summary>Sets attribute <paramref name="key"/> to UTF-8 bytes (checked by the library).</summary>
    /// <exception cref="ThreadContextException">Key, Value, Utf8, NoSpace.</exception>
    public void SetAttribute(int key, ReadOnlySpan<byte> utf8)
    {
        int rc;
        fixed (byte* v = utf8)
            rc = Native.SetAttr(Ptr, unchecked((uint)key), v, (nuint)utf8.Length);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_attr");
    }

    /// <summary>Removes attribute <paramref name="key"/>; absent is not an error.</summary>
    /// <exception cref="ThreadContextException">Key.</exception>
    public void RemoveAttribute(int key)
    {
        int rc = Native.RemoveAttr(Ptr, unchecked((uint)key));
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_remove_attr");
    }

    /// <summary>Removes every attribute.</summary>
    public void ClearAttributes()
    {
        int rc = Native.ClearAttrs(Ptr);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_clear_attrs");
    }

    /// <summary>Removes ids, flags and attributes.</summary>
    public void Clear()
    {
        int rc = Native.Clear(Ptr);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_clear");
    }

    /// <summary>Replaces all the attributes with these, in this order (keys distinct).</summary>
    /// <exception cref="ThreadContextException">Key, Value, Utf8, DuplicateKey, NoSpace.</exception>
    public void SetAttributes(ReadOnlySpan<ThreadAttribute> attributes)
    {
        nint ctx = Ptr;
        int rc = AttrMarshal.Call(attributes, in ctx, &SetAttrsCall);
        GC.KeepAlive(this);
        ThreadContextException.Check(rc, "otel_thread_ctx_set_attrs");
    }

    private static int SetAttrsCall(in nint ctx, Native.Attr* attrs, nuint n) => Native.SetAttrs(ctx, attrs, n);

    /// <summary>Makes this context hold what <paramref name="source"/> holds.</summary>
    /// <exception cref="ThreadContextException">NoSpace when its attributes do not fit this context's capacity.</exception>
    public void CopyFrom(ThreadContext source)
    {
        ArgumentNullException.ThrowIfNull(source);
        int rc = Native.Copy(Ptr, source.Ptr);
        GC.KeepAlive(this);
        GC.KeepAlive(source);
        ThreadContextException.Check(rc, "otel_thread_ctx_copy");
    }

    /// <summary>
    /// The record a thread attaching this context publishes, or null when the
    /// context holds no record (a saved "nothing published").
    /// </summary>
    public ThreadRecord? GetRecord()
    {
        Native.Record rec;
        int rc = Native.Get(Ptr, &rec);
        GC.KeepAlive(this);
        if (rc == (int)ThreadContextError.NoContext)
            return null;
        ThreadContextException.Check(rc, "otel_thread_ctx_get");
        return ThreadRecord.FromNative(&rec, null);
    }

    /// <summary>True when the context holds a record (false for a saved "nothing published").</summary>
    public bool HoldsRecord
    {
        get
        {
            Native.Record rec;
            int rc = Native.Get(Ptr, &rec);
            GC.KeepAlive(this);
            return rc == 0;
        }
    }

    /// <summary>
    /// Publishes a copy of this context on the calling thread and returns a
    /// scope whose Dispose puts back exactly what the thread published before
    /// (otel_thread_ctx_attach, then otel_thread_ctx_update of the saved
    /// value).  The scope is a ref struct: it cannot outlive the method or
    /// cross an await, so it is disposed on the thread that attached.
    /// </summary>
    /// <exception cref="ThreadContextException">NoMemory, Thread (first publication of a thread).</exception>
    public ThreadContextScope Attach()
    {
        nint ctx = Ptr;
        ThreadContext saved = SavedPool.Rent();
        int rc = ThreadCalls.Attach(ctx, saved.OwnedPtr);
        GC.KeepAlive(this);
        if (rc != 0)
        {
            SavedPool.Return(saved);
            ThreadContextException.Check(rc, "otel_thread_ctx_attach");
        }
        return new ThreadContextScope(saved);
    }

    /// <summary>
    /// Publishes a copy of this context on the calling thread; when
    /// <paramref name="saved"/> is not null it receives what the thread
    /// published before (put it back with <c>saved.Update()</c>).  saved may
    /// be this context.
    /// </summary>
    /// <exception cref="ThreadContextException">NoSpace when saved is too small for what the thread published; NoMemory, Thread.</exception>
    public void Attach(ThreadContext? saved)
    {
        int rc = ThreadCalls.Attach(Ptr, saved is null ? 0 : saved.Ptr);
        GC.KeepAlive(this);
        GC.KeepAlive(saved);
        if (rc != 0)
            ThreadContextException.Throw(rc, "otel_thread_ctx_attach");
    }

    /// <summary>The calling thread publishes what this context holds now (a context that holds no record unpublishes).</summary>
    /// <exception cref="ThreadContextException">NoMemory, Thread.</exception>
    public void Update()
    {
        int rc = ThreadCalls.Update(Ptr);
        GC.KeepAlive(this);
        if (rc != 0)
            ThreadContextException.Throw(rc, "otel_thread_ctx_update");
    }

    /// <summary><see cref="Update"/> without exceptions: returns the library's code.</summary>
    public ThreadContextError TryUpdate()
    {
        if (_disposed)
            return ThreadContextError.Null;
        int rc = ThreadCalls.Update(_ctx);
        GC.KeepAlive(this);
        return (ThreadContextError)rc;
    }
}

/// <summary>
/// What <see cref="ThreadContext.Attach()"/> returns: disposing it makes the
/// calling thread publish again exactly what it published before the attach
/// (or nothing), whatever happened to the contexts meanwhile.  Scopes nest;
/// dispose them in reverse order, on the thread that attached (a ref struct
/// cannot cross an await).
/// </summary>
public ref struct ThreadContextScope
{
    private ThreadContext? _saved;

    internal ThreadContextScope(ThreadContext saved) => _saved = saved;

    // What the thread published before the attach (null once disposed): a
    // context of the binding's own, never handed out.
    internal readonly ThreadContext? Saved => _saved;

    /// <summary>Puts back what the attach replaced.  A second call does nothing.</summary>
    public void Dispose()
    {
        ThreadContext? saved = _saved;
        if (saved is null)
            return;
        _saved = null;
        int rc = ThreadCalls.Update(saved.OwnedPtr);
        GC.KeepAlive(saved);
        SavedPool.Return(saved);
        if (rc != 0)
            ThreadContextException.Throw(rc, "otel_thread_ctx_update");
    }
}

// The contexts scopes save into, per thread, so that a scope allocates
// nothing once the thread has one at each nesting depth it uses.
internal static class SavedPool
{
    private const int Max = 8;

    [ThreadStatic]
    private static ThreadContext?[]? t_free;

    [ThreadStatic]
    private static int t_count;

    internal static ThreadContext Rent()
    {
        ThreadContext?[]? free = t_free;
        if (free != null && t_count > 0)
        {
            ThreadContext ctx = free[--t_count]!;
            free[t_count] = null;
            return ctx;
        }
        return new ThreadContext();
    }

    internal static void Return(ThreadContext ctx)
    {
        ThreadContext?[] free = t_free ??= new ThreadContext?[Max];
        if (t_count < Max)
            free[t_count++] = ctx;
        else
            ctx.Dispose();
    }
}
