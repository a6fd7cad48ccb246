/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NDK_QP (qp.c), and the SGE conversion it shares with srq.c.
 */
#ifndef _NDK_PRIV_QP_H
#define _NDK_PRIV_QP_H

#include "adapter.h"
#include "ring.h"

/*
 * Initiator requests with NDK_OP_FLAG_DEFER a QP holds at most; the chain
 * goes to the device when it is full, or sooner on a shallower queue.
 */
#define NDK_DEFER_MAX		16

/**
 * union ndk_held_wr - a deferred initiator request waiting in its QP
 * @wr: the request
 * @rdma: an RDMA read or write
 * @reg: a fast registration
 */
union ndk_held_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_reg_wr reg;
};

/**
 * struct ndk_qp - an NDK_QP
 * @ndk: the public object
 * @obj: lifetime state; successor of its PD and of both CQs, which are
 *	its first two @obj.extra antecedents, the receive CQ first
 * @ibqp: the verbs RC QP
 * @context: the consumer's QPContext, returned in every result
 * @srq: SRQ that replaces the receive queue, or NULL
 * @conn: the connector using the QP, if any
 * @connected: the connection is established; sends may be posted
 * @in_error: ndk_qp_set_error() moved the QP to the error state
 * @ending: the QP has been connected, or NdkFlush or ndk_qp_set_error()
 *	began its error move: a driver that refuses a receive as not
 *	connected from then on is ending the connection (ndk_receive())
 * @cancelling: the consumer asked for the QP's requests to end (NdkFlush,
 *	NdkDisconnect); a request the device fails from then on as a local
 *	QP error was aborted by it (see ndk_wc_status())
 * @inline_inv: the device sends inline data with an invalidation
 * @max_rsge: SGEs per receive, as the consumer asked (the adapter's
 *	MaxReceiveRequestSge bounds it to 16 bits)
 * @max_isge: SGEs per initiator request, as the consumer asked (16 bits,
 *	as @max_rsge)
 * @inline_size: inline bytes per request, as the consumer asked (the
 *	adapter's MaxInlineDataSize bounds it to 16 bits)
 * @max_xfer: the adapter's MaxTransferLength, at hand for the post path
 * @stats: the device's counters, at hand for the post path
 * @driver: the state of the driver's module (ndk_driver_state()), at
 *	hand for the post path
 * @max_held: deferred requests held at most: NDK_DEFER_MAX, or the
 *	initiator queue's depth if smaller (a chain cannot be longer)
 * @isge: @max_held + 1 initiator SGE arrays of max(@max_isge, 1) entries,
 *	one per held request and a spare, then a spare receive array of
 *	max(@max_rsge, 1) (ndk_sges_packed()); the consumer serializes
 *	each queue
 * @held: @max_held deferred requests not posted yet, chained in order
 * @nheld: how many; only the poster raises it
 * @held_owner: 1 while the poster or ndk_qp_set_error() works on @held
 * @sq: slots of the initiator queue
 * @rq: slots of the receive queue, with an SRQ none; its depth is the
 *	receive queue's, as the consumer asked, from creation on
 * @flush_work: moves the QP to the error state for NdkFlush
 * @sweep_work: hands the queues to their CQs' sweeps once the device
 *	has had ndk_sweep_ms to report them (sweep.c)
 * @sweep_refs: the QP's own reference, dropped when it is closed, and
 *	one for each of its queues on a sweep list; the last releases it
 * @release_work: releases the QP once the last reference is gone
 * @error_at: jiffies of ndk_qp_set_error()'s error move
 * @last_wqe: the device raised IB_EVENT_QP_LAST_WQE_REACHED: it has
 *	completed every receive the QP took from its SRQ
 * @retire: enum ndk_retire, how far the closed QP's verbs QP is on its
 *	way out (qp_create.c)
 * @retire_force: one of the QP's antecedents is being closed: the verbs
 *	QP goes now, without waiting for polls
 * @retire_polled: the receive CQ was found empty after the device had
 *	completed the QP's receives
 * @retire_work: moves the retirement on
 * @retire_cq_node: entry in the receive CQ's @retires
 * @srq_node: entry in the SRQ's @qps
 * @rcu: frees the QP after a grace period, for the poll path
 *
 * The depths and SGE counts the device granted are not kept: ndk checks
 * requests against what the consumer asked for, as every device would.
 */
struct ndk_qp {
	NDK_QP ndk;
	struct ndk_obj obj;
	struct ib_qp *ibqp;
	PVOID context;
	struct ndk_srq *srq;
	struct ndk_connector *conn;
	bool connected;
	bool in_error;
	bool ending;
	bool cancelling;
	bool inline_inv;
	u16 inline_size;
	u16 max_rsge;
	u16 max_isge;
	u32 max_held;
	u32 max_xfer;
	struct ndk_stats __percpu *stats;
	const enum module_state *driver;
	struct ib_sge *isge;
	union ndk_held_wr *held;
	u32 nheld;
	atomic_t held_owner;
	struct ndk_wr_ring sq;
	struct ndk_wr_ring rq;
	struct work_struct flush_work;
	struct delayed_work sweep_work;
	atomic_t sweep_refs;
	struct work_struct release_work;
	unsigned long error_at;
	bool last_wqe;
	bool retire_force;
	bool retire_polled;
	atomic_t retire;
	struct work_struct retire_work;
	struct list_head retire_cq_node;
	struct hlist_node srq_node;
	struct rcu_head rcu;
};

/*
 * An NDK_SGE is laid out as an ib_sge (address, length, token), so the
 * posting calls hand the consumer's array to the device as it is: a
 * driver reads the list only during the call.
 */
static_assert(sizeof(NDK_SGE) == sizeof(struct ib_sge));
static_assert(offsetof(NDK_SGE, LogicalAddress) ==
	      offsetof(struct ib_sge, addr));
static_assert(offsetof(NDK_SGE, Length) == offsetof(struct ib_sge, length));
static_assert(offsetof(NDK_SGE, MemoryRegionToken) ==
	      offsetof(struct ib_sge, lkey));

static __always_inline struct ib_sge *ndk_ib_sges(const NDK_SGE *sgl)
{
	return (struct ib_sge *)sgl;
}

/*
 * Check that @sgl has at most @max entries and add up their bytes. An
 * SGE's address is a virtual address inside a region registered at that
 * address, or a device address with the privileged token: either way the
 * 64 bits go to the device unchanged.
 */
static __always_inline NTSTATUS ndk_sges(const NDK_SGE *sgl, ULONG n,
					 ULONG max, u64 *total)
{
	u64 sum = 0;
	ULONG i;

	if (unlikely(n > max || (n && !sgl)))
		return STATUS_INVALID_PARAMETER;
	for (i = 0; i < n; i++)
		sum += sgl[i].Length;
	*total = sum;
	return STATUS_SUCCESS;
}

/**
 * ndk_sges_packed() - an SGE list for the device, without empty SGEs
 *	before data
 * @pSgl: the consumer's SGEs, checked
 * @nSge: their number; the number in the list returned
 * @spare: room for *@nSge entries, the poster's own
 *
 * siw (6.1 to 7.3) looks no region up for a zero-length SGE. Its
 * transmit thread then dereferences that missing region to walk past the
 * SGE to the data behind it, and the release of a request's regions
 * stops at the first missing one, leaking the others. A zero-length SGE
 * carries nothing, so the device gets the list without those, in
 * @spare; a list without one before data goes as it is.
 *
 * Return: @pSgl as verbs SGEs, or @spare.
 */
static inline struct ib_sge *ndk_sges_packed(const NDK_SGE *pSgl, ULONG *nSge,
					     struct ib_sge *spare)
{
	struct ib_sge *from = ndk_ib_sges(pSgl);
	ULONG i, n = 0;

	for (i = 0; i + 1 < *nSge && from[i].length; i++)
		;
	if (i + 1 >= *nSge)
		return from;
	for (i = 0; i < *nSge; i++)
		if (from[i].length)
			spare[n++] = from[i];
	*nSge = n;
	return spare;
}

/**
 * enum ndk_retire - a closed QP's verbs QP on its way out (qp_create.c)
 * @NDK_RETIRE_NONE: the QP is not closed, or went at once
 * @NDK_RETIRE_WAIT: it waits for its queues' results, the SRQ's, and on an
 *	SRQ a poll that finds the receive CQ empty
 * @NDK_RETIRE_DONE: the verbs QP is destroyed, or being destroyed
 */
enum ndk_retire {
	NDK_RETIRE_NONE,
	NDK_RETIRE_WAIT,
	NDK_RETIRE_DONE,
};

void ndk_qp_set_error(struct ndk_qp *qp);

/* The connection's setup is over: the QP is connected if @up. */
static inline void ndk_qp_set_connected(struct ndk_qp *qp, bool up)
{
	if (up)
		WRITE_ONCE(qp->ending, true);
	WRITE_ONCE(qp->connected, up);
}

/*
 * siw refuses a receive as not connected while another thread holds its
 * QP's state lock to change the state. Once the QP has been connected,
 * or is being failed, that change ends the connection: ndk_receive()
 * takes the receive, as one posted to a failed QP, and the failure's
 * sweep, which comes after the state change, reports it cancelled.
 * During connection setup the refusal stands (see deviations.rst).
 */
static inline bool ndk_qp_refusal_ends(struct ndk_qp *qp, int err)
{
	return err == -ENOTCONN && READ_ONCE(qp->ending);
}

void ndk_qp_sweep_later(struct ndk_qp *qp);
void ndk_qp_retire_work(struct work_struct *work);

/*
 * Have a retiring QP look at its state again (qp_create.c); a QP that is
 * not retiring is left alone. Any context; the caller keeps @qp from
 * being released.
 */
static inline void ndk_qp_retire_kick(struct ndk_qp *qp)
{
	if (atomic_read(&qp->retire) != NDK_RETIRE_NONE)
		queue_work(ndk_wq, &qp->retire_work);
}

void ndk_qp_event(struct ib_event *event, void *ctx);
/* What qp_create.c sets a new QP up with, from qp.c. */
extern const NDK_QP_DISPATCH ndk_qp_dispatch;
void ndk_qp_flush_work(struct work_struct *work);
void ndk_qp_sweep_work(struct work_struct *work);
void ndk_qp_sweep_now(struct ndk_qp *qp);
void ndk_qp_kill(struct ndk_obj *obj);
NTSTATUS ndk_create_qp_with_srq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
				NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
				PVOID QPContext, ULONG InitiatorQueueDepth,
				ULONG MaxInitiatorRequestSge,
				ULONG InlineDataSize,
				NDK_FN_CREATE_COMPLETION CreateCompletion,
				PVOID RequestContext, NDK_QP **ppNdkQp);
NTSTATUS ndk_create_qp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
		       NDK_CQ *pInitiatorCq, PVOID QPContext,
		       ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth,
		       ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
		       ULONG InlineDataSize,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_QP **ppNdkQp);

/* The suites' hook into the destruction of a verbs QP (qp_create.c). */
#if IS_ENABLED(CONFIG_KUNIT)
void ndk_qp_set_destroy_hook(void (*hook)(struct ib_qp *ibqp));
#endif

/* The CQs of the QP: ndk_qp_new() added the receive CQ, then the other. */
static inline struct ndk_cq *ndk_qp_cq_at(struct ndk_qp *qp, int i)
{
	return container_of(qp->obj.extra[i], struct ndk_cq, obj);
}

/* The consumer's QPContext of a work completion's QP. */
static inline PVOID ndk_qp_context(struct ib_qp *ibqp)
{
	struct ndk_qp *qp = ibqp ? ibqp->qp_context : NULL;

	return qp ? qp->context : NULL;
}

#endif /* _NDK_PRIV_QP_H */
