// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: object churn.
 *
 * st_setup() creates a cycle's objects: the PD, one or two CQs (polled
 * or drained by their notification), the listener and the connector,
 * sometimes a shared endpoint and an SRQ, one extra object that its own
 * create completion closes, the MRs with their registrations and the
 * fast-register mapping, and the QPs last. A create may complete inline
 * or through st_created(); either way it is accounted once, since NDKPI
 * allows both.
 */

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "stress.h"

static void st_created(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *hdr)
{
	struct st_obj *o = ctx;
	struct st_cycle *c = o->c;

	st_cb_enter(c);
	if (NT_SUCCESS(status))
		WRITE_ONCE(o->hdr, hdr);
	st_set(o->created);
	if (NT_SUCCESS(status) && o->close_on_create)
		st_close(o->close_on_create, true);
	st_account(c, status, 0, o->name);
	st_cb_exit(c);
}

/* A create that completed inline: as st_created(), outside a callback. */
static void st_created_inline(struct st_cycle *c, struct st_obj *o,
			      NTSTATUS status, NDK_OBJECT_HEADER *hdr)
{
	if (NT_SUCCESS(status))
		WRITE_ONCE(o->hdr, hdr);
	WRITE_ONCE(o->created, true);
	if (NT_SUCCESS(status) && o->close_on_create)
		st_close(o->close_on_create, false);
	st_account(c, status, 0, o->name);
}

/* Wait for @o's creation; true if it exists. */
static bool st_created_ok(struct st_cycle *c, struct st_obj *o)
{
	if (!st_wait(c, st_done(o->created), o->name))
		return false;
	return o->hdr;
}

static void st_create_pd(struct st_cycle *c, struct st_obj *o)
{
	NDK_PD *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreatePd(c->adapter, st_created, o,
						   &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_create_cq(struct st_cycle *c, struct st_obj *o,
			 struct st_cq *q)
{
	NDK_CQ *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateCq(c->adapter, ST_CQ_DEPTH,
						   q ? st_cq_notify : NULL, q,
						   NULL, st_created, o,
						   &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_create_connector(struct st_cycle *c, struct st_obj *o)
{
	NDK_CONNECTOR *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateConnector(c->adapter,
							  st_created, o,
							  &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_create_listener(struct st_cycle *c, struct st_obj *o)
{
	NDK_LISTENER *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = c->adapter->Dispatch->NdkCreateListener(c->adapter,
							 st_connect_event, c,
							 st_created, o,
							 &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_srq_notify(PVOID ctx, NTSTATUS status)
{
	struct st_cycle *c = ctx;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(c->srq.closed))
		st_problem(c, "SRQ notification after the SRQ's close");
	if (!NT_SUCCESS(status))
		st_problem(c, "SRQ notification with status %#x", status);
	/* Its QP is still open: the close waits for it. */
	if (c->close_srq_in_notify)
		st_close(&c->srq, true);
	st_cb_exit(c);
}

/*
 * A shared receive queue for the passive QP: one receive per message it
 * takes, since receives left on an SRQ are never flushed; it notifies
 * when the queue runs empty.
 */
static void st_create_srq(struct st_cycle *c)
{
	NDK_PD *pd = container_of(c->pd.hdr, NDK_PD, Header);
	NDK_SRQ *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = pd->Dispatch->NdkCreateSrq(pd, ST_QP_DEPTH, 1, 1,
					    st_srq_notify, c, NULL,
					    st_created, &c->srq, &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, &c->srq, status,
				  unused ? &unused->Header : NULL);
}

/* An endpoint on the local address with an ephemeral port. */
static void st_create_sep(struct st_cycle *c, struct st_obj *o)
{
	const NDK_ADAPTER_DISPATCH *a = c->adapter->Dispatch;
	NDK_SHARED_ENDPOINT *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = a->NdkCreateSharedEndpoint(c->adapter, st_src(c), c->alen,
					    st_created, o, &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static NDK_PD *st_pd(struct st_cycle *c)
{
	return container_of(c->pd.hdr, NDK_PD, Header);
}

static void st_create_mr(struct st_cycle *c, struct st_obj *o, bool fast)
{
	NDK_PD *pd = st_pd(c);
	NDK_MR *unused = NULL;
	NTSTATUS status;

	st_start(c);
	status = pd->Dispatch->NdkCreateMr(pd, fast, st_created, o, &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, o, status,
				  unused ? &unused->Header : NULL);
}

static void st_create_qp(struct st_cycle *c, struct st_side *s)
{
	NDK_CQ *rcq = container_of(s->cq->obj.hdr, NDK_CQ, Header);
	NDK_PD *pd = st_pd(c);
	NDK_QP *unused = NULL;
	NTSTATUS status;

	st_start(c);
	if (s == &c->side[1] && c->srq.hdr)
		status = pd->Dispatch->NdkCreateQpWithSrq(pd, rcq, rcq,
				container_of(c->srq.hdr, NDK_SRQ, Header), s,
				ST_QP_DEPTH, 2, 0, st_created, &s->qp,
				&unused);
	else
		status = pd->Dispatch->NdkCreateQp(pd, rcq, rcq, s,
						   ST_QP_DEPTH, ST_QP_DEPTH, 2,
						   2, 0, st_created, &s->qp,
						   &unused);
	if (status != STATUS_PENDING)
		st_created_inline(c, &s->qp, status,
				  unused ? &unused->Header : NULL);
}

static void st_register(struct st_cycle *c, struct st_side *s,
			enum st_req_id id)
{
	NDK_MR *mr = st_mr(&s->mr);
	struct st_req *r;
	NTSTATUS status;

	ndk_mdl_init_kva(&s->mdl, s->buf, ST_BUF);
	r = st_req(c, id, &s->mr, "NdkRegisterMr", 0, NULL);
	status = mr->Dispatch->NdkRegisterMr(mr, &s->mdl, ST_BUF,
					     NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
					     NDK_MR_FLAG_ALLOW_REMOTE_READ |
					     NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
					     NDK_MR_FLAG_RDMA_READ_SINK,
					     st_req_done, r);
	st_issued(c, r, status);
}

/* The fast-register buffer and its logical address mapping. */
static bool st_lam(struct st_cycle *c)
{
	ULONG size = 0, fbo;
	u32 off, i;

	c->fpage = alloc_pages(GFP_KERNEL, get_order(ST_FR_PAGES * PAGE_SIZE));
	if (!c->fpage)
		return false;
	for (i = 0; i < ST_FR_PAGES; i++)
		c->fpages[i] = c->fpage + i;
	off = st_rand(c, PAGE_SIZE);
	c->flen = 1 + st_rand(c, ST_FR_PAGES * PAGE_SIZE - off);
	c->flen = min_t(u32, c->flen, ST_AREA);
	ndk_mdl_init_pages(&c->fmdl, c->fpages,
			   DIV_ROUND_UP(off + c->flen, PAGE_SIZE), off,
			   c->flen);
	if (c->adapter->Dispatch->NdkBuildLAM(c->adapter, &c->fmdl, c->flen,
					      NULL, NULL, NULL, &size,
					      &fbo) != STATUS_BUFFER_TOO_SMALL)
		return false;
	c->lam = kzalloc(size, GFP_KERNEL);
	if (!c->lam)
		return false;
	if (c->adapter->Dispatch->NdkBuildLAM(c->adapter, &c->fmdl, c->flen,
					      NULL, NULL, c->lam, &size,
					      &c->fbo)) {
		kfree(c->lam);
		c->lam = NULL;
		return false;
	}
	return true;
}

static bool st_alloc_side(struct st_cycle *c, struct st_side *s)
{
	s->buf = st_chance(c, 2) ? vzalloc(ST_BUF) : kzalloc(ST_BUF, GFP_KERNEL);
	return s->buf;
}

/* Create everything the cycle needs; false if it cannot go on. */
bool st_setup(struct st_cycle *c)
{
	NTSTATUS status;
	static const char *const extra_kind[] = {
		"extra PD", "extra CQ", "extra connector", "extra listener",
		"extra MR",
	};
	struct st_side *act = &c->side[0], *pas = &c->side[1];
	unsigned int i, kind;

	if (!st_alloc_side(c, act) || !st_alloc_side(c, pas)) {
		st_problem(c, "out of memory for buffers");
		return false;
	}
	st_create_pd(c, &c->pd);
	if (!st_created_ok(c, &c->pd))
		return false;

	/* CQs, the listener, the connector and an object closed at birth. */
	c->ncq = 1 + st_chance(c, 2);
	for (i = 0; i < c->ncq; i++) {
		struct st_cq *q = &c->cq[i];

		q->notify = st_chance(c, 2);
		q->close_in_notify = q->notify && st_chance(c, 2);
		st_create_cq(c, &q->obj, q);
	}
	act->cq = &c->cq[0];
	pas->cq = &c->cq[c->ncq - 1];
	st_create_listener(c, &c->lis);
	st_create_connector(c, &c->cli);
	if (st_chance(c, 4)) {
		c->sep.name = "shared endpoint";
		st_create_sep(c, &c->sep);
	}
	if (c->fate == ST_FULL && st_chance(c, 4)) {
		c->srq.name = "SRQ";
		c->close_srq_in_notify = st_chance(c, 2);
		st_create_srq(c);
	}
	kind = st_rand(c, ARRAY_SIZE(extra_kind));
	c->extra.name = extra_kind[kind];
	c->extra.close_on_create = &c->extra;
	switch (kind) {
	case 0:
		st_create_pd(c, &c->extra);
		break;
	case 1:
		st_create_cq(c, &c->extra, NULL);
		break;
	case 2:
		st_create_connector(c, &c->extra);
		break;
	case 3:
		st_create_listener(c, &c->extra);
		break;
	default:
		c->extra_mr = true;
		st_create_mr(c, &c->extra, st_chance(c, 2));
		break;
	}
	for (i = 0; i < c->ncq; i++)
		if (!st_created_ok(c, &c->cq[i].obj))
			return false;
	if (!st_created_ok(c, &c->lis) || !st_created_ok(c, &c->cli))
		return false;
	if (c->sep.name && !st_created_ok(c, &c->sep))
		return false;
	if (c->srq.name && !st_created_ok(c, &c->srq))
		return false;

	/* Notification-driven CQs are armed before anything completes. */
	for (i = 0; i < c->ncq; i++) {
		NDK_CQ *cq = container_of(c->cq[i].obj.hdr, NDK_CQ, Header);

		if (c->cq[i].notify)
			cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
	}

	/* Memory: two registered buffers and perhaps a fast-register MR. */
	st_create_mr(c, &act->mr, false);
	st_create_mr(c, &pas->mr, false);
	c->fr = c->fate == ST_FULL && st_chance(c, 2);
	if (c->fr)
		st_create_mr(c, &c->fmr, true);
	if (!st_created_ok(c, &act->mr) || !st_created_ok(c, &pas->mr))
		return false;
	st_register(c, act, ST_R_CREG);
	st_register(c, pas, ST_R_SREG);
	if (c->fr && st_created_ok(c, &c->fmr)) {
		struct st_req *r = st_req(c, ST_R_FINIT, &c->fmr,
					  "NdkInitializeFastRegisterMr", 0,
					  NULL);
		NDK_MR *mr = st_mr(&c->fmr);

		status = mr->Dispatch->NdkInitializeFastRegisterMr(mr,
								   ST_FR_PAGES,
								   TRUE,
								   st_req_done,
								   r);
		st_issued(c, r, status);
		if (!st_lam(c)) {
			st_problem(c, "NdkBuildLAM failed");
			return false;
		}
	} else if (c->fr) {
		return false;
	}
	if (!st_wait(c, st_done(c->req[ST_R_CREG].done) &&
		     st_done(c->req[ST_R_SREG].done), "NdkRegisterMr") ||
	    c->req[ST_R_CREG].status || c->req[ST_R_SREG].status)
		return false;
	if (c->fr && (!st_wait(c, st_done(c->req[ST_R_FINIT].done),
			       "NdkInitializeFastRegisterMr") ||
		      c->req[ST_R_FINIT].status))
		return false;
	for (i = 0; i < 2; i++) {
		NDK_MR *mr = st_mr(&c->side[i].mr);

		c->side[i].ltok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
		c->side[i].rtok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
	}

	/*
	 * The QPs last: the passive one's create completion may close the
	 * PD, which then waits for its QPs and MRs.
	 */
	if (st_chance(c, 4))
		pas->qp.close_on_create = &c->pd;
	st_create_qp(c, act);
	st_create_qp(c, pas);
	if (!st_created_ok(c, &act->qp) || !st_created_ok(c, &pas->qp))
		return false;
	return !c->failed;
}
