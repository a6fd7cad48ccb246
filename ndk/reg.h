/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The registration path of a PD (reg.c): the QP that makes regions
 * valid, used by pd.c (its lifetime) and mr.c (its requests).
 */
#ifndef _NDK_PRIV_REG_H
#define _NDK_PRIV_REG_H

#include "loopback.h"

/**
 * struct ndk_reg - a PD's path for memory registration
 * @lock: serializes the requests; each waits for its own completion
 * @cq: completion queue of the loop's QPs, polled by the request
 * @done: completed by @cq's completion handler
 * @loop: a loopback connection, made at the first registration; REG_MR
 *	and LOCAL_INV requests go to @loop.qp
 *
 * Kernel verbs make a region valid only through a work request posted on
 * a QP of its PD, so each PD that registers memory owns one such QP.
 */
struct ndk_reg {
	struct mutex lock; /* one registration request at a time */
	struct ib_cq *cq;
	struct completion done;
	struct ndk_loop loop;
};

struct ndk_pd;

void ndk_reg_init(struct ndk_reg *reg);
void ndk_reg_destroy(struct ndk_reg *reg);
NTSTATUS ndk_reg_post(struct ndk_pd *pd, struct ib_send_wr *wr);
NTSTATUS ndk_reg_invalidate(struct ndk_pd *pd, u32 key);
bool ndk_reg_may_run(void);

#endif /* _NDK_PRIV_REG_H */
