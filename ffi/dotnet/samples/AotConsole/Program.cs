// SPDX-License-Identifier: Apache-2.0
// A console application published with PublishAot=true and the OtelThreadCtx
// package: async work on several threads whose activities switch spans, the
// Activity integration publishing each on the OS thread that runs it.
//
// It checks itself from inside (the library's self-check; after every await,
// that the thread publishes exactly Activity.Current), then parks one flow
// per thread on THREADS dedicated threads, and one more flow (the hop) on a
// dedicated thread of its own.  Parked flows spin, so that a sampler that
// reads only running threads (the eBPF one) sees them.  For a reader
// outside it prints, in two rounds:
//
//   SELFCHECK <status> <reason>
//   EXPECT <tid> <trace id> <span id> <http.route>   (one per thread with a flow)
//   READY <pid>
//
// and waits for a line on standard input (the reader is done).  Then the hop
// flow awaits and resumes on a thread pool thread, while the dedicated
// thread it left spins with nothing to run; the program prints
//
//   EXPECT ...                                       (the same flows, the hop on its new thread)
//   LEFT <tid>                                       (the thread the hop left: it publishes nothing)
//   READY <pid>
//
// and waits for a second line before it lets the flows end, checks that the
// threads they left publish nothing, and exits 0.  Any failure prints FAIL
// and exits 1.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using OtelThreadCtx;

internal static class Program
{
    private static readonly ActivitySource Source = new("AotConsole");
    private static readonly ConcurrentQueue<string> Failures = new();
    private static ActivityThreadContext? _integration;

    private static int Main(string[] args)
    {
        int threads = args.Length > 0 ? int.Parse(args[0]) : 4;
        int steps = args.Length > 1 ? int.Parse(args[1]) : 50;

        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name == "AotConsole",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };
        ActivitySource.AddActivityListener(listener);

        SelfCheck check = SelfCheck.Run();
        Console.WriteLine($"SELFCHECK {check.Status} {check.Reason}");
        if (!check.IsOk)
            return Fail("the self-check says a profiler will not find the slot");

        ProcessContext.Publish(new[] { new ResourceAttribute("service.name", "aot-console") });
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        using var integration = ActivityThreadContext.Start(options);
        _integration = integration;

        // Phase 1: flows on the thread pool, spans switching at every step.
        Task.WhenAll(Enumerable.Range(0, threads * 2).Select(n => Task.Run(() => Switching(n, steps)))).Wait();
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));

        // Phase 2: each flow awaits onto a thread of its own and stays there,
        // spinning; the hop flow, on a dedicated thread that spins when it
        // has nothing to run, waits for its signal to move.
        using var release = new ManualResetEventSlim();
        using var hopSignal = new ManualResetEventSlim();
        var parked = new CountdownEvent(threads + 1);
        var holders = new List<Holder>();
        var flows = new List<Task>();
        for (int n = 0; n < threads; n++)
        {
            var h = new Holder(spinWhenIdle: false);
            holders.Add(h);
            int id = n;
            flows.Add(Task.Run(() => Parked(id, h, parked, release)));
        }
        var hopFrom = new Holder(spinWhenIdle: true);
        var hop = new HopState();
        flows.Add(Task.Run(() => Hop(hopFrom, hop, parked, hopSignal, release)));
        parked.Wait();
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));
        foreach (Holder h in holders)
            Console.WriteLine(h.Expect);
        Console.WriteLine(hop.Expect);
        Console.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        Console.In.ReadLine();

        // Phase 3: the hop flow resumes on a thread pool thread.
        parked.Reset(1);
        hopSignal.Set();
        parked.Wait();
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));
        foreach (Holder h in holders)
            Console.WriteLine(h.Expect);
        Console.WriteLine(hop.Expect);
        Console.WriteLine($"LEFT {hopFrom.Tid}");
        Console.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        Console.In.ReadLine();

        release.Set();
        Task.WhenAll(flows).Wait();
        holders.Add(hopFrom);
        foreach (Holder h in holders)
        {
            // Once the flow has left it, the thread publishes nothing of it.
            string after = h.Run(() => CurrentThread.Read()?.ToString() ?? "(none)");
            if (after != "(none)")
                Failures.Enqueue($"thread {h.Tid} publishes {after} after its flow left");
            h.Stop();
        }
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));
        Console.WriteLine("DONE");
        return 0;
    }

    private static int Fail(string why)
    {
        Console.WriteLine("FAIL " + why);
        return 1;
    }

    // What the thread publishes against what it runs.
    private static void Verify(string where)
    {
        Activity? a = Activity.Current;
        bool published = CurrentThread.TryReadIds(out var trace, out var span, out var flags);
        if (a is null)
        {
            if (published)
                Failures.Enqueue($"{where}: publishes {trace}/{span} with no activity");
        }
        else if (!published || trace != a.TraceId || span != a.SpanId || flags != a.ActivityTraceFlags)
        {
            Failures.Enqueue($"{where}: publishes {(published ? trace + "/" + span : "nothing")} for {a.TraceId}/{a.SpanId}");
        }
    }

    private static async Task Switching(int n, int steps)
    {
        using Activity root = Source.StartActivity("request " + n)!;
        root.SetTag("http.route", "/switching/" + n);
        for (int i = 0; i < steps; i++)
        {
            using (Source.StartActivity("step"))
            {
                Verify($"flow {n} step {i}");
                if (i % 3 == 0)
                    await Task.Yield();
                else
                    await Task.Delay(1);
                Verify($"flow {n} step {i} after await");
            }
            Verify($"flow {n} step {i} after stop");
        }
    }

    private static async Task Parked(int n, Holder h, CountdownEvent parked, ManualResetEventSlim release)
    {
        using Activity root = Source.StartActivity("parked " + n)!;
        root.SetTag("http.route", "/parked/" + n);
        await Task.Yield();
        using Activity child = Source.StartActivity("child")!;
        await h.Resume(); // from here on, on the holder's own thread
        Verify($"parked {n}");
        h.Tid = ThreadId();
        h.Expect = $"EXPECT {h.Tid} {child.TraceId.ToHexString()} {child.SpanId.ToHexString()} /parked/{n}";
        parked.Signal();
        Spin(release);
        Verify($"parked {n} after spinning");
    }

    internal sealed class HopState
    {
        public string Expect = "";
    }

    // An activity on a dedicated thread that, at the signal, continues on a
    // thread pool thread: the first thread is left running (spinning) with
    // nothing of it.
    private static async Task Hop(Holder from, HopState s, CountdownEvent parked, ManualResetEventSlim signal,
        ManualResetEventSlim release)
    {
        await from.Resume();
        from.Tid = ThreadId();
        using Activity hop = Source.StartActivity("hop")!;
        hop.SetTag("http.route", "/hop");
        _integration!.Refresh(); // the tag was set after the activity became current
        Verify("hop before");
        s.Expect = $"EXPECT {from.Tid} {hop.TraceId.ToHexString()} {hop.SpanId.ToHexString()} /hop";
        parked.Signal();
        Spin(signal);
        await Task.Yield(); // no synchronization context: a thread pool thread
        int tid = ThreadId();
        Verify("hop after");
        if (tid == from.Tid || !Thread.CurrentThread.IsThreadPoolThread)
            Failures.Enqueue($"hop: resumed on thread {tid}, not on a thread pool thread other than {from.Tid}");
        s.Expect = $"EXPECT {tid} {hop.TraceId.ToHexString()} {hop.SpanId.ToHexString()} /hop";
        parked.Signal();
        Spin(release);
        Verify("hop after spinning");
    }

    // Busy until the event is set: the thread stays on a CPU, where a
    // sampler driven by a CPU clock finds it.
    private static void Spin(ManualResetEventSlim until)
    {
        while (!until.IsSet)
            Thread.SpinWait(64);
    }

    // The OS thread id (/proc/thread-self is PID/task/TID).
    internal static int ThreadId() =>
        int.Parse(Path.GetFileName(new FileInfo("/proc/thread-self").LinkTarget!));

    // A thread of its own that runs continuations, and work posted to it.
    internal sealed class Holder : ICriticalNotifyCompletion
    {
        private readonly BlockingCollection<Action> _queue = new();
        private readonly Thread _thread;

        public int Tid;
        public string Expect = "";

        public Holder(bool spinWhenIdle)
        {
            _thread = new Thread(() =>
            {
                // Spinning when idle keeps the thread on a CPU, where a
                // sampler can see that it publishes nothing.
                while (true)
                {
                    if (_queue.TryTake(out Action? a, spinWhenIdle ? 0 : Timeout.Infinite))
                        a();
                    else if (_queue.IsCompleted)
                        return;
                    else
                        Thread.SpinWait(64);
                }
            }) { IsBackground = true };
            _thread.Start();
        }

        public Holder Resume() => this;

        public Holder GetAwaiter() => this;

        public bool IsCompleted => false;

        public void GetResult()
        {
        }

        public void OnCompleted(Action continuation) => _queue.Add(continuation);

        public void UnsafeOnCompleted(Action continuation) => _queue.Add(continuation);

        public T Run<T>(Func<T> f)
        {
            T result = default!;
            using var done = new ManualResetEventSlim();
            _queue.Add(() =>
            {
                result = f();
                done.Set();
            });
            done.Wait();
            return result;
        }

        public void Stop()
        {
            _queue.CompleteAdding();
            _thread.Join();
        }
    }
}
