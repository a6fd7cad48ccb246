/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* <ntddk.h> of a ported Windows driver: the WDK subset of <wdm.h>. */
#ifndef _NDK_WDK_NTDDK_H
#define _NDK_WDK_NTDDK_H

#include "wdm.h"

#endif /* _NDK_WDK_NTDDK_H */
