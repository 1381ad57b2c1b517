/* SPDX-License-Identifier: Apache-2.0 */
/* <check.h> where Check cannot be linked (musl): the suites compile
 * unchanged against the same API in tests/lib/check-lite.h. */
#include "../check-lite.h"
