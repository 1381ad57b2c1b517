// SPDX-License-Identifier: Apache-2.0
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Buffers;
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

    /// <summary>
    /// When true, the integration is told of every change of
    /// <see cref="Activity.Current"/>, set or switched with the execution
    /// context, by a change handler it installs on Activity.Current's own
    /// AsyncLocal, and writes no AsyncLocal of its own: no allocation of its
    /// own per change, and about half the time.  It relies on private fields
    /// of the runtime's libraries (.NET 9 or later), and a flow in which
    /// Activity.Current held a value (null included) before the handler was
    /// installed never tells it of a switch: start it before any activity.
    /// Where the handler cannot be installed or is not called, the
    /// integration uses an AsyncLocal of its own, as it does when this is
    /// false (the default).  See <see cref="ActivityThreadContext"/>.
    /// </summary>
    public bool HookActivityCurrent { get; set; }
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
/// That second AsyncLocal costs a write (an execution context and its map
/// of values allocated) at every change.  With
/// <see cref="ActivityThreadContextOptions.HookActivityCurrent"/>, Start
/// instead installs the change handler on Activity.Current's own
/// AsyncLocal (Activity's private static s_current, and AsyncLocal's
/// private _valueChangedHandler, reached with UnsafeAccessor): the runtime
/// then calls it wherever Activity.Current changes, set or switched, and
/// nothing else is written.  The runtime lists an AsyncLocal's handler in
/// an execution context only when the value is first written in that
/// context's flow; so a flow in which Activity.Current held a value (null
/// included) before the handler was installed is never told of a switch.
/// The handler stays installed once Start has installed it (execution
/// contexts made meanwhile list it, and the runtime calls it when they
/// switch): while no integration uses it, it does nothing.  While it is
/// installed, an execution context keeps Activity.Current's null value
/// instead of dropping it.  Start falls back to the AsyncLocal of its own
/// when those fields are not there (.NET 8 cannot reach a field of a
/// generic type), when another handler is there, and, at the first change
/// the handler was not called for (each change raises CurrentChanged, which
/// checks), for good.
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
    private static volatile ActivityThreadContext? s_active;

    private readonly string[] _tags;
    private readonly int[] _keys;
    private readonly Func<Activity, bool>? _filter;
    private readonly bool _inherit;
    private readonly EventHandler<ActivityChangedEventArgs> _handler;
    private readonly AsyncLocal<Activity?> _running;
    private volatile bool _disposed;
    // True while the handler on Activity.Current's own AsyncLocal tells of
    // every change; false: the AsyncLocal of our own does.
    private volatile bool _hooked;

    // Set by the hook at a change made on this thread, checked and cleared
    // by CurrentChanged, which the same change raises right after.
    [ThreadStatic]
    private static bool t_hookSawSet;

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
            options ??= new ActivityThreadContextOptions();
            var ctx = new ActivityThreadContext(options);
            ctx._hooked = options.HookActivityCurrent && ActivityCurrentHook.TryInstall();
            Activity.CurrentChanged += ctx._handler;
            s_active = ctx;
            if (!ctx._hooked)
                ctx._running.Value = Activity.Current;
            ctx.Publish(Activity.Current);
            return ctx;
        }
    }

    /// <summary>
    /// True when the integration is told of changes by its handler on
    /// Activity.Current's own AsyncLocal; false when it writes an AsyncLocal
    /// of its own (see <see cref="ActivityThreadContextOptions.HookActivityCurrent"/>).
    /// </summary>
    public bool HooksActivityCurrent => _hooked;

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

    // Activity.Current was set, in the flow running on this thread.  Hooked:
    // the hook has published, and this checks that it ran (a change from a
    // value to itself writes nothing, and tells no handler); should it not
    // have, the AsyncLocal of our own takes over for good.  Otherwise the
    // flow's own copy follows (and its handler publishes).
    private void OnCurrentChanged(object? sender, ActivityChangedEventArgs e)
    {
        if (_disposed)
            return;
        if (_hooked)
        {
            if (t_hookSawSet || ReferenceEquals(e.Previous, e.Current))
            {
                t_hookSawSet = false;
                return;
            }
            _hooked = false;
        }
        _running.Value = e.Current;
    }

    // Called by the runtime, through ActivityCurrentHook, wherever
    // Activity.Current changes: set on this thread, or switched with the
    // execution context.
    internal static void OnActivityCurrentChanged(AsyncLocalValueChangedArgs<Activity?> args)
    {
        ActivityThreadContext? ctx = s_active;
        if (ctx is null || !ctx._hooked || ctx._disposed)
            return;
        if (!args.ThreadContextChanged)
            t_hookSawSet = true;
        ctx.OnRunningChanged(args);
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

    private unsafe ThreadContextError Publish(Activity? a)
    {
        if (a is null || a.IdFormat != ActivityIdFormat.W3C || (_filter != null && !Filtered(a)))
        {
            ThreadCalls.Detach(0);
            return ThreadContextError.Ok;
        }
        byte* ids = stackalloc byte[24];
        IdBytes.Trace(a.TraceId, ids);
        IdBytes.Span(a.SpanId, ids + 16);
        byte flags = (byte)a.ActivityTraceFlags;
        int rc;
        if (_tags.Length == 0)
        {
            rc = ThreadCalls.UpdateAll(ids, ids + 16, flags, null, 0);
        }
        else
        {
            // The tags' values as UTF-8, in a buffer of the record's size:
            // attributes whose values alone do not fit in it do not fit in
            // a record either.
            const int RecordAttrs = ThreadContext.MaxAttributesCapacity;
            byte* values = stackalloc byte[RecordAttrs];
            // An entry takes at least its two bytes of key and length.  A
            // few tags (the usual case) take a buffer of constant size,
            // which costs no more than the frame.
            const int FewAttrs = 8;
            Native.Attr* attrs = stackalloc Native.Attr[FewAttrs];
            if (_tags.Length > FewAttrs)
            {
                Native.Attr* many = stackalloc Native.Attr[Math.Min(_tags.Length, RecordAttrs / 2)];
                attrs = many;
            }
            int n = 0, used = 0;
            rc = 0;
            for (int i = 0; i < _tags.Length; i++)
            {
                object? o = FindTag(a, _tags[i]);
                string? v = o as string ?? TagText(o);
                if (v is null)
                    continue;
                int room = Math.Min(ThreadContext.MaxValueLength, RecordAttrs - used);
                OperationStatus st = Utf8Cache.Encode(v, values + used, room, out int len);
                // Longer than 255 bytes: cut at a character boundary (the
                // transcoder stops before a character that does not fit).
                // Longer than the room left: the attributes do not fit.  A
                // lone surrogate: the library would refuse the value.
                if (st == OperationStatus.InvalidData || n == RecordAttrs / 2 ||
                    (st == OperationStatus.DestinationTooSmall && room < ThreadContext.MaxValueLength))
                {
                    rc = (int)ThreadContextError.NoSpace;
                    break;
                }
                attrs[n].Key = (uint)_keys[i];
                attrs[n].Len = (uint)len;
                attrs[n].Value = values + used;
                n++;
                used += len;
            }
            if (rc == 0)
                rc = ThreadCalls.UpdateAll(ids, ids + 16, flags, n == 0 ? null : attrs, (nuint)n);
            // Attributes that do not fit together (or a value the library
            // refuses) must not keep the thread publishing the activity it
            // ran before: publish the ids alone.
            if (rc != 0)
                rc = ThreadCalls.UpdateAll(ids, ids + 16, flags, null, 0);
        }
        if (rc != 0)
            ThreadCalls.Detach(0);
        return (ThreadContextError)rc;
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

    // The tag's value on the activity, or on its nearest parent that has it.
    // Activity.GetTagItem would allocate an enumerator of the tags; the
    // struct enumerator of EnumerateTagObjects does not.
    private object? FindTag(Activity a, string name)
    {
        for (Activity? x = a; x != null; x = _inherit ? x.Parent : null)
        {
            foreach (ref readonly KeyValuePair<string, object?> tag in x.EnumerateTagObjects())
            {
                // A tag's name is usually the same string object as the
                // one configured (both literals): compared by reference
                // first.
                if (tag.Value != null &&
                    ((object)tag.Key == name || string.Equals(tag.Key, name, StringComparison.Ordinal)))
                    return tag.Value;
            }
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
}

// The change handler on Activity.Current's own AsyncLocal.  The runtime
// calls an AsyncLocal's handler when its value is set and when an execution
// context switch changes it, for the AsyncLocals whose handler was there
// when the value was written (ExecutionContext.SetLocalValue lists them in
// the new context).  Activity's (s_current) is made without one; this sets
// it, once, to a handler that stays: contexts made meanwhile list it, and a
// null handler there would throw inside the runtime's context switch.
internal static class ActivityCurrentHook
{
    private static readonly object s_lock = new();
    private static int s_state; // 0: not tried; 1: installed; -1: cannot be

    [UnsafeAccessor(UnsafeAccessorKind.StaticField, Name = "s_current")]
    private static extern ref AsyncLocal<Activity?> CurrentLocal(Activity? activity);

    // A field of a generic type: the accessor is declared in a generic
    // class, as the runtime requires (.NET 9 and later; .NET 8 refuses, and
    // the integration then uses an AsyncLocal of its own).
    private static class Field<T>
    {
        [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_valueChangedHandler")]
        internal static extern ref Action<AsyncLocalValueChangedArgs<T>>? Handler(AsyncLocal<T> local);
    }

    internal static bool TryInstall()
    {
        lock (s_lock)
        {
            if (s_state == 0)
            {
                try
                {
                    AsyncLocal<Activity?>? local = CurrentLocal(null);
                    if (local is null)
                    {
                        s_state = -1;
                    }
                    else
                    {
                        ref Action<AsyncLocalValueChangedArgs<Activity?>>? handler = ref Field<Activity?>.Handler(local);
                        if (handler is null)
                        {
                            handler = ActivityThreadContext.OnActivityCurrentChanged;
                            s_state = 1;
                        }
                        else
                        {
                            // Someone else's: leave it.
                            s_state = -1;
                        }
                    }
                }
                catch (Exception)
                {
                    // The fields are not there (another version of the
                    // runtime's libraries), or this runtime cannot reach them.
                    s_state = -1;
                }
            }
            return s_state == 1;
        }
    }
}
