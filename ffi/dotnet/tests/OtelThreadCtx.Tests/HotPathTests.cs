// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using Xunit;

namespace OtelThreadCtx.Tests;

// What the hot paths' shortcuts must not change: contexts without a
// reference count, calls without the GC transition, ids converted from
// their hex strings, the Activity integration without allocation of its own.
public class HotPathTests
{
    private static Activity NewActivity(string name) =>
        new Activity(name).SetIdFormat(ActivityIdFormat.W3C);

    [Fact]
    public void DisposingAContextWhileOtherThreadsUseItIsSafe()
    {
        // Each round: 4 threads attach, update and copy one context in a
        // loop while this thread disposes it.  Every call either runs on the
        // context as it was or throws ObjectDisposedException, and the
        // threads publish what they copied.
        const int Threads = 4;
        for (int round = 0; round < 20; round++)
        {
            var ctx = new ThreadContext(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
            ctx.SetAttribute(1, "GET /users/{id}");
            using var running = new CountdownEvent(Threads);
            var failures = new List<string>();
            var threads = new List<Thread>();
            for (int i = 0; i < Threads; i++)
            {
                var t = new Thread(() =>
                {
                    using var saved = new ThreadContext();
                    using var copy = new ThreadContext();
                    bool signalled = false;
                    try
                    {
                        for (int n = 0; ; n++)
                        {
                            ctx.Attach(saved);
                            saved.Update();
                            using (ctx.Attach())
                                T.Publishes(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
                            ctx.Update();
                            copy.CopyFrom(ctx);
                            if (!signalled && n == 10)
                            {
                                signalled = true;
                                running.Signal();
                            }
                        }
                    }
                    catch (ObjectDisposedException)
                    {
                        if (!signalled)
                            running.Signal();
                        ThreadRecord? r = CurrentThread.Read();
                        if (r is null || r.TraceId != T.Trace1 || r.SpanId != T.Span1)
                            lock (failures) failures.Add("publishes " + T.Show(r));
                        if (copy.HoldsRecord && copy.GetRecord()!.SpanId != T.Span1)
                            lock (failures) failures.Add("copied " + T.Show(copy.GetRecord()));
                        CurrentThread.Detach();
                    }
                    catch (Exception e)
                    {
                        lock (failures) failures.Add(e.ToString());
                        if (!signalled)
                            running.Signal();
                    }
                });
                t.Start();
                threads.Add(t);
            }
            running.Wait();
            ctx.Dispose();
            Assert.True(ctx.IsClosed);
            foreach (var t in threads)
                t.Join();
            Assert.Empty(failures);
            Assert.Equal(ThreadContextError.Null, ctx.TryUpdate());
        }
        GC.Collect();
        GC.WaitForPendingFinalizers();
    }

    [Fact]
    public void ADisposedContextIsCollectedAndFreedByTheFinalizer()
    {
        WeakReference weak = Make();
        for (int i = 0; i < 10 && weak.IsAlive; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
        Assert.False(weak.IsAlive);

        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference Make()
        {
            var ctx = new ThreadContext(T.Trace1, T.Span1);
            T.OnNewThread(() =>
            {
                ctx.Update();
                ctx.Dispose();
                T.Publishes(T.Trace1, T.Span1);
                CurrentThread.Detach();
            });
            return new WeakReference(ctx);
        }
    }

    [Fact]
    public void CallsGoWithoutTheTransitionOnlyOnceTheThreadCannotBlock()
    {
        T.OnNewThread(() =>
        {
            Assert.Equal(ThreadCalls.Unknown, ThreadCalls.State);
            // Refused before the library reads the thread's state.
            Assert.Equal(ThreadContextError.Ids, CurrentThread.TryUpdateSpanId(default));
            Assert.Equal(ThreadCalls.Unknown, ThreadCalls.State);
            // Read the thread's state, took no records.
            Assert.Equal(ThreadContextError.NoContext, CurrentThread.TryUpdateSpanId(T.Span1));
            Assert.Equal(ThreadCalls.StateTouched, ThreadCalls.State);
            CurrentThread.Detach();
            Assert.Equal(ThreadCalls.StateTouched, ThreadCalls.State);
            // A context holding no record ("nothing published", saved),
            // attached: still no records.
            using (var none = new ThreadContext())
            {
                CurrentThread.Save(none);
                Assert.False(none.HoldsRecord);
                none.Update();
                Assert.Equal(ThreadCalls.StateTouched, ThreadCalls.State);
                T.PublishesNothing();
            }
            // The first publication takes them.
            using var ctx = new ThreadContext(T.Trace1, T.Span1);
            ctx.Update();
            Assert.Equal(ThreadCalls.HasRecords, ThreadCalls.State);
            T.Publishes(T.Trace1, T.Span1);
            CurrentThread.Detach();
            Assert.Equal(ThreadCalls.HasRecords, ThreadCalls.State);
            ctx.Update();
            T.Publishes(T.Trace1, T.Span1);
            CurrentThread.Detach();
        });
        T.OnNewThread(() =>
        {
            CurrentThread.UpdateAll(T.Trace2, T.Span2, ActivityTraceFlags.Recorded);
            Assert.Equal(ThreadCalls.HasRecords, ThreadCalls.State);
            CurrentThread.Detach();
        });
    }

    [Fact]
    public void CallsWithoutTheTransitionRunWhileTheGarbageCollectorRuns()
    {
        // Threads publishing in tight loops (no GC transition) while another
        // collects: each collection waits for the calls to return, none
        // deadlocks, and every thread publishes what it last published.
        const int Threads = 3;
        using var stop = new ManualResetEventSlim();
        var failures = new List<string>();
        var threads = new List<Thread>();
        for (int i = 0; i < Threads; i++)
        {
            var t = new Thread(() =>
            {
                try
                {
                    using var ctx = new ThreadContext(T.Trace1, T.Span1);
                    using var saved = new ThreadContext();
                    while (!stop.IsSet)
                    {
                        for (int n = 0; n < 1000; n++)
                        {
                            CurrentThread.TryUpdateAll(T.Trace2, T.Span2, ActivityTraceFlags.Recorded);
                            CurrentThread.TryUpdateSpanId(T.Span3);
                            ctx.Attach(saved);
                            saved.Update();
                        }
                        T.Publishes(T.Trace2, T.Span3, ActivityTraceFlags.Recorded);
                    }
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
        var sw = Stopwatch.StartNew();
        int collections = 0;
        while (sw.ElapsedMilliseconds < 500)
        {
            GC.Collect();
            collections++;
        }
        stop.Set();
        foreach (var t in threads)
            t.Join();
        Assert.Empty(failures);
        Assert.True(collections > 10, $"{collections} collections in 500 ms");
    }

    [Fact]
    public void IdsConvertExactlyAsCopyToDoes()
    {
        var rng = new Random(4947);
        Span<byte> bytes = stackalloc byte[16];
        Span<byte> expect = stackalloc byte[16];
        var traces = new List<ActivityTraceId> { default, T.Trace1, T.Trace2 };
        var spans = new List<ActivitySpanId> { default, T.Span1, T.Span2, T.Span3 };
        for (int i = 0; i < 2000; i++)
        {
            rng.NextBytes(bytes);
            traces.Add(ActivityTraceId.CreateFromBytes(bytes));
            spans.Add(ActivitySpanId.CreateFromBytes(bytes.Slice(0, 8)));
            traces.Add(ActivityTraceId.CreateRandom());
            spans.Add(ActivitySpanId.CreateRandom());
        }
        // Every digit in every position.
        const string Digits = "0123456789abcdef";
        for (int r = 0; r < 16; r++)
        {
            var digits = new char[32];
            for (int k = 0; k < 32; k++)
                digits[k] = Digits[(r + k) % 16];
            traces.Add(ActivityTraceId.CreateFromString(digits));
            spans.Add(ActivitySpanId.CreateFromString(digits.AsSpan(0, 16)));
        }
        unsafe
        {
            byte* got = stackalloc byte[16];
            foreach (ActivityTraceId t in traces)
            {
                IdBytes.Trace(t, got);
                t.CopyTo(expect);
                Assert.True(expect.SequenceEqual(new ReadOnlySpan<byte>(got, 16)), t.ToHexString());
            }
            foreach (ActivitySpanId s in spans)
            {
                IdBytes.Span(s, got);
                s.CopyTo(expect.Slice(0, 8));
                Assert.True(expect.Slice(0, 8).SequenceEqual(new ReadOnlySpan<byte>(got, 8)), s.ToHexString());
            }
        }
    }

    [Fact]
    public void EachNewActivityIsPublishedWithItsOwnIds()
    {
        // Activities one after the other, nested, and in new traces: the
        // thread publishes exactly the ids of the one it runs, never those
        // of one before it.
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        using var integration = ActivityThreadContext.Start(options);
        int route = integration.Keys["http.route"];
        T.OnNewThread(() =>
        {
            for (int i = 0; i < 500; i++)
            {
                Activity parent = NewActivity("parent");
                parent.SetTag("http.route", "/r/" + i);
                parent.ActivityTraceFlags = (i & 1) != 0 ? ActivityTraceFlags.Recorded : ActivityTraceFlags.None;
                parent.Start();
                Activity child = NewActivity("child").Start();
                ThreadRecord r = CurrentThread.Read()!;
                Assert.Equal(child.TraceId, r.TraceId);
                Assert.Equal(child.SpanId, r.SpanId);
                Assert.Equal(child.ActivityTraceFlags, r.TraceFlags);
                Assert.Equal("/r/" + i, r.Attributes[route]);
                child.Stop();
                r = CurrentThread.Read()!;
                Assert.Equal(parent.TraceId, r.TraceId);
                Assert.Equal(parent.SpanId, r.SpanId);
                parent.Stop();
                T.PublishesNothing();
            }
        });
    }

    [Fact]
    public void TheIntegrationAllocatesNothingOfItsOwn()
    {
        // (Either way: Refresh publishes as each change does.)
        // Publishing an activity (what the integration does at each switch:
        // ids, flags and a string tag taken from the parent) allocates
        // nothing.
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        options.AttributeTags.Add("absent");
        using var integration = ActivityThreadContext.Start(options);
        T.OnNewThread(() =>
        {
            Activity parent = NewActivity("parent");
            parent.SetTag("http.route", "GET /users/{id}");
            parent.Start();
            Activity child = NewActivity("child").Start();
            for (int i = 0; i < 100; i++)
                integration.Refresh();
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 1000; i++)
                integration.Refresh();
            Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
            child.Stop();
            parent.Stop();
        });
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public void ASwitchAllocatesNothingMoreThanTheAsyncLocalItWrites(bool hook)
    {
        // Activity.Current's own write allocates an execution context (and
        // its map of values).  Hooked, the integration writes nothing else:
        // a switch allocates what it allocates without the integration.
        // Otherwise its AsyncLocal, written at each switch, allocates one
        // more of each.
        const int Rounds = 2000;
        double Measure()
        {
            double perSwitch = 0;
            T.OnNewThread(() =>
            {
                Activity parent = NewActivity("parent");
                parent.SetTag("http.route", "GET /users/{id}");
                parent.Start();
                for (int i = 0; i < 200; i++)
                    NewActivity("child").Start().Stop();
                long before = GC.GetAllocatedBytesForCurrentThread();
                for (int i = 0; i < Rounds; i++)
                    NewActivity("child").Start().Stop();
                perSwitch = (GC.GetAllocatedBytesForCurrentThread() - before) / (2.0 * Rounds);
                parent.Stop();
            });
            return perSwitch;
        }
        double without = Measure();
        var options = new ActivityThreadContextOptions { HookActivityCurrent = hook };
        options.AttributeTags.Add("http.route");
        double with;
        using (var integration = ActivityThreadContext.Start(options))
        {
            with = Measure();
            Assert.Equal(hook, integration.HooksActivityCurrent);
        }
        if (hook)
        {
            Assert.Equal(without, with);
        }
        else
        {
            // On 64 bits: an ExecutionContext (40 bytes) and a two-element
            // value map (48) for the integration's write, and
            // Activity.Current's own map holding two values instead of one
            // (48 bytes instead of 32).
            Assert.True(with - without <= 40 + 48 + 16, $"{with - without} bytes per switch more with the integration");
        }
    }

    [Fact]
    public void TheHookIsCalledForEverySwitchAndStaysInUse()
    {
        // Enough switches for the runtime to compile Activity.Current's
        // setter again, optimized (tiered compilation): the hook still runs
        // at every one (else the integration would have fallen back).
        using var integration = ActivityThreadContext.Start(new ActivityThreadContextOptions { HookActivityCurrent = true });
        Assert.True(integration.HooksActivityCurrent);
        T.OnNewThread(() =>
        {
            Activity parent = NewActivity("parent").Start();
            for (int i = 0; i < 50_000; i++)
            {
                Activity child = NewActivity("child").Start();
                if (i % 1000 == 0)
                    T.Publishes(child.TraceId, child.SpanId, child.ActivityTraceFlags);
                child.Stop();
            }
            T.Publishes(parent.TraceId, parent.SpanId, parent.ActivityTraceFlags);
            parent.Stop();
            T.PublishesNothing();
        });
        Thread.Sleep(200); // the optimized code is installed in the background
        T.OnNewThread(() =>
        {
            for (int i = 0; i < 1000; i++)
            {
                Activity a = NewActivity("again").Start();
                T.Publishes(a.TraceId, a.SpanId, a.ActivityTraceFlags);
                a.Stop();
                T.PublishesNothing();
            }
        });
        Assert.True(integration.HooksActivityCurrent);
    }

    // Activity.Current's own AsyncLocal and its change handler, reached as
    // the integration reaches them.
    [UnsafeAccessor(UnsafeAccessorKind.StaticField, Name = "s_current")]
    private static extern ref AsyncLocal<Activity?> CurrentLocal(Activity? activity);

    private static class HandlerOf<TValue>
    {
        [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_valueChangedHandler")]
        internal static extern ref Action<AsyncLocalValueChangedArgs<TValue>>? Field(AsyncLocal<TValue> local);
    }

    [Fact]
    public void AHookReplacedByAnotherHandlerHandsOverToTheIntegrationsOwnAsyncLocal()
    {
        // Someone else's code puts its own handler in place of the hook: the
        // next set of Activity.Current is told to no one but CurrentChanged,
        // which finds the hook silent and hands over to the AsyncLocal of
        // the integration's own; no thread is left publishing a stale
        // activity.
        using var integration = ActivityThreadContext.Start(new ActivityThreadContextOptions { HookActivityCurrent = true });
        Assert.True(integration.HooksActivityCurrent);
        ref Action<AsyncLocalValueChangedArgs<Activity?>>? handler = ref HandlerOf<Activity?>.Field(CurrentLocal(null));
        Action<AsyncLocalValueChangedArgs<Activity?>>? hook = handler;
        Assert.NotNull(hook);
        int othersCalls = 0;
        handler = _ => Interlocked.Increment(ref othersCalls);
        try
        {
            T.OnNewThread(() =>
            {
                Activity parent = NewActivity("parent").Start();
                T.Publishes(parent.TraceId, parent.SpanId, parent.ActivityTraceFlags);
                Activity child = NewActivity("child").Start();
                T.Publishes(child.TraceId, child.SpanId, child.ActivityTraceFlags);
                child.Stop();
                T.Publishes(parent.TraceId, parent.SpanId, parent.ActivityTraceFlags);
                parent.Stop();
                T.PublishesNothing();
            });
            Assert.False(integration.HooksActivityCurrent);
            Assert.True(othersCalls > 0);
        }
        finally
        {
            handler = hook;
        }
    }
}
