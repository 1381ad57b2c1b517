// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Threading;

namespace OtelThreadCtx;

/// <summary>Options of <see cref="ActivityThreadContext.Start"/>.</summary>
public sealed class ActivityThreadContextOptions
{
    /// <summary>
    /// Tags of the activity published as thread attributes, each under a key
    /// of the same name (registered by Start), e.g. "http.route".  A tag the
    /// activity does not have is left out, and so is one whose value's
    /// ToString() throws or returns null (the activity is published without
    /// it; the exception is caught, never thrown into the application); a
    /// value longer than 255 bytes of UTF-8 is cut at a character boundary.
    /// </summary>
    public IList<string> AttributeTags { get; } = new List<string>();

    /// <summary>
    /// When true (the default), a tag the activity lacks is taken from its
    /// nearest parent in the process that has it (Activity.Parent): the
    /// child spans of a request publish its http.route too.
    /// </summary>
    public bool InheritTags { get; set; } = true;

    /// <summary>
    /// Which activities are published; a thread running one it rejects
    /// publishes nothing.  Null: every W3C activity.
    /// </summary>
    public Func<Activity, bool>? Filter { get; set; }
}

/// <summary>
/// Makes the current <see cref="Activity"/> the thread context of whichever
/// OS thread runs it.
/// </summary>
/// <remarks>
/// <para>
/// <see cref="Activity.Current"/> is an AsyncLocal: it follows the logical
/// flow of a request, across awaits, from thread to thread.  But
/// <see cref="Activity.CurrentChanged"/> is raised only where the property is
/// set (an activity starts or stops), not when the runtime moves the flow to
/// another thread by switching its execution context.  So Start subscribes to
/// CurrentChanged and copies each new value into an AsyncLocal of its own,
/// created with a change handler: the runtime calls that handler on every
/// thread whose execution context switches to a different value, when a
/// thread starts running a continuation of the flow and when it stops.  On
/// each call the thread publishes the activity it now runs, with its trace
/// id, span id, flags and configured tags (otel_thread_ctx_update_all), or
/// nothing (otel_thread_ctx_detach) when there is none, it is not in the W3C
/// format, or the filter rejects it.  So the thread an await resumes on
/// publishes the activity, and the thread it left publishes nothing of it.
/// </para>
/// <para>
/// While it runs, the integration owns every thread's slot: code that
/// attaches contexts itself is overwritten at the next activity change.
/// Tags set after an activity became current are published at its next
/// change, or at once with <see cref="Refresh"/>.  An activity made current
/// before Start is published on the thread that calls Start only, and
/// follows its flow only once an activity is started or stopped in it.
/// Disposing the handle stops the integration and unpublishes the calling
/// thread; other threads keep their last record until they publish again or
/// exit.  One integration runs at a time.
/// </para>
/// </remarks>
public sealed class ActivityThreadContext : IDisposable
{
    private static readonly object s_lock = new();
    private static ActivityThreadContext? s_active;

    private readonly string[] _tags;
    private readonly int[] _keys;
    private readonly Func<Activity, bool>? _filter;
    private readonly bool _inherit;
    private readonly EventHandler<ActivityChangedEventArgs> _handler;
    private readonly AsyncLocal<Activity?> _running;
    private volatile bool _disposed;

    [ThreadStatic]
    private static ThreadAttribute[]? t_attrs;

    private ActivityThreadContext(ActivityThreadContextOptions options)
    {
        _tags = new string[options.AttributeTags.Count];
        options.AttributeTags.CopyTo(_tags, 0);
        _keys = new int[_tags.Length];
        for (int i = 0; i < _tags.Length; i++)
            _keys[i] = AttributeKeys.Register(_tags[i]);
        _filter = options.Filter;
        _inherit = options.InheritTags;
        _handler = OnCurrentChanged;
        _running = new AsyncLocal<Activity?>(OnRunningChanged);
    }

    /// <summary>
    /// Starts publishing the current activity on every thread, and publishes
    /// it (or nothing) on the calling thread at once.
    /// </summary>
    /// <exception cref="InvalidOperationException">An integration is running already.</exception>
    /// <exception cref="ThreadContextException">Registering a tag's key failed (Name, Keys).</exception>
    public static ActivityThreadContext Start(ActivityThreadContextOptions? options = null)
    {
        lock (s_lock)
        {
            if (s_active != null)
                throw new InvalidOperationException("an ActivityThreadContext is running already: dispose it first");
            var ctx = new ActivityThreadContext(options ?? new ActivityThreadContextOptions());
            Activity.CurrentChanged += ctx._handler;
            s_active = ctx;
            ctx._running.Value = Activity.Current;
            ctx.Publish(Activity.Current);
            return ctx;
        }
    }

    /// <summary>The key index each configured tag is published under.</summary>
    public IReadOnlyDictionary<string, int> Keys
    {
        get
        {
            var d = new Dictionary<string, int>();
            for (int i = 0; i < _tags.Length; i++)
                d[_tags[i]] = _keys[i];
            return d;
        }
    }

    /// <summary>
    /// Publishes <see cref="Activity.Current"/> on the calling thread again,
    /// with its tags as they are now.  Returns the library's code.
    /// </summary>
    public ThreadContextError Refresh() => Publish(Activity.Current);

    /// <summary>Stops the integration and unpublishes the calling thread.</summary>
    public void Dispose()
    {
        lock (s_lock)
        {
            if (_disposed)
                return;
            _disposed = true;
            Activity.CurrentChanged -= _handler;
            if (s_active == this)
                s_active = null;
        }
        CurrentThread.Detach();
    }

    // Activity.Current was set, in the flow running on this thread: the
    // flow's own copy follows (and its handler publishes).
    private void OnCurrentChanged(object? sender, ActivityChangedEventArgs e)
    {
        if (!_disposed)
            _running.Value = e.Current;
    }

    // Called by the runtime on the thread where the flow's copy changed: set
    // above, or switched by the execution context (a thread starts or stops
    // running a continuation).  It runs inside the runtime's context switch
    // and must not throw: only the Try paths are used.
    private void OnRunningChanged(AsyncLocalValueChangedArgs<Activity?> args)
    {
        if (_disposed)
            return;
        try
        {
            Publish(args.CurrentValue);
        }
        catch (Exception)
        {
            // An exception here would end the process (the runtime fails
            // fast on one thrown from a change notification).  Publish
            // catches what the application's code throws (a tag's
            // ToString(), the filter); should anything else throw, the
            // thread publishes nothing rather than a stale activity.
            CurrentThread.Detach();
        }
    }

    private ThreadContextError Publish(Activity? a)
    {
        if (a is null || a.IdFormat != ActivityIdFormat.W3C || (_filter != null && !Filtered(a)))
        {
            CurrentThread.Detach();
            return ThreadContextError.Ok;
        }
        ActivityTraceId traceId = a.TraceId;
        ActivitySpanId spanId = a.SpanId;
        ActivityTraceFlags flags = a.ActivityTraceFlags;
        ThreadContextError rc;
        if (_tags.Length == 0)
        {
            rc = CurrentThread.TryUpdateAll(traceId, spanId, flags);
        }
        else
        {
            ThreadAttribute[] attrs = t_attrs ??= new ThreadAttribute[_tags.Length];
            int n = 0;
            for (int i = 0; i < _tags.Length; i++)
            {
                string? v = TagText(FindTag(a, _tags[i]));
                if (v != null)
                    attrs[n++] = new ThreadAttribute(_keys[i], Fit(v));
            }
            rc = CurrentThread.TryUpdateAll(traceId, spanId, flags, attrs.AsSpan(0, n));
            attrs.AsSpan(0, n).Clear();
            // Attributes that do not fit together (or a value the library
            // refuses) must not keep the thread publishing the activity it
            // ran before: publish the ids alone.
            if (rc != ThreadContextError.Ok && n > 0)
                rc = CurrentThread.TryUpdateAll(traceId, spanId, flags);
        }
        if (rc != ThreadContextError.Ok)
            CurrentThread.Detach();
        return rc;
    }

    private bool Filtered(Activity a)
    {
        try
        {
            return _filter!(a);
        }
        catch (Exception)
        {
            return false;
        }
    }

    private object? FindTag(Activity a, string name)
    {
        for (Activity? x = a; x != null; x = _inherit ? x.Parent : null)
        {
            object? v = x.GetTagItem(name);
            if (v != null)
                return v;
        }
        return null;
    }

    // A tag's value as text, or null to leave the attribute out: a value
    // whose ToString() throws (the application's code, called inside
    // Activity.Start() and the runtime's context switches, where an
    // exception must not escape) is left out, and the activity published
    // without it.
    private static string? TagText(object? v)
    {
        try
        {
            return v switch
            {
                null => null,
                string s => s,
                IFormattable f => f.ToString(null, CultureInfo.InvariantCulture),
                _ => v.ToString(),
            };
        }
        catch (Exception)
        {
            return null;
        }
    }

    // At most 255 bytes of UTF-8, cut at a character boundary.
    private static string Fit(string s)
    {
        if (s.Length <= ThreadContext.MaxValueLength / 3 || Encoding.UTF8.GetByteCount(s) <= ThreadContext.MaxValueLength)
            return s;
        Span<byte> buf = stackalloc byte[ThreadContext.MaxValueLength];
        System.Text.Unicode.Utf8.FromUtf16(s, buf, out int read, out _, replaceInvalidSequences: true, isFinalBlock: false);
        return s.Substring(0, read);
    }
}
