// SPDX-License-Identifier: Apache-2.0
// A console application published with PublishAot=true and the OtelThreadCtx
// package: async work on several threads whose activities switch spans, the
// Activity integration publishing each on the OS thread that runs it.
//
// It checks itself from inside (the library's self-check; after every await,
// that the thread publishes exactly Activity.Current), then parks one flow
// per thread on THREADS dedicated threads and prints, for a reader outside:
//
//   SELFCHECK <status> <reason>
//   EXPECT <tid> <trace id> <span id> <http.route>   (one per parked thread)
//   READY <pid>
//
// and waits for a line on standard input (the reader is done) before it
// lets the flows end, checks that the threads they left publish nothing,
// and exits 0.  Any failure prints FAIL and exits 1.
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

        // Phase 1: flows on the thread pool, spans switching at every step.
        Task.WhenAll(Enumerable.Range(0, threads * 2).Select(n => Task.Run(() => Switching(n, steps)))).Wait();
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));

        // Phase 2: each flow awaits onto a thread of its own and stays there.
        using var release = new ManualResetEventSlim();
        var parked = new CountdownEvent(threads);
        var holders = new List<Holder>();
        var flows = new List<Task>();
        for (int n = 0; n < threads; n++)
        {
            var h = new Holder();
            holders.Add(h);
            int id = n;
            flows.Add(Task.Run(() => Parked(id, h, parked, release)));
        }
        parked.Wait();
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));
        foreach (Holder h in holders)
            Console.WriteLine(h.Expect);
        Console.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        Console.In.ReadLine();
        release.Set();
        Task.WhenAll(flows).Wait();
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
        release.Wait();
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

        public Holder()
        {
            _thread = new Thread(() =>
            {
                foreach (Action a in _queue.GetConsumingEnumerable())
                    a();
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
