/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sweep (sweep.c): ndk's own results for the requests of a failed or
 * closed QP that its device never reported.
 */
#ifndef _NDK_PRIV_SWEEP_H
#define _NDK_PRIV_SWEEP_H

#include "ring.h"

struct ndk_cq;
struct ndk_qp;

/* How long a failed QP's device has to report its requests (sweep.c). */
extern unsigned int ndk_sweep_ms;
unsigned int ndk_sweep_set_ms(unsigned int ms);

bool ndk_sweep_add(struct ndk_cq *cq, struct ndk_qp *qp,
		   struct ndk_wr_ring *ring);
ULONG ndk_sweep_poll(struct ndk_cq *cq, void *results, ULONG n, bool ex);
void ndk_sweep_drop(struct ndk_cq *cq);
void ndk_sweep_put(struct ndk_qp *qp);

#endif /* _NDK_PRIV_SWEEP_H */
