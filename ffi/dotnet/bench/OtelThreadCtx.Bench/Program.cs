// SPDX-License-Identifier: Apache-2.0
// Nanoseconds per operation, the median of 21 runs of N each after a
// warm-up, as "AOT <row> <median> <low> <high>" lines (low and high: the 6th
// and 16th of the 21 sorted runs, which hold the median between them with a
// confidence of 97 %), whose rows are named as those of the BenchmarkDotNet
// project (run.py bench sets them side by side).  For the activity rows,
// "AOTALLOC <row> <bytes>": the bytes the calling thread allocated per
// operation (GC.GetAllocatedBytesForCurrentThread).  This plain Stopwatch
// loop is what measures the NativeAOT executable: BenchmarkDotNet measures
// under the JIT.  Run on one thread unless said otherwise.
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
        var runs = new double[21];
        long allocated = 0;
        for (int run = 0; run < runs.Length; run++)
        {
            long a0 = GC.GetAllocatedBytesForCurrentThread();
            var sw = Stopwatch.StartNew();
            body(n);
            runs[run] = sw.Elapsed.TotalMilliseconds * 1e6 / n;
            allocated += GC.GetAllocatedBytesForCurrentThread() - a0;
        }
        Array.Sort(runs);
        double median = runs[runs.Length / 2];
        Console.WriteLine(FormattableString.Invariant($"AOT {what} {median:F2} {runs[5]:F2} {runs[15]:F2}"));
        if (what.StartsWith("Switches.", StringComparison.Ordinal))
            Console.WriteLine(FormattableString.Invariant(
                $"AOTALLOC {what} {(double)allocated / ((long)n * runs.Length):F1}"));
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
        // Each row on a thread of its own, started without the caller's
        // execution context, under a parent activity of its own: no row
        // inherits the AsyncLocals another left behind.
        Switches("Switches.StartStop Mode=None");
        // What any integration built on CurrentChanged and a second
        // AsyncLocal pays before it publishes anything: the handler alone,
        // then the handler writing an AsyncLocal made with a change handler
        // (an empty one).
        EventHandler<ActivityChangedEventArgs> empty = (_, _) => { };
        Activity.CurrentChanged += empty;
        Switches("Switches.StartStop Mode=Handler");
        Activity.CurrentChanged -= empty;
        var local = new AsyncLocal<Activity?>(_ => { });
        EventHandler<ActivityChangedEventArgs> write = (_, e) => local.Value = e.Current;
        Activity.CurrentChanged += write;
        Switches("Switches.StartStop Mode=HandlerAsyncLocal");
        Activity.CurrentChanged -= write;
        using (ActivityThreadContext.Start())
            Switches("Switches.StartStop Mode=Ids");
        var route = new ActivityThreadContextOptions();
        route.AttributeTags.Add("http.route");
        using (ActivityThreadContext.Start(route))
            Switches("Switches.StartStop Mode=IdsAndRoute");

        // An await that hops threads: the flow's context moves, which the
        // integration turns into a publication on each side.
        Hops("Hops.Yield Mode=None", null);
        Hops("Hops.Yield Mode=Ids", new ActivityThreadContextOptions());

        // HookActivityCurrent: last, since the handler, once installed,
        // stays; the activities it follows are made after it is.
        var hooked = new ActivityThreadContextOptions { HookActivityCurrent = true };
        using (var integration = ActivityThreadContext.Start(hooked))
        {
            Switches("Switches.StartStop Mode=IdsHooked");
            Console.WriteLine($"AOTHOOK {integration.HooksActivityCurrent}");
        }
        var hookedRoute = new ActivityThreadContextOptions { HookActivityCurrent = true };
        hookedRoute.AttributeTags.Add("http.route");
        using (var integration = ActivityThreadContext.Start(hookedRoute))
        {
            Switches("Switches.StartStop Mode=IdsAndRouteHooked");
            Console.WriteLine($"AOTHOOK {integration.HooksActivityCurrent}");
        }
        Hops("Hops.Yield Mode=IdsHooked", hooked);

        // The same with the integrations disposed: the handler stays on
        // Activity.Current's AsyncLocal and returns at once.  What the
        // runtime's change notification costs before anything is published:
        // the floor of any integration told by it.
        Switches("Switches.StartStop Mode=HookIdle");
        Hops("Hops.Yield Mode=HookIdle", null, checkPublished: false);
        return 0;
    }

    private static void Switches(string what)
    {
        var t = new Thread(() =>
        {
            var parent = new Activity("parent").SetIdFormat(ActivityIdFormat.W3C);
            parent.SetTag("http.route", "GET /users/{id}");
            parent.Start();
            Best(what, N / 2, n =>
            {
                for (int i = 0; i < n; i++)
                    new Activity("child").Start().Stop();
            });
            parent.Stop();
        });
        t.UnsafeStart();
        t.Join();
    }

    // "AOTHOPS <row> <percent>": the share of the awaits that resumed on
    // another thread than the one they left.
    private static double Hops(string what, ActivityThreadContextOptions? options, bool checkPublished = true)
    {
        using ActivityThreadContext? integration = options is null ? null : ActivityThreadContext.Start(options);
        int wrong = 0;
        long awaits = 0, hopped = 0;
        double median = Best(what, 50_000, n =>
        {
            Task.Run(async () =>
            {
                using var a = new Activity("flow").SetIdFormat(ActivityIdFormat.W3C).Start();
                int last = Environment.CurrentManagedThreadId;
                for (int i = 0; i < n; i++)
                {
                    await Task.Yield();
                    int now = Environment.CurrentManagedThreadId;
                    if (now != last)
                        hopped++;
                    last = now;
                }
                awaits += n;
                // The thread the flow ends on publishes it (with an
                // integration), or nothing.
                bool published = CurrentThread.TryReadIds(out _, out ActivitySpanId span, out _);
                // (Threads an earlier row's integration published on keep
                // their record: HookIdle cannot check.)
                if (checkPublished && (published != (integration != null) || (published && span != a.SpanId)))
                    Interlocked.Increment(ref wrong);
            }).Wait();
        });
        if (wrong != 0)
            Console.WriteLine($"AOTWRONG {what} {wrong}");
        Console.WriteLine(FormattableString.Invariant($"AOTHOPS {what} {100.0 * hopped / awaits:F1}"));
        return median;
    }
}
