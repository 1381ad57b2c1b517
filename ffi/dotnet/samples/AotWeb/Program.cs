// SPDX-License-Identifier: Apache-2.0
// An ASP.NET Core minimal API traced by OpenTelemetry's ASP.NET Core
// instrumentation, published with PublishAot=true and the OtelThreadCtx
// package: the request's activity, with its http.route, is published on the
// OS thread that runs the handler.
//
// usage: AotWeb REQUESTS
//
// It listens on 127.0.0.1 (a port of the system's choosing) and prints:
//
//   SELFCHECK <status> <reason>
//   LISTENING <port>
//
// GET /orders/{id} awaits (resuming on a thread pool thread), checks that
// the thread publishes exactly Activity.Current (with http.route, which a
// middleware takes from the endpoint routing chose), prints
//
//   EXPECT <tid> <trace id> <span id> <http.route>
//
// and spins (so that a sampler driven by a CPU clock sees the thread) until
// the reader is done.  Once REQUESTS handlers run, it prints READY <pid> and
// waits for a line on standard input; then the handlers return, and at the
// next line (or the end of standard input) the server stops and the program
// prints DONE and exits 0.  Any failure prints FAIL and exits 1.
using System;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using OpenTelemetry.Trace;
using OtelThreadCtx;

internal static class Program
{
    private static readonly ConcurrentQueue<string> Failures = new();

    private static int Main(string[] args)
    {
        int requests = args.Length > 0 ? int.Parse(args[0]) : 2;

        SelfCheck check = SelfCheck.Run();
        Console.WriteLine($"SELFCHECK {check.Status} {check.Reason}");
        if (!check.IsOk)
            return Fail("the self-check says a profiler will not find the slot");

        ProcessContext.Publish(new[] { new ResourceAttribute("service.name", "aot-web") });
        var options = new ActivityThreadContextOptions();
        options.AttributeTags.Add("http.route");
        using var integration = ActivityThreadContext.Start(options);

        var builder = WebApplication.CreateSlimBuilder(args);
        builder.Logging.ClearProviders();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Services.AddOpenTelemetry().WithTracing(t => t.AddAspNetCoreInstrumentation());
        var app = builder.Build();

        // OpenTelemetry's instrumentation tags the server activity with
        // http.route only when it stops; a profiler wants it while the
        // request runs.  Routing has picked the endpoint before this
        // middleware runs (WebApplication puts UseRouting first), so the
        // route is known here: tag the activity, and publish the tag at once
        // (Refresh: it was set after the activity became current).
        app.Use((context, next) =>
        {
            if (context.GetEndpoint() is RouteEndpoint endpoint && Activity.Current is Activity current)
            {
                current.SetTag("http.route", endpoint.RoutePattern.RawText);
                integration.Refresh();
            }
            return next(context);
        });

        using var running = new CountdownEvent(requests);
        using var release = new ManualResetEventSlim();
        app.MapGet("/orders/{id}", async (int id) =>
        {
            await Task.Yield();
            Activity? a = Activity.Current;
            if (a is null)
            {
                Failures.Enqueue($"order {id}: no activity in the handler");
                running.Signal();
                return Results.StatusCode(500);
            }
            Verify($"order {id}", a);
            string route = a.GetTagItem("http.route") as string ?? "(none)";
            Console.WriteLine($"EXPECT {ThreadId()} {a.TraceId.ToHexString()} {a.SpanId.ToHexString()} {route}");
            running.Signal();
            while (!release.IsSet)
                Thread.SpinWait(64);
            Verify($"order {id} after spinning", a);
            return Results.Text($"order {id} {a.TraceId.ToHexString()}");
        });

        app.StartAsync().Wait();
        var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!;
        Console.WriteLine($"LISTENING {new Uri(addresses.Addresses.First()).Port}");
        Console.Out.Flush();

        if (!running.Wait(TimeSpan.FromSeconds(120)))
            return Fail($"{requests - running.CurrentCount} of {requests} requests reached the handler");
        if (!Failures.IsEmpty)
            return Fail(string.Join("\n", Failures));
        Console.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        Console.In.ReadLine();
        release.Set();
        Console.In.ReadLine();
        app.StopAsync().Wait();
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
    private static void Verify(string where, Activity a)
    {
        bool published = CurrentThread.TryReadIds(out var trace, out var span, out var flags);
        if (!published || trace != a.TraceId || span != a.SpanId || flags != a.ActivityTraceFlags)
            Failures.Enqueue($"{where}: publishes {(published ? trace + "/" + span : "nothing")} for {a.TraceId}/{a.SpanId}");
    }

    // The OS thread id (/proc/thread-self is PID/task/TID).
    private static int ThreadId() =>
        int.Parse(Path.GetFileName(new FileInfo("/proc/thread-self").LinkTarget!));
}
