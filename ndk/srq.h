/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NDK_SRQ (srq.c).
 */
#ifndef _NDK_PRIV_SRQ_H
#define _NDK_PRIV_SRQ_H

#include "ring.h"

/**
 * struct ndk_srq - an NDK_SRQ
 * @ndk: the public object
 * @obj: lifetime state
 * @ibsrq: the verbs SRQ
 * @init: its creation attributes
 * @max_sge: SGEs per receive
 * @spare: @max_sge SGEs for the poster (ndk_sges_packed())
 * @depth: current depth
 * @queued: receives posted minus SRQ receive completions polled
 * @notify: consumer's notification callback, or NULL
 * @notify_ctx: its context
 * @event_work: runs the notification of a device event on ndk_wq
 * @event_status: the status of that event
 * @busy: an NdkModifySrq is pending, until its work has read the fields
 *	below; the next may fill them from then on
 * @modify_work: runs it
 * @new_depth: its depth, 0 to keep
 * @new_threshold: its threshold, 0 to leave the notification as it is
 * @modify_cb: its completion
 * @modify_ctx: and its context
 * @ring: slots of the receives, sized for MaxSrqDepth so that a resize
 *	never has to replace it under a poster. Receives of one SRQ are
 *	polled from the CQs of its QPs, in any order and concurrently, so
 *	the poster takes the next free slot rather than the next in order,
 *	and @queued, not the ring, counts what the SRQ holds
 * @qps_lock: serializes changes of @qps
 * @qps: the live QPs on the SRQ (RCU), which give a completion's QPContext
 * @free_work: frees the SRQ after a grace period, for the poll path
 */
struct ndk_srq {
	NDK_SRQ ndk;
	struct ndk_obj obj;
	struct ib_srq *ibsrq;
	struct ib_srq_init_attr init;
	u32 max_sge;
	struct ib_sge *spare;
	u32 depth;
	atomic_t queued;
	NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
	void *notify_ctx;
	struct work_struct event_work;
	NTSTATUS event_status;
	atomic_t busy;
	struct work_struct modify_work;
	u32 new_depth;
	u32 new_threshold;
	NDK_FN_REQUEST_COMPLETION modify_cb;
	void *modify_ctx;
	struct ndk_wr_ring ring;
	spinlock_t qps_lock; /* see above */
	struct hlist_head qps;
	struct rcu_work free_work;
};

NTSTATUS ndk_create_srq(NDK_PD *pNdkPd, ULONG SrqDepth,
			ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
			NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
			PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
			NDK_FN_CREATE_COMPLETION CreateCompletion,
			PVOID RequestContext, NDK_SRQ **ppNdkSrq);
void ndk_srq_consumed(struct ndk_srq *srq, u32 slot);
PVOID ndk_srq_qp_context(struct ndk_srq *srq, struct ib_qp *ibqp);

/* The ndk_srq suite's hook into a modify's completion (srq.c). */
#if IS_ENABLED(CONFIG_KUNIT)
void ndk_srq_set_modify_hook(void (*hook)(NDK_SRQ *srq));
#endif

#endif /* _NDK_PRIV_SRQ_H */
