// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;

namespace OtelThreadCtx;

/// <summary>
/// A thread-context record as a reader sees it (struct
/// otel_thread_ctx_record): ids, flags and the effective attributes.
/// </summary>
public sealed class ThreadRecord
{
    /// <summary>The trace id (all zero when the record has no ids).</summary>
    public ActivityTraceId TraceId { get; }

    /// <summary>The span id (all zero when the record has no ids).</summary>
    public ActivitySpanId SpanId { get; }

    /// <summary>The W3C trace flags.</summary>
    public ActivityTraceFlags TraceFlags { get; }

    /// <summary>True when the record holds ids.</summary>
    public bool HasIds { get; }

    /// <summary>
    /// The effective attributes by key index (each key once, its last
    /// value), values decoded as UTF-8.  Only keys the process's registry
    /// names (<see cref="AttributeKeys"/>) appear, as a reader would show
    /// them; <see cref="UnmappedAttributes"/> counts the others.
    /// </summary>
    public IReadOnlyDictionary<int, string> Attributes { get; }

    /// <summary>Effective entries whose key index the key map does not name.</summary>
    public int UnmappedAttributes { get; }

    /// <summary>attrs_data, as the record holds it.</summary>
    public ReadOnlyMemory<byte> AttributesData { get; }

    private ThreadRecord(ActivityTraceId traceId, ActivitySpanId spanId, ActivityTraceFlags flags, bool hasIds,
        IReadOnlyDictionary<int, string> attributes, int unmapped, byte[] data)
    {
        TraceId = traceId;
        SpanId = spanId;
        TraceFlags = flags;
        HasIds = hasIds;
        Attributes = attributes;
        UnmappedAttributes = unmapped;
        AttributesData = data;
    }

    // keyCount null: this process's registry.
    internal static unsafe ThreadRecord FromNative(Native.Record* rec, uint? keyCount)
    {
        ReadOnlySpan<byte> trace = new(rec->TraceId, 16);
        ReadOnlySpan<byte> span = new(rec->SpanId, 8);
        bool hasIds = trace.IndexOfAnyExcept((byte)0) >= 0 || span.IndexOfAnyExcept((byte)0) >= 0;
        var attrs = new Dictionary<int, string>();
        Native.AttrIter it;
        if (keyCount is uint k)
            Native.AttrIterInitMap(&it, rec, k);
        else
            Native.AttrIterInit(&it, rec);
        Native.Attr a;
        while (Native.AttrIterNext(&it, &a) == 0)
            attrs[(int)a.Key] = Encoding.UTF8.GetString(a.Value, (int)a.Len);
        int size = Math.Min((int)rec->AttrsDataSize, Native.AttrsMax);
        return new ThreadRecord(ActivityTraceId.CreateFromBytes(trace), ActivitySpanId.CreateFromBytes(span),
            (ActivityTraceFlags)rec->TraceFlags, hasIds, attrs, (int)it.Unmapped,
            new ReadOnlySpan<byte>(rec->AttrsData, size).ToArray());
    }

    /// <inheritdoc/>
    public override string ToString()
    {
        var sb = new StringBuilder();
        sb.Append("trace_id=").Append(TraceId.ToHexString())
          .Append(" span_id=").Append(SpanId.ToHexString())
          .Append(" flags=0x").Append(((byte)TraceFlags).ToString("x2"));
        foreach (var kv in Attributes)
            sb.Append(' ').Append(kv.Key).Append('=').Append(kv.Value);
        return sb.ToString();
    }
}
