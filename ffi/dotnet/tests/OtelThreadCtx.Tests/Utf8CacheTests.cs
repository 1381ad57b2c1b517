// SPDX-License-Identifier: Apache-2.0
using System;
using System.Buffers;
using System.Diagnostics;
using System.Linq;
using System.Text;
using Xunit;

namespace OtelThreadCtx.Tests;

// The per-thread UTF-8 of attribute values gives exactly what transcoding
// gives, whether the string was kept or not.
public unsafe class Utf8CacheTests
{
    private static (OperationStatus, byte[]) Transcode(string s, int room)
    {
        var buf = new byte[room];
        OperationStatus st = System.Text.Unicode.Utf8.FromUtf16(s, buf, out _, out int len,
            replaceInvalidSequences: false);
        return (st, buf.AsSpan(0, len).ToArray());
    }

    private static (OperationStatus, byte[]) Cached(string s, int room)
    {
        var buf = new byte[room + 8];
        buf.AsSpan().Fill(0xEE);
        int len;
        OperationStatus st;
        fixed (byte* p = buf)
            st = Utf8Cache.Encode(s, p, room, out len);
        // Nothing written past the value's bytes (a destination may be no
        // larger than they are).
        Assert.All(buf.Skip(len), b => Assert.Equal(0xEE, b));
        return (st, buf.AsSpan(0, len).ToArray());
    }

    private static void Same(string s, int room)
    {
        var (want, wantBytes) = Transcode(s, room);
        var (got, gotBytes) = Cached(s, room);
        Assert.Equal(want, got);
        Assert.Equal(wantBytes, gotBytes);
    }

    [Fact]
    public void TheSameBytesAsTranscodingKeptOrNot()
    {
        T.OnNewThread(() =>
        {
            Utf8Cache.Clear();
            string[] values =
            {
                "GET /users/{id}", "", "é", "日本語のルート", "emoji 😀", "POST /orders",
                new string('a', 255), new string('b', 256), "x\u00e9\u4e2d\U0001F600y",
                // Each length where the copy of a kept value changes its way.
                "0123456", "01234567", "0123456789abcde", "0123456789abcdef",
                "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef0",
            };
            // Five and more strings, cycled: each kept, found, evicted and
            // kept again (four per thread).
            for (int round = 0; round < 3; round++)
                foreach (string v in values)
                    for (int k = 0; k < 2; k++)
                        Same(v, 1024);
            // The same string found with less room than its bytes: as
            // transcoding, cut at a character boundary.
            string multi = "ééééé"; // 10 bytes
            Same(multi, 1024);
            Same(multi, 1024);
            Same(multi, 9);
            Same(multi, 10);
            Same(multi, 0);
            // Equal text in another string object: the same bytes.
            string copy = new StringBuilder("GET /users/{id}").ToString();
            Same(copy, 1024);
        });
    }

    [Fact]
    public void InvalidTextIsNeverKept()
    {
        T.OnNewThread(() =>
        {
            Utf8Cache.Clear();
            string lone = "a\ud800b";
            for (int k = 0; k < 3; k++)
            {
                var (st, _) = Cached(lone, 64);
                Assert.Equal(OperationStatus.InvalidData, st);
            }
        });
    }

    [Fact]
    public void PublishedValuesFollowTheStringsOnEveryCall()
    {
        int route = AttributeKeys.Register("http.route");
        T.OnNewThread(() =>
        {
            Utf8Cache.Clear();
            string[] routes = { "/a", "/bb", "/ccc", "/dddd", "/eeeee", "/ffffff" };
            for (int i = 0; i < 60; i++)
            {
                string r = routes[(i * 7) % routes.Length];
                CurrentThread.UpdateAll(T.Trace1, T.Span1, ActivityTraceFlags.Recorded,
                    new[] { new ThreadAttribute(route, r) });
                Assert.Equal(r, CurrentThread.Read()!.Attributes[route]);
            }
            CurrentThread.Detach();
        });
    }
}
