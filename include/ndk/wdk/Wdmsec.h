/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Windows file names are case-insensitive, Linux ones are not: drivers
 * that include "Wdmsec.h" get <wdmsec.h>.
 */
#include "wdmsec.h"
