// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace OtelThreadCtx;

/// <summary>
/// A resource attribute of the process context: a key and a string, bool,
/// integer or double value.
/// </summary>
public readonly struct ResourceAttribute
{
    internal enum Kind { String = 1, Bool = 2, Int = 3, Double = 4 }

    /// <summary>The key (UTF-8, not empty).</summary>
    public string Key { get; }

    internal Kind Type { get; }
    internal string? StringValue { get; }
    internal long IntValue { get; }
    internal double DoubleValue { get; }

    /// <summary>The value, boxed (string, bool, long or double).</summary>
    public object Value => Type switch
    {
        Kind.String => StringValue!,
        Kind.Bool => IntValue != 0,
        Kind.Int => IntValue,
        _ => DoubleValue,
    };

    private ResourceAttribute(string key, Kind type, string? s, long i, double d)
    {
        ArgumentNullException.ThrowIfNull(key);
        Key = key;
        Type = type;
        StringValue = s;
        IntValue = i;
        DoubleValue = d;
    }

    /// <summary>A string attribute.</summary>
    public ResourceAttribute(string key, string value) : this(key, Kind.String, value ?? throw new ArgumentNullException(nameof(value)), 0, 0)
    {
    }

    /// <summary>A boolean attribute.</summary>
    public ResourceAttribute(string key, bool value) : this(key, Kind.Bool, null, value ? 1 : 0, 0)
    {
    }

    /// <summary>An integer attribute.</summary>
    public ResourceAttribute(string key, long value) : this(key, Kind.Int, null, value, 0)
    {
    }

    /// <summary>A double attribute.</summary>
    public ResourceAttribute(string key, double value) : this(key, Kind.Double, null, 0, value)
    {
    }
}

/// <summary>The threadlocal.schema_version the process context announces.</summary>
public enum ProcessContextSchema
{
    /// <summary>"tlsdesc_v1_dev", what readers accept today (the default).</summary>
    TlsdescV1Dev = 0,
    /// <summary>"tls_v1", the merged format's name.</summary>
    TlsV1 = 1,
}

/// <summary>What a child made by fork() publishes.</summary>
public enum ProcessContextForkPolicy
{
    /// <summary>Nothing (the default).</summary>
    Drop = 0,
    /// <summary>The parent's payload, in a mapping of its own.</summary>
    Republish = 1,
}

/// <summary>Options of <see cref="ProcessContext.Publish"/>.</summary>
public sealed class ProcessContextOptions
{
    /// <summary>The schema version to announce.</summary>
    public ProcessContextSchema Schema { get; set; } = ProcessContextSchema.TlsdescV1Dev;

    /// <summary>What a forked child publishes.</summary>
    public ProcessContextForkPolicy OnFork { get; set; } = ProcessContextForkPolicy.Drop;

    /// <summary>Entries of ProcessContext.attributes after the library's threadlocal.* ones (keys may not start with "threadlocal.").</summary>
    public IReadOnlyList<ResourceAttribute> Attributes { get; set; } = Array.Empty<ResourceAttribute>();
}

/// <summary>
/// The process context (OTEP 4719): the OTEL_CTX mapping that tells readers
/// the schema of the thread records and the names of their attribute keys,
/// with the resource attributes given here (service.name, ...).  Start-up
/// work: every call takes a process-wide lock.  A call that fails leaves the
/// publication as it was.
/// </summary>
public static unsafe class ProcessContext
{
    /// <summary>Publishes the process context.</summary>
    /// <exception cref="ThreadContextException">Attribute, Utf8, TooBig, Published, Map, NoMemory, Options.</exception>
    public static void Publish(IReadOnlyList<ResourceAttribute> resource, ProcessContextOptions? options = null) =>
        ThreadContextException.Check(Call(resource, options, publish: true), "otel_thread_ctx_process_publish_with");

    /// <summary>
    /// Replaces the resource attributes (and, when given, the options) of the
    /// published context; null options keep the current ones.
    /// </summary>
    /// <exception cref="ThreadContextException">NotPublished, and those of Publish.</exception>
    public static void Update(IReadOnlyList<ResourceAttribute> resource, ProcessContextOptions? options = null) =>
        ThreadContextException.Check(Call(resource, options, publish: false), "otel_thread_ctx_process_update_with");

    /// <summary>Withdraws the context (nothing published: does nothing).</summary>
    public static void Unpublish() =>
        ThreadContextException.Check(Native.ProcessUnpublish(), "otel_thread_ctx_process_unpublish");

    /// <summary>True while this process publishes its context.</summary>
    public static bool IsPublished
    {
        get
        {
            Native.ProcessInfo info;
            ThreadContextException.Check(Native.ProcessQuery(&info), "otel_thread_ctx_process_query");
            return info.Published != 0;
        }
    }

    private static int Call(IReadOnlyList<ResourceAttribute> resource, ProcessContextOptions? options, bool publish)
    {
        ArgumentNullException.ThrowIfNull(resource);
        var strings = new List<nint>();
        try
        {
            Native.ProcessAttr[] res = ToNative(resource, strings);
            Native.ProcessAttr[] extra = options is null ? Array.Empty<Native.ProcessAttr>() : ToNative(options.Attributes, strings);
            fixed (Native.ProcessAttr* r = res)
            fixed (Native.ProcessAttr* e = extra)
            {
                Native.ProcessOptions o = default;
                Native.ProcessOptions* op = null;
                if (options is not null)
                {
                    o.Size = (nuint)sizeof(Native.ProcessOptions);
                    o.Schema = (int)options.Schema;
                    o.OnFork = (int)options.OnFork;
                    o.Attributes = extra.Length == 0 ? null : e;
                    o.AttributeCount = (nuint)extra.Length;
                    op = &o;
                }
                Native.ProcessAttr* rp = res.Length == 0 ? null : r;
                return publish
                    ? Native.ProcessPublishWith(rp, (nuint)res.Length, op)
                    : Native.ProcessUpdateWith(rp, (nuint)res.Length, op);
            }
        }
        catch (ArgumentException)
        {
            // A string that is not valid UTF-16 cannot be valid UTF-8.
            return (int)ThreadContextError.Utf8;
        }
        finally
        {
            foreach (nint p in strings)
                NativeMemory.Free((void*)p);
        }
    }

    private static Native.ProcessAttr[] ToNative(IReadOnlyList<ResourceAttribute> attrs, List<nint> strings)
    {
        var result = new Native.ProcessAttr[attrs.Count];
        for (int i = 0; i < result.Length; i++)
        {
            ResourceAttribute a = attrs[i];
            result[i].Key = Utf8z(a.Key, strings, out _);
            result[i].Type = (int)a.Type;
            switch (a.Type)
            {
                case ResourceAttribute.Kind.String:
                    result[i].String = Utf8z(a.StringValue!, strings, out int len);
                    result[i].Length = (nuint)len;
                    break;
                case ResourceAttribute.Kind.Bool:
                    result[i].BoolValue = (int)a.IntValue;
                    break;
                case ResourceAttribute.Kind.Int:
                    result[i].IntValue = a.IntValue;
                    break;
                default:
                    result[i].DoubleValue = a.DoubleValue;
                    break;
            }
        }
        return result;
    }

    // A copy in native memory, NUL-terminated; its length in bytes (the
    // library takes the length, so a string value may hold a NUL).
    private static byte* Utf8z(string s, List<nint> strings, out int length)
    {
        var enc = new UTF8Encoding(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);
        length = enc.GetByteCount(s);
        byte* p = (byte*)NativeMemory.Alloc((nuint)length + 1);
        strings.Add((nint)p);
        fixed (char* c = s)
            enc.GetBytes(c, s.Length, p, length);
        p[length] = 0;
        return p;
    }
}
