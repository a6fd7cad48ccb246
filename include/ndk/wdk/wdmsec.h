/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * <wdmsec.h> of a ported Windows driver. Device objects with security
 * descriptors have no Linux counterpart: creating one is a build error.
 */
#ifndef _NDK_WDK_WDMSEC_H
#define _NDK_WDK_WDMSEC_H

#include "wdm.h"

#define IoCreateDeviceSecure(...)	NDK_WDK_NOT_OFFERED(IoCreateDeviceSecure)

#endif /* _NDK_WDK_WDMSEC_H */
