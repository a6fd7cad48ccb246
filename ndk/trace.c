// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one place ndk's tracepoints are defined (see trace.h). */
#define CREATE_TRACE_POINTS
#include "trace.h"

/* The KUnit suite ndk_trace attaches probes to these. */
#define NDK_TEST_TRACEPOINT(name) EXPORT_SYMBOL_NDK_TEST(__tracepoint_##name)

NDK_TEST_TRACEPOINT(ndk_object_create);
NDK_TEST_TRACEPOINT(ndk_object_close);
NDK_TEST_TRACEPOINT(ndk_close_done);
NDK_TEST_TRACEPOINT(ndk_callback);
NDK_TEST_TRACEPOINT(ndk_connect);
NDK_TEST_TRACEPOINT(ndk_accept);
NDK_TEST_TRACEPOINT(ndk_complete_connect);
NDK_TEST_TRACEPOINT(ndk_cm_event);
