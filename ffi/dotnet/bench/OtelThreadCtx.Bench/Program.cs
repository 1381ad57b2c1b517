// SPDX-License-Identifier: Apache-2.0
// Nanoseconds per operation, the median of 21 runs of N each after a
// warm-up, as "AOT <row> <median> <low> <high>" lines (low and high: the 6th
// and 16th of the 21 sorted runs, which hold the median between them with a
// confidence of 97 %), whose rows are named as those of the BenchmarkDotNet
// project (run.py bench sets them side by side).  For the activity rows,
// "AOTALLOC <row> <bytes>": the bytes the calling thread allocated per
// operation (GC.GetAllocatedBytesForCurrentThread).  This plain Stopwatch
// loop is what measures the NativeAOT executable: BenchmarkDotNet measures
// under the JIT.  Run on one thread unless said otherwise.  With the
// arguments `await-instructions KIND MODE COUNT` it runs one flow of an
// await row and nothing else, for run.py to count under callgrind.
using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
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

    private static int Main(string[] args)
    {
        if (args.Length != 0)
        {
            if (args.Length == 4 && args[0] == "await-instructions" &&
                int.TryParse(args[3], NumberStyles.None, CultureInfo.InvariantCulture, out int count))
                return AwaitInstructions(args[1], args[2], count);
            Console.Error.WriteLine("usage: OtelThreadCtx.Bench [await-instructions KIND MODE COUNT]");
            return 2;
        }

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

        // Awaits: the flow's context moves in and out of threads, which the
        // integration turns into a publication on each side.  Each pair of
        // rows alternates run by run, without and with the integration, so
        // that the state of the thread pool (which changes from one process
        // to the next) falls on both alike.
        Hops("Hops.Yield", "Mode=None", "Mode=Ids", new ActivityThreadContextOptions(), other: false);
        Hops("Hops.Other", "Mode=None", "Mode=Ids", new ActivityThreadContextOptions(), other: true);

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
        // With the integrations disposed, the handler stays on
        // Activity.Current's AsyncLocal and returns at once: what the
        // runtime's change notification costs before anything is published,
        // the floor of any integration told by it (HookIdle), alternated
        // with the hooked integration.
        Switches("Switches.StartStop Mode=HookIdle");
        Hops("Hops.Yield", "Mode=HookIdle", "Mode=IdsHooked", hooked, other: false);
        Hops("Hops.Other", "Mode=HookIdle", "Mode=IdsHooked", hooked, other: true);
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

    // Two rows of awaits in one flow, "<kind> <without>" and "<kind> <with>"
    // (the integration started with `options` for each run of it, disposed
    // after), run by run in turn after a warm-up; the medians, 6th and 16th
    // of 21 as Best(), and "AOTHOPS <row> <percent>": the share of the
    // awaits that resumed on another thread than the one they left.
    // other: each await resumes on another thread-pool thread (OtherThread
    // below), instead of await Task.Yield(), which on this machine resumes
    // on the thread it left nearly every time.
    private static void Hops(string kind, string without, string with, ActivityThreadContextOptions options,
        bool other)
    {
        int n = other ? 20_000 : 50_000;
        var runs = new double[2][] { new double[21], new double[21] };
        var awaits = new long[2];
        var hopped = new long[2];
        int wrong = 0;

        double Run(int mode, int count)
        {
            using ActivityThreadContext? integration = mode == 1 ? ActivityThreadContext.Start(options) : null;
            var sw = Stopwatch.StartNew();
            FlowEnd end = Task.Run(() => Flow(count, other)).Result;
            double ns = sw.Elapsed.TotalMilliseconds * 1e6 / count;
            hopped[mode] += end.Hopped;
            awaits[mode] += count;
            // With the integration, the thread the flow ends on publishes
            // it.  (Without, threads keep the record the last run
            // published: nothing to check.)
            if (integration != null && end.Published != end.Own)
                wrong++;
            return ns;
        }

        for (int w = 0; w < 3; w++)
        {
            Run(0, n / 10);
            Run(1, n / 10);
        }
        Array.Clear(awaits);
        Array.Clear(hopped);
        for (int run = 0; run < 21; run++)
        {
            runs[0][run] = Run(0, n);
            runs[1][run] = Run(1, n);
        }
        string[] names = { $"{kind} {without}", $"{kind} {with}" };
        for (int mode = 0; mode < 2; mode++)
        {
            Array.Sort(runs[mode]);
            double[] r = runs[mode];
            Console.WriteLine(FormattableString.Invariant($"AOT {names[mode]} {r[10]:F2} {r[5]:F2} {r[15]:F2}"));
            Console.WriteLine(FormattableString.Invariant(
                $"AOTHOPS {names[mode]} {100.0 * hopped[mode] / awaits[mode]:F1}"));
        }
        if (wrong != 0)
            Console.WriteLine($"AOTWRONG {names[1]} {wrong}");
    }

    // How a flow of the await rows ended: the awaits that resumed on another
    // thread than the one they left, the span id the thread it ended on
    // publishes (null: nothing), and the flow's own.
    private readonly record struct FlowEnd(long Hopped, ActivitySpanId? Published, ActivitySpanId Own);

    // The flow of the await rows: an activity, and `count` awaits in it
    // (other: each resuming on another thread-pool thread).
    private static async Task<FlowEnd> Flow(int count, bool other)
    {
        using var a = new Activity("flow").SetIdFormat(ActivityIdFormat.W3C).Start();
        int last = Environment.CurrentManagedThreadId;
        long hopped = 0;
        for (int i = 0; i < count; i++)
        {
            if (other)
                await default(OtherThread);
            else
                await Task.Yield();
            int now = Environment.CurrentManagedThreadId;
            if (now != last)
                hopped++;
            last = now;
        }
        bool published = CurrentThread.TryReadIds(out _, out ActivitySpanId span, out _);
        return new FlowEnd(hopped, published ? span : null, a.SpanId);
    }

    // `await-instructions KIND MODE COUNT`: one flow of COUNT awaits of an
    // await row (KIND Yield or Other; MODE None, Ids, IdsHooked or HookIdle)
    // and nothing else, in a process of its own, for run.py to count its
    // instructions under callgrind: what the integration adds per await,
    // without the thread pool's timing, and each mode against no hook ever
    // installed.  Exits 1 when the thread the flow ends on does not publish
    // what the mode should (its activity, or nothing without the
    // integration), or when a hooked mode runs without the hook; 2 on bad
    // arguments.
    private static int AwaitInstructions(string kind, string mode, int count)
    {
        if (kind != "Yield" && kind != "Other")
            return 2;
        var hooked = new ActivityThreadContextOptions { HookActivityCurrent = true };
        ActivityThreadContext? integration;
        switch (mode)
        {
            case "None":
                integration = null;
                break;
            case "Ids":
                integration = ActivityThreadContext.Start();
                break;
            case "IdsHooked":
                integration = ActivityThreadContext.Start(hooked);
                if (!integration.HooksActivityCurrent)
                    return 1;
                break;
            case "HookIdle":
                // The hook installed, and left idle by the integration's end.
                using (ActivityThreadContext idle = ActivityThreadContext.Start(hooked))
                    if (!idle.HooksActivityCurrent)
                        return 1;
                integration = null;
                break;
            default:
                return 2;
        }
        FlowEnd end = Task.Run(() => Flow(count, kind == "Other")).Result;
        bool hookStayed = mode != "IdsHooked" || integration!.HooksActivityCurrent;
        integration?.Dispose();
        bool right = integration == null ? end.Published is null : end.Published == end.Own;
        return right && hookStayed ? 0 : 1;
    }

    // An await that resumes on another thread-pool thread: the continuation
    // is queued to the pool, and the thread that queued it waits until
    // another thread has taken it (as when an I/O completes on another
    // thread).  Then the awaiting thread's work item ends.
    private readonly struct OtherThread : ICriticalNotifyCompletion
    {
        [ThreadStatic]
        private static ManualResetEventSlim? t_taken;

        public OtherThread GetAwaiter() => this;
        public bool IsCompleted => false;
        public void GetResult() { }
        public void OnCompleted(Action continuation) => Hop(continuation);
        public void UnsafeOnCompleted(Action continuation) => Hop(continuation);

        private static void Hop(Action continuation)
        {
            ManualResetEventSlim taken = t_taken ??= new ManualResetEventSlim();
            taken.Reset();
            ThreadPool.UnsafeQueueUserWorkItem(static s =>
            {
                s.Taken.Set();
                s.Continuation();
            }, (Continuation: continuation, Taken: taken), preferLocal: false);
            taken.Wait();
        }
    }
}
