// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_main, the tests of ndk/main.c's device removal: the RDMA device goes
 * away (`rdma link delete`) under a consumer that has a connection up,
 * receives posted and an idle QP. The same again with the driver module
 * unloaded (`rmmod`), after which the device is recreated. The consumer
 * hears NDK_ADAPTER_REMOVED; everything posted completes with the flush
 * status; the connection ends with a disconnect event; nothing new can be
 * created, connected, accepted, listened on or sent, even on objects made
 * before; a region still deregisters; every close still completes, and the
 * device's unregistration finishes only once the adapter is closed. This
 * suite must run last: the device stays gone (the VM's init runs the
 * interop cases before the suites).
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/workqueue.h>
#include "ndk_tests.h"

#define NDK_RM_BUF	512
#define NDK_RM_RECVS	4

/**
 * struct ndk_rm - the removal under way
 * @nb: adapter notifier
 * @ifindex: the interface whose adapter is watched
 * @removed: NDK_ADAPTER_REMOVED arrived for it
 * @added: NDK_ADAPTER_ADDED arrived for it
 * @iwarp: the device is siw's, not rxe's; noted while it exists, since the
 *	restore runs with no device to tell by
 * @work: runs @cmd, which blocks while the device is referenced
 * @started: @work was queued
 * @cmd: the shell command
 * @ret: its exit status, as ndk_test_shell() gives it
 * @done: @cmd returned
 */
struct ndk_rm {
	struct notifier_block nb;
	int ifindex;
	struct completion removed;
	bool added;
	bool iwarp;
	struct work_struct work;
	bool started;
	char cmd[64];
	int ret;
	struct completion done;
};

static int ndk_rm_notify(struct notifier_block *nb, unsigned long event,
			 void *data)
{
	struct ndk_rm *rm = container_of(nb, struct ndk_rm, nb);
	const struct ndk_adapter_desc *d = data;

	if (d->ifindex != rm->ifindex)
		return NOTIFY_DONE;
	if (event == NDK_ADAPTER_REMOVED)
		complete(&rm->removed);
	else if (event == NDK_ADAPTER_ADDED)
		rm->added = true;
	return NOTIFY_OK;
}

static void ndk_rm_work(struct work_struct *work)
{
	struct ndk_rm *rm = container_of(work, struct ndk_rm, work);

	rm->ret = ndk_test_shell(rm->cmd);
	complete_all(&rm->done);
}

/* The suite's removal state; a command may outlive a failed case. */
static struct ndk_rm *ndk_rm;

static int ndk_removal_init(struct kunit *test)
{
	struct ndk_rm *rm;

	/* The device could not go while the kept adapter holds it. */
	if (ndk_test_kept_open())
		kunit_skip(test, "an adapter is kept open (provoke=open)");
	rm = kzalloc(sizeof(*rm), GFP_KERNEL);
	if (!rm)
		return -ENOMEM;
	rm->nb.notifier_call = ndk_rm_notify;
	rm->ifindex = ndk_test_ifindex(test);
	rm->iwarp = ndk_test_iwarp();
	init_completion(&rm->removed);
	init_completion(&rm->done);
	INIT_WORK(&rm->work, ndk_rm_work);
	ndk_rm = rm;
	if (ndk_register_adapter_notifier(&rm->nb)) {
		kfree(rm);
		ndk_rm = NULL;
		return -ENOMEM;
	}
	return ndk_conn_init_test(test);
}

static void ndk_removal_exit(struct kunit *test)
{
	struct ndk_rm *rm = ndk_rm;

	ndk_conn_exit_test(test);
	if (!rm)
		return;
	ndk_unregister_adapter_notifier(&rm->nb);
	/* A command still running would write to @rm: leave it. */
	if (!rm->started ||
	    wait_for_completion_timeout(&rm->done, NDK_TEST_TIMEOUT))
		kfree(rm);
	ndk_rm = NULL;
}

static const char *ndk_rm_type(const struct ndk_rm *rm)
{
	return rm->iwarp ? "siw" : "rxe";
}

/* Post @n receives of 32 bytes on @qp, from slot @slot on. */
static void ndk_rm_receives(struct kunit *test, NDK_QP *qp, u64 dma,
			    UINT32 tok, int slot, int n)
{
	NDK_SGE sge = { .Length = 32, .MemoryRegionToken = tok };
	int i;

	for (i = 0; i < n; i++) {
		sge.LogicalAddress = dma + 32 * (slot + i);
		KUNIT_ASSERT_EQ(test,
				qp->Dispatch->NdkReceive(qp,
					(void *)(uintptr_t)(0x100 + slot + i),
					&sge, 1),
				STATUS_SUCCESS);
	}
}

static void ndk_rm_cq_cb(PVOID ctx, NTSTATUS status)
{
}

/* A create on the removed adapter completes with STATUS_DEVICE_REMOVED. */
static void ndk_rm_expect_no_create(struct kunit *test, NTSTATUS st,
				    struct ndk_wait *w)
{
	if (st == STATUS_PENDING) {
		KUNIT_ASSERT_TRUE(test, ndk_wait_for(w));
		st = w->status;
		KUNIT_EXPECT_NULL(test, w->obj);
	}
	KUNIT_EXPECT_EQ(test, st, STATUS_DEVICE_REMOVED);
}

/* The driver module of the transport under test. */
static const char *ndk_rm_module(const struct ndk_rm *rm)
{
	return rm->iwarp ? "siw" : "rdma_rxe";
}

/*
 * Whether the driver holds a reference on its own module while it has a
 * device: Linux 7.3's rxe and siw do from `rdma link add` on (rmmod fails
 * with EAGAIN; rxe's measured with ndk not loaded), so unloading them
 * cannot remove a device there. 6.1's and 6.12's do not.
 */
static bool ndk_rm_driver_pinned(struct kunit *test, const struct ndk_rm *rm)
{
	char path[64], buf[16];
	unsigned int refs;

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt",
		 ndk_rm_module(rm));
	KUNIT_ASSERT_EQ(test, ndk_rw_file(path, buf, sizeof(buf), false), 0);
	KUNIT_ASSERT_EQ(test, kstrtouint(strim(buf), 10, &refs), 0);
	return refs;
}

/*
 * Whether unloading the driver can free a QP under the driver itself:
 * Linux 6.1's siw answers the NETDEV_GOING_DOWN that its own unload
 * replays with a work item, siw_netdev_down(), that walks the device's
 * QPs with no lock and no references while the consumer, told of the
 * removal, destroys them (a use-after-free in siw, seen under KASAN).
 * The function's presence is the probe. See deviations.rst.
 */
static bool ndk_rm_driver_unload_unsafe(const struct ndk_rm *rm)
{
	return rm->iwarp &&
	       !ndk_test_shell("grep -qw siw_netdev_down /proc/kallsyms");
}

/* The command that removes the device: unload its driver, or delete it. */
static void ndk_rm_command(struct ndk_rm *rm, bool unload)
{
	if (unload)
		snprintf(rm->cmd, sizeof(rm->cmd), "rmmod %s",
			 ndk_rm_module(rm));
	else
		snprintf(rm->cmd, sizeof(rm->cmd), "rdma link delete %s0",
			 ndk_rm_type(rm));
}

/**
 * struct ndk_rm_way - one way for the device to go
 * @name: the case's parameter name
 * @unload: unload the driver module (and load it again afterwards)
 *	rather than delete the link (the device then stays gone)
 */
struct ndk_rm_way {
	const char *name;
	bool unload;
};

/* The unload comes first, as it puts the device back. */
static const struct ndk_rm_way ndk_rm_ways[] = {
	{ "driver_unload", true },
	{ "link_delete", false },
};

static void ndk_rm_way_desc(const struct ndk_rm_way *w, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", w->name);
}

KUNIT_ARRAY_PARAM(ndk_rm_way, ndk_rm_ways, ndk_rm_way_desc);

/* Load the driver again and recreate the device, as init.sh made it. */
static void ndk_rm_restore(struct kunit *test, struct ndk_rm *rm)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;
	char cmd[96];

	rm->added = false;
	snprintf(cmd, sizeof(cmd),
		 "modprobe %s && rdma link add %s0 type %s netdev eth0",
		 ndk_rm_module(rm), ndk_rm_type(rm), ndk_rm_type(rm));
	KUNIT_ASSERT_EQ(test, ndk_test_shell(cmd), 0);
	while (!READ_ONCE(rm->added) && time_before(jiffies, end))
		msleep(20);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(rm->added));
	KUNIT_EXPECT_EQ(test, ndk_enum_adapters(NULL, 0), 1);
}

/*
 * Close the suite's environment, the adapter last: only then may the
 * removal command, blocked on the device's release, finish.
 */
static void ndk_rm_close_env(struct kunit *test, struct ndk_rm *rm)
{
	ndk_conn_exit_test(test);
	test->priv = NULL;
	KUNIT_EXPECT_NE_MSG(test, wait_for_completion_timeout(&rm->done,
							      NDK_TEST_TIMEOUT),
			    0UL, "the device's unregistration did not finish");
	KUNIT_EXPECT_EQ(test, rm->ret, 0);
}

#define NDK_RMP_MAX	4096
#define NDK_RMP_WINDOW	6

/**
 * struct ndk_rmp - a consumer posting on another CPU while the device goes
 * @p: the connection; receives on its passive QP, sends on its active one
 * @cq: the CQ of both, polled only by the poster
 * @dma: device address of the buffer both use
 * @tok: the privileged token
 * @seen: the request contexts that completed
 * @posted: requests accepted, receives and sends alike
 * @completed: results polled for them
 * @unknown: results for a context never posted, or for one twice
 * @failed: results with a status other than success or cancellation
 * @refused: the first post ndk refused has happened
 * @started: the first request is posted
 */
struct ndk_rmp {
	struct ndk_pair *p;
	NDK_CQ *cq;
	u64 dma;
	UINT32 tok;
	unsigned long *seen;
	int posted;
	int completed;
	int unknown;
	int failed;
	bool refused;
	struct completion started;
};

static void ndk_rmp_poll(struct ndk_rmp *m)
{
	NDK_RESULT r[8];
	ULONG n, i;
	uintptr_t id;

	n = m->cq->Dispatch->NdkGetCqResults(m->cq, r, ARRAY_SIZE(r));
	for (i = 0; i < n; i++) {
		id = (uintptr_t)r[i].RequestContext - 1;
		if (id >= (uintptr_t)m->posted || test_and_set_bit(id, m->seen)) {
			m->unknown++;
			continue;
		}
		if (r[i].Status != STATUS_SUCCESS &&
		    r[i].Status != STATUS_CANCELLED)
			m->failed++;
		WRITE_ONCE(m->completed, m->completed + 1);
	}
}

/* One receive on the passive QP and one send to it; false if refused. */
static bool ndk_rmp_post(struct ndk_rmp *m)
{
	NDK_SGE sge = { .LogicalAddress = m->dma, .Length = 32,
			.MemoryRegionToken = m->tok };
	NDK_QP *rq = m->p->pqp, *sq = m->p->aqp;

	if (rq->Dispatch->NdkReceive(rq, (void *)(uintptr_t)(m->posted + 1),
				     &sge, 1))
		return false;
	WRITE_ONCE(m->posted, m->posted + 1);
	sge.LogicalAddress += 64;
	if (sq->Dispatch->NdkSend(sq, (void *)(uintptr_t)(m->posted + 1),
				  &sge, 1, 0))
		return false;
	WRITE_ONCE(m->posted, m->posted + 1);
	return true;
}

/*
 * The consumer: posts while fewer than a window are outstanding, polls
 * everything, and stops posting at the first refusal, as a consumer
 * would once its adapter is gone; it keeps polling until stopped.
 */
static int ndk_rmp_poster(void *arg)
{
	struct ndk_rmp *m = arg;

	while (!kthread_should_stop()) {
		ndk_rmp_poll(m);
		if (!READ_ONCE(m->refused) &&
		    m->posted - m->completed < NDK_RMP_WINDOW &&
		    m->posted + 2 <= NDK_RMP_MAX) {
			if (!ndk_rmp_post(m))
				WRITE_ONCE(m->refused, true);
			complete(&m->started);
		}
		usleep_range(20, 50);
	}
	return 0;
}

/*
 * The driver goes away while another CPU keeps posting on a live
 * connection: posting is refused from some point on, and every request
 * accepted before it completes exactly once, successfully or cancelled;
 * nothing is lost or reported twice.
 */
static void ndk_removal_posting_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_rm *rm = ndk_rm;
	struct ib_device *dev;
	struct sockaddr_in dst;
	struct task_struct *t;
	struct ndk_rmp *m;
	unsigned long end;
	struct ndk_pair p;
	void *buf;

	KUNIT_ASSERT_NOT_NULL(test, rm);
	m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m);
	m->seen = kunit_kzalloc(test, BITS_TO_LONGS(NDK_RMP_MAX) *
				sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m->seen);
	buf = kunit_kzalloc(test, NDK_RM_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	m->dma = ib_dma_map_single(dev, buf, NDK_RM_BUF, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, m->dma));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &m->tok);
	init_completion(&m->started);

	ndk_pair_init(test, e, &p);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	m->p = &p;
	m->cq = e->cq;
	t = kthread_create(ndk_rmp_poster, m, "ndk_rm_poster");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	kthread_bind(t, ndk_test_other_cpu(test));
	get_task_struct(t);
	wake_up_process(t);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&m->started,
							  NDK_TEST_TIMEOUT),
			0UL);
	msleep(200);

	/* Where the driver cannot be unloaded, its device goes all the same. */
	ndk_rm_command(rm, !ndk_rm_driver_pinned(test, rm) &&
		       !ndk_rm_driver_unload_unsafe(rm));
	rm->started = true;
	queue_work(system_long_wq, &rm->work);
	KUNIT_EXPECT_NE_MSG(test, wait_for_completion_timeout(&rm->removed,
							      NDK_TEST_TIMEOUT),
			    0UL, "no NDK_ADAPTER_REMOVED");
	end = jiffies + NDK_TEST_TIMEOUT;
	while ((!READ_ONCE(m->refused) ||
		READ_ONCE(m->completed) != READ_ONCE(m->posted)) &&
	       time_before(jiffies, end))
		msleep(20);
	kthread_stop(t);
	put_task_struct(t);

	KUNIT_EXPECT_TRUE_MSG(test, m->refused, "posting never refused");
	KUNIT_EXPECT_GT(test, m->posted, 2 * NDK_RMP_WINDOW);
	KUNIT_EXPECT_EQ(test, m->completed, m->posted);
	KUNIT_EXPECT_EQ(test, m->unknown, 0);
	KUNIT_EXPECT_EQ(test, m->failed, 0);

	ib_dma_unmap_single(dev, m->dma, NDK_RM_BUF, DMA_BIDIRECTIONAL);
	ndk_pair_close(test, &p);
	ndk_rm_close_env(test, rm);
	ndk_rm_restore(test, rm);
}

/* The calls of ndk_rm_lates[]. */
#define NDK_RM_LATES	4

/**
 * struct ndk_rm_kept - what the consumer made before the removal, to use
 *	after it
 * @c: a connector never connected
 * @l: a listener not listening
 * @q: a connection whose request the listener handed over, unanswered
 * @cw: the connect of @q
 * @m: a registered region
 * @qp: the QP @c connects with
 * @w: the waits of ndk_rm_lates[]
 * @pended: which of them pended
 */
struct ndk_rm_kept {
	NDK_CONNECTOR *c;
	NDK_LISTENER *l;
	struct ndk_pair q;
	struct ndk_wait cw;
	struct ndk_pmem *m;
	NDK_QP *qp;
	struct ndk_wait w[NDK_RM_LATES];
	bool pended[NDK_RM_LATES];
};

static NTSTATUS ndk_rm_connect(struct ndk_cenv *e, struct ndk_rm_kept *k,
			       struct ndk_wait *w)
{
	return ndk_cenv_connect(e, k->c, k->qp, NDK_TEST_PORT, NULL, 0, w);
}

static NTSTATUS ndk_rm_accept(struct ndk_cenv *e, struct ndk_rm_kept *k,
			      struct ndk_wait *w)
{
	NDK_CONNECTOR *in = k->q.in;

	return in->Dispatch->NdkAccept(in, k->q.pqp, 4, 4, NULL, 0, NULL, NULL,
				       ndk_test_request_cb, w);
}

static NTSTATUS ndk_rm_listen(struct ndk_cenv *e, struct ndk_rm_kept *k,
			      struct ndk_wait *w)
{
	struct sockaddr_in sin = e->addr;

	sin.sin_port = htons(NDK_TEST_PORT + 1);
	return k->l->Dispatch->NdkListen(k->l, (struct sockaddr *)&sin,
					 sizeof(sin), ndk_test_request_cb, w);
}

static NTSTATUS ndk_rm_deregister(struct ndk_cenv *e, struct ndk_rm_kept *k,
				  struct ndk_wait *w)
{
	NDK_MR *mr = k->m->mr;

	return mr->Dispatch->NdkDeregisterMr(mr, ndk_test_request_cb, w);
}

/**
 * struct ndk_rm_late - a call made after the removal on an object made
 *	before it
 * @name: the call
 * @call: makes it, reporting to @w
 * @status: its outcome
 * @may_pend: whether it may pend; else it must fail inline
 */
struct ndk_rm_late {
	const char *name;
	NTSTATUS (*call)(struct ndk_cenv *e, struct ndk_rm_kept *k,
			 struct ndk_wait *w);
	NTSTATUS status;
	bool may_pend;
};

/*
 * Nothing starts on the dead adapter; a region still deregisters, its
 * verbs MR destroyed rather than invalidated once the driver's module is
 * going (ndk_driver_going()).
 */
static const struct ndk_rm_late ndk_rm_lates[] = {
	{ "NdkConnect", ndk_rm_connect, STATUS_DEVICE_REMOVED, false },
	{ "NdkAccept", ndk_rm_accept, STATUS_DEVICE_REMOVED, false },
	{ "NdkListen", ndk_rm_listen, STATUS_DEVICE_REMOVED, false },
	{ "NdkDeregisterMr", ndk_rm_deregister, STATUS_SUCCESS, true },
};

static_assert(ARRAY_SIZE(ndk_rm_lates) == NDK_RM_LATES);

/*
 * Make @k's objects; @qp is an idle QP of the environment. Not on the
 * stack: after a failed assertion a late callback would write to it.
 */
static struct ndk_rm_kept *ndk_rm_keep(struct kunit *test,
				       struct ndk_cenv *e, NDK_QP *qp)
{
	struct ndk_rm_kept *k = kunit_kzalloc(test, sizeof(*k), GFP_KERNEL);
	struct sockaddr_in dst;

	KUNIT_ASSERT_NOT_NULL(test, k);
	k->qp = qp;
	k->c = ndk_cenv_connector(test, e);
	k->l = ndk_cenv_listener(test, e);
	k->m = ndk_pmem_new(test, e, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
	ndk_pair_init(test, e, &k->q);
	ndk_listen_addr(e, &dst);
	ndk_pair_request(test, e, &k->q, (struct sockaddr *)&e->addr,
			 (struct sockaddr *)&dst, sizeof(dst), false, &k->cw);
	return k;
}

/*
 * After the removal: each of ndk_rm_lates[] gives its outcome; the
 * pending connect ends as rdma_cm's removal aborts it.
 */
static void ndk_rm_use_kept(struct kunit *test, struct ndk_cenv *e,
			    struct ndk_rm_kept *k)
{
	const struct ndk_rm_late *l;
	NTSTATUS st;
	int i;

	for (i = 0; i < ARRAY_SIZE(ndk_rm_lates); i++) {
		l = &ndk_rm_lates[i];
		ndk_wait_init(&k->w[i]);
		st = l->call(e, k, &k->w[i]);
		k->pended[i] = st == STATUS_PENDING;
		if (k->pended[i] && l->may_pend) {
			KUNIT_ASSERT_TRUE_MSG(test, ndk_wait_for(&k->w[i]),
					      "%s never completed", l->name);
			st = k->w[i].status;
		}
		KUNIT_EXPECT_EQ_MSG(test, st, l->status, "%s", l->name);
	}
	/* The region's tokens died with it. */
	KUNIT_EXPECT_EQ(test,
			k->m->mr->Dispatch->NdkGetLocalTokenFromMr(k->m->mr),
			0U);
	KUNIT_ASSERT_TRUE(test, ndk_wait_for(&k->cw));
	KUNIT_EXPECT_EQ(test, k->cw.status, STATUS_CONNECTION_ABORTED);
}

/* Close @k's objects; no request called back but once, if it pended. */
static void ndk_rm_close_kept(struct kunit *test, struct ndk_rm_kept *k)
{
	int i;

	ndk_pair_close(test, &k->q);
	ndk_pmem_free(test, k->m);
	ndk_test_close(test, &k->l->Header, k->l->Dispatch->NdkCloseListener);
	ndk_close_all(test, k->c, NULL);
	for (i = 0; i < ARRAY_SIZE(ndk_rm_lates); i++)
		KUNIT_EXPECT_EQ_MSG(test, atomic_read(&k->w[i].calls),
				    (int)k->pended[i], "%s",
				    ndk_rm_lates[i].name);
	KUNIT_EXPECT_EQ(test, atomic_read(&k->cw.calls), 1);
}

/*
 * The device goes, its driver unloaded or its link deleted, under a
 * connection up, receives posted, an idle QP, a connector and a listener
 * never used, a connect request the listener handed over and a registered
 * region: the receives complete cancelled, the connection ends with a
 * disconnect event and the request's connect as aborted; no create
 * succeeds, and NdkConnect, NdkAccept and NdkListen fail inline, with no
 * callback; NdkDeregisterMr still succeeds, calling back once if it
 * pended; the device stays registered until the adapter is closed.
 */
static void ndk_removal_live_test(struct kunit *test)
{
	const struct ndk_rm_way *way = test->param_value;
	struct ndk_cenv *e = test->priv;
	NDK_CONNECTOR *cunused = NULL;
	const ULONG nr = 3 * NDK_RM_RECVS;
	NDK_RESULT *r;
	struct ib_device *dev;
	NDK_PD *pdunused = NULL;
	NDK_CQ *cqunused = NULL;
	struct sockaddr_in dst;
	unsigned long end;
	struct ndk_pair p;
	struct ndk_rm *rm = ndk_rm;
	struct ndk_rm_kept *k;
	struct ndk_wait w;
	NDK_QP *idle;
	UINT32 tok;
	NDK_SGE sge;
	u64 dma;
	void *buf;
	ULONG i;

	KUNIT_ASSERT_NOT_NULL(test, rm);
	if (way->unload && ndk_rm_driver_pinned(test, rm))
		kunit_skip(test, "%s pins its module while it has a device",
			   ndk_rm_module(rm));
	if (way->unload && ndk_rm_driver_unload_unsafe(rm))
		kunit_skip(test, "%s's unload races its QPs' destruction",
			   ndk_rm_module(rm));
	/* Registration replayed the adapter's arrival. */
	KUNIT_EXPECT_TRUE(test, rm->added);

	buf = kunit_kzalloc(test, NDK_RM_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	r = kunit_kcalloc(test, nr, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	dev = container_of(e->pd, struct ndk_pd, ndk)->ibpd->device;
	dma = ib_dma_map_single(dev, buf, NDK_RM_BUF, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(dev, dma));
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &tok);

	ndk_pair_init(test, e, &p);
	ndk_listen_addr(e, &dst);
	ndk_establish_pair(test, e, &p, (struct sockaddr *)&e->addr,
			   (struct sockaddr *)&dst, sizeof(dst), false);
	idle = ndk_cenv_qp(test, e);
	k = ndk_rm_keep(test, e, idle);
	ndk_rm_receives(test, p.aqp, dma, tok, 0, NDK_RM_RECVS);
	ndk_rm_receives(test, p.pqp, dma, tok, NDK_RM_RECVS, NDK_RM_RECVS);
	ndk_rm_receives(test, idle, dma, tok, 2 * NDK_RM_RECVS, NDK_RM_RECVS);

	ndk_rm_command(rm, way->unload);
	rm->started = true;
	queue_work(system_long_wq, &rm->work);
	KUNIT_ASSERT_NE_MSG(test, wait_for_completion_timeout(&rm->removed,
							      NDK_TEST_TIMEOUT),
			    0UL, "no NDK_ADAPTER_REMOVED");

	/* Every receive completes, flushed, as what it was. */
	KUNIT_EXPECT_EQ(test, ndk_poll_results(e->cq, r, nr),
			nr);
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_EQ(test, r[i].Status, STATUS_CANCELLED);
		KUNIT_EXPECT_TRUE(test, ndk_find_result(r, nr,
							0x100 + i) != NULL);
	}
	/* The passive side hears of the end of its connection. */
	end = jiffies + NDK_TEST_TIMEOUT;
	while (!READ_ONCE(e->disconnects) && time_before(jiffies, end))
		msleep(20);
	KUNIT_EXPECT_EQ(test, READ_ONCE(e->disconnects), 1);

	/* Nothing new starts. */
	sge = (NDK_SGE){ .LogicalAddress = dma, .Length = 8,
			 .MemoryRegionToken = tok };
	KUNIT_EXPECT_NE(test, p.aqp->Dispatch->NdkSend(p.aqp, NULL, &sge, 1,
						       0),
			STATUS_SUCCESS);
	ndk_wait_init(&w);
	ndk_rm_expect_no_create(test,
				e->a->Dispatch->NdkCreatePd(e->a,
							    ndk_test_create_cb,
							    &w, &pdunused),
				&w);
	ndk_wait_init(&w);
	ndk_rm_expect_no_create(test,
				e->a->Dispatch->NdkCreateCq(e->a, 8, ndk_rm_cq_cb,
							    NULL, NULL,
							    ndk_test_create_cb,
							    &w, &cqunused),
				&w);
	ndk_wait_init(&w);
	ndk_rm_expect_no_create(test,
				e->a->Dispatch->NdkCreateConnector(e->a,
						ndk_test_create_cb, &w,
						&cunused),
				&w);
	ndk_rm_use_kept(test, e, k);
	KUNIT_EXPECT_EQ(test, e->cq->Dispatch->NdkGetCqResults(e->cq, r, 1),
			0UL);

	/* The adapter's device reference holds the unregistration back. */
	KUNIT_EXPECT_FALSE(test, completion_done(&rm->done));
	ib_dma_unmap_single(dev, dma, NDK_RM_BUF, DMA_BIDIRECTIONAL);
	ndk_pair_close(test, &p);
	ndk_rm_close_kept(test, k);
	ndk_test_close(test, &idle->Header, idle->Dispatch->NdkCloseQp);
	ndk_rm_close_env(test, rm);
	KUNIT_EXPECT_EQ(test, ndk_enum_adapters(NULL, 0), 0);
	if (way->unload)
		ndk_rm_restore(test, rm);
}

/* The posting case puts the device back; link_delete leaves it gone. */
static struct kunit_case ndk_main_cases[] = {
	KUNIT_CASE(ndk_removal_posting_test),
	KUNIT_CASE_PARAM(ndk_removal_live_test, ndk_rm_way_gen_params),
	{}
};

NDK_SUITE(main, ndk_removal_init, ndk_removal_exit);
