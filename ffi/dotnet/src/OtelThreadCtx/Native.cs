// SPDX-License-Identifier: Apache-2.0
// The C ABI of libotel-thread-ctx (include/otel_thread_ctx.h and
// include/otel_thread_ctx_process.h), as source-generated P/Invoke: every
// parameter is blittable (pointers and integers; a context is its
// otel_thread_ctx pointer, kept valid by ThreadContext), so no runtime
// marshalling, reflection or dynamic code is involved, under the JIT as
// under NativeAOT.  Under NativeAOT the package's targets bind "otel-thread-ctx"
// at link time (DirectPInvoke) to the static archive linked into the
// executable; under the JIT the loader finds libotel-thread-ctx.so.1 (see
// NativeLibraryResolver).
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

[assembly: DisableRuntimeMarshalling]

namespace OtelThreadCtx;

internal static unsafe partial class Native
{
    internal const string Library = "otel-thread-ctx";

    internal const int RecordSize = 640;
    internal const int AttrsMax = 612;
    internal const int ValueMax = 255;
    internal const int KeyMax = 255;
    internal const int KeyNameMax = 255;
    internal const uint OptionIdsOnly = 1; // OTEL_THREAD_CTX_OPTION_IDS_ONLY

    [StructLayout(LayoutKind.Sequential)]
    internal struct Attr
    {
        public uint Key;
        public uint Len;
        public byte* Value;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct Options
    {
        public nuint Size;
        public uint AttrsCapacity; // 0: the default, 612
        public uint Flags;         // OptionIdsOnly: no room for attributes
    }

    [StructLayout(LayoutKind.Sequential, Size = RecordSize)]
    internal struct Record
    {
        public fixed byte TraceId[16];
        public fixed byte SpanId[8];
        public byte Valid;
        public byte TraceFlags;
        public ushort AttrsDataSize;
        public fixed byte AttrsData[AttrsMax];
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct AttrIter
    {
        public Record* Rec;
        public nuint Pos;
        public uint Keys;
        public uint Unmapped;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct SelfCheck
    {
        public int Status;
        public void* Slot;
        public void* OwnSlot;
        public int SlotIsOwn;
        public void* Exported;
        public byte* Module;
        public byte* ExportedModule;
        public uint ExportingModules;
        public fixed byte Reason[384];
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct ProcessAttr
    {
        public byte* Key;
        public int Type;
        public byte* String;
        public nuint Length;
        public long IntValue;
        public double DoubleValue;
        public int BoolValue;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct ProcessOptions
    {
        public nuint Size;
        public int Schema;
        public int OnFork;
        public ProcessAttr* Attributes;
        public nuint AttributeCount;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct ProcessInfo
    {
        public int Published;
        public int Memfd;
        public void* Mapping;
        public nuint MappingSize;
        public ulong MonotonicPublishedAtNs;
        public uint PayloadSize;
        public void* Payload;
    }

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_strerror")]
    internal static partial byte* StrError(int error);

    // Contexts.
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_create_with")]
    internal static partial int CreateWith(nint* ctx, Options* options);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_destroy")]
    internal static partial void Destroy(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_set_ids")]
    internal static partial int SetIds(nint ctx, byte* traceId, byte* spanId, byte flags);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_set_span_id")]
    internal static partial int SetSpanId(nint ctx, byte* spanId);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_set_trace_flags")]
    internal static partial int SetTraceFlags(nint ctx, byte flags);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_clear_ids")]
    internal static partial int ClearIds(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_set_attr")]
    internal static partial int SetAttr(nint ctx, uint key, byte* value, nuint len);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_remove_attr")]
    internal static partial int RemoveAttr(nint ctx, uint key);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_clear_attrs")]
    internal static partial int ClearAttrs(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_clear")]
    internal static partial int Clear(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_set_attrs")]
    internal static partial int SetAttrs(nint ctx, Attr* attrs, nuint n);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_copy")]
    internal static partial int Copy(nint dst, nint src);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_get")]
    internal static partial int Get(nint ctx, Record* output);

    // Publishing on the calling thread.
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_attach")]
    internal static partial int Attach(nint ctx, nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update")]
    internal static partial int Update(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_detach")]
    internal static partial int Detach(nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_save")]
    internal static partial int Save(nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_span_id")]
    internal static partial int UpdateSpanId(byte* spanId);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_trace_flags")]
    internal static partial int UpdateTraceFlags(byte flags);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_all")]
    internal static partial int UpdateAll(byte* traceId, byte* spanId, byte flags, Attr* attrs, nuint n);

    // The same publishing calls without the GC transition, for a thread
    // whose state says they cannot block (ThreadState: which, and why).
    // Each is a few loads and stores on the calling thread's own state and
    // records: no lock, no allocation, no system call, no callback into the
    // runtime, and a bounded time (update_all encodes at most 612 bytes of
    // attributes).
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_attach")]
    [SuppressGCTransition]
    internal static partial int AttachNoTransition(nint ctx, nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update")]
    [SuppressGCTransition]
    internal static partial int UpdateNoTransition(nint ctx);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_all")]
    [SuppressGCTransition]
    internal static partial int UpdateAllNoTransition(byte* traceId, byte* spanId, byte flags, Attr* attrs, nuint n);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_detach")]
    [SuppressGCTransition]
    internal static partial int DetachNoTransition(nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_save")]
    [SuppressGCTransition]
    internal static partial int SaveNoTransition(nint saved);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_span_id")]
    [SuppressGCTransition]
    internal static partial int UpdateSpanIdNoTransition(byte* spanId);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_update_trace_flags")]
    [SuppressGCTransition]
    internal static partial int UpdateTraceFlagsNoTransition(byte flags);

    // Readers.
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_read")]
    internal static partial int Read(Record* output);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_attr_iter_init")]
    internal static partial void AttrIterInit(AttrIter* it, Record* rec);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_attr_iter_init_map")]
    internal static partial void AttrIterInitMap(AttrIter* it, Record* rec, uint keyCount);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_attr_iter_next")]
    internal static partial int AttrIterNext(AttrIter* it, Attr* output);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_self_check")]
    internal static partial int RunSelfCheck(SelfCheck* result);

    // Attribute keys.
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_key_register")]
    internal static partial int KeyRegister(byte* name, uint* index);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_key_find")]
    internal static partial int KeyFind(byte* name, uint* index);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_key_name")]
    internal static partial byte* KeyName(uint index);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_key_count")]
    internal static partial uint KeyCount();

    // The process context.
    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_process_publish_with")]
    internal static partial int ProcessPublishWith(ProcessAttr* resource, nuint count, ProcessOptions* options);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_process_update_with")]
    internal static partial int ProcessUpdateWith(ProcessAttr* resource, nuint count, ProcessOptions* options);

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_process_unpublish")]
    internal static partial int ProcessUnpublish();

    [LibraryImport(Library, EntryPoint = "otel_thread_ctx_process_query")]
    internal static partial int ProcessQuery(ProcessInfo* info);

    // A NUL-terminated UTF-8 string the library owns, as a string.
    internal static string? Utf8(byte* s) =>
        s == null ? null : System.Text.Encoding.UTF8.GetString(MemoryMarshal.CreateReadOnlySpanFromNullTerminated(s));
}
