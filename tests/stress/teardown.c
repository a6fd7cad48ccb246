// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: the end of a cycle.
 *
 * Flush, let every work request complete, sometimes close a QP while
 * its CQ is not polled and then poll every request's result, resize a
 * CQ or deregister an MR while things close, close everything left in
 * a random order and close the adapter last, on a work item, so that
 * even that wait is bounded by `timeout` and a stuck close is reported
 * instead of hanging the thread.
 */

#include <linux/delay.h>
#include <linux/workqueue.h>

#include "stress.h"

/*
 * Requests posted on @s's QP that have no result yet. Receives taken
 * from the SRQ are the SRQ's: a close of the QP leaves them there.
 */
static unsigned int st_qp_outstanding(struct st_cycle *c, struct st_side *s)
{
	unsigned int n = 0;
	struct st_wr *w;

	for (w = c->wr; w < c->wr + c->nwr; w++)
		if (w->side == s && !w->via_srq && !st_done(w->done))
			n++;
	return n;
}

/* Close the adapter on a work item, so that the wait for it is bounded. */
static void st_close_adapter_work(struct work_struct *work)
{
	struct st_cycle *c = container_of(work, struct st_cycle, close_work);

	ndk_close_adapter(c->adapter);
	complete(&c->closed);
}

/*
 * Flush, let every work request complete, close what is left in a
 * random order and close the adapter, whose return guarantees that no
 * callback of the cycle runs any more. False if something is stuck.
 */
bool st_teardown(struct st_cycle *c)
{
	struct st_obj *objs[16];
	unsigned int i, j, n = 0;
	struct st_side *s;
	unsigned long flags;
	NTSTATUS status;
	bool ok;
	int k;

	WRITE_ONCE(c->teardown, true);
	/* A request that comes now is closed by the connect event. */
	spin_lock_irqsave(&c->lock, flags);
	c->want_incoming = false;
	spin_unlock_irqrestore(&c->lock, flags);

	/*
	 * Sometimes the PD is closed from inside a QP's close completion;
	 * only the teardown closes QPs, so the completion will come.
	 */
	i = st_rand(c, 2);
	if (c->side[i].qp.hdr && c->pd.hdr && st_chance(c, 3))
		c->side[i].qp.close_on_close = &c->pd;

	/*
	 * Sometimes a QP is closed, with its connector, while its CQ is
	 * not polled: the device's results for its requests may wait
	 * there, or not be made yet. Either way each request posted on it
	 * is reported once after the close, with its context, the
	 * device's result or STATUS_CANCELLED, when the CQ is polled again.
	 */
	s = &c->side[st_rand(c, 2)];
	if (st_close_unpolled && c->fate == ST_FULL && !s->cq->notify &&
	    s->qp.hdr && st_chance(c, 4)) {
		s->cq->hold = true;
		/* How often the step is more than a plain close. */
		atomic64_inc(&st.unpolled_closes);
		atomic64_add(st_qp_outstanding(c, s), &st.closed_outstanding);
		st_close(s->conn, false);
		st_close(&s->qp, false);
		ok = st_wait(c, st_done(s->qp.closed),
			     "close of a QP with unpolled completions");
		s->cq->hold = false;
		if (ok)
			st_wait(c, !st_qp_outstanding(c, s),
				"results of a closed QP's requests");
	}

	for (i = 0; i < 2; i++)
		if (c->side[i].qp.hdr && !atomic_read(&c->side[i].qp.claimed))
			st_qp(&c->side[i])->Dispatch->NdkFlush(st_qp(&c->side[i]));
	st_wait(c, !atomic_read(&c->cq[0].pending) &&
		!atomic_read(&c->cq[1].pending), "flushed work requests");

	/* A polled CQ may be resized while it is being closed. */
	for (i = 0; i < c->ncq && !c->stuck; i++) {
		struct st_cq *q = &c->cq[i];
		NDK_CQ *cq = container_of(q->obj.hdr, NDK_CQ, Header);
		struct st_req *r;

		if (q->notify || !q->obj.hdr || !st_chance(c, 4) ||
		    !(c->info.AdapterFlags &
		      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
			continue;
		spin_lock_irqsave(&q->lock, flags);
		q->stop = true;
		spin_unlock_irqrestore(&q->lock, flags);
		r = st_req(c, ST_R_RESIZE0 + i, &q->obj, "NdkResizeCq", 0,
			   NULL);
		status = cq->Dispatch->NdkResizeCq(cq, 2 * ST_CQ_DEPTH,
						   st_req_done, r);
		st_issued(c, r, status);
	}

	/* Sometimes deregister first, perhaps closing in the completion. */
	for (i = 0; i < 2 && !c->stuck; i++) {
		struct st_side *s = &c->side[i];
		NDK_MR *mr = st_mr(&s->mr);
		struct st_req *r;

		if (!s->mr.hdr || !st_done(c->req[ST_R_CREG + i].done) ||
		    c->req[ST_R_CREG + i].status || !st_chance(c, 3))
			continue;
		r = st_req(c, ST_R_CDEREG + i, &s->mr, "NdkDeregisterMr", 0,
			   st_chance(c, 2) ? &s->mr : NULL);
		status = mr->Dispatch->NdkDeregisterMr(mr, st_req_done, r);
		st_issued(c, r, status);
	}

	objs[n++] = &c->cli;
	objs[n++] = &c->srv;
	objs[n++] = &c->lis;
	objs[n++] = &c->fmr;
	objs[n++] = &c->sep;
	objs[n++] = &c->srq;
	if (!c->side[0].qp.close_on_close && !c->side[1].qp.close_on_close)
		objs[n++] = &c->pd;
	for (i = 0; i < 2; i++) {
		objs[n++] = &c->side[i].qp;
		objs[n++] = &c->side[i].mr;
	}
	for (i = 0; i < c->ncq; i++)
		objs[n++] = &c->cq[i].obj;
	for (i = n - 1; i > 0; i--) {
		j = st_rand(c, i + 1);
		swap(objs[i], objs[j]);
	}
	for (i = 0; i < n; i++) {
		if (objs[i] == &c->cq[0].obj || objs[i] == &c->cq[1].obj) {
			struct st_cq *q = container_of(objs[i], struct st_cq,
						       obj);

			spin_lock_irqsave(&q->lock, flags);
			q->stop = true;
			spin_unlock_irqrestore(&q->lock, flags);
		}
		st_close(objs[i], false);
		if (st_chance(c, 8))
			usleep_range(100, 1000);
	}

	/* NdkReleaseLAM needs the adapter: before it is closed. */
	if (c->fmr.hdr)
		st_wait(c, st_done(c->fmr.closed), "close of the fast-register MR");
	/* Or let ndk_close_adapter() wait for the closes itself. */
	if (st_chance(c, 2))
		st_wait(c, !atomic_read(&c->pending), "close completions");

	INIT_WORK(&c->close_work, st_close_adapter_work);
	init_completion(&c->closed);
	queue_work(system_unbound_wq, &c->close_work);
	if (!wait_for_completion_timeout(&c->closed, st_timeout * HZ)) {
		st_problem(c, "stuck: ndk_close_adapter()");
		return false;
	}
	k = atomic_read(&c->in_cb);
	if (k)
		st_problem(c, "%d callbacks still running after ndk_close_adapter()",
			   k);
	k = atomic_read(&c->pending);
	if (k) {
		st_problem(c, "%d operations neither completed nor cancelled",
			   k);
		atomic64_add(k, &st.unaccounted);
	}
	return true;
}
