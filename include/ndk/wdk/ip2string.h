/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* <ip2string.h> of a ported Windows driver: the Rtl IP string helpers of <wdm.h>. */
#ifndef _NDK_WDK_IP2STRING_H
#define _NDK_WDK_IP2STRING_H

#include "wdm.h"

#endif /* _NDK_WDK_IP2STRING_H */
