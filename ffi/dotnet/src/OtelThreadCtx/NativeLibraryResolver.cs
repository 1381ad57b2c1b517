// SPDX-License-Identifier: Apache-2.0
using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace OtelThreadCtx;

// Under the JIT (or a NativeAOT build that does not bind the library at
// link time), "otel-thread-ctx" is looked for as, in order:
//   1. OTEL_THREAD_CTX_LIBRARY, the path of the shared library, if set;
//   2. libotel-thread-ctx.so.1, the library's soname (what the package puts
//      next to the application, and what a system installation provides
//      without its development symlink), where the runtime looks for the
//      application's native assets, then through the dynamic loader;
//   3. the runtime's own probing (libotel-thread-ctx.so, ...).
// Calls bound by DirectPInvoke (the package's NativeAOT targets) never come
// here.
internal static class NativeLibraryResolver
{
    internal const string Soname = "libotel-thread-ctx.so.1";

#pragma warning disable CA2255 // The library's own resolver must be in place before its first call.
    [ModuleInitializer]
#pragma warning restore CA2255
    internal static void Register()
    {
        try
        {
            NativeLibrary.SetDllImportResolver(typeof(NativeLibraryResolver).Assembly, Resolve);
        }
        catch (InvalidOperationException)
        {
            // A resolver is set already: it decides.
        }
    }

    private static nint Resolve(string name, Assembly assembly, DllImportSearchPath? searchPath)
    {
        if (name != Native.Library)
            return 0;
        string? path = Environment.GetEnvironmentVariable("OTEL_THREAD_CTX_LIBRARY");
        if (!string.IsNullOrEmpty(path))
            return NativeLibrary.Load(path);
        return NativeLibrary.TryLoad(Soname, assembly, searchPath, out nint handle) ? handle : 0;
    }
}
