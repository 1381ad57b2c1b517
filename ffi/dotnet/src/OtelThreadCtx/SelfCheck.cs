// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.InteropServices;

namespace OtelThreadCtx;

/// <summary>What <see cref="SelfCheck.Run"/> found (enum otel_thread_ctx_self_check_status).</summary>
public enum SelfCheckStatus
{
    /// <summary>A loaded module exports the slot, and it is the one the library writes.</summary>
    Ok = 0,
    /// <summary>No loaded module exports otel_thread_ctx_v1.</summary>
    NotExported = 1,
    /// <summary>Modules export it, but not the slot the library writes (two copies).</summary>
    Mismatch = 2,
    /// <summary>The exporting module's TLS block is not allocated on this thread.</summary>
    Unknown = 3,
}

/// <summary>
/// Is the slot this library writes the one a profiler will find
/// (otel_thread_ctx_self_check)?  Start-up work: it takes the loader's lock.
/// </summary>
public sealed class SelfCheck
{
    /// <summary>The verdict.</summary>
    public SelfCheckStatus Status { get; }

    /// <summary>One English sentence: what was found and, when not OK, what to do.</summary>
    public string Reason { get; }

    /// <summary>The address the library writes on the calling thread.</summary>
    public nint Slot { get; }

    /// <summary>The library's own definition of the slot on the calling thread.</summary>
    public nint OwnSlot { get; }

    /// <summary>True when the slot in effect is the library's own definition.</summary>
    public bool SlotIsOwn { get; }

    /// <summary>What the exported otel_thread_ctx_v1 resolves to on the calling thread (0 if none).</summary>
    public nint Exported { get; }

    /// <summary>The module whose TLS block holds the slot ("" for the main program, null if none).</summary>
    public string? Module { get; }

    /// <summary>The module the exported slot belongs to.</summary>
    public string? ExportedModule { get; }

    /// <summary>Loaded modules whose .dynsym defines otel_thread_ctx_v1.</summary>
    public int ExportingModules { get; }

    /// <summary>True when a profiler will find what this library publishes.</summary>
    public bool IsOk => Status == SelfCheckStatus.Ok;

    private SelfCheck(SelfCheckStatus status, string reason, nint slot, nint ownSlot, bool own, nint exported,
        string? module, string? exportedModule, int exporting)
    {
        Status = status;
        Reason = reason;
        Slot = slot;
        OwnSlot = ownSlot;
        SlotIsOwn = own;
        Exported = exported;
        Module = module;
        ExportedModule = exportedModule;
        ExportingModules = exporting;
    }

    /// <summary>Runs the check on the calling thread.  Never throws for a failed check: see <see cref="Status"/>.</summary>
    public static unsafe SelfCheck Run()
    {
        Native.SelfCheck r;
        int rc = Native.RunSelfCheck(&r);
        if (rc != 0 && rc != (int)ThreadContextError.Slot)
            ThreadContextException.Check(rc, "otel_thread_ctx_self_check");
        string reason = Native.Utf8(r.Reason) ?? "";
        return new SelfCheck((SelfCheckStatus)r.Status, reason, (nint)r.Slot, (nint)r.OwnSlot, r.SlotIsOwn != 0,
            (nint)r.Exported, Native.Utf8(r.Module), Native.Utf8(r.ExportedModule), (int)r.ExportingModules);
    }

    /// <inheritdoc/>
    public override string ToString() => Status + ": " + Reason;
}
