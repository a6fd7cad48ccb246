// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: one side of a connection, either side's: its CQ, QP and
 * message memory, receives and sends, RDMA, the results of requests and
 * the peer's private data.
 */
#define pr_fmt(fmt) fmt

#include <linux/delay.h>
#include <linux/jiffies.h>

#include "selftest.h"

void st_disconnect_cb(PVOID ctx)
{
	struct st_conn *cn = ctx;

	atomic_inc(&cn->disconnected);
}

/* Create the CQ (notifying), QP (on an SRQ if @srq_threshold) and memory. */
NTSTATUS st_conn_init(struct st *s, struct st_conn *cn,
		      ULONG srq_threshold)
{
	ULONG inl = min_t(ULONG, s->info.MaxInlineDataSize, 128);
	struct st_wait w;
	NTSTATUS st;

	memset(cn, 0, sizeof(*cn));
	cn->s = s;
	init_completion(&cn->notify.done);
	init_completion(&cn->srq_notify.done);
	cn->cq = st_cq(s, ST_CQ_DEPTH, st_notify_cb, &cn->notify);
	if (!cn->cq)
		return STATUS_INSUFFICIENT_RESOURCES;
	if (srq_threshold) {
		st_wait_init(&w);
		st = s->pd->Dispatch->NdkCreateSrq(s->pd, ST_DEPTH, ST_SGE,
						   srq_threshold, st_notify_cb,
						   &cn->srq_notify, NULL,
						   st_create_cb, &w, &cn->srq);
		cn->srq = st_obj(st_created(&w, st, cn->srq, &st), NDK_SRQ);
		if (!cn->srq)
			return st;
	}
	cn->qp = st_qp(s, cn->cq, cn->srq, cn, ST_DEPTH, inl);
	cn->c = st_connector(s);
	if (!cn->qp || !cn->c)
		return STATUS_INSUFFICIENT_RESOURCES;
	return st_mem_new(s, &cn->msg, ST_BUF, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
}

void st_conn_free(struct st_conn *cn)
{
	if (cn->c)
		st_close(&cn->c->Header, cn->c->Dispatch->NdkCloseConnector);
	if (cn->qp)
		st_close(&cn->qp->Header, cn->qp->Dispatch->NdkCloseQp);
	if (cn->srq)
		st_close(&cn->srq->Header, cn->srq->Dispatch->NdkCloseSrq);
	st_mem_free(&cn->msg);
	if (cn->cq)
		st_close(&cn->cq->Header, cn->cq->Dispatch->NdkCloseCq);
	cn->c = NULL;
	cn->qp = NULL;
	cn->srq = NULL;
	cn->cq = NULL;
}

/* Post receive @slot: its first bytes and the rest in another page. */
NTSTATUS st_post_recv(struct st_conn *cn, int slot)
{
	NDK_SGE sge[2] = {
		st_sge(&cn->msg, slot * ST_MSG, ST_SCATTER),
		st_sge(&cn->msg, ST_TAIL_OFF + slot * ST_MSG,
		       ST_MSG - ST_SCATTER),
	};

	if (cn->srq)
		return cn->srq->Dispatch->NdkSrqReceive(cn->srq,
							ST_CTX(ST_RECV_CTX + slot),
							sge, 2);
	return cn->qp->Dispatch->NdkReceive(cn->qp, ST_CTX(ST_RECV_CTX + slot),
					    sge, 2);
}

/* The message of receive @slot, @len bytes of it, gathered into @dst. */
void st_recv_copy(struct st_conn *cn, int slot, void *dst, size_t len)
{
	size_t head = min_t(size_t, len, ST_SCATTER);

	memcpy(dst, cn->msg.buf + slot * ST_MSG, head);
	if (len > head)
		memcpy(dst + head, cn->msg.buf + ST_TAIL_OFF + slot * ST_MSG,
		       min_t(size_t, len - head, ST_MSG - ST_SCATTER));
}

static bool st_match(NDK_RESULT_EX *r, void *ctx)
{
	if (ctx)
		return r->RequestContext == ctx;
	return (uintptr_t)r->RequestContext >= ST_RECV_CTX &&
	       (uintptr_t)r->RequestContext < ST_RECV_CTX + ST_RECVS;
}

/*
 * The result of request @ctx (NULL: of any receive), waiting up to
 * @timeout; results of other requests are kept for later.
 */
NTSTATUS st_result(struct st_conn *cn, void *ctx, NDK_RESULT_EX *out,
		   unsigned long timeout)
{
	unsigned long end = jiffies + timeout;
	NDK_RESULT_EX r;
	int i;

	for (;;) {
		for (i = 0; i < cn->nstash; i++) {
			if (!st_match(&cn->stash[i], ctx))
				continue;
			*out = cn->stash[i];
			cn->stash[i] = cn->stash[--cn->nstash];
			return STATUS_SUCCESS;
		}
		if (cn->cq->Dispatch->NdkGetCqResultsEx(cn->cq, &r, 1)) {
			if (st_match(&r, ctx)) {
				*out = r;
				return STATUS_SUCCESS;
			}
			if (cn->nstash < ST_STASH)
				cn->stash[cn->nstash++] = r;
			continue;
		}
		if (time_after(jiffies, end))
			return STATUS_IO_TIMEOUT;
		usleep_range(100, 300);
	}
}

/* The next result of any request, kept ones first. */
NTSTATUS st_next(struct st_conn *cn, NDK_RESULT_EX *out)
{
	if (cn->nstash) {
		*out = cn->stash[0];
		cn->stash[0] = cn->stash[--cn->nstash];
		return STATUS_SUCCESS;
	}
	return st_poll_one(cn->cq, out);
}

/* Send @len bytes of the send slot, split over two SGEs. */
NTSTATUS st_send(struct st_conn *cn, size_t len, ULONG flags)
{
	size_t head = min_t(size_t, len, 16);
	NDK_SGE sge[2] = {
		st_sge(&cn->msg, ST_SEND_SLOT * ST_MSG, head),
		st_sge(&cn->msg, ST_SEND_SLOT * ST_MSG + head, len - head),
	};
	NDK_RESULT_EX r;
	NTSTATUS st;

	st = cn->qp->Dispatch->NdkSend(cn->qp, ST_CTX(1), sge,
				       len > head ? 2 : 1, flags);
	if (st)
		return st;
	st = st_result(cn, ST_CTX(1), &r, ST_TIMEOUT);
	return st ? st : r.Status;
}

u8 *st_send_buf(struct st_conn *cn)
{
	return cn->msg.buf + ST_SEND_SLOT * ST_MSG;
}

/* One RDMA read or write of @sges, waited for; the completion's status. */
NTSTATUS st_rdma(struct st_conn *cn, bool write, NDK_SGE *sges,
		 ULONG n, u64 raddr, u32 token)
{
	NDK_QP *qp = cn->qp;
	NDK_RESULT_EX r;
	NTSTATUS st;

	if (write)
		st = qp->Dispatch->NdkWrite(qp, ST_CTX(2), sges, n, raddr,
					    token, 0);
	else
		st = qp->Dispatch->NdkRead(qp, ST_CTX(2), sges, n, raddr,
					   token, 0);
	if (st)
		return st;
	st = st_result(cn, ST_CTX(2), &r, ST_TIMEOUT);
	if (!st && r.Type != (write ? NdkOperationTypeWrite :
			      NdkOperationTypeRead))
		return STATUS_INTERNAL_ERROR;
	return st ? st : r.Status;
}

/*
 * The peer's private data, up to @outlen bytes of it into @out; the
 * device may pad it (IB: to the CM message's size), so ask for all.
 */
NTSTATUS st_pdata(NDK_CONNECTOR *c, void *out, ULONG outlen,
		  ULONG *got)
{
	u8 buf[256];
	ULONG len = sizeof(buf);
	NTSTATUS st;

	memset(out, 0, outlen);
	st = c->Dispatch->NdkGetConnectionData(c, NULL, NULL, buf, &len);
	*got = len;
	if (!st)
		memcpy(out, buf, min(len, outlen));
	return st;
}
