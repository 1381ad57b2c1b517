// SPDX-License-Identifier: Apache-2.0
using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("OtelThreadCtx.Tests")]
