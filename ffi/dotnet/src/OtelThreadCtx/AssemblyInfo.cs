// SPDX-License-Identifier: Apache-2.0
using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("OtelThreadCtx.Tests")]

// No zeroing of stack memory (stackalloc buffers, the 640-byte records read
// into): every buffer is written before it is read, by the binding or by
// the library, and zeroing them cost more than some of the calls they serve.
[module: SkipLocalsInit]
