// SPDX-License-Identifier: Apache-2.0
// Nanoseconds per operation, best of 5 runs of N each, after a warm-up that
// lets tiered compilation finish.  Run on one thread unless said otherwise.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using OtelThreadCtx;

internal static class Program
{
    private const int N = 1_000_000;

    private static double Best(string what, int n, Action<int> body)
    {
        for (int w = 0; w < 3; w++)
            body(n / 10);
        double best = double.MaxValue;
        for (int run = 0; run < 5; run++)
        {
            var sw = Stopwatch.StartNew();
            body(n);
            best = Math.Min(best, sw.Elapsed.TotalMilliseconds * 1e6 / n);
        }
        Console.WriteLine($".NET {what,-52} {best,7:F1} ns");
        return best;
    }

    private static int Main()
    {
        var trace = ActivityTraceId.CreateRandom();
        var spans = new ActivitySpanId[256];
        for (int i = 0; i < spans.Length; i++)
            spans[i] = ActivitySpanId.CreateRandom();
        using var ctx = new ThreadContext(trace, spans[0], ActivityTraceFlags.Recorded);
        using var saved = new ThreadContext();

        Best("attach(ctx, saved) + update(saved)", N, n =>
        {
            for (int i = 0; i < n; i++)
            {
                ctx.Attach(saved);
                saved.Update();
            }
        });
        Best("using (ctx.Attach()) {} (scope, pooled saved)", N, n =>
        {
            for (int i = 0; i < n; i++)
                using (ctx.Attach()) { }
        });
        ctx.Update();
        Best("TryUpdateSpanId(ActivitySpanId)", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateSpanId(spans[i & 255]);
        });
        Best("TryUpdateAll(trace, span, flags) (no attributes)", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateAll(trace, spans[i & 255], ActivityTraceFlags.Recorded);
        });
        var attrs = new[] { new ThreadAttribute(AttributeKeys.Register("http.route"), "GET /users/{id}") };
        Best("TryUpdateAll(..., 1 attribute)", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateAll(trace, spans[i & 255], ActivityTraceFlags.Recorded, attrs);
        });
        CurrentThread.Detach();

        // The Activity integration: an activity start + stop is two switches.
        var parent = new Activity("parent").SetIdFormat(ActivityIdFormat.W3C);
        parent.SetTag("http.route", "GET /users/{id}");
        parent.Start();
        double without = Best("activity start+stop, no integration", N / 2, n =>
        {
            for (int i = 0; i < n; i++)
                new Activity("child").Start().Stop();
        });
        double with;
        using (ActivityThreadContext.Start())
        {
            with = Best("activity start+stop, integration (ids only)", N / 2, n =>
            {
                for (int i = 0; i < n; i++)
                    new Activity("child").Start().Stop();
            });
        }
        Console.WriteLine($"     per switch, ids only: {(with - without) / 2,6:F1} ns");
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        using (ActivityThreadContext.Start(options))
        {
            with = Best("activity start+stop, integration (+ http.route)", N / 2, n =>
            {
                for (int i = 0; i < n; i++)
                    new Activity("child").Start().Stop();
            });
        }
        Console.WriteLine($"     per switch, with http.route: {(with - without) / 2,6:F1} ns");
        parent.Stop();

        // An await that hops threads: the flow's context moves, which the
        // integration turns into a publication on each side.
        double hopWithout = Hops("await Task.Yield() in an activity, no integration", null);
        double hopWith = Hops("await Task.Yield() in an activity, integration", new ActivityThreadContextOptions());
        Console.WriteLine($"     per await: {hopWith - hopWithout,6:F1} ns");
        return 0;
    }

    private static double Hops(string what, ActivityThreadContextOptions? options)
    {
        using ActivityThreadContext? integration = options is null ? null : ActivityThreadContext.Start(options);
        return Best(what, 200_000, n =>
        {
            Task.Run(async () =>
            {
                using var a = new Activity("flow").SetIdFormat(ActivityIdFormat.W3C).Start();
                for (int i = 0; i < n; i++)
                    await Task.Yield();
            }).Wait();
        });
    }
}
