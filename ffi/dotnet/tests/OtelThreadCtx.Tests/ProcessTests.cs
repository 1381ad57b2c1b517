// SPDX-License-Identifier: Apache-2.0
using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using Xunit;

namespace OtelThreadCtx.Tests;

public class KeyTests
{
    [Fact]
    public void RegisterFindNameCount()
    {
        int a = AttributeKeys.Register("test.key.a");
        int count = AttributeKeys.Count;
        Assert.Equal(a, AttributeKeys.Register("test.key.a")); // same index, nothing new
        Assert.Equal(count, AttributeKeys.Count);
        int b = AttributeKeys.Register("test.key.ü");
        Assert.Equal(count + (b == a ? 0 : 1), AttributeKeys.Count);
        Assert.NotEqual(a, b);
        Assert.Equal(a, AttributeKeys.Find("test.key.a"));
        Assert.Equal(b, AttributeKeys.Find("test.key.ü"));
        Assert.Equal("test.key.ü", AttributeKeys.Name(b));
        Assert.Equal(-1, AttributeKeys.Find("test.key.never"));
        Assert.Null(AttributeKeys.Name(AttributeKeys.Count));
        Assert.Null(AttributeKeys.Name(-1));
    }

    [Fact]
    public void BadNames()
    {
        int count = AttributeKeys.Count;
        T.Fails(ThreadContextError.Name, () => AttributeKeys.Register(""));
        T.Fails(ThreadContextError.Name, () => AttributeKeys.Register(new string('k', 256)));
        T.Fails(ThreadContextError.Name, () => AttributeKeys.Register("a\0b"));
        T.Fails(ThreadContextError.Name, () => AttributeKeys.Register("\ud800"));
        Assert.Equal(count, AttributeKeys.Count);
        Assert.Equal(-1, AttributeKeys.Find(""));
    }

    [Fact]
    public void ARecordShowsOnlyKeysTheRegistryNames()
    {
        int named = AttributeKeys.Register("test.key.named");
        using var ctx = new ThreadContext(T.Trace1, T.Span1);
        ctx.SetAttribute(named, "yes");
        ctx.SetAttribute(255, "not in the key map");
        ThreadRecord r = ctx.GetRecord()!;
        Assert.Equal("yes", r.Attributes[named]);
        Assert.False(r.Attributes.ContainsKey(255));
        Assert.Equal(1, r.UnmappedAttributes);
    }
}

public class ProcessTests
{
    private static bool MapsShowOtelCtx() =>
        File.ReadAllLines("/proc/self/maps").Any(l => l.Contains("OTEL_CTX"));

    [Fact]
    public void PublishUpdateUnpublish()
    {
        ProcessContext.Unpublish();
        Assert.False(ProcessContext.IsPublished);
        ProcessContext.Publish(new[]
        {
            new ResourceAttribute("service.name", "checkout"),
            new ResourceAttribute("process.pid", (long)Environment.ProcessId),
            new ResourceAttribute("test.bool", true),
            new ResourceAttribute("test.double", 1.5),
        });
        try
        {
            Assert.True(ProcessContext.IsPublished);
            Assert.True(MapsShowOtelCtx());
            T.Fails(ThreadContextError.Published, () => ProcessContext.Publish(Array.Empty<ResourceAttribute>()));
            ProcessContext.Update(new[] { new ResourceAttribute("service.name", "checkout-2") },
                new ProcessContextOptions { Schema = ProcessContextSchema.TlsV1 });
            // Bad input: the publication stays as it was.
            T.Fails(ThreadContextError.Attribute, () => ProcessContext.Update(new[] { new ResourceAttribute("", "x") }));
            T.Fails(ThreadContextError.Attribute, () => ProcessContext.Update(new[]
            {
                new ResourceAttribute("k", "x"), new ResourceAttribute("k", "y"),
            }));
            T.Fails(ThreadContextError.Utf8, () => ProcessContext.Update(new[] { new ResourceAttribute("k", "\ud800") }));
            T.Fails(ThreadContextError.Attribute, () => ProcessContext.Update(Array.Empty<ResourceAttribute>(),
                new ProcessContextOptions { Attributes = new[] { new ResourceAttribute("threadlocal.mine", "no") } }));
            T.Fails(ThreadContextError.TooBig, () => ProcessContext.Update(new[] { new ResourceAttribute("big", new string('b', 70000)) }));
            Assert.True(ProcessContext.IsPublished);
            // A key registered now is published with it.
            AttributeKeys.Register("test.key.after.publish");
        }
        finally
        {
            ProcessContext.Unpublish();
        }
        Assert.False(ProcessContext.IsPublished);
        Assert.False(MapsShowOtelCtx());
        T.Fails(ThreadContextError.NotPublished, () => ProcessContext.Update(Array.Empty<ResourceAttribute>()));
    }
}

public class SelfCheckTests
{
    [Fact]
    public void TheSharedLibraryExportsTheSlotItWrites()
    {
        SelfCheck c = SelfCheck.Run();
        Assert.True(c.IsOk, c.ToString());
        Assert.Equal(SelfCheckStatus.Ok, c.Status);
        Assert.True(c.SlotIsOwn);
        Assert.Equal(c.Slot, c.Exported);
        Assert.NotEqual(0, c.Slot);
        Assert.EndsWith("libotel-thread-ctx.so.1", c.ExportedModule);
        // The runtime dlopen()s the library, which glibc puts in static TLS
        // (its optional surplus); there the self-check does not name the
        // module of the slot (Module is null) although it says OK: a gap of
        // the self-check, not of the binding.
        Assert.True(c.Module is null || c.Module.EndsWith("libotel-thread-ctx.so.1", StringComparison.Ordinal), c.Module);
        Assert.Equal(1, c.ExportingModules);
        Assert.False(string.IsNullOrEmpty(c.Reason));
    }
}

public class LayoutTests
{
    // The structs the binding passes, against the C compiler's layout: the
    // numbers OTEL_DOTNET_C_LAYOUT prints (ffi/dotnet/layout.c), or, without
    // it, those of the LP64 ABIs the package ships for (x86-64, aarch64).
    [Fact]
    public void StructsMatchTheC()
    {
        string? cmd = Environment.GetEnvironmentVariable("OTEL_DOTNET_C_LAYOUT");
        string expected;
        if (!string.IsNullOrEmpty(cmd))
        {
            var p = Process.Start(new ProcessStartInfo(cmd) { RedirectStandardOutput = true })!;
            expected = p.StandardOutput.ReadToEnd().Trim();
            p.WaitForExit();
            Assert.Equal(0, p.ExitCode);
        }
        else
        {
            expected = string.Join("\n",
                "record 640 28", "attr 16 8", "options 16 8", "iter 24 16", "self_check 448 60",
                "process_attr 56 48", "process_options 32 24", "process_info 48 40");
        }
        string actual = string.Join("\n",
            $"record {Marshal.SizeOf<Native.Record>()} {Marshal.OffsetOf<Native.Record>(nameof(Native.Record.AttrsData))}",
            $"attr {Marshal.SizeOf<Native.Attr>()} {Marshal.OffsetOf<Native.Attr>(nameof(Native.Attr.Value))}",
            $"options {Marshal.SizeOf<Native.Options>()} {Marshal.OffsetOf<Native.Options>(nameof(Native.Options.AttrsCapacity))}",
            $"iter {Marshal.SizeOf<Native.AttrIter>()} {Marshal.OffsetOf<Native.AttrIter>(nameof(Native.AttrIter.Keys))}",
            $"self_check {Marshal.SizeOf<Native.SelfCheck>()} {Marshal.OffsetOf<Native.SelfCheck>(nameof(Native.SelfCheck.Reason))}",
            $"process_attr {Marshal.SizeOf<Native.ProcessAttr>()} {Marshal.OffsetOf<Native.ProcessAttr>(nameof(Native.ProcessAttr.BoolValue))}",
            $"process_options {Marshal.SizeOf<Native.ProcessOptions>()} {Marshal.OffsetOf<Native.ProcessOptions>(nameof(Native.ProcessOptions.AttributeCount))}",
            $"process_info {Marshal.SizeOf<Native.ProcessInfo>()} {Marshal.OffsetOf<Native.ProcessInfo>(nameof(Native.ProcessInfo.Payload))}");
        Assert.Equal(expected, actual);
    }
}
