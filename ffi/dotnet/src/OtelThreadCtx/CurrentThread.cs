// SPDX-License-Identifier: Apache-2.0
using System;
using System.Diagnostics;

namespace OtelThreadCtx;

/// <summary>
/// What the calling OS thread publishes: its own record, changed without a
/// context on the tracer's hot paths (a span switch, a sampling decision, a
/// new request), and read back.
/// </summary>
/// <remarks>
/// The Update methods throw <see cref="ThreadContextException"/>; each has a
/// Try twin that returns the library's code instead and never throws or
/// allocates, for callbacks that must not throw (an
/// <see cref="Activity.CurrentChanged"/> handler, say).  A call that fails
/// changes nothing.
/// </remarks>
public static unsafe class CurrentThread
{
    /// <summary>
    /// A child span: the thread publishes its record with this span id
    /// (otel_thread_ctx_update_span_id).
    /// </summary>
    /// <exception cref="ThreadContextException">Ids (all-zero span id, or a record without trace id), NoContext (the thread publishes nothing).</exception>
    public static void UpdateSpanId(ActivitySpanId spanId) =>
        ThreadContextException.Check((int)TryUpdateSpanId(spanId), "otel_thread_ctx_update_span_id");

    /// <summary><see cref="UpdateSpanId"/>, returning the library's code.</summary>
    public static ThreadContextError TryUpdateSpanId(ActivitySpanId spanId)
    {
        ulong s;
        IdBytes.Span(spanId, (byte*)&s);
        return (ThreadContextError)ThreadCalls.UpdateSpanId((byte*)&s);
    }

    /// <summary>
    /// The sampling decision: the thread publishes its record with these
    /// flags (otel_thread_ctx_update_trace_flags).
    /// </summary>
    /// <exception cref="ThreadContextException">NoContext; Ids when flags are not zero and the record has no ids.</exception>
    public static void UpdateTraceFlags(ActivityTraceFlags flags) =>
        ThreadContextException.Check((int)TryUpdateTraceFlags(flags), "otel_thread_ctx_update_trace_flags");

    /// <summary><see cref="UpdateTraceFlags"/>, returning the library's code.</summary>
    public static ThreadContextError TryUpdateTraceFlags(ActivityTraceFlags flags) =>
        (ThreadContextError)ThreadCalls.UpdateTraceFlags((byte)flags);

    /// <summary>
    /// A new request: the thread publishes a record with these ids, flags and
    /// attributes, whatever it published before (otel_thread_ctx_update_all).
    /// </summary>
    /// <exception cref="ThreadContextException">Ids, Key, Value, Utf8, DuplicateKey, NoSpace; NoMemory, Thread.</exception>
    public static void UpdateAll(ActivityTraceId traceId, ActivitySpanId spanId, ActivityTraceFlags flags,
        ReadOnlySpan<ThreadAttribute> attributes = default) =>
        ThreadContextException.Check((int)TryUpdateAll(traceId, spanId, flags, attributes), "otel_thread_ctx_update_all");

    /// <summary><see cref="UpdateAll"/>, returning the library's code.</summary>
    public static ThreadContextError TryUpdateAll(ActivityTraceId traceId, ActivitySpanId spanId,
        ActivityTraceFlags flags, ReadOnlySpan<ThreadAttribute> attributes = default)
    {
        Ids ids;
        IdBytes.Trace(traceId, ids.Bytes);
        IdBytes.Span(spanId, ids.Bytes + 16);
        ids.Flags = (byte)flags;
        if (attributes.IsEmpty)
            return (ThreadContextError)ThreadCalls.UpdateAll(ids.Bytes, ids.Bytes + 16, ids.Flags, null, 0);
        return (ThreadContextError)AttrMarshal.Call(attributes, in ids, &UpdateAllCall);
    }

    private struct Ids
    {
        public fixed byte Bytes[24];
        public byte Flags;
    }

    private static int UpdateAllCall(in Ids ids, Native.Attr* attrs, nuint n)
    {
        fixed (byte* b = ids.Bytes)
            return ThreadCalls.UpdateAll(b, b + 16, ids.Flags, attrs, n);
    }

    /// <summary>The thread publishes nothing from now on (its slot becomes NULL).</summary>
    public static void Detach() => ThreadCalls.Detach(0);

    /// <summary>
    /// Unpublishes; <paramref name="saved"/> receives what the thread
    /// published (put it back with <c>saved.Update()</c>).
    /// </summary>
    /// <exception cref="ThreadContextException">NoSpace when saved is too small.</exception>
    public static void Detach(ThreadContext saved)
    {
        ArgumentNullException.ThrowIfNull(saved);
        int rc = ThreadCalls.Detach(saved.CallPtr);
        GC.KeepAlive(saved);
        ThreadContextException.Check(rc, "otel_thread_ctx_detach");
    }

    /// <summary>Copies what the thread publishes (or "nothing published") into saved, changing nothing else.</summary>
    /// <exception cref="ThreadContextException">NoSpace when saved is too small.</exception>
    public static void Save(ThreadContext saved)
    {
        ArgumentNullException.ThrowIfNull(saved);
        int rc = ThreadCalls.Save(saved.CallPtr);
        GC.KeepAlive(saved);
        ThreadContextException.Check(rc, "otel_thread_ctx_save");
    }

    /// <summary>
    /// What the thread publishes, as a reader on this thread (a sampler's
    /// signal handler) sees it (otel_thread_ctx_read); null when it publishes
    /// nothing.
    /// </summary>
    /// <exception cref="ThreadContextException">Invalid when the record is marked invalid.</exception>
    public static ThreadRecord? Read()
    {
        Native.Record rec;
        int rc = Native.Read(&rec);
        if (rc == (int)ThreadContextError.NoContext)
            return null;
        ThreadContextException.Check(rc, "otel_thread_ctx_read");
        return ThreadRecord.FromNative(&rec, null);
    }

    /// <summary>
    /// The ids the thread publishes, without decoding its attributes: false
    /// when it publishes nothing.
    /// </summary>
    public static bool TryReadIds(out ActivityTraceId traceId, out ActivitySpanId spanId, out ActivityTraceFlags flags)
    {
        Native.Record rec;
        if (Native.Read(&rec) != 0)
        {
            traceId = default;
            spanId = default;
            flags = default;
            return false;
        }
        traceId = ActivityTraceId.CreateFromBytes(new ReadOnlySpan<byte>(rec.TraceId, 16));
        spanId = ActivitySpanId.CreateFromBytes(new ReadOnlySpan<byte>(rec.SpanId, 8));
        flags = (ActivityTraceFlags)rec.TraceFlags;
        return true;
    }
}
