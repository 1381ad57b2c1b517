// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Xunit;

namespace OtelThreadCtx.Tests;

public class ActivityTests
{
    private static Activity NewActivity(string name) =>
        new Activity(name).SetIdFormat(ActivityIdFormat.W3C);

    [Fact]
    public void TheThreadRunningAnActivityPublishesItAndNothingOnceItStops()
    {
        using var integration = ActivityThreadContext.Start();
        T.OnNewThread(() =>
        {
            T.PublishesNothing();
            Activity parent = NewActivity("parent").Start();
            parent.ActivityTraceFlags = ActivityTraceFlags.None;
            T.Publishes(parent.TraceId, parent.SpanId);
            Activity child = NewActivity("child").Start();
            child.ActivityTraceFlags = ActivityTraceFlags.Recorded;
            Assert.Equal(ThreadContextError.Ok, integration.Refresh());
            T.Publishes(parent.TraceId, child.SpanId, ActivityTraceFlags.Recorded);
            child.Stop();
            T.Publishes(parent.TraceId, parent.SpanId);
            parent.Stop();
            T.PublishesNothing();
        });
    }

    [Fact]
    public void ConfiguredTagsArePublishedAsAttributes()
    {
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        options.AttributeTags.Add("http.response.status_code");
        options.AttributeTags.Add("long");
        using var integration = ActivityThreadContext.Start(options);
        int route = integration.Keys["http.route"];
        int status = integration.Keys["http.response.status_code"];
        int longKey = integration.Keys["long"];
        Assert.Equal(route, AttributeKeys.Find("http.route"));
        T.OnNewThread(() =>
        {
            Activity a = NewActivity("request");
            a.SetTag("http.route", "GET /users/{id}");
            a.SetTag("long", new string('é', 200)); // 400 bytes: cut to 254 at a character
            a.Start();
            ThreadRecord r = CurrentThread.Read()!;
            Assert.Equal(a.SpanId, r.SpanId);
            Assert.Equal("GET /users/{id}", r.Attributes[route]);
            Assert.False(r.Attributes.ContainsKey(status)); // not set
            Assert.Equal(new string('é', 127), r.Attributes[longKey]);
            a.SetTag("http.response.status_code", 200);
            integration.Refresh();
            Assert.Equal("200", CurrentThread.Read()!.Attributes[status]);
            // A child span without the tag publishes its parent's.
            Activity child = NewActivity("db").Start();
            r = CurrentThread.Read()!;
            Assert.Equal(child.SpanId, r.SpanId);
            Assert.Equal("GET /users/{id}", r.Attributes[route]);
            child.SetTag("http.route", "overridden");
            integration.Refresh();
            Assert.Equal("overridden", CurrentThread.Read()!.Attributes[route]);
            child.Stop();
            Assert.Equal("GET /users/{id}", CurrentThread.Read()!.Attributes[route]);
            a.Stop();
            T.PublishesNothing();
        });
    }

    // More tags than the integration's buffer for a few, named by strings
    // made at run time (equal to the activity's tag names, not the same
    // objects): every one is found and published.
    [Fact]
    public void ManyTagsNamedByOtherStringObjectsArePublished()
    {
        const int Count = 12;
        var options = new ActivityThreadContextOptions();
        for (int i = 0; i < Count; i++)
            options.AttributeTags.Add(string.Concat("many.tag.", i.ToString()));
        using var integration = ActivityThreadContext.Start(options);
        T.OnNewThread(() =>
        {
            Activity a = NewActivity("request");
            for (int i = 0; i < Count; i++)
                a.SetTag(string.Concat("many.tag.", i.ToString()), string.Concat("value ", i.ToString()));
            a.Start();
            ThreadRecord r = CurrentThread.Read()!;
            Assert.Equal(a.SpanId, r.SpanId);
            Assert.Equal(Count, r.Attributes.Count);
            for (int i = 0; i < Count; i++)
                Assert.Equal($"value {i}", r.Attributes[integration.Keys[$"many.tag.{i}"]]);
            a.Stop();
            T.PublishesNothing();
        });
    }

    private sealed class ThrowingTag
    {
        public override string ToString() => throw new InvalidOperationException("ToString of a tag");
    }

    private sealed class ThrowingFormattable : IFormattable
    {
        public string ToString(string? format, IFormatProvider? provider) =>
            throw new FormatException("ToString(format, provider) of a tag");
    }

    // A tag whose value's ToString() throws: Activity.Start() must not throw
    // into the application, and the activity is published without that
    // attribute (the others are there).
    [Fact]
    public void ATagWhoseToStringThrowsIsLeftOut()
    {
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        options.AttributeTags.Add("bad");
        options.AttributeTags.Add("bad.formattable");
        using var integration = ActivityThreadContext.Start(options);
        int route = integration.Keys["http.route"];
        int bad = integration.Keys["bad"];
        int badFormattable = integration.Keys["bad.formattable"];
        T.OnNewThread(() =>
        {
            Activity a = NewActivity("request");
            a.SetTag("http.route", "GET /a");
            a.SetTag("bad", new ThrowingTag());
            a.SetTag("bad.formattable", new ThrowingFormattable());
            a.Start();
            ThreadRecord r = CurrentThread.Read()!;
            Assert.Equal(a.SpanId, r.SpanId);
            Assert.Equal("GET /a", r.Attributes[route]);
            Assert.False(r.Attributes.ContainsKey(bad));
            Assert.False(r.Attributes.ContainsKey(badFormattable));
            Assert.Equal(ThreadContextError.Ok, integration.Refresh());
            Activity child = NewActivity("db").Start(); // inherits the tags
            r = CurrentThread.Read()!;
            Assert.Equal(child.SpanId, r.SpanId);
            Assert.False(r.Attributes.ContainsKey(bad));
            child.Stop();
            a.Stop();
            T.PublishesNothing();
        });
    }

    // The same across a hop to the thread pool: the runtime calls the
    // integration inside its execution-context switch, where an exception
    // would fail the process fast.
    [Fact]
    public async Task ATagWhoseToStringThrowsSurvivesAThreadPoolHop()
    {
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("bad");
        using var integration = ActivityThreadContext.Start(options);
        int bad = integration.Keys["bad"];
        // Set after Start: the first publication that meets it is the one
        // the runtime's context switch makes, on the pool thread.
        Activity a = NewActivity("request").Start();
        a.SetTag("bad", new ThrowingTag());
        try
        {
            // Task.Run flows the activity to a pool thread; there (no
            // synchronization context) each await resumes on a pool thread.
            await Task.Run(async () =>
            {
                for (int i = 0; i < 4; i++)
                {
                    ThreadRecord r = CurrentThread.Read()!;
                    Assert.Equal(a.SpanId, r.SpanId);
                    Assert.False(r.Attributes.ContainsKey(bad));
                    await Task.Delay(1);
                }
            });
        }
        finally
        {
            a.Stop();
        }
    }

    [Fact]
    public void TagsAreNotInheritedWhenTheOptionsSaySo()
    {
        var options = new ActivityThreadContextOptions { InheritTags = false };
        options.AttributeTags.Add("http.route");
        using var integration = ActivityThreadContext.Start(options);
        int route = integration.Keys["http.route"];
        T.OnNewThread(() =>
        {
            Activity a = NewActivity("request");
            a.SetTag("http.route", "/r");
            a.Start();
            Assert.Equal("/r", CurrentThread.Read()!.Attributes[route]);
            Activity child = NewActivity("db").Start();
            Assert.False(CurrentThread.Read()!.Attributes.ContainsKey(route));
            child.Stop();
            a.Stop();
        });
    }

    [Fact]
    public void TheFilterAndNonW3CActivitiesPublishNothing()
    {
        var options = new ActivityThreadContextOptions { Filter = a => a.OperationName != "hidden" };
        using var integration = ActivityThreadContext.Start(options);
        T.OnNewThread(() =>
        {
            Activity shown = NewActivity("shown").Start();
            T.Publishes(shown.TraceId, shown.SpanId);
            Activity hidden = NewActivity("hidden").Start();
            T.PublishesNothing(); // not the parent's ids either: the thread runs "hidden"
            hidden.Stop();
            T.Publishes(shown.TraceId, shown.SpanId);
            Activity h = new Activity("hierarchical").SetIdFormat(ActivityIdFormat.Hierarchical).Start();
            T.PublishesNothing();
            h.Stop();
            shown.Stop();
            T.PublishesNothing();
        });
    }

    [Fact]
    public void OneIntegrationAtATime()
    {
        using (ActivityThreadContext.Start())
            Assert.Throws<InvalidOperationException>(() => ActivityThreadContext.Start());
        using var again = ActivityThreadContext.Start();
    }

    [Fact]
    public void StartPublishesTheCurrentActivityAndDisposeUnpublishes()
    {
        T.OnNewThread(() =>
        {
            Activity a = NewActivity("before").Start();
            T.PublishesNothing(); // no integration yet
            var integration = ActivityThreadContext.Start();
            T.Publishes(a.TraceId, a.SpanId, a.ActivityTraceFlags);
            integration.Dispose();
            T.PublishesNothing();
            Activity b = NewActivity("after").Start();
            T.PublishesNothing(); // stopped: not subscribed any more
            b.Stop();
            a.Stop();
        });
    }

    // The await resumes on another OS thread: that thread publishes the
    // activity while it runs the continuation, and the thread the flow left
    // publishes nothing of it.
    // hook: the integration's handler on Activity.Current's own AsyncLocal,
    // or (false) the AsyncLocal of its own.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task AnAwaitThatResumesOnAnotherThreadMovesTheActivityThere(bool hook)
    {
        using var integration = ActivityThreadContext.Start(new ActivityThreadContextOptions { HookActivityCurrent = hook });
        using var first = new Worker("first");
        using var second = new Worker("second");
        Activity? activity = null;
        var seen = new List<string>();
        Task? flow = null;

        async Task Flow()
        {
            activity = NewActivity("request").Start();
            seen.Add("first before await: " + T.Show(CurrentThread.Read()) + " on " + Environment.CurrentManagedThreadId);
            await second.Resume();
            seen.Add("second after await: " + T.Show(CurrentThread.Read()) + " on " + Environment.CurrentManagedThreadId);
            activity.Stop();
            seen.Add("second after stop: " + T.Show(CurrentThread.Read()));
        }

        string firstAfter = first.Run(() =>
        {
            flow = Flow(); // runs until the await, then returns here
            return T.Show(CurrentThread.Read());
        });
        await flow!;
        string secondAfter = second.Run(() => T.Show(CurrentThread.Read()));

        string expected = "trace_id=" + activity!.TraceId.ToHexString() + " span_id=" + activity.SpanId.ToHexString();
        Assert.Equal(3, seen.Count);
        Assert.StartsWith("first before await: " + expected, seen[0]);
        Assert.EndsWith(" on " + first.ManagedThreadId, seen[0]);
        Assert.StartsWith("second after await: " + expected, seen[1]);
        Assert.EndsWith(" on " + second.ManagedThreadId, seen[1]);
        Assert.Equal("second after stop: (none)", seen[2]);
        Assert.Equal("(none)", firstAfter); // the flow left: nothing of it
        Assert.Equal("(none)", secondAfter);
        Assert.Equal(hook, integration.HooksActivityCurrent);
    }

    // The same with a continuation that stays in the activity while the
    // second thread finishes it: once the continuation is done the second
    // thread, back in its own context, publishes nothing of it.
    // hook: the integration's handler on Activity.Current's own AsyncLocal,
    // or (false) the AsyncLocal of its own.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task TheThreadAContinuationLeavesPublishesNothingOfIt(bool hook)
    {
        using var integration = ActivityThreadContext.Start(new ActivityThreadContextOptions { HookActivityCurrent = hook });
        using var first = new Worker("first");
        using var second = new Worker("second");
        using var third = new Worker("third");
        Activity? activity = null;
        string onSecond = "", onThird = "";
        Task? flow = null;

        async Task Flow()
        {
            activity = NewActivity("request").Start();
            await second.Resume();
            onSecond = T.Show(CurrentThread.Read());
            await third.Resume();
            onThird = T.Show(CurrentThread.Read());
            activity.Stop();
        }

        first.Run(() => { flow = Flow(); return 0; });
        await flow!;
        string expected = "trace_id=" + activity!.TraceId.ToHexString() + " span_id=" + activity.SpanId.ToHexString();
        Assert.StartsWith(expected, onSecond);
        Assert.StartsWith(expected, onThird);
        Assert.Equal("(none)", first.Run(() => T.Show(CurrentThread.Read())));
        Assert.Equal("(none)", second.Run(() => T.Show(CurrentThread.Read())));
        Assert.Equal("(none)", third.Run(() => T.Show(CurrentThread.Read())));
        Assert.Equal(hook, integration.HooksActivityCurrent);
    }

    // Many concurrent flows on the thread pool, each awaiting often: after
    // every await, whatever thread runs the flow publishes exactly its
    // activity.
    // hook: the integration's handler on Activity.Current's own AsyncLocal,
    // or (false) the AsyncLocal of its own.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ConcurrentFlowsOnTheThreadPool(bool hook)
    {
        using var integration = ActivityThreadContext.Start(new ActivityThreadContextOptions { HookActivityCurrent = hook });
        var failures = new System.Collections.Concurrent.ConcurrentQueue<string>();
        var threads = new System.Collections.Concurrent.ConcurrentDictionary<int, bool>();
        int hops = 0;

        async Task Flow(int n)
        {
            Activity root = NewActivity("flow" + n).Start();
            for (int i = 0; i < 40; i++)
            {
                Activity child = NewActivity("step").Start();
                int before = Environment.CurrentManagedThreadId;
                if (i % 2 == 0)
                    await Task.Yield();
                else
                    await Task.Delay(1);
                threads[Environment.CurrentManagedThreadId] = true;
                if (Environment.CurrentManagedThreadId != before)
                    Interlocked.Increment(ref hops);
                Thread.Sleep(1); // holds the pool thread: others take the flows on
                if (!CurrentThread.TryReadIds(out var tr, out var sp, out _) || tr != child.TraceId || sp != child.SpanId)
                    failures.Enqueue($"flow {n} step {i}: {T.Show(CurrentThread.Read())} instead of {child.SpanId}");
                child.Stop();
                if (!CurrentThread.TryReadIds(out tr, out sp, out _) || sp != root.SpanId)
                    failures.Enqueue($"flow {n} step {i} after stop: {T.Show(CurrentThread.Read())}");
            }
            root.Stop();
            if (CurrentThread.Read() != null)
                failures.Enqueue($"flow {n}: publishes after its root stopped");
        }

        ThreadPool.GetMinThreads(out int workers, out int io);
        ThreadPool.SetMinThreads(Math.Max(workers, 8), io);
        try
        {
            await Task.WhenAll(Enumerable.Range(0, 16).Select(n => Task.Run(() => Flow(n))));
        }
        finally
        {
            ThreadPool.SetMinThreads(workers, io);
        }
        Assert.Empty(failures);
        Assert.True(threads.Count > 1, "the flows ran on one thread only");
        Assert.True(hops > 0, "no await resumed on another thread");
        Assert.Equal(hook, integration.HooksActivityCurrent);
    }
}
