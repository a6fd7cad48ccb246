// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Helpers shared by the ndk KUnit suites. */
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/kmemleak.h>
#include <linux/kernel.h>
#include <linux/umh.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

DEFINE_SPINLOCK(ndk_test_lock);

void ndk_wait_init(struct ndk_wait *w)
{
	init_completion(&w->done);
	w->status = STATUS_PENDING;
	w->obj = NULL;
	atomic_set(&w->calls, 0);
}

/* True if the callback ran within NDK_TEST_TIMEOUT. */
bool ndk_wait_for(struct ndk_wait *w)
{
	return wait_for_completion_timeout(&w->done, NDK_TEST_TIMEOUT) != 0;
}

/*
 * The outcome of a request whose call returned @st: its callback's
 * status if it pended, else @st, in which case no callback may come.
 */
NTSTATUS ndk_test_outcome(struct kunit *test, struct ndk_wait *w,
			  NTSTATUS st)
{
	if (st == STATUS_PENDING) {
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(w));
		return w->status;
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&w->calls), 0);
	return st;
}

void ndk_test_create_cb(PVOID Context, NTSTATUS Status,
			NDK_OBJECT_HEADER *pNdkObject)
{
	struct ndk_wait *w = Context;

	w->status = Status;
	w->obj = pNdkObject;
	atomic_inc(&w->calls);
	complete(&w->done);
}

/**
 * ndk_test_exit() - end a case: the suite's exit, then the trace
 * @test: the case
 * @exit_fn: the suite's own exit, or NULL
 *
 * The first case that failed stops the kernel's trace buffer, so that
 * what init.sh prints after the run ends with that case, its cleanup
 * included, rather than with the cases after it.
 */
void ndk_test_exit(struct kunit *test, void (*exit_fn)(struct kunit *test))
{
	if (exit_fn)
		exit_fn(test);
	if (READ_ONCE(test->status) == KUNIT_FAILURE)
		tracing_off();
}

void ndk_test_close_cb(PVOID Context)
{
	struct ndk_wait *w = Context;

	w->status = STATUS_SUCCESS;
	atomic_inc(&w->calls);
	complete(&w->done);
}

void ndk_test_request_cb(PVOID Context, NTSTATUS Status)
{
	struct ndk_wait *w = Context;

	w->status = Status;
	atomic_inc(&w->calls);
	complete(&w->done);
}

/*
 * True when the run is over Soft-iWARP rather than Soft-RoCE. init.sh
 * creates siw0 or rxe0 on eth0, one at a time; module parameters cannot
 * say which, because KUnit runs a module's suites before its parameters
 * are parsed.
 */
bool ndk_test_iwarp(void)
{
	struct ndk_adapter_desc desc;

	return ndk_enum_adapters(&desc, 1) >= 1 &&
	       !strcmp(desc.ibdev_name, "siw0");
}

/* The interface index of the first NDK adapter (on eth0 in the VM). */
int ndk_test_ifindex(struct kunit *test)
{
	struct ndk_adapter_desc desc;

	KUNIT_ASSERT_GE_MSG(test, ndk_enum_adapters(&desc, 1), 1,
			    "no RDMA adapter: is rxe0 or siw0 set up?");
	return desc.ifindex;
}

/*
 * Run @cmd in the guest's shell and return its exit status as
 * call_usermodehelper() gives it; what it prints goes to the kernel log,
 * to tell why it failed.
 */
int ndk_test_shell(const char *cmd)
{
	/* call_usermodehelper() wants writable arrays. */
	char *envp[2] = { "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL };
	char *argv[4] = { "/bin/sh", "-c", NULL, NULL };
	int ret;

	argv[2] = kasprintf(GFP_KERNEL, "exec >/dev/kmsg 2>&1; %s", cmd);
	if (!argv[2])
		return -ENOMEM;
	ret = call_usermodehelper(argv[0], argv, envp, UMH_WAIT_PROC);
	kfree(argv[2]);
	return ret;
}

/* The second device's interface address: TEST-NET-2, routed nowhere. */
#define NDK_TEST_DEV2_ADDR	"198.51.100.1"

/* What makes the second device, one command after the other. */
static const char * const ndk_test_dev2_make[] = {
	/* rxe may not be loaded yet: the run over siw has no use for it. */
	"modprobe rdma_rxe",
	"ip link add " NDK_TEST_DEV2 " type dummy",
	"ip addr add " NDK_TEST_DEV2_ADDR "/24 dev " NDK_TEST_DEV2,
	"ip link set " NDK_TEST_DEV2 " up",
	"rdma link add " NDK_TEST_DEV2 " type rxe netdev " NDK_TEST_DEV2,
};

static int ndk_test_dev2_init(struct kunit_resource *res, void *data)
{
	struct ndk_test_dev2 *d = container_of(res, struct ndk_test_dev2, res);
	struct net_device *ndev;
	int i;

	d->test = data;
	for (i = 0; i < ARRAY_SIZE(ndk_test_dev2_make); i++) {
		if (ndk_test_shell(ndk_test_dev2_make[i])) {
			ndk_test_shell("ip link delete " NDK_TEST_DEV2);
			return -EIO;
		}
	}
	ndev = dev_get_by_name(&init_net, NDK_TEST_DEV2);
	if (ndev) {
		d->ifindex = ndev->ifindex;
		dev_put(ndev);
	}
	d->addr.sin_family = AF_INET;
	d->addr.sin_addr.s_addr = in_aton(NDK_TEST_DEV2_ADDR);
	return 0;
}

static void ndk_test_dev2_free(struct kunit_resource *res)
{
	struct ndk_test_dev2 *d = container_of(res, struct ndk_test_dev2, res);

	if (d->a)
		ndk_test_close_adapter(d->test, d->a);
	if (!d->gone && ndk_test_shell("rdma link delete " NDK_TEST_DEV2))
		KUNIT_FAIL(d->test, "rdma link delete %s failed", NDK_TEST_DEV2);
	if (ndk_test_shell("ip link delete " NDK_TEST_DEV2))
		KUNIT_FAIL(d->test, "ip link delete %s failed", NDK_TEST_DEV2);
}

/*
 * A second RDMA device beside the case's own: rxe on a dummy interface
 * of its own with an address of its own, until ndk_test_dev2_del() or
 * the end of the case, so that a failed assertion leaves neither it nor
 * an adapter opened on it to later cases. NULL, the case failed, if it
 * could not be made; no assertion, so that the caller can undo its own
 * first. rxe, not siw, whatever the case's transport: siw binds each
 * device's share of a wildcard listen to its own interface, so a
 * connect to the dummy's address, which goes through the loopback
 * interface, would be refused by TCP before any rdma_cm id heard it.
 */
struct ndk_test_dev2 *ndk_test_dev2_add(struct kunit *test)
{
	struct ndk_test_dev2 *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);

	if (!d || kunit_add_resource(test, ndk_test_dev2_init,
				     ndk_test_dev2_free, &d->res, test)) {
		KUNIT_FAIL(test, "no second device %s", NDK_TEST_DEV2);
		return NULL;
	}
	return d;
}

static void ndk_test_removal_work(struct work_struct *work)
{
	struct ndk_test_removal *r = container_of(work, struct ndk_test_removal,
						  work);

	r->ret = ndk_test_shell("rdma link delete " NDK_TEST_DEV2);
}

/*
 * Begin the deletion of @d's RDMA device on a work item, which the case
 * must end with ndk_test_dev2_removed() (no assertion in between: @r is
 * on its stack); ndk_test_dev2_del() then deletes only the interface.
 */
void ndk_test_dev2_remove(struct ndk_test_dev2 *d, struct ndk_test_removal *r)
{
	r->ret = 0;
	INIT_WORK_ONSTACK(&r->work, ndk_test_removal_work);
	d->gone = true;
	queue_work(system_unbound_wq, &r->work);
}

/* Wait for the deletion @r began; its exit status. */
int ndk_test_dev2_removed(struct ndk_test_removal *r)
{
	flush_work(&r->work);
	destroy_work_on_stack(&r->work);
	return r->ret;
}

/* Poll @cond(@arg) for NDK_TEST_TIMEOUT at most; its last value. */
bool ndk_test_until(bool (*cond)(void *arg), void *arg)
{
	unsigned long end = jiffies + NDK_TEST_TIMEOUT;

	while (!cond(arg) && time_before(jiffies, end))
		usleep_range(1000, 2000);
	return cond(arg);
}

/* For ndk_test_until(): the struct ndk_adapter @arg is marked dead. */
bool ndk_test_adapter_dead(void *arg)
{
	return ndk_adapter_dead(arg);
}

/* Close @d's adapter, if any, and delete the device and its interface. */
void ndk_test_dev2_del(struct kunit *test, struct ndk_test_dev2 *d)
{
	kunit_remove_resource(test, &d->res);
}

/*
 * For exit hooks: a case that failed halfway may leave objects open, and
 * ndk_close_adapter() would then wait forever, stalling every later suite;
 * their ports and the device would stay taken for every later case.
 */
void ndk_test_close_adapter(struct kunit *test, NDK_ADAPTER *a)
{
	unsigned int n = ndk_close_leftovers(a);

	/*
	 * A failed case is reported already; one that passed must have
	 * closed everything itself. Either way the adapter then goes, so
	 * that the next cases find its port and device free.
	 */
	if (n && READ_ONCE(test->status) != KUNIT_FAILURE)
		KUNIT_FAIL(test, "%u objects left open under the adapter", n);
	if (!ndk_close_adapter_timeout(a, NDK_TEST_TIMEOUT))
		KUNIT_FAIL(test, "objects left open under the adapter");
}

NDK_ADAPTER *ndk_test_open(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	NDK_ADAPTER *a = NULL;

	KUNIT_ASSERT_EQ(test, ndk_open_adapter(ndk_test_ifindex(test), v, &a),
			STATUS_SUCCESS);
	KUNIT_ASSERT_NOT_NULL(test, a);
	return a;
}

/*
 * The object of a create that returned @st, reporting to @w, and stored
 * @made if it completed inline (see ndk_created()): one of @type.
 */
static NDK_OBJECT_HEADER *ndk_test_created(struct kunit *test, NTSTATUS st,
					   struct ndk_wait *w, void *made,
					   NDK_OBJECT_TYPE type)
{
	NDK_OBJECT_HEADER *obj = ndk_created(test, st, w, made);

	KUNIT_ASSERT_NOT_NULL(test, obj);
	KUNIT_EXPECT_EQ(test, obj->ObjectType, type);
	return obj;
}

NDK_OBJECT_HEADER *ndk_test_create_pd(struct kunit *test, NDK_ADAPTER *a)
{
	struct ndk_wait w;
	NDK_PD *pd = NULL;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreatePd(a, ndk_test_create_cb, &w, &pd);
	return ndk_test_created(test, st, &w, pd, NdkObjectTypePd);
}

NDK_OBJECT_HEADER *ndk_test_create_cq(struct kunit *test, NDK_ADAPTER *a,
				      ULONG depth)
{
	struct ndk_wait w;
	NDK_CQ *cq = NULL;
	NTSTATUS st;

	ndk_wait_init(&w);
	st = a->Dispatch->NdkCreateCq(a, depth, NULL, NULL, NULL,
				      ndk_test_create_cb, &w, &cq);
	return ndk_test_created(test, st, &w, cq, NdkObjectTypeCq);
}

/*
 * Close @obj with @close and wait for the close to complete. Only
 * expectations here: suites' exit functions use it, and an assertion
 * must not abort those.
 */
void ndk_test_close(struct kunit *test, NDK_OBJECT_HEADER *obj,
		    NDK_FN_CLOSE_OBJECT close)
{
	struct ndk_wait *w = kmalloc(sizeof(*w), GFP_KERNEL);
	NTSTATUS status;

	if (!w) {
		KUNIT_FAIL(test, "no memory for a close");
		return;
	}
	ndk_wait_init(w);
	status = close(obj, ndk_test_close_cb, w);
	if (status == STATUS_PENDING && !ndk_wait_for(w)) {
		/* The callback may still come: @w stays for it. */
		kmemleak_not_leak(w);
		KUNIT_FAIL(test, "a close did not complete");
		return;
	}
	if (status != STATUS_PENDING)
		KUNIT_EXPECT_EQ(test, status, STATUS_SUCCESS);
	kfree(w);
}

/*
 * Close @obj with @close from atomic context, reporting to @c. Return:
 * what the close returned.
 */
NTSTATUS ndk_test_close_atomic(NDK_OBJECT_HEADER *obj,
			       NDK_FN_CLOSE_OBJECT close, struct ndk_wait *c)
{
	unsigned long flags;
	NTSTATUS status;

	ndk_wait_init(c);
	spin_lock_irqsave(&ndk_test_lock, flags);
	status = close(obj, ndk_test_close_cb, c);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	return status;
}

/* The close call in the dispatch table of @obj, of any closable type. */
static NDK_FN_CLOSE_OBJECT ndk_test_close_fn(NDK_OBJECT_HEADER *obj)
{
	switch (obj->ObjectType) {
	case NdkObjectTypePd:
		return container_of(obj, NDK_PD, Header)->Dispatch->NdkClosePd;
	case NdkObjectTypeCq:
		return container_of(obj, NDK_CQ, Header)->Dispatch->NdkCloseCq;
	case NdkObjectTypeQp:
		return container_of(obj, NDK_QP, Header)->Dispatch->NdkCloseQp;
	case NdkObjectTypeSrq:
		return container_of(obj, NDK_SRQ, Header)->Dispatch->NdkCloseSrq;
	case NdkObjectTypeMr:
		return container_of(obj, NDK_MR, Header)->Dispatch->NdkCloseMr;
	case NdkObjectTypeMw:
		return container_of(obj, NDK_MW, Header)->Dispatch->NdkCloseMw;
	case NdkObjectTypeConnector:
		return container_of(obj, NDK_CONNECTOR,
				    Header)->Dispatch->NdkCloseConnector;
	case NdkObjectTypeListener:
		return container_of(obj, NDK_LISTENER,
				    Header)->Dispatch->NdkCloseListener;
	case NdkObjectTypeSharedEndpoint:
		return container_of(obj, NDK_SHARED_ENDPOINT,
				    Header)->Dispatch->NdkCloseSharedEndpoint;
	default:
		return NULL;
	}
}

static const char *const ndk_test_ctx_names[] = {
	[NDK_CTX_THREAD] = "thread",
	[NDK_CTX_LOCKED] = "spinlock",
	[NDK_CTX_TIMER] = "timer",
	[NDK_CTX_RCU] = "rcu_read_lock",
	[NDK_CTX_IRQS_OFF] = "local_irq_disable",
};

static void ndk_test_call_timer(struct timer_list *t)
{
	struct ndk_test_call *c = timer_container_of(c, t, timer);

	c->softirq = in_serving_softirq();
	c->fn(c);
	complete(&c->ran);
}

/* Run @c->fn in @ctx, and wait for it. */
void ndk_test_run_in(struct ndk_test_call *c, enum ndk_test_ctx ctx)
{
	unsigned long flags;

	switch (ctx) {
	case NDK_CTX_THREAD:
		c->fn(c);
		break;
	case NDK_CTX_LOCKED:
		spin_lock_irqsave(&ndk_test_lock, flags);
		c->fn(c);
		spin_unlock_irqrestore(&ndk_test_lock, flags);
		break;
	case NDK_CTX_RCU:
		rcu_read_lock();
		c->fn(c);
		rcu_read_unlock();
		break;
	case NDK_CTX_IRQS_OFF:
		local_irq_disable();
		c->fn(c);
		local_irq_enable();
		break;
	default:
		init_completion(&c->ran);
		timer_setup_on_stack(&c->timer, ndk_test_call_timer, 0);
		mod_timer(&c->timer, jiffies + 1);
		wait_for_completion(&c->ran);
		timer_delete_sync(&c->timer);
		timer_destroy_on_stack(&c->timer);
		break;
	}
}

static void ndk_test_call_close(struct ndk_test_call *c)
{
	NDK_FN_CLOSE_OBJECT close = ndk_test_close_fn(c->obj);

	c->st = close(c->obj, ndk_test_close_cb, &c->w);
}

/*
 * After a call that returned @st and whose callback, if it pended, has
 * been waited for: no other callback comes, none if it finished inline.
 */
static void ndk_test_calls_done(struct kunit *test, NTSTATUS st,
				struct ndk_wait *w)
{
	/* Time for a wrong second callback to show. */
	msleep(20);
	KUNIT_EXPECT_EQ(test, atomic_read(&w->calls),
			st == STATUS_PENDING ? 1 : 0);
}

/**
 * ndk_test_context() - create and close an object from one context
 * @test: the test
 * @ctx: where both calls are made
 * @create: makes the create call of the object's type from @c->fn's
 *	context, into @c->st, @c->w and @c->out
 * @arg: for @create, in @c->arg
 *
 * From the test's thread, where the kernel counts preemption, both calls
 * finish inline: STATUS_SUCCESS and no callback. Anywhere else both
 * pend: STATUS_PENDING and exactly one callback, the create's with
 * success.
 */
void ndk_test_context(struct kunit *test, enum ndk_test_ctx ctx,
		      void (*create)(struct ndk_test_call *c), void *arg)
{
	struct ndk_test_call c = { .arg = arg };
	NTSTATUS want;

	want = ctx == NDK_CTX_THREAD ? NDK_TEST_INLINE : STATUS_PENDING;
	ndk_wait_init(&c.w);
	c.fn = create;
	ndk_test_run_in(&c, ctx);
	KUNIT_ASSERT_EQ_MSG(test, c.st, want, "create from %s",
			    ndk_test_ctx_names[ctx]);
	if (ctx == NDK_CTX_TIMER)
		KUNIT_EXPECT_TRUE(test, c.softirq);
	c.obj = ndk_created(test, c.st, &c.w, c.out);
	ndk_test_calls_done(test, c.st, &c.w);

	ndk_wait_init(&c.w);
	c.fn = ndk_test_call_close;
	ndk_test_run_in(&c, ctx);
	KUNIT_EXPECT_EQ_MSG(test, c.st, want, "close from %s",
			    ndk_test_ctx_names[ctx]);
	if (c.st == STATUS_PENDING)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&c.w));
	ndk_test_calls_done(test, c.st, &c.w);
}

/*
 * ndk_test_context() from the test's thread, under a spinlock and in a
 * timer.
 */
void ndk_test_contexts(struct kunit *test,
		       void (*create)(struct ndk_test_call *c), void *arg)
{
	enum ndk_test_ctx ctx;

	for (ctx = NDK_CTX_THREAD; ctx <= NDK_CTX_TIMER; ctx++)
		ndk_test_context(test, ctx, create, arg);
}

void ndk_close_in_create_init(struct ndk_close_in_create *t)
{
	ndk_wait_init(&t->create);
	ndk_wait_init(&t->close);
}

/*
 * The close that ndk_close_in_create_cb() made from inside the create
 * completion, where the consumer may sleep: inline and never calling
 * back, or pending and calling back once.
 */
void ndk_close_in_create_check(struct kunit *test,
			       struct ndk_close_in_create *t)
{
	if (t->close_status == STATUS_PENDING)
		KUNIT_EXPECT_TRUE(test, ndk_wait_for(&t->close));
	else
		KUNIT_EXPECT_EQ(test, t->close_status, STATUS_SUCCESS);
	ndk_test_calls_done(test, t->close_status, &t->close);
}

/* A create completion that closes the object it was given at once. */
void ndk_close_in_create_cb(PVOID Context, NTSTATUS Status,
			    NDK_OBJECT_HEADER *pNdkObject)
{
	struct ndk_close_in_create *t = Context;

	t->create.status = Status;
	if (Status == STATUS_SUCCESS)
		t->close_status = ndk_test_close_fn(pNdkObject)(pNdkObject,
								ndk_test_close_cb,
								&t->close);
	complete(&t->create.done);
}

/*
 * Raw RC QPs in a loop, for tests that need completions on an NDK CQ
 * before NDK QPs are involved, connected the way ndk connects its
 * registration QPs: one QP to itself, or on iWARP two QPs to each other.
 */
struct ndk_test_lqp *ndk_test_loopback_qp(struct kunit *test,
					  struct ndk_adapter *a,
					  struct ib_cq *cq)
{
	struct ib_device *ibdev = a->ibdev;
	struct ib_qp_init_attr init = {};
	struct ndk_test_lqp *l;

	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l);
	l->fake.context = l;
	l->pd = ib_alloc_pd(ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(l->pd));
	init.send_cq = cq;
	init.recv_cq = cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.qp_context = &l->fake;
	l->loop.qp = ib_create_qp(l->pd, &init);
	KUNIT_ASSERT_FALSE(test, IS_ERR(l->loop.qp));
	l->rqp = l->loop.qp;
	if (rdma_protocol_iwarp(ibdev, a->port)) {
		l->loop.peer = ib_create_qp(l->pd, &init);
		KUNIT_ASSERT_FALSE(test, IS_ERR(l->loop.peer));
		l->rqp = l->loop.peer;
	}

	KUNIT_ASSERT_EQ(test, ndk_loop_connect(a, &l->loop), 0);

	l->buf = kunit_kzalloc(test, 2 * NDK_TEST_MSG, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l->buf);
	l->dma = ib_dma_map_single(ibdev, l->buf, 2 * NDK_TEST_MSG,
				   DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(ibdev, l->dma));
	return l;
}

/* Post a receive and then a send of NDK_TEST_MSG bytes to ourselves. */
void ndk_test_loopback_send(struct kunit *test, struct ndk_test_lqp *l,
			    u64 recv_id, u64 send_id, bool solicited)
{
	struct ib_sge rsge = {
		.addr = l->dma + NDK_TEST_MSG,
		.length = NDK_TEST_MSG,
		.lkey = l->pd->local_dma_lkey,
	};
	struct ib_sge ssge = {
		.addr = l->dma,
		.length = NDK_TEST_MSG,
		.lkey = l->pd->local_dma_lkey,
	};
	struct ib_recv_wr rwr = { .wr_id = recv_id, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = send_id, .sg_list = &ssge,
				  .num_sge = 1, .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_SIGNALED };

	if (solicited)
		swr.send_flags |= IB_SEND_SOLICITED;
	KUNIT_ASSERT_EQ(test, ib_post_recv(l->rqp, &rwr, NULL), 0);
	KUNIT_ASSERT_EQ(test, ib_post_send(l->loop.qp, &swr, NULL), 0);
}

void ndk_test_loopback_free(struct ndk_test_lqp *l)
{
	ib_dma_unmap_single(l->pd->device, l->dma, 2 * NDK_TEST_MSG,
			    DMA_BIDIRECTIONAL);
	ndk_loop_disconnect(&l->loop);
	ib_destroy_qp(l->loop.qp);
	if (l->loop.peer)
		ib_destroy_qp(l->loop.peer);
	ib_dealloc_pd(l->pd);
}

/* Put @d between @q and its verbs QP; the case then sets @d's operations. */
void ndk_verbs_double_insert(struct ndk_verbs_double *d, struct ndk_qp *q)
{
	d->real = q->ibqp;
	d->dev.ops = d->real->device->ops;
	d->ibqp = *d->real;
	d->ibqp.device = &d->dev;
	q->ibqp = &d->ibqp;
}

/* Give @q its verbs QP back, before it is closed. */
void ndk_verbs_double_remove(struct ndk_verbs_double *d, struct ndk_qp *q)
{
	q->ibqp = d->real;
}

/* The cleaner at work; one case at a time plays it. */
static struct ndk_cleaner *ndk_cleaner;

static void ndk_cleaner_destroying(struct ib_qp *ibqp)
{
	struct ndk_cleaner *c = ndk_cleaner;

	if (!c || c->ngone == ARRAY_SIZE(c->gone))
		return;
	WRITE_ONCE(c->gone[c->ngone], ibqp);
	/* The entry before the count: the poll reads them the other way. */
	smp_store_release(&c->ngone, c->ngone + 1);
	if (ibqp == c->watch)
		complete(&c->destroyed);
}

static bool ndk_cleaner_cleaned(struct ndk_cleaner *c, struct ib_qp *ibqp)
{
	/* Pairs with ndk_cleaner_destroying(): entries below are written. */
	int i, n = smp_load_acquire(&c->ngone);

	for (i = 0; i < n; i++)
		if (READ_ONCE(c->gone[i]) == ibqp)
			return true;
	return false;
}

/*
 * The driver's poll, without the completions of destroyed QPs: polled on
 * until the device returns fewer than asked, so that a batch it deleted
 * never looks like an empty CQ.
 */
static int ndk_cleaner_poll(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct ndk_cleaner *c = ndk_cleaner;
	int kept = 0, ask, got, i;

	for (;;) {
		ask = n - kept;
		got = c->poll(ibcq, ask, wc + kept);
		if (got <= 0)
			return kept ? kept : got;
		for (i = 0; i < got; i++)
			if (!ndk_cleaner_cleaned(c, wc[n - ask + i].qp))
				wc[kept++] = wc[n - ask + i];
		if (kept == n || got < ask)
			return kept;
	}
}

/**
 * ndk_cleaner_start() - play a cleaning driver under @a and @b
 * @c: the cleaner, which outlives the case's polls
 * @a: a CQ
 * @b: another, or @a again
 * @watch: the QP whose verbs QP's destruction @c->destroyed reports
 *
 * From now on a destroyed QP's completions vanish from @a and @b.
 */
void ndk_cleaner_start(struct ndk_cleaner *c, NDK_CQ *a, NDK_CQ *b,
		       NDK_QP *watch)
{
	memset(c, 0, sizeof(*c));
	init_completion(&c->destroyed);
	c->cq[0] = container_of(a, struct ndk_cq, ndk);
	c->cq[1] = container_of(b, struct ndk_cq, ndk);
	c->poll = c->cq[0]->poll_cq;
	c->watch = container_of(watch, struct ndk_qp, ndk)->ibqp;
	ndk_cleaner = c;
	ndk_qp_set_destroy_hook(ndk_cleaner_destroying);
	WRITE_ONCE(c->cq[0]->poll_cq, ndk_cleaner_poll);
	WRITE_ONCE(c->cq[1]->poll_cq, ndk_cleaner_poll);
}

/* Give the CQs their driver's poll back; the case polls no more. */
void ndk_cleaner_stop(struct ndk_cleaner *c)
{
	ndk_qp_set_destroy_hook(NULL);
	WRITE_ONCE(c->cq[0]->poll_cq, c->poll);
	WRITE_ONCE(c->cq[1]->poll_cq, c->poll);
	ndk_cleaner = NULL;
}

/*
 * A CPU other than this one, for cases whose claim is about two CPUs at
 * once; without one the case fails instead of proving nothing.
 */
unsigned int ndk_test_other_cpu(struct kunit *test)
{
	unsigned int cpu;

	cpu = cpumask_any_but(cpu_online_mask, raw_smp_processor_id());
	KUNIT_ASSERT_LT_MSG(test, cpu, nr_cpu_ids, "only one CPU is online");
	return cpu;
}

/* Read (@buf of @len bytes) or write the proc or sysfs file @path. */
int ndk_rw_file(const char *path, char *buf, size_t len, bool write)
{
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	scoped_with_init_fs() {
		f = filp_open(path, write ? O_WRONLY : O_RDONLY, 0);
	}
	if (IS_ERR(f))
		return PTR_ERR(f);
	if (write) {
		n = kernel_write(f, buf, strlen(buf), &pos);
	} else {
		n = kernel_read(f, buf, len - 1, &pos);
		if (n >= 0)
			buf[n] = '\0';
	}
	filp_close(f, NULL);
	return n < 0 ? n : 0;
}

/* The id ndk gives the object of @hdr in trace events and debugfs. */
u32 ndk_obs_id(NDK_OBJECT_HEADER *hdr)
{
	return ndk_obj_of(hdr)->id;
}

#define NDK_OBS_BUF	8192

/* The whole of /sys/kernel/debug/ndk/<dev>/<file>, as a string. */
char *ndk_obs_read(struct kunit *test, struct ndk_cenv *e, const char *file)
{
	struct ndk_adapter *a = container_of(e->a, struct ndk_adapter, ndk);
	char *buf = kunit_kzalloc(test, NDK_OBS_BUF, GFP_KERNEL);
	char path[96];
	struct file *f;
	size_t got = 0;
	loff_t pos = 0;
	ssize_t n;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	snprintf(path, sizeof(path), "/sys/kernel/debug/ndk/%s/%s",
		 dev_name(&a->ibdev->dev), file);
	scoped_with_init_fs() {
		f = filp_open(path, O_RDONLY, 0);
	}
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(f), "open %s: %ld", path,
			       PTR_ERR(f));
	while ((n = kernel_read(f, buf + got, NDK_OBS_BUF - 1 - got, &pos)) > 0)
		got += n;
	filp_close(f, NULL);
	KUNIT_ASSERT_GE(test, n, 0);
	return buf;
}

/* The line after @line in a file's text, or NULL at the end. */
const char *ndk_obs_next(const char *line)
{
	line = strchr(line, '\n');
	return line && line[1] ? line + 1 : NULL;
}

/* The value of counter @name in a stats file's text. */
u64 ndk_obs_stat(struct kunit *test, const char *stats, const char *name)
{
	size_t len = strlen(name);
	const char *line;
	u64 v;

	for (line = stats; line; line = ndk_obs_next(line))
		if (!strncmp(line, name, len) && line[len] == ' ' &&
		    sscanf(line + len + 1, "%llu", &v) == 1)
			return v;
	KUNIT_FAIL(test, "no counter %s in:\n%s", name, stats);
	return 0;
}

/**
 * ndk_mpa_connect() - a TCP connection to @dst that sends @len bytes
 * @dst: an iWARP listener's address
 * @frame: what to send, an MPA request or anything else
 * @len: its length
 * @sockp: receives the socket, which the caller releases
 *
 * Return: 0, or the errno of the connect or the send.
 */
int ndk_mpa_connect(const struct sockaddr_in *dst, const void *frame,
		    size_t len, struct socket **sockp)
{
	struct kvec iov = { .iov_base = (void *)frame, .iov_len = len };
	struct msghdr msg = {};
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &sock);
	if (ret)
		return ret;
	/*
	 * The port stays in TIME_WAIT after a close; rdma_cm may pick it
	 * next for siw, whose bind asks for reuse, and finds it taken
	 * unless this socket allowed reuse too.
	 */
	sock_set_reuseaddr(sock->sk);
	ret = kernel_connect(sock, NDK_KERNEL_SOCKADDR(dst), sizeof(*dst), 0);
	if (!ret && len)
		ret = kernel_sendmsg(sock, &msg, &iov, 1, len);
	if (ret < 0 || (len && ret != len)) {
		sock_release(sock);
		return ret < 0 ? ret : -EIO;
	}
	*sockp = sock;
	return 0;
}

/**
 * ndk_mpa_send_rtr() - the initiator's first frame that an MPA v2 request
 *	asking for an RDMA write RTR announced
 * @sock: the socket of ndk_mpa_connect(), whose request asked for no CRC
 *
 * An RDMA write of nothing, in an FPDU whose CRC field is unused.
 *
 * Return: what kernel_sendmsg() returned.
 */
int ndk_mpa_send_rtr(struct socket *sock)
{
	static const u8 rtr[] = {
		0x00, 0x0e,		/* MPA length: DDP and RDMAP header */
		0xc1, 0x40,		/* tagged, last; versions 1; RDMA write */
		0, 0, 0, 1,		/* sink STag: unused for zero bytes */
		0, 0, 0, 0, 0, 0, 0, 0,	/* sink offset */
		0, 0, 0, 0,		/* CRC field */
	};
	struct kvec iov = { .iov_base = (void *)rtr, .iov_len = sizeof(rtr) };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	return kernel_sendmsg(sock, &msg, &iov, 1, iov.iov_len);
}
