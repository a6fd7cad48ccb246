/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NDK_CQ (cq.c).
 */
#ifndef _NDK_PRIV_CQ_H
#define _NDK_PRIV_CQ_H

#include "adapter.h"

/* Completions polled from the device per call into NdkGetCqResults. */
#define NDK_CQ_POLL_BATCH	16

/**
 * struct ndk_cq - an NDK_CQ
 * @ndk: the public object
 * @obj: lifetime state
 * @ibcq: the verbs CQ
 * @poll_cq: its driver's poll_cq, read once here so that a poll does not
 *	load it through the device, as ib_poll_cq() does
 * @depth: entries the consumer asked for
 * @comp_vector: completion vector chosen from the affinity
 * @sweep_due: @sweeps or @retires is not empty (sweep.c), or results are
 *	held; a hint for the poll path, beside @ibcq, which an empty poll
 *	reads as well; set and cleared under @sweep_lock
 * @notify_cb: the consumer's notification callback
 * @notify_ctx: its context
 * @arm: NDK_ARM_* state; a notification consumes it
 * @kicked: a kick other than a restoring's is due (ndk_cq_kick()); the
 *	notification softirq clears it
 * @dead: set before destruction, under @notify_lock; no notification
 *	starts afterwards
 * @notify_lock: serializes notification callbacks
 * @in_notify: a notification callback is running; destruction waits for
 *	it to clear
 * @notify_again: another one is due when it returns
 * @fatal: STATUS_SUCCESS, or the error that made the CQ unusable
 * @iop: softirq context in which notifications are delivered
 * @kick: schedules @iop from hard interrupt context for a task that
 *	called a handler with interrupts off (see ndk_cq_kick())
 * @moderation: newest moderation setting, count << 16 | period
 * @moderation_work: applies @moderation
 * @stats: the device's counters, at hand for the poll path
 * @owner: a hint, the QP the poll path last found as the owner of a
 *	request; it names a QP that is live, or closed since but not freed
 *	(see ndk_cq_forget_owner())
 * @held: results wait in @wc from @stash_at to @stash_end, behind a
 *	receive that invalidated a registered region, until its restoring
 *	(@hold) is done: the consumer gets none of them before the region
 *	works again. Poller's, read by NdkArmCq
 * @poll_dev: @poll_cq while results are held (@held), when the poll path
 *	calls a stub in its place
 * @hold: ndk_mr_restored()'s ticket the held results wait for, or 0
 * @held_has: @held_res waits, before the completions in @wc
 * @held_res: the result of the receive that invalidated the region
 * @stash_at: first held completion in @wc
 * @stash_end: end of the held completions in @wc
 * @held_node: entry in the device's @held_cqs, notified when restored
 * @results: the buffer of the NdkGetCqResults(Ex) call in progress
 * @nresults: and its length
 * @sweep_lock: guards @sweeps and @retires, which the poller, the QPs
 *	that fail or close and the CQ's destruction change
 * @sweeps: queues of failed or closed QPs whose outstanding requests
 *	this CQ's poller reports
 * @retires: closed QPs on an SRQ waiting for a poll that finds the CQ
 *	empty, under @sweep_lock (qp_create.c)
 * @rcu: frees the CQ after a grace period, for a notification
 * @wc: poll buffer; the consumer serializes polling. Last, and not
 *	zeroed at creation: a poll reads only the entries the driver wrote
 */
struct ndk_cq {
	NDK_CQ ndk;
	struct ndk_obj obj;
	struct ib_cq *ibcq;
	int (*poll_cq)(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
	u32 depth;
	int comp_vector;
	bool sweep_due;
	NDK_FN_CQ_NOTIFICATION_CALLBACK notify_cb;
	void *notify_ctx;
	atomic_t arm;
	atomic_t kicked;
	bool dead;
	spinlock_t notify_lock; /* serializes notification callbacks */
	bool in_notify;
	bool notify_again;
	NTSTATUS fatal;
	struct irq_poll iop;
	struct irq_work kick;
	atomic_t moderation;
	struct work_struct moderation_work;
	struct ndk_stats __percpu *stats;
	struct ndk_obj *owner;
	bool held;
	int (*poll_dev)(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
	int hold;
	bool held_has;
	NDK_RESULT_EX held_res;
	u8 stash_at;
	u8 stash_end;
	struct list_head held_node;
	void *results;
	ULONG nresults;
	spinlock_t sweep_lock; /* see above */
	struct list_head sweeps;
	struct list_head retires;
	struct rcu_head rcu;
	struct ib_wc wc[NDK_CQ_POLL_BATCH];
};

NTSTATUS ndk_create_cq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
		       NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
		       PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_CQ **ppNdkCq);
int ndk_cq_pick_vector(struct ib_device *ibdev, const GROUP_AFFINITY *aff);
int ndk_cq_arm_merge(int armed, ULONG type);
void ndk_cq_forget_owner(struct ndk_cq *cq, struct ndk_obj *owner);
void ndk_cq_sweep_kick(struct ndk_cq *cq);
void ndk_cq_restored(struct ndk_device *dev);
/* The control calls (cq_control.c). */
NTSTATUS ndk_resize_cq(NDK_CQ *pNdkCq, ULONG CqDepth,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext);
NTSTATUS
ndk_control_cq_interrupt_moderation(NDK_CQ *pNdkCq, ULONG ModerationInterval,
				    ULONG ModerationCount);
void ndk_cq_moderation_work(struct work_struct *work);
NTSTATUS ndk_cq_moderation(ULONG interval, ULONG count, ULONG depth,
			   u16 *cq_count, u16 *cq_period);

static inline struct ndk_cq *to_ndk_cq(NDK_CQ *cq)
{
	return container_of(cq, struct ndk_cq, ndk);
}

#endif /* _NDK_PRIV_CQ_H */
