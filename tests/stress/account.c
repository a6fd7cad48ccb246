// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: the bookkeeping that every step of a cycle uses.
 *
 * Every asynchronous operation that was started (a call that pended, a
 * work request that was posted, a close) is counted by st_start() and
 * ends exactly once in st_account(): completed, cancelled or failed, a
 * failure counting as expected only where the cycle provoked it, so that
 * the summary can tell a lost completion from a provoked one. Closes go
 * through st_close(), which also checks that an object's close
 * completion comes after those of its successors, as NDKPI promises.
 */
#define pr_fmt(fmt) "ndk_stress: " fmt

#include "stress.h"

__printf(2, 3) void st_problem(struct st_cycle *c, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	atomic64_inc(&st.problems);
	c->failed = true;
	if (atomic_inc_return(&st.logged) > 100)
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("thread %u cycle %llu: %pV\n", c->w->id, c->w->cycle, &vaf);
	va_end(args);
}

void st_start(struct st_cycle *c)
{
	atomic64_inc(&st.started);
	atomic_inc(&c->pending);
}

/* One started operation ended with @status; @allow says what may fail. */
void st_account(struct st_cycle *c, NTSTATUS status, u32 allow,
		const char *what)
{
	if (NT_SUCCESS(status)) {
		atomic64_inc(&st.completed);
	} else if (status == STATUS_CANCELLED && (allow & ST_ALLOW_CANCEL)) {
		atomic64_inc(&st.cancelled);
	} else if (status != STATUS_CANCELLED && (allow & ST_ALLOW_FAIL)) {
		atomic64_inc(&st.failed);
	} else {
		atomic64_inc(&st.bad_status);
		c->failed = true;
		if (atomic_inc_return(&st.logged) <= 100)
			pr_err("thread %u cycle %llu: %s: status %#x\n",
			       c->w->id, c->w->cycle, what, status);
	}
	atomic_dec(&c->pending);
	wake_up(&c->wq);
}

/* Every dispatch table starts with the close entry of its object. */
static NDK_FN_CLOSE_OBJECT st_close_fn(NDK_OBJECT_HEADER *hdr)
{
	switch (hdr->ObjectType) {
	case NdkObjectTypePd:
		return container_of(hdr, NDK_PD, Header)->Dispatch->NdkClosePd;
	case NdkObjectTypeCq:
		return container_of(hdr, NDK_CQ, Header)->Dispatch->NdkCloseCq;
	case NdkObjectTypeQp:
		return container_of(hdr, NDK_QP, Header)->Dispatch->NdkCloseQp;
	case NdkObjectTypeMr:
		return container_of(hdr, NDK_MR, Header)->Dispatch->NdkCloseMr;
	case NdkObjectTypeConnector:
		return container_of(hdr, NDK_CONNECTOR,
				    Header)->Dispatch->NdkCloseConnector;
	case NdkObjectTypeListener:
		return container_of(hdr, NDK_LISTENER,
				    Header)->Dispatch->NdkCloseListener;
	case NdkObjectTypeSrq:
		return container_of(hdr, NDK_SRQ, Header)->Dispatch->NdkCloseSrq;
	case NdkObjectTypeSharedEndpoint:
		return container_of(hdr, NDK_SHARED_ENDPOINT,
				    Header)->Dispatch->NdkCloseSharedEndpoint;
	default:
		return NULL;
	}
}

/* The successors of @o: QPs of a CQ, everything made on a PD ... */
static unsigned int st_successors(struct st_obj *o, struct st_obj **succ)
{
	struct st_cycle *c = o->c;
	unsigned int i, n = 0;

	for (i = 0; i < 2; i++) {
		if (o == &c->pd || (o == &c->srq && i == 1) ||
		    (c->side[i].cq && o == &c->side[i].cq->obj))
			succ[n++] = &c->side[i].qp;
		if (o == &c->pd)
			succ[n++] = &c->side[i].mr;
	}
	if (o == &c->pd) {
		succ[n++] = &c->fmr;
		succ[n++] = &c->srq;
		if (c->extra_mr)
			succ[n++] = &c->extra;
	}
	if (o == &c->lis) {
		succ[n++] = &c->srv;
		for (i = 0; i < ST_STRAYS; i++)
			succ[n++] = &c->stray[i];
	}
	if (o == &c->sep && c->sep_used)
		succ[n++] = &c->cli;
	return n;
}

/* ... whose close completions must all have come before that of @o. */
static void st_check_order(struct st_obj *o)
{
	struct st_obj *succ[ST_STRAYS + 8];
	unsigned int i, n = st_successors(o, succ);

	for (i = 0; i < n; i++) {
		if (!READ_ONCE(succ[i]->hdr) || READ_ONCE(succ[i]->closed))
			continue;
		if (atomic_cmpxchg(&succ[i]->close_call, ST_CLOSE_CALLING,
				   ST_CLOSE_OVERTAKEN) == ST_CLOSE_NOT_CALLING)
			st_problem(o->c, "%s closed before its successor, the %s",
				   o->name, succ[i]->name);
	}
}

/*
 * @o is closed, by its completion callback (@in_cb) or inline, as NDKPI
 * lets a close finish (STATUS_SUCCESS, no callback): the same follows.
 */
static void st_close_done(struct st_obj *o, NTSTATUS status, bool in_cb)
{
	struct st_cycle *c = o->c;

	if (READ_ONCE(o->closed))
		st_problem(c, "%s: second close completion", o->name);
	st_check_order(o);
	/* The mapping stays until no registration uses its pages. */
	if (o == &c->fmr && c->lam)
		c->adapter->Dispatch->NdkReleaseLAM(c->adapter, c->lam);
	st_set(o->closed);
	if (o->close_on_close)
		st_close(o->close_on_close, in_cb);
	st_account(c, status, 0, o->name);
}

static void st_closed(PVOID ctx)
{
	struct st_obj *o = ctx;
	struct st_cycle *c = o->c;

	st_cb_enter(c);
	st_close_done(o, STATUS_SUCCESS, true);
	st_cb_exit(c);
}

/*
 * Close @o unless it was never created or is closed already; from a
 * callback too, which is what @in_cb counts.
 */
void st_close(struct st_obj *o, bool in_cb)
{
	struct st_cycle *c = o->c;
	NDK_OBJECT_HEADER *hdr = READ_ONCE(o->hdr);
	NDK_FN_CLOSE_OBJECT close;
	bool overtaken;
	NTSTATUS status;

	if (!hdr || atomic_xchg(&o->claimed, 1))
		return;
	close = st_close_fn(hdr);
	if (!close) {
		st_problem(c, "%s: object type %d", o->name, hdr->ObjectType);
		return;
	}
	if (in_cb)
		atomic64_inc(&st.cb_closes);
	st_start(c);
	atomic_set(&o->close_call, ST_CLOSE_CALLING);
	status = close(hdr, st_closed, o);
	if (status != STATUS_PENDING) {
		/*
		 * Done inline: no completion will come, and none was
		 * overtaken. Marked closed before the call counts as over.
		 */
		st_close_done(o, status, in_cb);
		atomic_set(&o->close_call, ST_CLOSE_NOT_CALLING);
		return;
	}
	overtaken = atomic_xchg(&o->close_call, ST_CLOSE_NOT_CALLING) ==
		    ST_CLOSE_OVERTAKEN;
	/*
	 * Pending, and an antecedent completed during the call: a problem
	 * unless the completion came in the call too (the order of the two
	 * is then unknown).
	 */
	if (overtaken && !READ_ONCE(o->closed))
		st_problem(c, "an antecedent of the %s closed before it",
			   o->name);
}

void st_req_done(PVOID ctx, NTSTATUS status)
{
	struct st_req *r = ctx;
	struct st_cycle *c = r->c;

	st_cb_enter(c);
	if (r->obj && READ_ONCE(r->obj->closed))
		st_problem(c, "%s completed after its object's close", r->what);
	r->status = status;
	st_set(r->done);
	if (r->close)
		st_close(r->close, true);
	st_account(c, status, r->allow, r->what);
	st_cb_exit(c);
}

/* Start request @id on @obj; the call's status goes to st_issued(). */
struct st_req *st_req(struct st_cycle *c, enum st_req_id id,
		      struct st_obj *obj, const char *what, u32 allow,
		      struct st_obj *close)
{
	struct st_req *r = &c->req[id];

	r->c = c;
	r->obj = obj;
	r->what = what;
	r->allow = allow;
	r->close = close;
	r->done = false;
	st_start(c);
	return r;
}

/*
 * True if the request pends; otherwise it is accounted here, and the
 * close its completion would have made follows, as in st_req_done().
 */
bool st_issued(struct st_cycle *c, struct st_req *r, NTSTATUS status)
{
	if (status == STATUS_PENDING)
		return true;
	r->status = status;
	WRITE_ONCE(r->done, true);
	if (r->close)
		st_close(r->close, false);
	st_account(c, status, r->allow, r->what);
	return false;
}

void st_stuck(struct st_cycle *c, const char *what)
{
	st_problem(c, "stuck: %s", what);
	c->stuck = true;
}
