// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_fault, the tests of ndk/fault.c: every call that can fail on a create,
 * resize, register, listen or connect path is made to fail in turn. ndk
 * wraps each such call (NDK_FI_*() in ndk_priv.h); a path is run again and
 * again with the first, second, ... wrapped call failing until a run passes
 * them all. Each injected failure must end the path with an error status,
 * an inline failure must never complete through a callback, and whatever
 * was created must close; the suite's exit closes the adapter with a time
 * limit, which fails if anything was left half-made. kmemleak at the end of
 * the run catches what leaked.
 *
 * Each path prints its coverage: how many failure points it passed and how
 * many were injected.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

/* No path comes near this many wrapped calls. */
#define NDK_FI_MAX	64

/* A run's outcome: whether the chosen call came, how many were made. */
struct ndk_fi {
	bool fired;
	int seen;
};

static void ndk_fi_stop(struct ndk_fi *fi)
{
	fi->seen = ndk_fault_disarm(&fi->fired);
}

/*
 * The final status of a call whose inline status is @st; @inline_fail
 * remembers an inline failure, whose callback must never come.
 */
static NTSTATUS ndk_fi_wait(struct kunit *test, NTSTATUS st,
			    struct ndk_wait *w, bool *inline_fail)
{
	if (st != STATUS_PENDING) {
		*inline_fail = st != STATUS_SUCCESS;
		return st;
	}
	if (!ndk_wait_for(w)) {
		KUNIT_FAIL(test, "no completion");
		return STATUS_IO_TIMEOUT;
	}
	return w->status;
}

static void ndk_fi_no_callback(struct kunit *test, bool inline_fail,
			       struct ndk_wait *w)
{
	if (inline_fail)
		KUNIT_EXPECT_EQ(test, atomic_read(&w->calls), 0);
}

static void ndk_fi_close(struct kunit *test, NDK_OBJECT_HEADER *hdr)
{
	ndk_test_close(test, hdr, ndk_close_object);
}

/*
 * One step of a path: its final status. A call that did not pend, failed
 * or (a request completing inline) succeeded, must not call back.
 */
static NTSTATUS ndk_fi_step(struct kunit *test, NTSTATUS st,
			    struct ndk_wait *w)
{
	bool done = st != STATUS_PENDING;
	bool inline_fail = false;

	st = ndk_fi_wait(test, st, w, &inline_fail);
	ndk_fi_no_callback(test, done, w);
	return st;
}

/*
 * The end of a path that creates one object, which the call stores in
 * @obj if it completes inline: its final status, the injection stopped,
 * the object closed if it was made.
 */
static NTSTATUS ndk_fi_created(struct kunit *test, NTSTATUS st,
			       struct ndk_wait *w, struct ndk_fi *fi,
			       void *obj)
{
	bool pending = st == STATUS_PENDING;
	bool inline_fail = false;

	st = ndk_fi_wait(test, st, w, &inline_fail);
	ndk_fi_stop(fi);
	/* Made inline, the object is what the call stored: no callback. */
	if (!st && !pending)
		KUNIT_EXPECT_EQ(test, atomic_read(&w->calls), 0);
	if (!st)
		ndk_fi_close(test, pending ? w->obj : obj);
	ndk_fi_no_callback(test, inline_fail, w);
	return st;
}

static NTSTATUS ndk_fi_adapter(struct kunit *test, struct ndk_cenv *e,
			       int nth, struct ndk_fi *fi)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	NDK_ADAPTER *a = NULL;
	NTSTATUS st;

	ndk_fault_arm(nth);
	st = ndk_open_adapter(ndk_test_ifindex(test), v, &a);
	ndk_fi_stop(fi);
	if (!st)
		ndk_test_close_adapter(test, a);
	else
		KUNIT_EXPECT_NULL(test, a);
	return st;
}

static NTSTATUS ndk_fi_pd(struct kunit *test, struct ndk_cenv *e, int nth,
			  struct ndk_fi *fi)
{
	NDK_PD *pd = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreatePd(e->a, ndk_test_create_cb, &w, &pd);
	return ndk_fi_created(test, st, &w, fi, pd);
}

static NTSTATUS ndk_fi_cq(struct kunit *test, struct ndk_cenv *e, int nth,
			  struct ndk_fi *fi)
{
	NDK_CQ *cq = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreateCq(e->a, 16, NULL, NULL, NULL,
					 ndk_test_create_cb, &w, &cq);
	return ndk_fi_created(test, st, &w, fi, cq);
}

static NTSTATUS ndk_fi_qp(struct kunit *test, struct ndk_cenv *e, int nth,
			  struct ndk_fi *fi)
{
	NDK_QP *qp = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->pd->Dispatch->NdkCreateQp(e->pd, e->cq, e->cq, e, 8, 8, 1, 1,
					  0, ndk_test_create_cb, &w, &qp);
	return ndk_fi_created(test, st, &w, fi, qp);
}

static void ndk_fi_srq_notify(PVOID Context, NTSTATUS Status)
{
}

static NTSTATUS ndk_fi_srq(struct kunit *test, struct ndk_cenv *e, int nth,
			   struct ndk_fi *fi)
{
	NDK_SRQ *srq = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->pd->Dispatch->NdkCreateSrq(e->pd, 16, 1, 0, ndk_fi_srq_notify,
					   NULL, NULL, ndk_test_create_cb, &w,
					   &srq);
	return ndk_fi_created(test, st, &w, fi, srq);
}

/*
 * NdkResizeCq of a CQ made before the injection starts, so that only the
 * resize's own request can fail. A device that cannot resize (siw)
 * refuses before it allocates anything: no path to run there.
 */
static NTSTATUS ndk_fi_resize_cq(struct kunit *test, struct ndk_cenv *e,
				 int nth, struct ndk_fi *fi)
{
	struct ndk_adapter *a = container_of(e->a, struct ndk_adapter, ndk);
	NDK_OBJECT_HEADER *hdr;
	struct ndk_wait w;
	NDK_CQ *cq;
	NTSTATUS st;

	if (!(a->info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
		kunit_skip(test, "device cannot resize CQs");
	hdr = ndk_test_create_cq(test, e->a, 16);
	cq = container_of(hdr, NDK_CQ, Header);
	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = cq->Dispatch->NdkResizeCq(cq, 32, ndk_test_request_cb, &w);
	st = ndk_fi_step(test, st, &w);
	ndk_fi_stop(fi);
	ndk_fi_close(test, hdr);
	return st;
}

/* A memory window: its object, its page list and its verbs MR. */
static NTSTATUS ndk_fi_mw(struct kunit *test, struct ndk_cenv *e, int nth,
			  struct ndk_fi *fi)
{
	NDK_MW *mw = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->pd->Dispatch->NdkCreateMw(e->pd, ndk_test_create_cb, &w, &mw);
	return ndk_fi_created(test, st, &w, fi, mw);
}

/*
 * A PD of its own, so that the first registration also builds the PD's
 * registration QP; then an MR registered from a kmalloc MDL.
 */
static NTSTATUS ndk_fi_register(struct kunit *test, struct ndk_cenv *e,
				int nth, struct ndk_fi *fi)
{
	bool registered = false;
	NDK_OBJECT_HEADER *pd = NULL, *mr = NULL;
	struct ndk_wait pw, mw, rw, dw;
	struct ndk_mdl mdl;
	/* Where an inline create stores its object. */
	NDK_PD *made_pd = NULL;
	NDK_MR *made_mr = NULL;
	NTSTATUS st;
	void *buf;

	buf = kunit_kzalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	ndk_mdl_init_kva(&mdl, buf, 2 * PAGE_SIZE);
	ndk_wait_init(&pw);
	ndk_wait_init(&mw);
	ndk_wait_init(&rw);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreatePd(e->a, ndk_test_create_cb, &pw,
					 &made_pd);
	st = ndk_fi_step(test, st, &pw);
	if (!st) {
		NDK_PD *p = made_pd ?: container_of(pw.obj, NDK_PD, Header);

		pd = &p->Header;
		st = p->Dispatch->NdkCreateMr(p, FALSE, ndk_test_create_cb, &mw,
					      &made_mr);
		st = ndk_fi_step(test, st, &mw);
	}
	if (!st) {
		NDK_MR *m = made_mr ?: container_of(mw.obj, NDK_MR, Header);

		mr = &m->Header;
		st = m->Dispatch->NdkRegisterMr(m, &mdl, 2 * PAGE_SIZE,
						NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
						NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
						ndk_test_request_cb, &rw);
		st = ndk_fi_step(test, st, &rw);
		registered = !st;
	}
	ndk_fi_stop(fi);
	if (registered) {
		NDK_MR *m = container_of(mr, NDK_MR, Header);
		NTSTATUS dst;

		ndk_wait_init(&dw);
		dst = m->Dispatch->NdkDeregisterMr(m, ndk_test_request_cb, &dw);
		KUNIT_EXPECT_EQ(test, ndk_fi_step(test, dst, &dw),
				STATUS_SUCCESS);
	}
	if (mr)
		ndk_fi_close(test, mr);
	if (pd)
		ndk_fi_close(test, pd);
	return st;
}

static NTSTATUS ndk_fi_fast_mr(struct kunit *test, struct ndk_cenv *e,
			       int nth, struct ndk_fi *fi)
{
	struct ndk_wait mw, iw;
	NDK_MR *m = NULL;
	NTSTATUS st;

	ndk_wait_init(&mw);
	ndk_wait_init(&iw);
	ndk_fault_arm(nth);
	st = e->pd->Dispatch->NdkCreateMr(e->pd, TRUE, ndk_test_create_cb, &mw,
					  &m);
	st = ndk_fi_step(test, st, &mw);
	/* Made inline, the MR is in @m; made later, in the callback's. */
	if (!m && mw.obj && mw.status == STATUS_SUCCESS)
		m = container_of(mw.obj, NDK_MR, Header);
	if (!st) {
		st = m->Dispatch->NdkInitializeFastRegisterMr(m, 4, TRUE,
							      ndk_test_request_cb,
							      &iw);
		st = ndk_fi_step(test, st, &iw);
	}
	ndk_fi_stop(fi);
	if (m)
		ndk_fi_close(test, &m->Header);
	return st;
}

static void ndk_fi_conn_event(PVOID Context, NDK_CONNECTOR *pNdkConnector)
{
}

/* A listener of its own on the port after the suite's, listening. */
static NTSTATUS ndk_fi_listen(struct kunit *test, struct ndk_cenv *e,
			      int nth, struct ndk_fi *fi)
{
	struct sockaddr_in sin = e->addr;
	struct ndk_wait cw, lw;
	NDK_LISTENER *l = NULL;
	NTSTATUS st;

	sin.sin_port = htons(NDK_TEST_PORT + 1);
	ndk_wait_init(&cw);
	ndk_wait_init(&lw);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreateListener(e->a, ndk_fi_conn_event, NULL,
					       ndk_test_create_cb, &cw, &l);
	st = ndk_fi_step(test, st, &cw);
	/* Made inline, the listener is in @l; made later, in the callback's. */
	if (!l && cw.obj && cw.status == STATUS_SUCCESS)
		l = container_of(cw.obj, NDK_LISTENER, Header);
	if (!st) {
		st = l->Dispatch->NdkListen(l, (struct sockaddr *)&sin,
					    sizeof(sin), ndk_test_request_cb,
					    &lw);
		st = ndk_fi_step(test, st, &lw);
	}
	ndk_fi_stop(fi);
	if (l)
		ndk_fi_close(test, &l->Header);
	return st;
}

static NTSTATUS ndk_fi_connector(struct kunit *test, struct ndk_cenv *e,
				 int nth, struct ndk_fi *fi)
{
	NDK_CONNECTOR *c = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreateConnector(e->a, ndk_test_create_cb, &w,
						&c);
	return ndk_fi_created(test, st, &w, fi, c);
}

static NTSTATUS ndk_fi_endpoint(struct kunit *test, struct ndk_cenv *e,
				int nth, struct ndk_fi *fi)
{
	struct sockaddr_in sin = e->addr;
	NDK_SHARED_ENDPOINT *sep = NULL;
	struct ndk_wait w;
	NTSTATUS st;

	sin.sin_port = htons(NDK_TEST_PORT + 2);
	ndk_wait_init(&w);
	ndk_fault_arm(nth);
	st = e->a->Dispatch->NdkCreateSharedEndpoint(e->a,
						     (struct sockaddr *)&sin,
						     sizeof(sin),
						     ndk_test_create_cb, &w,
						     &sep);
	return ndk_fi_created(test, st, &w, fi, sep);
}

/* Until @a or @b completed, or the test's time limit. */
static void ndk_fi_wait_either(struct completion *a, struct completion *b)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	while (!completion_done(a) && !(b && completion_done(b)) &&
	       time_before(jiffies, end))
		usleep_range(2000, 5000);
}

/*
 * Every request the connect path's own listener hears, kept so that all
 * get closed: a request from an earlier, failed run can arrive late.
 */
struct ndk_fi_lctx {
	spinlock_t lock;	/* guards @in and @n */
	NDK_CONNECTOR *in[8];
	int n;
	struct completion first;
};

static void ndk_fi_incoming(PVOID ConnectEventContext,
			    NDK_CONNECTOR *pNdkConnector)
{
	struct ndk_fi_lctx *l = ConnectEventContext;
	unsigned long flags;

	spin_lock_irqsave(&l->lock, flags);
	if (l->n < ARRAY_SIZE(l->in))
		l->in[l->n++] = pNdkConnector;
	spin_unlock_irqrestore(&l->lock, flags);
	complete(&l->first);
}

/*
 * Close @lst and every request it handed over but @keep. Once the close
 * has begun the listener hands over nothing more.
 */
static void ndk_fi_close_listener(struct kunit *test, NDK_LISTENER *lst,
				  struct ndk_fi_lctx *l, NDK_CONNECTOR *keep)
{
	struct ndk_wait w;
	NTSTATUS st;
	int i;

	ndk_wait_init(&w);
	st = lst->Dispatch->NdkCloseListener(&lst->Header, ndk_test_close_cb,
					     &w);
	for (i = 0; i < l->n; i++)
		if (l->in[i] != keep)
			ndk_close_all(test, l->in[i], NULL);
	if (st == STATUS_PENDING)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w));
	else
		KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
}

/*
 * The whole handshake through a listener of the path's own: connect,
 * accept, complete, each side with private data (copied, so it can fail
 * too). Failures may hit either side. On IB and RoCE the
 * accept completes only once the active side completed too, so it is
 * collected last; an accept that fails is closed at once, which rejects
 * the request and so ends the connect.
 */
static NTSTATUS ndk_fi_connect(struct kunit *test, struct ndk_cenv *e,
			       int nth, struct ndk_fi *fi)
{
	NDK_CONNECTOR *c = ndk_cenv_connector(test, e);
	NDK_QP *aqp = ndk_cenv_qp(test, e), *pqp = ndk_cenv_qp(test, e);
	u8 pdata[16] = "ndk fault path";
	bool cw_inline;
	NTSTATUS st, ast = STATUS_SUCCESS;
	struct ndk_wait cw, aw, ccw, lw;
	struct ndk_fi_lctx *l;
	NDK_CONNECTOR *in = NULL;
	NDK_LISTENER *lst = NULL;

	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l);
	spin_lock_init(&l->lock);
	init_completion(&l->first);
	ndk_wait_init(&lw);
	st = e->a->Dispatch->NdkCreateListener(e->a, ndk_fi_incoming, l,
					       ndk_test_create_cb, &lw, &lst);
	lst = container_of(ndk_created(test, st, &lw, lst), NDK_LISTENER,
			   Header);
	KUNIT_ASSERT_EQ(test, ndk_cenv_listen(test, e, lst, NDK_TEST_PORT + 3),
			STATUS_SUCCESS);
	ndk_wait_init(&cw);
	ndk_wait_init(&aw);
	ndk_wait_init(&ccw);
	ndk_fault_arm(nth);
	st = ndk_cenv_connect(e, c, aqp, NDK_TEST_PORT + 3, pdata,
			      sizeof(pdata), &cw);
	cw_inline = st != STATUS_PENDING && st != STATUS_SUCCESS;
	if (st != STATUS_PENDING)
		goto out;
	ndk_fi_wait_either(&cw.done, &l->first);
	if (completion_done(&l->first))
		in = l->in[0];
	if (in) {
		ast = in->Dispatch->NdkAccept(in, pqp, 4, 4, pdata,
					      sizeof(pdata), NULL, NULL,
					      ndk_test_request_cb, &aw);
		if (ast != STATUS_PENDING) {
			KUNIT_EXPECT_NE(test, ast, STATUS_SUCCESS);
			in = NULL;
		}
	}
	/*
	 * A request refused inline is rejected by closing it, before the
	 * wait: the connect ends only on that reject (or, much later, on
	 * the transport's own timeout).
	 */
	if (!in && l->in[0]) {
		ndk_close_all(test, l->in[0], NULL);
		l->in[0] = NULL;
	}
	ndk_fi_wait_either(&cw.done, in ? &aw.done : NULL);
	if (in && completion_done(&aw.done) && aw.status) {
		ndk_close_all(test, in, NULL);
		l->in[0] = NULL;
		in = NULL;
	}
	st = ndk_wait_for(&cw) ? cw.status : STATUS_IO_TIMEOUT;
	if (!st) {
		st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL,
						     ndk_test_request_cb, &ccw);
		st = ndk_fi_step(test, st, &ccw);
	}
	/* Closing the passive side cancels an accept still waiting. */
	if (st && in) {
		ndk_close_all(test, in, NULL);
		l->in[0] = NULL;
		in = NULL;
	}
	if (ast == STATUS_PENDING)
		ast = ndk_wait_for(&aw) ? aw.status : STATUS_IO_TIMEOUT;
	else if (ast)
		ndk_fi_no_callback(test, true, &aw);
	if (st || ast)
		kunit_info(test, "call %d failing: connect 0x%08x, accept 0x%08x\n",
			   nth, st, ast);
	if (!st)
		st = ast;
out:
	ndk_fi_stop(fi);
	ndk_close_all(test, in, pqp);
	ndk_close_all(test, c, aqp);
	ndk_fi_close_listener(test, lst, l, in);
	ndk_fi_no_callback(test, cw_inline, &cw);
	return st;
}

/*
 * @recovers: a failure may be recovered from instead of failing the
 * path. Only the connect path: a passive side that cannot take a request
 * for lack of memory lets the IB CM drop it (ib_cm does not reject on
 * -ENOMEM), and the active side's retry then gets through.
 */
struct ndk_fault_path {
	const char *name;
	NTSTATUS (*run)(struct kunit *test, struct ndk_cenv *e, int nth,
			struct ndk_fi *fi);
	bool recovers;
};

static const struct ndk_fault_path ndk_fault_paths[] = {
	{ "ndk_open_adapter", ndk_fi_adapter },
	{ "NdkCreatePd", ndk_fi_pd },
	{ "NdkCreateCq", ndk_fi_cq },
	{ "NdkResizeCq", ndk_fi_resize_cq },
	{ "NdkCreateQp", ndk_fi_qp },
	{ "NdkCreateSrq", ndk_fi_srq },
	{ "NdkCreateMw", ndk_fi_mw },
	{ "NdkRegisterMr on a new PD", ndk_fi_register },
	{ "NdkInitializeFastRegisterMr", ndk_fi_fast_mr },
	{ "NdkListen", ndk_fi_listen },
	{ "NdkCreateConnector", ndk_fi_connector },
	{ "NdkCreateSharedEndpoint", ndk_fi_endpoint },
	{ "connect, accept, complete", ndk_fi_connect, true },
};

static void ndk_fault_desc(const struct ndk_fault_path *p, char *desc)
{
	strscpy(desc, p->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ndk_fault, ndk_fault_paths, ndk_fault_desc);

static void ndk_fault_path_test(struct kunit *test)
{
	const struct ndk_fault_path *p = test->param_value;
	struct ndk_cenv *e = test->priv;
	int nth, points = -1, injected = 0, recovered = 0;
	struct ndk_fi fi;
	NTSTATUS st;

	for (nth = 1; nth <= NDK_FI_MAX; nth++) {
		st = p->run(test, e, nth, &fi);
		if (!fi.fired) {
			KUNIT_EXPECT_EQ(test, st, STATUS_SUCCESS);
			points = fi.seen;
			break;
		}
		injected++;
		if (st == STATUS_SUCCESS && p->recovers) {
			recovered++;
			continue;
		}
		/* The failure must surface, as an error status. */
		KUNIT_EXPECT_TRUE_MSG(test, !NT_SUCCESS(st),
				      "call %d failed, path ended 0x%08x",
				      nth, st);
	}
	KUNIT_EXPECT_GT(test, points, 0);
	KUNIT_EXPECT_EQ(test, injected, points);
	kunit_info(test,
		   "coverage: %s: %d failure points, %d injected, %d recovered\n",
		   p->name, points, injected, recovered);
}

static struct kunit_case ndk_fault_cases[] = {
	KUNIT_CASE_PARAM(ndk_fault_path_test, ndk_fault_gen_params),
	{}
};

NDK_SUITE(fault, ndk_conn_init_test, ndk_conn_exit_test);
