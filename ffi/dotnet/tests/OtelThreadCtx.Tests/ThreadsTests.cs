// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using Xunit;

namespace OtelThreadCtx.Tests;

public class ThreadsTests
{
    [Fact]
    public void ManyThreadsAttachOneContextWhileItChangesAndIsDisposed()
    {
        const int Threads = 8;
        var ctx = new ThreadContext(T.Trace1, T.Span1);
        using var attached = new CountdownEvent(Threads);
        using var changed = new ManualResetEventSlim();
        var failures = new List<string>();
        var threads = new List<Thread>();
        for (int i = 0; i < Threads; i++)
        {
            var t = new Thread(() =>
            {
                try
                {
                    // Each attaches the shared context: its own copy.
                    ctx.Attach(null);
                    attached.Signal();
                    changed.Wait();
                    // The context changed and was disposed: the copy did not.
                    ThreadRecord? r = CurrentThread.Read();
                    if (r is null || r.TraceId != T.Trace1 || r.SpanId != T.Span1)
                        lock (failures) failures.Add("thread publishes " + T.Show(r));
                    CurrentThread.Detach();
                }
                catch (Exception e)
                {
                    lock (failures) failures.Add(e.ToString());
                }
            });
            t.Start();
            threads.Add(t);
        }
        attached.Wait();
        ctx.SetIds(T.Trace2, T.Span2);
        ctx.Dispose();
        changed.Set();
        foreach (var t in threads)
            t.Join();
        Assert.Empty(failures);
    }

    [Fact]
    public void ContextsFinalizedWhileThreadsStillPublishTheirCopies()
    {
        const int Threads = 4;
        using var attached = new CountdownEvent(Threads);
        using var collected = new ManualResetEventSlim();
        using var done = new CountdownEvent(Threads);
        var failures = new List<string>();
        var weak = new WeakReference[Threads];
        var threads = new List<Thread>();
        for (int i = 0; i < Threads; i++)
        {
            int n = i;
            var t = new Thread(() =>
            {
                try
                {
                    weak[n] = AttachAndDrop(n);
                    attached.Signal();
                    collected.Wait();
                    ThreadRecord? r = CurrentThread.Read();
                    if (r is null || r.TraceId != T.Trace1 || r.SpanId != SpanOf(n))
                        lock (failures) failures.Add($"thread {n} publishes {T.Show(r)}");
                    // ... and goes on publishing with the fast path.
                    CurrentThread.UpdateSpanId(T.Span3);
                    T.Publishes(T.Trace1, T.Span3);
                }
                catch (Exception e)
                {
                    lock (failures) failures.Add(e.ToString());
                }
                done.Signal();
                // The thread exits publishing: the library cleans up.
            });
            t.Start();
            threads.Add(t);
        }
        attached.Wait();
        for (int round = 0; round < 10 && Array.Exists(weak, w => w.IsAlive); round++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
        Assert.All(weak, w => Assert.False(w.IsAlive)); // the finalizer thread freed them
        collected.Set();
        done.Wait();
        foreach (var t in threads)
            t.Join();
        Assert.Empty(failures);
    }

    private static ActivitySpanId SpanOf(int n)
    {
        var b = new byte[8];
        b[7] = (byte)(n + 1);
        return ActivitySpanId.CreateFromBytes(b);
    }

    // A context nothing refers to once this returns: only its finalizer
    // frees it.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference AttachAndDrop(int n)
    {
        var ctx = new ThreadContext(T.Trace1, SpanOf(n));
        ctx.Update();
        return new WeakReference(ctx);
    }

    [Fact]
    public void ManyThreadsPublishAndSwitchConcurrently()
    {
        const int Threads = 6;
        const int Rounds = 20000;
        var failures = new List<string>();
        var threads = new List<Thread>();
        for (int i = 0; i < Threads; i++)
        {
            int n = i;
            var t = new Thread(() =>
            {
                try
                {
                    var trace = ActivityTraceId.CreateRandom();
                    using var ctx = new ThreadContext(trace, SpanOf(n));
                    for (int k = 0; k < Rounds; k++)
                    {
                        using (ctx.Attach())
                        {
                            var span = ActivitySpanId.CreateFromBytes(BitConverter.GetBytes((long)k + 1));
                            CurrentThread.UpdateSpanId(span);
                            if (k % 1000 == 0)
                                T.Publishes(trace, span);
                        }
                    }
                    T.PublishesNothing();
                }
                catch (Exception e)
                {
                    lock (failures) failures.Add(e.ToString());
                }
            });
            t.Start();
            threads.Add(t);
        }
        foreach (var t in threads)
            t.Join();
        Assert.Empty(failures);
    }
}
