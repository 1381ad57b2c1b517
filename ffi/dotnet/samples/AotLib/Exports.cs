// SPDX-License-Identifier: Apache-2.0
// What a C program that loads the NativeAOT library calls (run.py shared).
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text;
using OtelThreadCtx;

public static unsafe class Exports
{
    // The self-check from inside the library: its status (0: OK), and its
    // reason into the caller's buffer.
    [UnmanagedCallersOnly(EntryPoint = "aotlib_self_check")]
    public static int SelfCheckFromInside(byte* reason, int size)
    {
        SelfCheck c = SelfCheck.Run();
        byte[] text = Encoding.UTF8.GetBytes(c.Reason);
        int n = Math.Min(text.Length, size - 1);
        text.AsSpan(0, n).CopyTo(new Span<byte>(reason, size));
        reason[n] = 0;
        return (int)c.Status;
    }

    // Publishes on the calling thread and reads it back: 0 when the thread
    // publishes exactly that.
    [UnmanagedCallersOnly(EntryPoint = "aotlib_publish_and_read")]
    public static int PublishAndRead()
    {
        var trace = ActivityTraceId.CreateRandom();
        var span = ActivitySpanId.CreateRandom();
        using var ctx = new ThreadContext(trace, span, ActivityTraceFlags.Recorded);
        using (ctx.Attach())
        {
            ThreadRecord? r = CurrentThread.Read();
            if (r is null || r.TraceId != trace || r.SpanId != span)
                return 1;
        }
        return CurrentThread.Read() is null ? 0 : 2;
    }
}
