// SPDX-License-Identifier: Apache-2.0
// BenchmarkDotNet, in process, its default job (it runs iterations until the
// 99.9 % confidence interval of the mean is within 2 % of it, or 100
// iterations): each benchmark printed as
// "BDN <class>.<method>[ <params>] <mean> <ci> <median> <bytes>" lines, in
// nanoseconds (ci: half the width of the 99.9 % confidence interval of the
// mean; bytes: allocated per operation), that run.py sets against the C loop
// (cloop.c) measured in the same run.  OTEL_DOTNET_BENCH_SHORT=1 makes short
// runs (3 iterations), for trying changes only.
using System;
using System.Diagnostics;
using System.Globalization;
using System.Threading;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Toolchains.InProcess.Emit;
using OtelThreadCtx;

internal static class Program
{
    private static int Main()
    {
        Job job = Environment.GetEnvironmentVariable("OTEL_DOTNET_BENCH_SHORT") == "1" ? Job.ShortRun : Job.Default;
        var config = ManualConfig.Create(DefaultConfig.Instance)
            .AddJob(job.WithToolchain(InProcessEmitToolchain.Instance))
            .AddDiagnoser(MemoryDiagnoser.Default)
            .WithOptions(ConfigOptions.DisableLogFile);
        int failed = 0;
        foreach (Summary summary in new[] { BenchmarkRunner.Run<Calls>(config), BenchmarkRunner.Run<Switches>(config) })
        {
            foreach (BenchmarkReport report in summary.Reports)
            {
                string name = report.BenchmarkCase.Descriptor.Type.Name + "." + report.BenchmarkCase.Descriptor.WorkloadMethod.Name;
                string parameters = report.BenchmarkCase.Parameters.PrintInfo;
                if (report.ResultStatistics is null)
                {
                    Console.WriteLine($"BDN {name} {parameters} failed");
                    failed++;
                    continue;
                }
                var stats = report.ResultStatistics;
                long bytes = report.GcStats.GetBytesAllocatedPerOperation(report.BenchmarkCase) ?? -1;
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"BDN {name}{(parameters.Length > 0 ? " " + parameters : "")} {stats.Mean:F2} {stats.ConfidenceInterval.Margin:F2} {stats.Median:F2} {bytes}"));
            }
        }
        return failed == 0 ? 0 : 1;
    }
}

// The calls cloop.c makes from C.
public class Calls
{
    private static readonly ActivityTraceId Trace = ActivityTraceId.CreateRandom();
    private readonly ActivitySpanId[] _spans = new ActivitySpanId[256];
    private ThreadContext _ctx = null!, _saved = null!;
    private ThreadAttribute[] _attrs = null!;
    private int _i;

    [GlobalSetup]
    public void Setup()
    {
        for (int i = 0; i < _spans.Length; i++)
            _spans[i] = ActivitySpanId.CreateRandom();
        _ctx = new ThreadContext(Trace, _spans[0], ActivityTraceFlags.Recorded);
        _saved = new ThreadContext();
        _attrs = new[] { new ThreadAttribute(AttributeKeys.Register("http.route"), "GET /users/{id}") };
        _ctx.Update();
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        CurrentThread.Detach();
        _ctx.Dispose();
        _saved.Dispose();
    }

    // attach(ctx, saved) + update(saved): publish, then put back.
    [Benchmark]
    public void AttachSavedUpdate()
    {
        _ctx.Attach(_saved);
        _saved.Update();
    }

    [Benchmark]
    public void Scope()
    {
        using (_ctx.Attach()) { }
    }

    [Benchmark]
    public int TryUpdateSpanId() => (int)CurrentThread.TryUpdateSpanId(_spans[++_i & 255]);

    [Benchmark]
    public int TryUpdateAll() => (int)CurrentThread.TryUpdateAll(Trace, _spans[++_i & 255], ActivityTraceFlags.Recorded);

    [Benchmark]
    public int TryUpdateAllOneAttribute() =>
        (int)CurrentThread.TryUpdateAll(Trace, _spans[++_i & 255], ActivityTraceFlags.Recorded, _attrs);
}

// An activity's start + stop (two switches of Activity.Current) without the
// integration, with it publishing ids only, and ids and http.route.
public class Switches
{
    public enum Integration { None, Ids, IdsAndRoute }

    private static readonly ActivityTraceId Trace = ActivityTraceId.CreateRandom();
    private static readonly ActivitySpanId Parent = ActivitySpanId.CreateRandom();
    private ActivityThreadContext? _integration;

    [Params(Integration.None, Integration.Ids, Integration.IdsAndRoute)]
    public Integration Mode { get; set; }

    // The execution context the process started with: each mode starts
    // from it, without the AsyncLocal values an earlier mode left behind
    // (an AsyncLocal with a change handler keeps its null values).
    private static readonly ExecutionContext Initial = ExecutionContext.Capture()!;

    [GlobalSetup]
    public void Setup()
    {
        ExecutionContext.Restore(Initial);
        if (Mode == Integration.None)
            return;
        var options = new ActivityThreadContextOptions();
        if (Mode == Integration.IdsAndRoute)
            options.AttributeTags.Add("http.route");
        _integration = ActivityThreadContext.Start(options);
    }

    [GlobalCleanup]
    public void Cleanup() => _integration?.Dispose();

    [Benchmark]
    public void StartStop()
    {
        var a = new Activity("child").SetParentId(Trace, Parent, ActivityTraceFlags.Recorded);
        a.SetTag("http.route", "GET /users/{id}");
        a.Start().Stop();
    }
}
