// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;
using Xunit;

namespace OtelThreadCtx.Tests;

public class ContextTests
{
    [Fact]
    public void AttachPublishesACopyAndTheScopePutsBackWhatItReplaced()
    {
        T.OnNewThread(() =>
        {
            using var a = new ThreadContext(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
            using var b = new ThreadContext(T.Trace2, T.Span2);
            T.PublishesNothing();
            using (a.Attach())
            {
                T.Publishes(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
                var inner = b.Attach();
                T.Publishes(T.Trace2, T.Span2);
                Assert.NotNull(inner.Saved);
                Assert.Equal(T.Span1, inner.Saved!.GetRecord()!.SpanId);
                inner.Dispose();
                T.Publishes(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
                inner.Dispose(); // a second Dispose does nothing
                T.Publishes(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
            }
            T.PublishesNothing();
        });
    }

    [Fact]
    public void ScopeRestoresWhatWasPublishedEvenWhenTheContextsChangedMeanwhile()
    {
        T.OnNewThread(() =>
        {
            var a = new ThreadContext(T.Trace1, T.Span1);
            a.Update();
            using var b = new ThreadContext(T.Trace2, T.Span2);
            var scope = b.Attach();
            a.SetSpanId(T.Span3); // what the thread published before is a copy
            a.Dispose();
            b.Clear();
            scope.Dispose();
            T.Publishes(T.Trace1, T.Span1);
            CurrentThread.Detach();
        });
    }

    [Fact]
    public void AContextIsAValueThatThreadsCopy()
    {
        T.OnNewThread(() =>
        {
            using var ctx = new ThreadContext(T.Trace1, T.Span1);
            ctx.Update();
            ctx.SetSpanId(T.Span2);
            T.Publishes(T.Trace1, T.Span1); // unchanged until it publishes again
            Assert.Equal(T.Span2, ctx.GetRecord()!.SpanId);
            ctx.Update();
            T.Publishes(T.Trace1, T.Span2);
            CurrentThread.Detach();
            T.PublishesNothing();
        });
    }

    [Fact]
    public void AttachWithSavedAndDetachWithSavedAndSave()
    {
        T.OnNewThread(() =>
        {
            using var a = new ThreadContext(T.Trace1, T.Span1);
            using var b = new ThreadContext(T.Trace2, T.Span2);
            using var saved = new ThreadContext();
            a.Attach(saved);
            Assert.False(saved.HoldsRecord); // "nothing published"
            Assert.Null(saved.GetRecord());
            b.Attach(saved);
            Assert.Equal(T.Span1, saved.GetRecord()!.SpanId);
            CurrentThread.Save(saved);
            Assert.Equal(T.Span2, saved.GetRecord()!.SpanId);
            T.Publishes(T.Trace2, T.Span2);
            CurrentThread.Detach(saved);
            T.PublishesNothing();
            Assert.Equal(T.Span2, saved.GetRecord()!.SpanId);
            saved.Update();
            T.Publishes(T.Trace2, T.Span2);
            // saved may be the context itself
            a.Attach(a);
            T.Publishes(T.Trace1, T.Span1);
            Assert.Equal(T.Span2, a.GetRecord()!.SpanId);
            // A saved "nothing published" holds no record; attaching it
            // unpublishes.
            using var none = new ThreadContext();
            Assert.True(none.HoldsRecord); // a new context holds an empty record
            CurrentThread.Detach();
            CurrentThread.Save(none);
            Assert.False(none.HoldsRecord);
            b.Update();
            T.Publishes(T.Trace2, T.Span2);
            none.Update();
            T.PublishesNothing();
            b.Update();
            using (none.Attach())
                T.PublishesNothing();
            T.Publishes(T.Trace2, T.Span2);
            CurrentThread.Detach();
            T.PublishesNothing();
        });
    }

    [Fact]
    public void SettersAndRecord()
    {
        int route = AttributeKeys.Register("http.route");
        int method = AttributeKeys.Register("http.method");
        using var ctx = new ThreadContext();
        Assert.Equal(ThreadContext.MaxAttributesCapacity, ctx.AttributesCapacity);
        ThreadRecord empty = ctx.GetRecord()!;
        Assert.False(empty.HasIds);
        Assert.Empty(empty.Attributes);
        ctx.SetIds(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
        ctx.SetAttribute(route, "GET /users/{id}");
        ctx.SetAttribute(method, Encoding.UTF8.GetBytes("GET"));
        ctx.SetAttribute(route, "GET /ünïcødé"); // replaced in place
        ThreadRecord r = ctx.GetRecord()!;
        Assert.True(r.HasIds);
        Assert.Equal(T.Trace1, r.TraceId);
        Assert.Equal(T.Span1, r.SpanId);
        Assert.Equal(ActivityTraceFlags.Recorded, r.TraceFlags);
        Assert.Equal("GET /ünïcødé", r.Attributes[route]);
        Assert.Equal("GET", r.Attributes[method]);
        ctx.RemoveAttribute(method);
        ctx.RemoveAttribute(method); // absent: not an error
        Assert.False(ctx.GetRecord()!.Attributes.ContainsKey(method));
        ctx.SetTraceFlags(ActivityTraceFlags.None);
        Assert.Equal(ActivityTraceFlags.None, ctx.GetRecord()!.TraceFlags);
        ctx.SetAttributes(new[] { new ThreadAttribute(method, "POST"), new ThreadAttribute(route, "/a") });
        r = ctx.GetRecord()!;
        Assert.Equal(2, r.Attributes.Count);
        Assert.Equal(new byte[] { (byte)method, 4, (byte)'P', (byte)'O', (byte)'S', (byte)'T', (byte)route, 2, (byte)'/', (byte)'a' },
            r.AttributesData.ToArray());
        ctx.ClearAttributes();
        Assert.Empty(ctx.GetRecord()!.Attributes);
        Assert.True(ctx.GetRecord()!.HasIds);
        ctx.ClearIds();
        Assert.False(ctx.GetRecord()!.HasIds);
        ctx.SetIds(Convert.FromHexString(T.Trace2.ToHexString()), Convert.FromHexString(T.Span2.ToHexString()), 1);
        Assert.Equal(T.Trace2, ctx.GetRecord()!.TraceId);
        ctx.Clear();
        Assert.False(ctx.GetRecord()!.HasIds);
        Assert.Throws<ArgumentException>(() => ctx.SetIds(new byte[15], new byte[8]));
        Assert.Throws<ArgumentException>(() => ctx.SetIds(new byte[16], new byte[7]));
    }

    [Fact]
    public void CopyFrom()
    {
        int route = AttributeKeys.Register("http.route");
        using var src = new ThreadContext(T.Trace1, T.Span1);
        src.SetAttribute(route, "/x");
        using var dst = new ThreadContext();
        dst.CopyFrom(src);
        Assert.Equal(T.Show(src.GetRecord()), T.Show(dst.GetRecord()));
        using var small = new ThreadContext(0);
        T.Fails(ThreadContextError.NoSpace, () => small.CopyFrom(src));
        Assert.False(small.GetRecord()!.HasIds); // nothing changed
    }

    [Fact]
    public void ErrorsCarryTheLibrarysTextAndChangeNothing()
    {
        ThreadContextException e = T.Fails(ThreadContextError.Options, () => new ThreadContext(613));
        Assert.StartsWith("otel_thread_ctx_create_with: ", e.Message);
        string text = ThreadContextException.Describe(ThreadContextError.Options);
        Assert.EndsWith(text, e.Message);
        Assert.NotEqual("Options", text);
        Assert.False(text.StartsWith("unknown", StringComparison.Ordinal), text);
        Assert.Equal((int)ThreadContextError.Options, e.HResult);
        T.Fails(ThreadContextError.Options, () => new ThreadContext(-1));

        int route = AttributeKeys.Register("http.route");
        using var ctx = new ThreadContext(T.Trace1, T.Span1, ActivityTraceFlags.Recorded);
        ctx.SetAttribute(route, "/before");
        string before = T.Show(ctx.GetRecord());
        void Unchanged() => Assert.Equal(before, T.Show(ctx.GetRecord()));

        T.Fails(ThreadContextError.Ids, () => ctx.SetIds(ActivityTraceId.CreateFromBytes(new byte[16]), T.Span2));
        Unchanged();
        T.Fails(ThreadContextError.Ids, () => ctx.SetIds(new byte[16], new byte[8], 1)); // flags without ids
        Unchanged();
        T.Fails(ThreadContextError.Ids, () => ctx.SetSpanId(ActivitySpanId.CreateFromBytes(new byte[8])));
        Unchanged();
        T.Fails(ThreadContextError.Key, () => ctx.SetAttribute(256, "x"));
        T.Fails(ThreadContextError.Key, () => ctx.SetAttribute(-1, "x"));
        T.Fails(ThreadContextError.Key, () => ctx.RemoveAttribute(256));
        T.Fails(ThreadContextError.Value, () => ctx.SetAttribute(route, new string('x', 256)));
        ctx.SetAttribute(route, new string('x', 255)); // the longest value
        ctx.SetAttribute(route, "/before");
        T.Fails(ThreadContextError.Utf8, () => ctx.SetAttribute(route, new byte[] { 0xc3, 0x28 }));
        T.Fails(ThreadContextError.Utf8, () => ctx.SetAttribute(route, "\ud800 lone surrogate"));
        T.Fails(ThreadContextError.DuplicateKey, () => ctx.SetAttributes(new[] { new ThreadAttribute(1, "a"), new ThreadAttribute(1, "b") }));
        T.Fails(ThreadContextError.Value, () => ctx.SetAttributes(new[] { new ThreadAttribute(1, "a"), new ThreadAttribute(2, new string('y', 300)) }));
        Unchanged();

        using var small = new ThreadContext(10);
        small.SetAttribute(1, "12345678"); // 2 + 8 bytes: full
        T.Fails(ThreadContextError.NoSpace, () => small.SetAttribute(2, "z"));
        Assert.Equal(new byte[] { 1, 8, (byte)'1', (byte)'2', (byte)'3', (byte)'4', (byte)'5', (byte)'6', (byte)'7', (byte)'8' },
            small.GetRecord()!.AttributesData.ToArray());
    }

    [Fact]
    public void SetAttributesManyAndLargeValuesGoThroughThePool()
    {
        using var ctx = new ThreadContext();
        var attrs = new List<ThreadAttribute>();
        for (int k = 0; k < 40; k++)
            attrs.Add(new ThreadAttribute(k, "v" + k));
        ctx.SetAttributes(attrs.ToArray()); // more than the 32 kept on the stack
        Assert.Equal(40 * 2 + 10 * 2 + 30 * 3, ctx.GetRecord()!.AttributesData.Length);
        // More bytes than the stack buffer: the library still says why.
        T.Fails(ThreadContextError.Value, () => ctx.SetAttributes(new[] { new ThreadAttribute(1, new string('q', 2000)) }));
        T.Fails(ThreadContextError.NoSpace, () => ctx.SetAttributes(new[]
        {
            new ThreadAttribute(1, new string('a', 250)), new ThreadAttribute(2, new string('b', 250)),
            new ThreadAttribute(3, new string('c', 250)),
        }));
        Assert.Equal(40 * 2 + 10 * 2 + 30 * 3, ctx.GetRecord()!.AttributesData.Length);
        ctx.SetAttributes(ReadOnlySpan<ThreadAttribute>.Empty);
        Assert.Equal(0, ctx.GetRecord()!.AttributesData.Length);
    }

    [Fact]
    public void ADisposedContextThrowsAndItsTryReturnsNull()
    {
        var ctx = new ThreadContext(T.Trace1, T.Span1);
        ctx.Dispose();
        ctx.Dispose();
        Assert.True(ctx.IsClosed);
        Assert.Throws<ObjectDisposedException>(() => ctx.Update());
        Assert.Throws<ObjectDisposedException>(() => ctx.SetSpanId(T.Span2));
        Assert.Throws<ObjectDisposedException>(() => { using var s = ctx.Attach(); });
        Assert.Equal(ThreadContextError.Null, ctx.TryUpdate());
    }

    [Fact]
    public void SaveIntoAContextTooSmallFailsAndChangesNothing()
    {
        T.OnNewThread(() =>
        {
            using var big = new ThreadContext(T.Trace1, T.Span1);
            big.SetAttribute(1, "a value of some length");
            big.Update();
            using var small = new ThreadContext(4);
            small.SetIds(T.Trace2, T.Span2);
            using var other = new ThreadContext(T.Trace2, T.Span3);
            T.Fails(ThreadContextError.NoSpace, () => other.Attach(small));
            T.Publishes(T.Trace1, T.Span1); // nothing changed: not published, not saved
            Assert.Equal(T.Span2, small.GetRecord()!.SpanId);
            T.Fails(ThreadContextError.NoSpace, () => CurrentThread.Detach(small));
            T.Publishes(T.Trace1, T.Span1);
            T.Fails(ThreadContextError.NoSpace, () => CurrentThread.Save(small));
            Assert.Equal(T.Span2, small.GetRecord()!.SpanId);
            CurrentThread.Detach();
        });
    }
}
