// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: moving data.
 *
 * Work requests live in the cycle's slots (struct st_wr). They are
 * posted here and reaped from the CQs either by the thread, which polls
 * in every st_wait(), or by a CQ's notification callback, which drains
 * and re-arms. Every message, RDMA write and read, and every transfer
 * through the fast-registered buffer is verified byte for byte.
 */

#include <linux/mm.h>
#include <linux/string.h>

#include "stress.h"

static void st_result(struct st_cq *q, const NDK_RESULT_EX *res)
{
	struct st_cycle *c = q->obj.c;
	struct st_wr *w = res->RequestContext;

	if (w < c->wr || w >= c->wr + ST_WRS) {
		st_problem(c, "result with an unknown request context");
		return;
	}
	if (w->q != q || READ_ONCE(w->done)) {
		st_problem(c, "%s: result on the wrong CQ or twice", w->what);
		return;
	}
	/* Also after its QP's close: the context names the QP it was on. */
	if (!w->via_srq && res->QPContext != w->side)
		st_problem(c, "%s: result with another QP's context", w->what);
	w->status = res->Status;
	w->bytes = res->BytesTransferred;
	w->type = res->Type;
	st_set(w->done);
	atomic_dec(&q->pending);
	st_account(c, res->Status, w->allow, w->what);
}

/* Reap everything; the caller holds @q->lock and @q is not stopped. */
static void st_drain(struct st_cq *q)
{
	NDK_CQ *cq = container_of(q->obj.hdr, NDK_CQ, Header);
	NDK_RESULT_EX res[8];
	ULONG n, i;

	while ((n = cq->Dispatch->NdkGetCqResultsEx(cq, res, ARRAY_SIZE(res))))
		for (i = 0; i < n; i++)
			st_result(q, &res[i]);
}

void st_cq_notify(PVOID ctx, NTSTATUS status)
{
	struct st_cq *q = ctx;
	struct st_cycle *c = q->obj.c;
	unsigned long flags;
	bool close = false;
	NDK_CQ *cq;

	st_cb_enter(c);
	if (READ_ONCE(q->obj.closed))
		st_problem(c, "CQ notification after the CQ's close");
	if (!NT_SUCCESS(status))
		st_problem(c, "CQ notification with status %#x", status);
	spin_lock_irqsave(&q->lock, flags);
	if (!q->stop) {
		st_drain(q);
		if (READ_ONCE(c->teardown) && q->close_in_notify &&
		    !atomic_read(&q->pending)) {
			q->stop = true;
			close = true;
		} else {
			cq = container_of(q->obj.hdr, NDK_CQ, Header);
			cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
		}
	}
	spin_unlock_irqrestore(&q->lock, flags);
	/* Its QPs may still be open: the close waits for them. */
	if (close)
		st_close(&q->obj, true);
	wake_up(&c->wq);
	st_cb_exit(c);
}

void st_poll(struct st_cycle *c)
{
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < c->ncq; i++) {
		struct st_cq *q = &c->cq[i];

		if (q->notify || q->hold || !READ_ONCE(q->obj.hdr))
			continue;
		spin_lock_irqsave(&q->lock, flags);
		if (!q->stop)
			st_drain(q);
		spin_unlock_irqrestore(&q->lock, flags);
	}
}

/* A work request slot completing on @q; NULL if the cycle ran out. */
static struct st_wr *st_new_wr(struct st_cycle *c, struct st_side *s,
			       const char *what, u32 allow)
{
	struct st_cq *q = s->cq;
	struct st_wr *w;

	if (c->nwr >= ST_WRS) {
		st_problem(c, "out of work request slots");
		return NULL;
	}
	w = &c->wr[c->nwr++];
	*w = (struct st_wr){ .c = c, .q = q, .side = s, .what = what,
			     .allow = allow };
	atomic_inc(&q->pending);
	st_start(c);
	return w;
}

/* @w was posted with @status; NULL, and accounted, if that failed. */
static struct st_wr *st_posted(struct st_cycle *c, struct st_wr *w,
			       NTSTATUS status)
{
	if (!status)
		return w;
	atomic_dec(&w->q->pending);
	WRITE_ONCE(w->done, true);
	st_account(c, status, 0, w->what);
	return NULL;
}

/* Post one receive into slice @slice of @s's receive area. */
struct st_wr *st_post_recv(struct st_cycle *c, struct st_side *s,
			   unsigned int slice, u32 allow)
{
	NDK_SGE sge = { .VirtualAddress = s->buf + ST_RECV +
					  slice * ST_RECV_SLICE,
			.Length = ST_RECV_SLICE, .MemoryRegionToken = s->ltok };
	struct st_wr *w;

	memset(sge.VirtualAddress, 0, ST_RECV_SLICE);
	w = st_new_wr(c, s, "NdkReceive", allow);
	if (!w)
		return NULL;
	if (s == &c->side[1] && c->srq.hdr) {
		NDK_SRQ *srq = container_of(c->srq.hdr, NDK_SRQ, Header);

		w->via_srq = true;
		return st_posted(c, w, srq->Dispatch->NdkSrqReceive(srq, w,
								    &sge, 1));
	}
	return st_posted(c, w, st_qp(s)->Dispatch->NdkReceive(st_qp(s), w,
							       &sge, 1));
}

enum st_op { ST_OP_SEND, ST_OP_WRITE, ST_OP_READ };

/* One initiator request from @s; its result, or NULL if it failed. */
static struct st_wr *st_post(struct st_cycle *c, struct st_side *s,
			     enum st_op op, u32 off, u32 len, u64 raddr,
			     u32 rtok, ULONG flags)
{
	static const char *const names[] = { "NdkSend", "NdkWrite",
					     "NdkRead" };
	NDK_SGE sge = { .VirtualAddress = s->buf + off, .Length = len,
			.MemoryRegionToken = s->ltok };
	NDK_QP *qp = st_qp(s);
	struct st_wr *w;
	NTSTATUS status;

	w = st_new_wr(c, s, names[op], 0);
	if (!w)
		return NULL;
	switch (op) {
	case ST_OP_SEND:
		status = qp->Dispatch->NdkSend(qp, w, &sge, 1, flags);
		break;
	case ST_OP_WRITE:
		status = qp->Dispatch->NdkWrite(qp, w, &sge, 1, raddr, rtok,
						flags);
		break;
	default:
		status = qp->Dispatch->NdkRead(qp, w, &sge, 1, raddr, rtok,
					       flags);
		break;
	}
	return st_posted(c, w, status);
}

static bool st_wr_ok(struct st_cycle *c, struct st_wr *w)
{
	return w && st_wait(c, st_done(w->done), w->what) && !w->status;
}

static void st_fill(struct st_cycle *c, u8 *p, u32 len)
{
	u8 x = st_rand(c, 256);
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = x + i * 31;
}

static void st_verify(struct st_cycle *c, const void *got, const void *want,
		      u32 len, const char *what)
{
	if (memcmp(got, want, len))
		st_problem(c, "%s: data mismatch over %u bytes", what, len);
	else
		atomic64_inc(&st.verified);
}

static u64 st_va(struct st_side *s, u32 off)
{
	return (uintptr_t)MmGetMdlVirtualAddress(&s->mdl) + off;
}

/* A message from @from to the receive @rw posted on @to. */
static bool st_message(struct st_cycle *c, struct st_side *from,
		       struct st_side *to, struct st_wr *rw,
		       unsigned int slice)
{
	u32 len = 1 + st_rand(c, ST_RECV_SLICE);
	struct st_wr *sw;

	st_fill(c, from->buf + ST_SEND, len);
	sw = st_post(c, from, ST_OP_SEND, ST_SEND, len, 0, 0,
		     st_chance(c, 4) ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0);
	if (!st_wr_ok(c, sw) || !st_wr_ok(c, rw))
		return false;
	if (rw->bytes != len || rw->type != NdkOperationTypeReceive)
		st_problem(c, "receive: %u bytes of type %d, sent %u",
			   rw->bytes, rw->type, len);
	st_verify(c, to->buf + ST_RECV + slice * ST_RECV_SLICE,
		  from->buf + ST_SEND, len, "send/receive");
	return !c->failed;
}

/*
 * @from writes a pattern into @to's target area (or @raddr/@rtok, the
 * fast-registered buffer at @tbuf), reads it back into its sink and
 * checks both copies.
 */
static bool st_write_read(struct st_cycle *c, struct st_side *from,
			  u8 *tbuf, u64 raddr, u32 rtok, u32 room)
{
	u32 len = 1 + st_rand(c, room);
	u32 off = st_rand(c, room - len + 1);
	struct st_wr *ww, *rw;

	st_fill(c, from->buf + ST_SEND, len);
	memset(from->buf + ST_SINK, 0, len);
	/* A deferred write goes out with the read that follows it. */
	ww = st_post(c, from, ST_OP_WRITE, ST_SEND, len, raddr + off, rtok,
		     st_chance(c, 4) ? NDK_OP_FLAG_DEFER : 0);
	rw = ww ? st_post(c, from, ST_OP_READ, ST_SINK, len, raddr + off,
			  rtok, 0) : NULL;
	if (!st_wr_ok(c, ww) || !st_wr_ok(c, rw))
		return false;
	if (rw->bytes != len)
		st_problem(c, "read: %u bytes of %u", rw->bytes, len);
	st_verify(c, from->buf + ST_SINK, from->buf + ST_SEND, len,
		  "RDMA read");
	st_verify(c, tbuf + off, from->buf + ST_SEND, len, "RDMA write");
	return !c->failed;
}

/* The passive side fast-registers its page buffer; the active side uses it. */
static bool st_fast_register(struct st_cycle *c)
{
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	NDK_MR *mr = st_mr(&c->fmr);
	NDK_QP *qp = st_qp(pas);
	struct st_wr *w;
	NTSTATUS status;

	w = st_new_wr(c, pas, "NdkFastRegister", 0);
	if (!w)
		return false;
	status = qp->Dispatch->NdkFastRegister(qp, w, mr,
					       c->lam->AdapterPageCount,
					       c->lam->AdapterPageArray, c->fbo,
					       c->flen,
					       MmGetMdlVirtualAddress(&c->fmdl),
					       NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
					       NDK_OP_FLAG_ALLOW_REMOTE_READ);
	w = st_posted(c, w, status);
	if (!st_wr_ok(c, w))
		return false;
	if (w->type != NdkOperationTypeFastRegister)
		st_problem(c, "fast register completed as type %d", w->type);
	if (!st_write_read(c, act,
			   page_address(c->fpage) + c->fmdl.offset,
			   (uintptr_t)MmGetMdlVirtualAddress(&c->fmdl),
			   mr->Dispatch->NdkGetRemoteTokenFromMr(mr),
			   min_t(u32, c->flen, ST_AREA)))
		return false;
	if (st_chance(c, 2))
		return true;
	w = st_new_wr(c, pas, "NdkInvalidate", 0);
	if (!w)
		return false;
	status = qp->Dispatch->NdkInvalidate(qp, w, &mr->Header, 0);
	return st_wr_ok(c, st_posted(c, w, status));
}

void st_transfer(struct st_cycle *c, struct st_wr *arecv,
		 struct st_wr *precv)
{
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	unsigned int i, n = 1 + st_rand(c, 4);

	if (!st_message(c, act, pas, precv, 0) ||
	    !st_message(c, pas, act, arecv, 0))
		return;
	for (i = 0; i < n; i++) {
		struct st_side *from = &c->side[st_rand(c, 2)];
		struct st_side *to = &c->side[from == act];

		if (!st_write_read(c, from, to->buf + ST_TARGET,
				   st_va(to, ST_TARGET), to->rtok, ST_AREA))
			return;
	}
	if (c->fr && !st_fast_register(c))
		return;
	/* Left for the disconnect and the flush to cancel. */
	st_post_recv(c, act, 1, ST_ALLOW_CANCEL);
	if (!c->srq.hdr)
		st_post_recv(c, pas, 1, ST_ALLOW_CANCEL);
}
