// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_selftest: the passive side. It accepts, publishes its memory (a
 * region, a fast-registered region and a window) in a message and
 * answers echo and invalidate requests until the connection ends. A
 * teardown case's traffic it takes without an answer, and it disconnects
 * first when that case asks.
 */
#define pr_fmt(fmt) fmt

#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/kthread.h>
#include <linux/slab.h>

#include "selftest.h"

void st_listen_cb(PVOID ctx, NDK_CONNECTOR *c)
{
	struct st *s = ctx;
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&s->lock, flags);
	if (s->nincoming < ARRAY_SIZE(s->incoming)) {
		s->incoming[s->nincoming++] = c;
		queued = true;
	}
	spin_unlock_irqrestore(&s->lock, flags);
	/* Outside the lock: no lock across a call into ndk. */
	if (!queued)
		c->Dispatch->NdkReject(c, NULL, 0);
	wake_up(&s->incoming_wq);
}

static NDK_CONNECTOR *st_take_incoming(struct st *s)
{
	NDK_CONNECTOR *c = NULL;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	if (s->nincoming) {
		c = s->incoming[0];
		memmove(&s->incoming[0], &s->incoming[1],
			--s->nincoming * sizeof(c));
	}
	spin_unlock_irqrestore(&s->lock, flags);
	return c;
}

/* The passive side's memory: a region, a fast-registered page, a window. */
struct st_srv_mem {
	struct st_mem region;
	u8 *fr_buf;
	NDK_MR *fr;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_MW *mw;
};

static void st_srv_mem_free(struct st *s, struct st_srv_mem *m)
{
	if (m->mw)
		st_close(&m->mw->Header, m->mw->Dispatch->NdkCloseMw);
	if (m->fr)
		st_close(&m->fr->Header, m->fr->Dispatch->NdkCloseMr);
	if (m->lam) {
		s->a->Dispatch->NdkReleaseLAM(s->a, m->lam);
		kfree(m->lam);
	}
	if (m->fr_buf)
		free_page((unsigned long)m->fr_buf);
	st_mem_free(&m->region);
}

/* The status of request @ctx posted with result @st: inline or polled. */
static NTSTATUS st_srv_post_wait(struct st_conn *cn, NTSTATUS st, void *ctx)
{
	NDK_RESULT_EX r;

	if (st)
		return st;
	st = st_result(cn, ctx, &r, ST_TIMEOUT);
	return st ? st : r.Status;
}

/* Fast-register a page of its own on the QP; its token, 0 if none. */
static u32 st_srv_fast_register(struct st_conn *cn, struct st_srv_mem *m)
{
	ULONG flags = NDK_OP_FLAG_ALLOW_REMOTE_READ |
		      NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	const NDK_ADAPTER_DISPATCH *a = cn->s->a->Dispatch;
	NDK_PD *pd = cn->s->pd;
	struct ndk_mdl mdl;
	ULONG size = 0, fbo = 0;
	NDK_MR *fr = NULL;
	struct st_wait w;
	NTSTATUS st;

	m->fr_buf = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!m->fr_buf)
		return 0;
	ndk_mdl_init_kva(&mdl, m->fr_buf, PAGE_SIZE);
	if (a->NdkBuildLAM(cn->s->a, &mdl, PAGE_SIZE, NULL, NULL, NULL, &size,
			   &fbo) != STATUS_BUFFER_TOO_SMALL)
		return 0;
	m->lam = kzalloc(size, GFP_KERNEL);
	if (!m->lam)
		return 0;
	if (a->NdkBuildLAM(cn->s->a, &mdl, PAGE_SIZE, NULL, NULL, m->lam,
			   &size, &fbo)) {
		kfree(m->lam);
		m->lam = NULL;
		return 0;
	}
	st_wait_init(&w);
	st = pd->Dispatch->NdkCreateMr(pd, TRUE, st_create_cb, &w, &fr);
	m->fr = st_obj(st_created(&w, st, fr, NULL), NDK_MR);
	if (!m->fr)
		return 0;
	st_wait_init(&w);
	st = m->fr->Dispatch->NdkInitializeFastRegisterMr(m->fr, 1, TRUE,
							  st_request_cb, &w);
	st = st_wait(&w, st);
	if (!st)
		st = cn->qp->Dispatch->NdkFastRegister(cn->qp, ST_CTX(3), m->fr,
						       m->lam->AdapterPageCount,
						       m->lam->AdapterPageArray,
						       fbo, PAGE_SIZE,
						       m->fr_buf, flags);
	st = st_srv_post_wait(cn, st, ST_CTX(3));
	if (st) {
		pr_info("# fast registration failed: %#x\n", st);
		return 0;
	}
	return m->fr->Dispatch->NdkGetRemoteTokenFromMr(m->fr);
}

/* Bind a window over part of the region on the QP; its token, 0 if none. */
static u32 st_srv_bind(struct st_conn *cn, struct st_srv_mem *m)
{
	ULONG flags = NDK_OP_FLAG_ALLOW_REMOTE_READ |
		      NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
	NDK_PD *pd = cn->s->pd;
	NDK_MW *mw = NULL;
	struct st_wait w;
	NTSTATUS st;

	st_wait_init(&w);
	st = pd->Dispatch->NdkCreateMw(pd, st_create_cb, &w, &mw);
	m->mw = st_obj(st_created(&w, st, mw, NULL), NDK_MW);
	if (!m->mw)
		return 0;
	st = cn->qp->Dispatch->NdkBind(cn->qp, ST_CTX(4), m->region.mr, m->mw,
				       m->region.buf + ST_MW_OFF, ST_MW_LEN,
				       flags);
	st = st_srv_post_wait(cn, st, ST_CTX(4));
	if (st) {
		pr_info("# memory window bind failed: %#x\n", st);
		return 0;
	}
	return m->mw->Dispatch->NdkGetRemoteTokenFromMw(m->mw);
}

/* Make the memory the hello publishes; what is missing stays zero. */
static void st_srv_publish(struct st_conn *cn, struct st_srv_mem *m,
			   struct st_hello *h)
{
	struct st *s = cn->s;
	u32 tok;

	memset(h, 0, sizeof(*h));
	h->type = cpu_to_le32(ST_HELLO);
	h->magic = cpu_to_le32(ST_MAGIC);
	if (st_mem_new(s, &m->region, 2 * PAGE_SIZE,
		       NDK_MR_FLAG_ALLOW_REMOTE_READ |
		       NDK_MR_FLAG_ALLOW_REMOTE_WRITE))
		return;
	h->mr_va = cpu_to_le64((uintptr_t)m->region.buf);
	h->mr_len = cpu_to_le32(m->region.len);
	h->mr_tok = cpu_to_le32(m->region.rtok);
	tok = s->info.FRMRPageCount ? st_srv_fast_register(cn, m) : 0;
	if (tok) {
		h->fr_va = cpu_to_le64((uintptr_t)m->fr_buf);
		h->fr_len = cpu_to_le32(PAGE_SIZE);
		h->fr_tok = cpu_to_le32(tok);
	}
	tok = s->info.MaxWindowSize ? st_srv_bind(cn, m) : 0;
	if (tok) {
		h->mw_va = cpu_to_le64((uintptr_t)m->region.buf + ST_MW_OFF);
		h->mw_len = cpu_to_le32(ST_MW_LEN);
		h->mw_tok = cpu_to_le32(tok);
	}
}

/* Answer the peer's messages until the connection ends. */
static void st_srv_loop(struct st_conn *cn, struct st_srv_mem *m)
{
	struct st *s = cn->s;
	NDK_RESULT_EX r;
	u8 *out = st_send_buf(cn);
	u8 in[ST_MSG];
	NTSTATUS st;
	int slot;
	u32 type;

	for (;;) {
		reinit_completion(&cn->notify.done);
		cn->cq->Dispatch->NdkArmCq(cn->cq, NDK_CQ_NOTIFY_ANY);
		if (st_result(cn, NULL, &r, 0)) {
			if (atomic_read(&cn->disconnected))
				return;
			/* Woken by the notification, or a second's poll. */
			wait_for_completion_timeout(&cn->notify.done, HZ);
			continue;
		}
		if (r.Status)
			return;
		slot = (uintptr_t)r.RequestContext - ST_RECV_CTX;
		st_recv_copy(cn, slot, in, min_t(ULONG, r.BytesTransferred,
						 ST_MSG));
		if (st_post_recv(cn, slot))
			return;
		type = st_get32(in);
		/* The peer's teardown case: this side disconnects first. */
		if (type == ST_BYE)
			return;
		if (type == ST_ECHO) {
			memcpy(out, in, r.BytesTransferred);
			st = st_send(cn, r.BytesTransferred, 0);
		} else if (type == ST_INVALIDATE && m->fr) {
			st = cn->qp->Dispatch->NdkInvalidate(cn->qp, ST_CTX(5),
							     &m->fr->Header, 0);
			st = st_srv_post_wait(cn, st, ST_CTX(5));
			if (!s->inval_seen) {
				s->inval_seen = true;
				st_report("server_invalidate",
					  st ? "NdkInvalidate failed" : NULL);
			}
			st_put32(ST_ACK, out);
			st_put32(st, out + 4);
			st = st_send(cn, 8, 0);
		} else if (type == ST_QUIET) {
			/* A teardown case's traffic: taken, not answered. */
			st = STATUS_SUCCESS;
		} else {
			st = STATUS_INVALID_PARAMETER;
		}
		if (st)
			return;
	}
}

/* One connection of the peer's run; false once the run is over. */
static bool st_serve(struct st *s, NDK_CONNECTOR *c)
{
	char refused[] = "st-refused", bye[] = "st-bye";
	struct st_srv_mem m = {};
	struct st_hello *h;
	struct st_conn *cn;
	struct st_req req = {};
	struct st_wait w;
	ULONG len;
	NTSTATUS st;
	int i;

	st = st_pdata(c, &req, sizeof(req), &len);
	if (st || len < sizeof(req) || le32_to_cpu(req.magic) != ST_MAGIC ||
	    req.kind == ST_REJECT || req.kind == ST_DONE) {
		c->Dispatch->NdkReject(c, req.kind == ST_DONE ? bye : refused,
				       req.kind == ST_DONE ? sizeof(bye) :
				       sizeof(refused));
		st_close(&c->Header, c->Dispatch->NdkCloseConnector);
		return req.kind != ST_DONE;
	}
	req.name[sizeof(req.name) - 1] = 0;
	pr_info("# session %s\n", req.name);
	if (!s->pdata_seen) {
		s->pdata_seen = true;
		st_report("server_accept_private_data", NULL);
	}
	cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!cn || !h)
		goto reject;
	st = st_conn_init(s, cn, req.kind == ST_SESSION_SRQ &&
			  s->info.MaxSrqDepth ? ST_RECVS : 0);
	/* The connector came from the listener, not from st_conn_init(). */
	if (cn->c)
		st_close(&cn->c->Header, cn->c->Dispatch->NdkCloseConnector);
	cn->c = NULL;
	for (i = 0; !st && i < ST_RECVS; i++)
		st = st_post_recv(cn, i);
	if (st)
		goto reject;
	cn->c = c;
	req.kind |= 0x80;
	st_wait_init(&w);
	st = c->Dispatch->NdkAccept(c, cn->qp, 1, 1, &req, sizeof(req),
				    st_disconnect_cb, cn, st_request_cb, &w);
	if (st_wait(&w, st)) {
		pr_info("# server: accept failed: %#x\n", w.status);
		goto out;
	}
	st_srv_publish(cn, &m, h);
	memcpy(st_send_buf(cn), h, sizeof(*h));
	if (!st_send(cn, sizeof(*h), 0))
		st_srv_loop(cn, &m);
	if (cn->srq && !s->srq_notified_seen) {
		s->srq_notified_seen = true;
		wait_for_completion_timeout(&cn->srq_notify.done, 2 * HZ);
		st_report("server_srq_notification",
			  atomic_read(&cn->srq_notify.calls) != 1 ?
			  "no single notification below the threshold" :
			  cn->srq_notify.status ? "notification failed" : NULL);
	}
	/* The first session ends with the peer's NdkDisconnect. */
	if (!s->disc_seen) {
		s->disc_seen = true;
		for (i = 0; i < 50 && !atomic_read(&cn->disconnected); i++)
			msleep(100);
		st_report("server_disconnect_event",
			  atomic_read(&cn->disconnected) != 1 ?
			  "no single disconnect event" : NULL);
	}
	st_wait_init(&w);
	st_wait(&w, c->Dispatch->NdkDisconnect(c, st_request_cb, &w));
	goto out;
reject:
	c->Dispatch->NdkReject(c, refused, sizeof(refused));
	st_close(&c->Header, c->Dispatch->NdkCloseConnector);
out:
	if (cn) {
		st_conn_free(cn);
		st_srv_mem_free(s, &m);
		kfree(cn);
	}
	kfree(h);
	pr_info("# session end %s\n", req.name);
	return true;
}

int st_server_fn(void *arg)
{
	struct st *s = arg;
	unsigned long end = jiffies + st_wait_s * HZ;
	NDK_CONNECTOR *c;

	while (!READ_ONCE(s->server_stop) && time_before(jiffies, end)) {
		wait_event_timeout(s->incoming_wq, READ_ONCE(s->nincoming) ||
				   READ_ONCE(s->server_stop), HZ);
		c = st_take_incoming(s);
		if (!c)
			continue;
		if (!st_serve(s, c))
			break;
		end = jiffies + st_wait_s * HZ;
	}
	s->server_stop = true;
	/* Connections that came after the last one are refused. */
	while ((c = st_take_incoming(s))) {
		c->Dispatch->NdkReject(c, NULL, 0);
		st_close(&c->Header, c->Dispatch->NdkCloseConnector);
	}
	complete(&s->server_done);
	return 0;
}
