/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <ndkpi.h> of a ported Windows driver: ndk's NDKPI declarations
 * (include/ndk/ndkpi.h), with the WDK types they are used with.
 */
#ifndef _NDK_WDK_NDKPI_H
#define _NDK_WDK_NDKPI_H

#include "wdm.h"
#include <ndk/ndkpi.h>

#endif /* _NDK_WDK_NDKPI_H */
