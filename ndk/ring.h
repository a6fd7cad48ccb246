/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The work-request ring of a QP's or SRQ's queue and the table of its
 * owners (ring.c); the fast-path helpers are inline here, used by the
 * posters (qp.c, srq.c) and the poller (cq.c).
 */
#ifndef _NDK_PRIV_RING_H
#define _NDK_PRIV_RING_H

#include "object.h"

/**
 * struct ndk_wr_ring - the requests of one work queue, until polled
 * @ctx: RequestContext of each slot
 * @seq: sequence number of the request in each slot, so that a late or
 *	repeated completion of a request that has left its slot is told
 *	from the one there now
 * @type: NDK_OPERATION_TYPE of each slot; every type a request is posted
 *	as fits a byte (ReceiveAndInvalidate is only reported, never posted)
 * @state: NDK_SLOT_* of each slot; the poster fills a free slot, the
 *	poller frees it once it has read it
 * @mask: slots - 1; there are twice as many slots as the queue holds
 *	requests, so a slot is free long before the sequence comes back
 * @depth: requests a QP's queue holds, as the consumer asked (an SRQ's
 *	depth is its own @depth, which may change)
 * @head: sequence number of the next request; poster only
 * @posted: requests posted, of QP queues; poster only. The depth bounds
 *	@posted - @retired. A request takes the slot of @head, or where an
 *	older one still holds that slot, the next free one: @head moves on
 *	to it, and the numbers passed over are never used. Requests leave
 *	their queue out of order where a read completes after the requests
 *	posted behind it (siw), and so may hold a slot for many turns.
 * @retired: requests the poller has retired; poller only (QP queues)
 * @sweep_next: the next sequence number the sweep looks at; poller only
 * @tag: the queue's kind and the owner's owner_id, placed as in a wr_id
 * @sweep: entry in the list of its CQ's queues to sweep (cq.c), empty
 *	while on none; under that CQ's @sweep_lock (QP queues)
 *
 * A request occupies its queue from posting until its result is polled,
 * whenever the device frees its own entry, so that a slot is never
 * reused under a completion still waiting in a CQ. A work request's
 * wr_id names its queue's owner, the queue and the sequence number, so
 * a completion finds its RequestContext and operation type even when
 * the device reports no opcode, as it may for errors and flushed
 * requests; and it finds them without wc->qp, which dangles once the QP
 * is destroyed.
 *
 * The six 32-bit fields leave no hole before @tag.
 *
 * A slot's @state orders it between the poster on one CPU and the poller
 * (or the sweep, which runs inside a poll) on another; four pairs:
 *
 * - fill: the poster writes @ctx, @seq and @type, then @state with a
 *   release (ndk_ring_take(), ndk_qp_post()); the poller's acquire of
 *   @state (ndk_wc_to_result()) and the sweep's (ndk_sweep_ring(),
 *   ndk_sweep_oldest()) come before they read the rest, so whoever sees
 *   the new state sees the slot's new contents.
 * - late completion: a completion for a request that has left its slot
 *   finds the slot free, or, refilled, a sequence number not its own,
 *   and is dropped; the fill pair makes the number it compares the one
 *   that goes with the state it saw.
 * - free: the poller reads the slot, then stores NDK_SLOT_FREE with a
 *   release (ndk_ring_free_slot(), ndk_srq_consumed()); the poster's
 *   acquire of a free state (ndk_ring_room(), ndk_ring_skip(),
 *   ndk_qp_post(), ndk_srq_take()) comes before it overwrites the slot.
 * - refusal: a request the device refuses is taken back by the poster
 *   with a cmpxchg of its state (ndk_qp_post_refused()), which the sweep
 *   also uses to claim a slot; exactly one of them frees it, and so the
 *   request has one outcome.
 */
struct ndk_wr_ring {
	void **ctx;
	u32 *seq;
	u8 *type;
	u8 *state;
	u32 mask;
	u32 depth;
	u32 head;
	u32 posted;
	u32 retired;
	u32 sweep_next;
	u64 tag;
	struct list_head sweep;
};

/* Bytes per slot of a ring: context, sequence number, type and state. */
#define NDK_RING_SLOT_BYTES	(sizeof(void *) + sizeof(u32) + 2 * sizeof(u8))

/*
 * Slot states. ndk signals every request to the device, and drops the
 * success of a silent one (QUIET) when it is polled. Unsignaled, a
 * silent request at the tail of a queue that fails would have nothing
 * to tell whether the device executed it or lost its flush, and the
 * sweep would report a request that succeeded as cancelled; and reads
 * complete out of order on siw, so no later result vouches for them.
 */
#define NDK_SLOT_FREE		0
#define NDK_SLOT_BUSY		1
#define NDK_SLOT_QUIET		2

/*
 * A wr_id: the queue's kind in the top two bits (0 for a request ndk did
 * not post), the owning QP's or SRQ's owner_id below, the sequence
 * number in the low 32 bits. @tag of a ring holds the id part.
 */
#define NDK_WR_SQ		1ULL
#define NDK_WR_RQ		2ULL
#define NDK_WR_SRQ		3ULL
#define NDK_WR_KIND_SHIFT	62
#define NDK_WR_ID_SHIFT		32
#define NDK_WR_ID_MASK		((1U << (NDK_WR_KIND_SHIFT - NDK_WR_ID_SHIFT)) - 1)

int ndk_ring_init(struct ndk_wr_ring *ring, u32 depth);
void ndk_ring_free(struct ndk_wr_ring *ring);
int ndk_wr_owner_add(struct ndk_obj *obj);
void ndk_wr_owner_del(struct ndk_obj *obj);
void ndk_wr_owner_set_next(u32 id);
extern struct xarray ndk_wr_owners;

/* The tag of @obj's queue of kind @kind (NDK_WR_SQ, _RQ or _SRQ). */
static inline u64 ndk_wr_tag(const struct ndk_obj *obj, u64 kind)
{
	return kind << NDK_WR_KIND_SHIFT | (u64)obj->owner_id << NDK_WR_ID_SHIFT;
}

/*
 * Fill the slot of request @head and return the wr_id naming it; no
 * allocation. The slot is taken before the device sees the request,
 * whose completion may be polled before the post returns;
 * ndk_ring_untake() gives it back if the device refuses it. The caller
 * reads the head once and passes it: every store here may alias it for
 * the compiler, which would load it again after each.
 */
static __always_inline u64 ndk_ring_take(struct ndk_wr_ring *ring, u32 head,
					 void *ctx, NDK_OPERATION_TYPE type,
					 u8 state)
{
	u32 slot = head & ring->mask;

	ring->ctx[slot] = ctx;
	ring->seq[slot] = head;
	ring->type[slot] = type;
	/* Pairs with the poller's and the sweep's acquire: the slot is filled. */
	smp_store_release(&ring->state[slot], state);
	return ring->tag | head;
}

/* Some request of the queue has had no result yet; any context. */
static inline bool ndk_ring_outstanding(const struct ndk_wr_ring *ring)
{
	return ring->ctx && READ_ONCE(ring->retired) != READ_ONCE(ring->posted);
}

/* The device refused request @head: nothing will poll it. */
static __always_inline void ndk_ring_untake(struct ndk_wr_ring *ring, u32 head)
{
	WRITE_ONCE(ring->state[head & ring->mask], NDK_SLOT_FREE);
}

#endif /* _NDK_PRIV_RING_H */
