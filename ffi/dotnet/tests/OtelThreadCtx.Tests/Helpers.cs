// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Threading;
using Xunit;

// Every test publishes on OS threads and some change process-wide state (the
// key registry, the process context, Activity.CurrentChanged): one at a time.
[assembly: CollectionBehavior(DisableTestParallelization = true)]

namespace OtelThreadCtx.Tests;

internal static class T
{
    public static readonly ActivityTraceId Trace1 = ActivityTraceId.CreateFromString("4bf92f3577b34da6a3ce929d0e0e4736");
    public static readonly ActivitySpanId Span1 = ActivitySpanId.CreateFromString("00f067aa0ba902b7");
    public static readonly ActivityTraceId Trace2 = ActivityTraceId.CreateFromString("0af7651916cd43dd8448eb211c80319c");
    public static readonly ActivitySpanId Span2 = ActivitySpanId.CreateFromString("b7ad6b7169203331");
    public static readonly ActivitySpanId Span3 = ActivitySpanId.CreateFromString("1122334455667788");

    // Runs `body` on a new OS thread (which publishes nothing when it
    // starts) and rethrows what it threw.
    public static void OnNewThread(Action body)
    {
        Exception? failure = null;
        var t = new Thread(() =>
        {
            try
            {
                body();
            }
            catch (Exception e)
            {
                failure = e;
            }
        });
        t.Start();
        t.Join();
        if (failure != null)
            ExceptionDispatchInfo.Throw(failure);
    }

    public static void Publishes(ActivityTraceId trace, ActivitySpanId span, ActivityTraceFlags flags = ActivityTraceFlags.None)
    {
        ThreadRecord? r = CurrentThread.Read();
        Assert.NotNull(r);
        Assert.Equal(trace, r!.TraceId);
        Assert.Equal(span, r.SpanId);
        Assert.Equal(flags, r.TraceFlags);
    }

    public static void PublishesNothing() => Assert.Null(CurrentThread.Read());

    public static ThreadContextException Fails(ThreadContextError expected, Action call)
    {
        var e = Assert.Throws<ThreadContextException>(call);
        Assert.Equal(expected, e.Error);
        return e;
    }

    // What a record holds, compared as a whole.
    public static string Show(ThreadRecord? r) =>
        r is null ? "(none)" : r + " data=" + Convert.ToHexString(r.AttributesData.Span);
}

// An OS thread that runs what it is given, in order, until disposed: a
// thread that outlives the work, so that what it publishes afterwards can be
// read on it.
internal sealed class Worker : IDisposable
{
    private readonly BlockingCollection<Action> _queue = new();
    private readonly Thread _thread;

    public Worker(string name)
    {
        _thread = new Thread(() =>
        {
            foreach (Action a in _queue.GetConsumingEnumerable())
                a();
        })
        { Name = name, IsBackground = true };
        _thread.Start();
    }

    public int ManagedThreadId => _thread.ManagedThreadId;

    public void Post(Action a) => _queue.Add(a);

    // Runs `f` on the worker and returns its result (or rethrows).
    public TResult Run<TResult>(Func<TResult> f)
    {
        TResult? result = default;
        Exception? failure = null;
        using var done = new ManualResetEventSlim();
        _queue.Add(() =>
        {
            try
            {
                result = f();
            }
            catch (Exception e)
            {
                failure = e;
            }
            done.Set();
        });
        done.Wait();
        if (failure != null)
            ExceptionDispatchInfo.Throw(failure);
        return result!;
    }

    // An awaitable whose continuation runs on this worker, under the
    // execution context the async method captured (as the thread pool runs
    // one), so that Activity.Current follows it there.
    public ResumeOn Resume() => new(this);

    public readonly struct ResumeOn : ICriticalNotifyCompletion
    {
        private readonly Worker _w;

        public ResumeOn(Worker w) => _w = w;

        public ResumeOn GetAwaiter() => this;

        public bool IsCompleted => false;

        public void GetResult()
        {
        }

        public void OnCompleted(Action continuation) => _w.Post(continuation);

        public void UnsafeOnCompleted(Action continuation) => _w.Post(continuation);
    }

    public void Dispose()
    {
        _queue.CompleteAdding();
        _thread.Join();
        _queue.Dispose();
    }
}
