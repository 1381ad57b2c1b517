// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.CompilerServices;

namespace OtelThreadCtx;

/// <summary>
/// The publishing calls of the calling thread, each made without the GC
/// transition once the thread's state shows that it cannot block.
/// </summary>
/// <remarks>
/// <para>
/// [SuppressGCTransition] is for a native call that is short and never
/// blocks: while it runs the thread stays in cooperative mode, so a garbage
/// collection waits for it.  A publishing call of src/thread_ctx.c can do
/// something else than loads and stores on the calling thread's own state
/// and records in two cases only:
/// </para>
/// <list type="number">
/// <item>The thread's first publication (a publishing call that finds no
/// records, t->pub == NULL: attach and update of a context that holds a
/// record, update_all): first_publication() runs pthread_once() (which
/// waits while another thread runs the library's init), takes a pair of
/// records from the pool (otel__pool_take(), src/pool.c: mmap() when a
/// slab's first pair is taken) and registers the thread-exit cleanup with
/// pthread_setspecific() (which may allocate).  Detach, save,
/// update_span_id and update_trace_flags never take records: on a thread
/// without them they return OK or ENOCTX.</item>
/// <item>The thread's first access to the library's thread-local state,
/// when that state is in dynamic TLS (the shared library loaded by dlopen()
/// without room in the static TLS surplus; then the library's shortcut,
/// which needs static TLS, is off and every call makes the TLSDESC access).
/// glibc allocates the thread's block on that first access (malloc, and the
/// loader's TLS lock).  Once allocated, the descriptor's fast path returns
/// it without a call: the module's generation is fixed when it is loaded,
/// and the library is never unloaded (-z nodelete).  In static TLS (a
/// NativeAOT executable, which links the archive; the shared library loaded
/// into the surplus) no access ever calls anything.</item>
/// </list>
/// <para>
/// Neither case can come back on a thread: its records stay its own until
/// it exits, and after its exit cleanup a publishing call returns ETHREAD
/// before anything else (first_publication() tests that first); a forked
/// child's thread keeps its records.  So each thread starts at
/// <see cref="Unknown"/>, makes its calls with the transition, and moves
/// on from what they return: any call that returned a code only a call
/// that accessed the thread's state returns (OK, ENOCTX) makes it
/// <see cref="StateTouched"/>; a publication that succeeded (update_all OK;
/// attach or update OK after which the thread publishes a record) makes it
/// <see cref="HasRecords"/>.  From <see cref="StateTouched"/> detach, save,
/// update_span_id and update_trace_flags run without the transition; from
/// <see cref="HasRecords"/> attach, update and update_all too.  None of
/// these calls takes a lock, waits or calls back into the runtime: the
/// claim of the thread (t->busy) is a plain flag that only a signal handler
/// on the same thread can find set (and is then refused with ENESTED), and
/// update_all's work is bounded by the 612 bytes of attributes it encodes.
/// </para>
/// </remarks>
internal static unsafe class ThreadCalls
{
    internal const byte Unknown = 0;
    internal const byte StateTouched = 1;
    internal const byte HasRecords = 2;

    [ThreadStatic]
    private static byte t_state;

    /// <summary>The calling thread's state (tests).</summary>
    internal static byte State => t_state;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int Attach(nint ctx, nint saved)
    {
        if (t_state == HasRecords)
            return Native.AttachNoTransition(ctx, saved);
        return AttachFirst(ctx, saved);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int AttachFirst(nint ctx, nint saved)
    {
        int rc = Native.Attach(ctx, saved);
        Learn(rc);
        return rc;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int Update(nint ctx)
    {
        if (t_state == HasRecords)
            return Native.UpdateNoTransition(ctx);
        return UpdateFirst(ctx);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int UpdateFirst(nint ctx)
    {
        int rc = Native.Update(ctx);
        Learn(rc);
        return rc;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int UpdateAll(byte* traceId, byte* spanId, byte flags, Native.Attr* attrs, nuint n)
    {
        if (t_state == HasRecords)
            return Native.UpdateAllNoTransition(traceId, spanId, flags, attrs, n);
        return UpdateAllFirst(traceId, spanId, flags, attrs, n);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int UpdateAllFirst(byte* traceId, byte* spanId, byte flags, Native.Attr* attrs, nuint n)
    {
        int rc = Native.UpdateAll(traceId, spanId, flags, attrs, n);
        if (rc == 0)
            t_state = HasRecords; // it published: the thread holds records
        return rc;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int Detach(nint saved)
    {
        if (t_state != Unknown)
            return Native.DetachNoTransition(saved);
        return Touch(Native.Detach(saved));
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int Save(nint saved)
    {
        if (t_state != Unknown)
            return Native.SaveNoTransition(saved);
        return Touch(Native.Save(saved));
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int UpdateSpanId(byte* spanId)
    {
        if (t_state != Unknown)
            return Native.UpdateSpanIdNoTransition(spanId);
        return Touch(Native.UpdateSpanId(spanId));
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int UpdateTraceFlags(byte flags)
    {
        if (t_state != Unknown)
            return Native.UpdateTraceFlagsNoTransition(flags);
        return Touch(Native.UpdateTraceFlags(flags));
    }

    // OK and ENOCTX come only after the call claimed the thread, so after it
    // accessed the thread's state (ENULL, EIDS and ENOSPC may come before).
    private static int Touch(int rc)
    {
        if ((rc == 0 || rc == (int)ThreadContextError.NoContext) && t_state == Unknown)
            t_state = StateTouched;
        return rc;
    }

    // After attach or update with the transition: the thread holds records
    // if it publishes one now (a context holding no record, attached on a
    // thread that never published, takes none).
    private static void Learn(int rc)
    {
        if (rc != 0)
            return;
        Native.Record rec;
        int read = Native.Read(&rec);
        t_state = read == (int)ThreadContextError.NoContext ? StateTouched : HasRecords;
    }
}
