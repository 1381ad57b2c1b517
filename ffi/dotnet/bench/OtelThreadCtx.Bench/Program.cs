// SPDX-License-Identifier: Apache-2.0
// Nanoseconds per operation, the median of 11 runs of N each after a
// warm-up, as "AOT <row> <ns>" lines whose rows are named as those of the
// BenchmarkDotNet project (run.py bench sets them side by side).  This plain
// Stopwatch loop is what measures the NativeAOT executable: BenchmarkDotNet
// measures under the JIT.  Run on one thread unless said otherwise.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using OtelThreadCtx;

internal static class Program
{
    private const int N = 200_000;

    private static double Best(string what, int n, Action<int> body)
    {
        for (int w = 0; w < 3; w++)
            body(n / 10);
        var runs = new double[11];
        for (int run = 0; run < runs.Length; run++)
        {
            var sw = Stopwatch.StartNew();
            body(n);
            runs[run] = sw.Elapsed.TotalMilliseconds * 1e6 / n;
        }
        Array.Sort(runs);
        double median = runs[runs.Length / 2];
        Console.WriteLine(FormattableString.Invariant($"AOT {what} {median:F2}"));
        return median;
    }

    private static int Main()
    {
        var trace = ActivityTraceId.CreateRandom();
        var spans = new ActivitySpanId[256];
        for (int i = 0; i < spans.Length; i++)
            spans[i] = ActivitySpanId.CreateRandom();
        using var ctx = new ThreadContext(trace, spans[0], ActivityTraceFlags.Recorded);
        using var saved = new ThreadContext();

        Best("Calls.AttachSavedUpdate", N, n =>
        {
            for (int i = 0; i < n; i++)
            {
                ctx.Attach(saved);
                saved.Update();
            }
        });
        Best("Calls.Scope", N, n =>
        {
            for (int i = 0; i < n; i++)
                using (ctx.Attach()) { }
        });
        ctx.Update();
        Best("Calls.TryUpdateSpanId", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateSpanId(spans[i & 255]);
        });
        Best("Calls.TryUpdateAll", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateAll(trace, spans[i & 255], ActivityTraceFlags.Recorded);
        });
        var attrs = new[] { new ThreadAttribute(AttributeKeys.Register("http.route"), "GET /users/{id}") };
        Best("Calls.TryUpdateAllOneAttribute", N, n =>
        {
            for (int i = 0; i < n; i++)
                CurrentThread.TryUpdateAll(trace, spans[i & 255], ActivityTraceFlags.Recorded, attrs);
        });
        CurrentThread.Detach();

        // The Activity integration: an activity start + stop is two switches.
        var parent = new Activity("parent").SetIdFormat(ActivityIdFormat.W3C);
        parent.SetTag("http.route", "GET /users/{id}");
        parent.Start();
        Best("Switches.StartStop Mode=None", N / 2, n =>
        {
            for (int i = 0; i < n; i++)
                new Activity("child").Start().Stop();
        });
        using (ActivityThreadContext.Start())
        {
            Best("Switches.StartStop Mode=Ids", N / 2, n =>
            {
                for (int i = 0; i < n; i++)
                    new Activity("child").Start().Stop();
            });
        }
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        using (ActivityThreadContext.Start(options))
        {
            Best("Switches.StartStop Mode=IdsAndRoute", N / 2, n =>
            {
                for (int i = 0; i < n; i++)
                    new Activity("child").Start().Stop();
            });
        }
        parent.Stop();

        // An await that hops threads: the flow's context moves, which the
        // integration turns into a publication on each side.
        Hops("Hops.Yield Mode=None", null);
        Hops("Hops.Yield Mode=Ids", new ActivityThreadContextOptions());
        return 0;
    }

    private static double Hops(string what, ActivityThreadContextOptions? options)
    {
        using ActivityThreadContext? integration = options is null ? null : ActivityThreadContext.Start(options);
        return Best(what, 50_000, n =>
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
