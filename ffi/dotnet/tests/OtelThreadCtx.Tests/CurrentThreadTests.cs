// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using Xunit;

namespace OtelThreadCtx.Tests;

public class CurrentThreadTests
{
    [Fact]
    public void FastPathsOnADetachedThreadFailWithNoContext()
    {
        T.OnNewThread(() =>
        {
            Assert.Equal(ThreadContextError.NoContext, CurrentThread.TryUpdateSpanId(T.Span1));
            Assert.Equal(ThreadContextError.NoContext, CurrentThread.TryUpdateTraceFlags(ActivityTraceFlags.Recorded));
            T.Fails(ThreadContextError.NoContext, () => CurrentThread.UpdateSpanId(T.Span1));
            T.Fails(ThreadContextError.NoContext, () => CurrentThread.UpdateTraceFlags(ActivityTraceFlags.None));
            T.PublishesNothing();
            Assert.False(CurrentThread.TryReadIds(out _, out _, out _));
        });
    }

    [Fact]
    public void UpdateAllThenSpanSwitchesAndTheSamplingDecision()
    {
        int route = AttributeKeys.Register("http.route");
        T.OnNewThread(() =>
        {
            CurrentThread.UpdateAll(T.Trace1, T.Span1, ActivityTraceFlags.None,
                new[] { new ThreadAttribute(route, "GET /users") });
            T.Publishes(T.Trace1, T.Span1);
            Assert.Equal("GET /users", CurrentThread.Read()!.Attributes[route]);
            CurrentThread.UpdateSpanId(T.Span2);
            T.Publishes(T.Trace1, T.Span2);
            Assert.Equal("GET /users", CurrentThread.Read()!.Attributes[route]); // attributes kept
            CurrentThread.UpdateTraceFlags(ActivityTraceFlags.Recorded);
            T.Publishes(T.Trace1, T.Span2, ActivityTraceFlags.Recorded);
            Assert.True(CurrentThread.TryReadIds(out var tr, out var sp, out var fl));
            Assert.Equal((T.Trace1, T.Span2, ActivityTraceFlags.Recorded), (tr, sp, fl));
            Assert.Equal(ThreadContextError.Ok, CurrentThread.TryUpdateAll(T.Trace2, T.Span3, ActivityTraceFlags.None));
            T.Publishes(T.Trace2, T.Span3);
            Assert.Empty(CurrentThread.Read()!.Attributes);
            CurrentThread.Detach();
            T.PublishesNothing();
        });
    }

    [Fact]
    public void BadInputToTheFastPathsChangesNothing()
    {
        T.OnNewThread(() =>
        {
            CurrentThread.UpdateAll(T.Trace1, T.Span1, ActivityTraceFlags.Recorded,
                new[] { new ThreadAttribute(3, "kept") });
            string before = T.Show(CurrentThread.Read());
            void Unchanged() => Assert.Equal(before, T.Show(CurrentThread.Read()));

            var zeroSpan = ActivitySpanId.CreateFromBytes(new byte[8]);
            var zeroTrace = ActivityTraceId.CreateFromBytes(new byte[16]);
            Assert.Equal(ThreadContextError.Ids, CurrentThread.TryUpdateSpanId(zeroSpan));
            Unchanged();
            T.Fails(ThreadContextError.Ids, () => CurrentThread.UpdateAll(T.Trace2, zeroSpan, ActivityTraceFlags.None));
            Unchanged();
            T.Fails(ThreadContextError.Ids, () => CurrentThread.UpdateAll(zeroTrace, zeroSpan, ActivityTraceFlags.Recorded));
            Unchanged();
            T.Fails(ThreadContextError.Key, () => CurrentThread.UpdateAll(T.Trace2, T.Span2, 0, new[] { new ThreadAttribute(300, "x") }));
            Unchanged();
            T.Fails(ThreadContextError.Value, () => CurrentThread.UpdateAll(T.Trace2, T.Span2, 0, new[] { new ThreadAttribute(1, new string('v', 256)) }));
            Unchanged();
            Assert.Equal(ThreadContextError.Utf8, CurrentThread.TryUpdateAll(T.Trace2, T.Span2, 0, new[] { new ThreadAttribute(1, new byte[] { 0xff }) }));
            Assert.Equal(ThreadContextError.Utf8, CurrentThread.TryUpdateAll(T.Trace2, T.Span2, 0, new[] { new ThreadAttribute(1, "\udc00") }));
            Unchanged();
            Assert.Equal(ThreadContextError.DuplicateKey, CurrentThread.TryUpdateAll(T.Trace2, T.Span2, 0,
                new[] { new ThreadAttribute(1, "a"), new ThreadAttribute(1, "a") }));
            Unchanged();
            Assert.Equal(ThreadContextError.NoSpace, CurrentThread.TryUpdateAll(T.Trace2, T.Span2, 0, new[]
            {
                new ThreadAttribute(1, new string('a', 255)), new ThreadAttribute(2, new string('b', 255)),
                new ThreadAttribute(3, new string('c', 100)),
            }));
            Unchanged();
            // Ids cleared together with flags 0: a record without ids.
            CurrentThread.UpdateAll(zeroTrace, zeroSpan, ActivityTraceFlags.None);
            Assert.False(CurrentThread.Read()!.HasIds);
            T.Fails(ThreadContextError.Ids, () => CurrentThread.UpdateSpanId(T.Span1)); // no trace id
            T.Fails(ThreadContextError.Ids, () => CurrentThread.UpdateTraceFlags(ActivityTraceFlags.Recorded));
            CurrentThread.UpdateTraceFlags(ActivityTraceFlags.None);
            CurrentThread.Detach();
        });
    }

    [Fact]
    public void TheHotPathsAllocateNothing()
    {
        int route = AttributeKeys.Register("http.route");
        T.OnNewThread(() =>
        {
            using var ctx = new ThreadContext(T.Trace1, T.Span1);
            var attrs = new[] { new ThreadAttribute(route, "GET /users/{id}") };
            void Round()
            {
                CurrentThread.TryUpdateAll(T.Trace1, T.Span1, ActivityTraceFlags.Recorded, attrs);
                CurrentThread.TryUpdateSpanId(T.Span2);
                CurrentThread.TryUpdateTraceFlags(ActivityTraceFlags.None);
                using (ctx.Attach())
                    CurrentThread.TryUpdateSpanId(T.Span3);
            }
            for (int i = 0; i < 100; i++)
                Round(); // warm up: the scope's saved context, tiered JIT
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 1000; i++)
                Round();
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.Equal(0, allocated);
            CurrentThread.Detach();
        });
    }
}
