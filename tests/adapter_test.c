// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_adapter: discovery, open/close, version negotiation and
 * NdkQueryAdapterInfo over the VM's soft RDMA device.
 */
#include <linux/fs.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include "ndk_tests.h"
#include "ndk_priv.h"

static struct ndk_adapter *priv(NDK_ADAPTER *a)
{
	return container_of(a, struct ndk_adapter, ndk);
}

static void ndk_adapter_enum_test(struct kunit *test)
{
	struct ndk_adapter_desc descs[8];
	struct net_device *ndev;
	int n;

	n = ndk_enum_adapters(descs, ARRAY_SIZE(descs));
	KUNIT_ASSERT_GE(test, n, 1);
	KUNIT_EXPECT_EQ(test, ndk_enum_adapters(NULL, 0), n);
	ndev = dev_get_by_index(&init_net, descs[0].ifindex);
	KUNIT_ASSERT_NOT_NULL(test, ndev);
	KUNIT_EXPECT_STREQ(test, ndev->name, "eth0");
	dev_put(ndev);
	KUNIT_EXPECT_STREQ(test, descs[0].ibdev_name,
			   ndk_test_iwarp() ? "siw0" : "rxe0");
	KUNIT_EXPECT_EQ(test, descs[0].port, 1U);
	KUNIT_EXPECT_EQ(test, descs[0].rdma_technology,
			ndk_test_iwarp() ? NdkiWarp : NdkRoCEv2);
}

static void ndk_adapter_open_close_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);

	KUNIT_EXPECT_EQ(test, a->Header.ObjectType, NdkObjectTypeAdapter);
	KUNIT_EXPECT_EQ(test, a->Header.Version.Major, 1);
	KUNIT_EXPECT_EQ(test, a->Header.Version.Minor, 2);
	KUNIT_ASSERT_NOT_NULL(test, a->Dispatch);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkQueryExtension);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkQueryAdapterInfo);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkCreateCq);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkCreatePd);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkCreateSharedEndpoint);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkCreateConnector);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkCreateListener);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkBuildLAM);
	KUNIT_EXPECT_NOT_NULL(test, a->Dispatch->NdkReleaseLAM);
	ndk_close_adapter(a);
}

/* Two instances on one port are independent objects. */
static void ndk_adapter_two_opens_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_ADAPTER *b = ndk_test_open(test);

	KUNIT_EXPECT_PTR_NE(test, a, b);
	ndk_close_adapter(a);
	KUNIT_EXPECT_EQ(test, b->Header.ObjectType, NdkObjectTypeAdapter);
	ndk_close_adapter(b);
}

struct ndk_version_case {
	USHORT major, minor;
	NTSTATUS status;
};

static const struct ndk_version_case ndk_version_cases[] = {
	{ 1, 0, STATUS_SUCCESS },
	{ 1, 1, STATUS_SUCCESS },
	{ 1, 2, STATUS_SUCCESS },
	{ 1, 3, STATUS_NDIS_BAD_VERSION },
	{ 0, 1, STATUS_NDIS_BAD_VERSION },
	{ 2, 0, STATUS_NDIS_BAD_VERSION },
	{ 0xffff, 0xffff, STATUS_NDIS_BAD_VERSION },
};

static void ndk_version_desc(const struct ndk_version_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "version %u.%u", c->major,
		 c->minor);
}

KUNIT_ARRAY_PARAM(ndk_version, ndk_version_cases, ndk_version_desc);

/* Lower minors are accepted and answered with the provider's highest. */
static void ndk_adapter_version_test(struct kunit *test)
{
	const struct ndk_version_case *c = test->param_value;
	NDK_VERSION v = { .Major = c->major, .Minor = c->minor };
	NDK_ADAPTER *a = (NDK_ADAPTER *)0x1;
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info);

	KUNIT_ASSERT_EQ(test, ndk_open_adapter(ndk_test_ifindex(test), v, &a),
			c->status);
	if (c->status != STATUS_SUCCESS) {
		KUNIT_EXPECT_NULL(test, a);
		return;
	}
	KUNIT_EXPECT_EQ(test, a->Header.Version.Major, 1);
	KUNIT_EXPECT_EQ(test, a->Header.Version.Minor, 2);
	KUNIT_ASSERT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, info.Version.Major, 1);
	KUNIT_EXPECT_EQ(test, info.Version.Minor, 2);
	ndk_close_adapter(a);
}

static void ndk_adapter_bad_ifindex_test(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	NDK_ADAPTER *a = (NDK_ADAPTER *)0x1;

	KUNIT_EXPECT_EQ(test, ndk_open_adapter(0, v, &a), STATUS_NOT_FOUND);
	KUNIT_EXPECT_NULL(test, a);
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(-1, v, &a), STATUS_NOT_FOUND);
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(INT_MAX, v, &a),
			STATUS_NOT_FOUND);
	/* The loopback interface exists but has no RDMA device. */
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(init_net.loopback_dev->ifindex,
					       v, &a),
			STATUS_NOT_FOUND);
	KUNIT_EXPECT_EQ(test, ndk_open_adapter(ndk_test_ifindex(test), v, NULL),
			STATUS_INVALID_PARAMETER);
}

/* Every field agrees with what the device itself reports. */
static void ndk_adapter_info_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	struct ib_device *ibdev = priv(a)->ibdev;
	const struct ib_device_attr *at = &ibdev->attrs;
	NDK_ADAPTER_INFO info;
	ULONG size = sizeof(info);

	KUNIT_ASSERT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, size, (ULONG)sizeof(info));
	KUNIT_EXPECT_EQ(test, info.VendorId, at->vendor_id);
	KUNIT_EXPECT_EQ(test, info.DeviceId, at->vendor_part_id);
	/* Registration goes through a fast-register MR (see mr.c). */
	KUNIT_EXPECT_EQ(test, info.MaxRegistrationSize,
			(SIZE_T)min_t(u64, at->max_mr_size,
				      (u64)(at->max_fast_reg_page_list_len - 1) *
				      PAGE_SIZE));
	KUNIT_EXPECT_GE(test, info.FRMRPageCount, 16U);
	KUNIT_EXPECT_EQ(test, info.MaxInitiatorRequestSge, (ULONG)at->max_send_sge);
	KUNIT_EXPECT_EQ(test, info.MaxReceiveRequestSge, (ULONG)at->max_recv_sge);
	KUNIT_EXPECT_GE(test, info.MaxReadRequestSge, 1U);
	KUNIT_EXPECT_GT(test, info.MaxTransferLength, 0U);
	KUNIT_EXPECT_GT(test, info.MaxInlineDataSize, 0U);
	KUNIT_EXPECT_EQ(test, info.MaxInboundReadLimit, (ULONG)at->max_qp_rd_atom);
	KUNIT_EXPECT_EQ(test, info.MaxOutboundReadLimit,
			(ULONG)at->max_qp_init_rd_atom);
	KUNIT_EXPECT_EQ(test, info.MaxReceiveQueueDepth, (ULONG)at->max_qp_wr);
	KUNIT_EXPECT_EQ(test, info.MaxInitiatorQueueDepth, (ULONG)at->max_qp_wr);
	KUNIT_EXPECT_EQ(test, info.MaxSrqDepth, (ULONG)at->max_srq_wr);
	/* A window is a fast-register MR as large as a registration. */
	KUNIT_EXPECT_EQ(test, (u64)info.MaxWindowSize,
			(u64)info.MaxRegistrationSize);
	KUNIT_EXPECT_GT(test, (u64)info.MaxWindowSize, 0ULL);
	KUNIT_EXPECT_EQ(test, info.MaxCqDepth, (ULONG)at->max_cqe);
	KUNIT_EXPECT_GT(test, info.LargeRequestThreshold, 0U);
	if (ndk_test_iwarp()) {
		/* MPA v2 takes 4 of 256 bytes; siw's u8 length one more. */
		KUNIT_EXPECT_EQ(test, info.MaxCallerData, 251U);
		KUNIT_EXPECT_EQ(test, info.MaxCalleeData, 251U);
		KUNIT_EXPECT_EQ(test, info.RdmaTechnology, NdkiWarp);
	} else {
		/* RoCE: rdma_cm leaves 56 bytes of the CM REQ, 148 of a REJ. */
		KUNIT_EXPECT_EQ(test, info.MaxCallerData, 56U);
		KUNIT_EXPECT_EQ(test, info.MaxCalleeData, 148U);
		KUNIT_EXPECT_EQ(test, info.RdmaTechnology, NdkRoCEv2);
	}
	/* iWARP read sinks need remote write access; IB and RoCE not. */
	KUNIT_EXPECT_EQ(test,
			!!(info.AdapterFlags &
			   NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED),
			!ndk_test_iwarp());
	KUNIT_EXPECT_EQ(test,
			!!(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED),
			ndk_ib_can_resize_cq(ibdev));
	KUNIT_EXPECT_EQ(test,
			!!(info.AdapterFlags &
			   NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED),
			!!ibdev->ops.modify_cq);
	KUNIT_EXPECT_EQ(test,
			!!(info.AdapterFlags & NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED),
			ibdev->num_comp_vectors > 1);
	/* Read-with-invalidate is an iWARP verb only. */
	KUNIT_EXPECT_EQ(test,
			!!(info.AdapterFlags &
			   NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED),
			rdma_protocol_iwarp(ibdev, priv(a)->port));
	ndk_close_adapter(a);
}

/*
 * The inline size reported is one an RC QP really accepts, and no less
 * than what a QP with the device's whole send SGE list says it holds (the
 * probe's first guess, which spares rxe a failed create and its error
 * line).
 */
static void ndk_adapter_inline_probe_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	struct ib_device *ibdev = priv(a)->ibdev;
	struct ib_qp_init_attr attr = {};
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;

	pd = ib_alloc_pd(ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));
	cq = ib_alloc_cq(ibdev, NULL, 1, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cq));
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.qp_type = IB_QPT_RC;
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = priv(a)->info.MaxInlineDataSize;
	qp = ib_create_qp(pd, &attr);
	KUNIT_EXPECT_FALSE(test, IS_ERR(qp));
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	attr.cap.max_send_sge = ibdev->attrs.max_send_sge;
	attr.cap.max_inline_data = 0;
	qp = ib_create_qp(pd, &attr);
	KUNIT_EXPECT_FALSE(test, IS_ERR(qp));
	if (!IS_ERR(qp)) {
		KUNIT_EXPECT_GE(test, priv(a)->info.MaxInlineDataSize,
				min_t(u32, attr.cap.max_inline_data, U16_MAX));
		ib_destroy_qp(qp);
	}
	ib_free_cq(cq);
	ib_dealloc_pd(pd);
	ndk_close_adapter(a);
}

/* The buffer-size protocol of NdkQueryAdapterInfo. */
static void ndk_adapter_info_small_buffer_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_ADAPTER_INFO info;
	ULONG size;

	size = 0;
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, NULL, &size),
			STATUS_BUFFER_TOO_SMALL);
	KUNIT_EXPECT_EQ(test, size, (ULONG)sizeof(info));

	memset(&info, 0xa5, sizeof(info));
	size = sizeof(info) - 1;
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			STATUS_BUFFER_TOO_SMALL);
	KUNIT_EXPECT_EQ(test, size, (ULONG)sizeof(info));
	KUNIT_EXPECT_EQ(test, ((u8 *)&info)[0], 0xa5);
	KUNIT_EXPECT_EQ(test, ((u8 *)&info)[sizeof(info) - 1], 0xa5);

	size = sizeof(info) + 64;
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, &info, &size),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, size, (ULONG)sizeof(info));

	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryAdapterInfo(a, &info, NULL),
			STATUS_INVALID_PARAMETER);
	ndk_close_adapter(a);
}

/* No extension interface exists; the output is left alone. */
static void ndk_adapter_query_extension_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	GUID id = { 0x12345678, 0x9abc, 0xdef0,
		    { 1, 2, 3, 4, 5, 6, 7, 8 } };
	NDK_VERSION v = { .Major = 1, .Minor = 0 };
	NDK_EXTENSION_INTERFACE iface = { .Dispatch = (void *)0x5a5a };

	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryExtension(&a->Header, &id,
							     v, &iface),
			STATUS_NOT_SUPPORTED);
	KUNIT_EXPECT_PTR_EQ(test, iface.Dispatch, (const void *)0x5a5a);
	/* Nothing to query, nothing to ask for, nowhere to answer. */
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryExtension(NULL, &id, v,
							     &iface),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryExtension(&a->Header, NULL,
							     v, &iface),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, a->Dispatch->NdkQueryExtension(&a->Header, &id,
							     v, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_PTR_EQ(test, iface.Dispatch, (const void *)0x5a5a);
	ndk_close_adapter(a);
	/* Closing no adapter is nothing to do. */
	ndk_close_adapter(NULL);
}

/*
 * The suites' exit hooks close what a failed case left open: each live
 * object under the adapter, successors and parents alike, and then the
 * adapter, which no longer waits for anything.
 */
static void ndk_adapter_leftovers_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);

	ndk_test_create_pd(test, a);
	ndk_test_create_cq(test, a, 16);
	ndk_test_create_pd(test, a);
	KUNIT_EXPECT_EQ(test, ndk_close_leftovers(a), 3U);
	KUNIT_EXPECT_EQ(test, ndk_close_leftovers(a), 0U);
	KUNIT_EXPECT_TRUE(test, ndk_close_adapter_timeout(a, NDK_TEST_TIMEOUT));
}

/*
 * The exit hooks' close of leftovers takes them by id, whatever order
 * they joined the device's list in, and passes over an object whose
 * close is pending: a window whose creation finished after a later CQ's
 * (held on its PD's window lock), and a PD closing under it. The PD's
 * close completes once, when the window is gone.
 */
static void ndk_adapter_leftovers_order_test(struct kunit *test)
{
	struct ndk_wait *w = ndk_kzalloc_test(test, 3 * sizeof(*w));
	NDK_ADAPTER *a = ndk_test_open(test);
	NDK_MW *unused = NULL;
	unsigned long flags;
	NDK_CQ *cq = NULL;
	struct ndk_pd *pd;
	NTSTATUS st, cst;
	NDK_PD *p;

	p = container_of(ndk_test_create_pd(test, a), NDK_PD, Header);
	pd = container_of(p, struct ndk_pd, ndk);
	ndk_wait_init(&w[0]);
	mutex_lock(&pd->mw_lock);
	spin_lock_irqsave(&ndk_test_lock, flags);
	st = p->Dispatch->NdkCreateMw(p, ndk_test_create_cb, &w[0], &unused);
	spin_unlock_irqrestore(&ndk_test_lock, flags);
	/* Not an assertion: the lock must go. */
	ndk_wait_init(&w[2]);
	cst = a->Dispatch->NdkCreateCq(a, 16, NULL, NULL, NULL,
				       ndk_test_create_cb, &w[2], &cq);
	mutex_unlock(&pd->mw_lock);
	KUNIT_EXPECT_EQ(test, cst, NDK_TEST_INLINE);
	ndk_created(test, cst, &w[2], cq);
	KUNIT_EXPECT_EQ(test, st, STATUS_PENDING);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w[0]));
	KUNIT_EXPECT_EQ(test, w[0].status, STATUS_SUCCESS);

	ndk_wait_init(&w[1]);
	KUNIT_EXPECT_EQ(test, p->Dispatch->NdkClosePd(&p->Header,
						      ndk_test_close_cb,
						      &w[1]),
			STATUS_PENDING);
	/* The window and the CQ; the PD is closing already. */
	KUNIT_EXPECT_EQ(test, ndk_close_leftovers(a), 2U);
	KUNIT_EXPECT_TRUE(test, ndk_wait_for(&w[1]));
	KUNIT_EXPECT_EQ(test, atomic_read(&w[1].calls), 1);
	KUNIT_EXPECT_EQ(test, ndk_close_leftovers(a), 0U);
	KUNIT_EXPECT_TRUE(test, ndk_close_adapter_timeout(a, NDK_TEST_TIMEOUT));
}

/*
 * ndk_close_adapter_timeout() gives up on an adapter something still
 * holds, without freeing it; the adapter then closes once let go.
 */
static void ndk_adapter_close_timeout_test(struct kunit *test)
{
	NDK_ADAPTER *a = ndk_test_open(test);
	struct ndk_adapter *ad = priv(a);

	refcount_inc(&ad->obj.refs);
	KUNIT_EXPECT_FALSE(test, ndk_close_adapter_timeout(a, 1));
	KUNIT_EXPECT_EQ(test, refcount_read(&ad->obj.refs), 1U);
	KUNIT_EXPECT_FALSE(test, completion_done(&ad->released));
	ndk_close_adapter(a);
}

struct ndk_notify_rec {
	struct notifier_block nb;
	int added;
	int ifindex;
	NTSTATUS open_status;
};

/* Open and close an adapter on @ifindex, as a notifier's consumer would. */
static NTSTATUS ndk_open_close(int ifindex)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	NDK_ADAPTER *a;
	NTSTATUS st = ndk_open_adapter(ifindex, v, &a);

	if (st == STATUS_SUCCESS)
		ndk_close_adapter(a);
	return st;
}

static int ndk_test_notify(struct notifier_block *nb, unsigned long event,
			   void *data)
{
	struct ndk_notify_rec *rec = container_of(nb, struct ndk_notify_rec,
						  nb);
	const struct ndk_adapter_desc *desc = data;

	if (event == NDK_ADAPTER_ADDED) {
		rec->added++;
		rec->ifindex = desc->ifindex;
		/* Opening from the notifier is what consumers will do. */
		rec->open_status = ndk_open_close(desc->ifindex);
	}
	return NOTIFY_OK;
}

/* A new notifier hears about the adapters already present. */
static void ndk_adapter_notifier_test(struct kunit *test)
{
	struct ndk_notify_rec rec = { .nb.notifier_call = ndk_test_notify };

	KUNIT_ASSERT_EQ(test, ndk_register_adapter_notifier(&rec.nb), 0);
	KUNIT_EXPECT_EQ(test, rec.added, ndk_enum_adapters(NULL, 0));
	KUNIT_EXPECT_EQ(test, rec.ifindex, ndk_test_ifindex(test));
	KUNIT_EXPECT_EQ(test, rec.open_status, STATUS_SUCCESS);
	ndk_unregister_adapter_notifier(&rec.nb);
}

/*
 * The first open of a device probes its inline size with a PD and a CQ of
 * its own. An open whose probe cannot get them fails with the shortage,
 * and the next open probes again: a passing shortage never stays in the
 * device's report as an inline size of 0. The second device is new, so
 * its first open probes; the PD and then the CQ fail.
 */
static void ndk_adapter_probe_fault_test(struct kunit *test)
{
	NDK_VERSION v = { .Major = 1, .Minor = 2 };
	struct ndk_test_dev2 *d = ndk_test_dev2_add(test);
	bool fired;
	NTSTATUS st;
	int nth;

	if (!d)
		return;
	for (nth = 1; nth <= 2; nth++) {
		ndk_fault_arm(nth);
		st = ndk_open_adapter(d->ifindex, v, &d->a);
		ndk_fault_disarm(&fired);
		KUNIT_EXPECT_TRUE(test, fired);
		KUNIT_EXPECT_EQ(test, st, STATUS_INSUFFICIENT_RESOURCES);
		KUNIT_EXPECT_NULL(test, d->a);
		if (d->a) {
			ndk_close_adapter(d->a);
			d->a = NULL;
		}
	}
	KUNIT_ASSERT_EQ(test, ndk_open_adapter(d->ifindex, v, &d->a),
			STATUS_SUCCESS);
	KUNIT_EXPECT_GT(test, priv(d->a)->info.MaxInlineDataSize, 0U);
	ndk_test_dev2_del(test, d);
}

/*
 * Registering a notifier twice is a consumer's mistake: ndk refuses it
 * with -EEXIST before the notifier core sees it, as the core would warn,
 * and the first registration stays, without a second replay. Another
 * consumer's notifier, ahead on the chain, neither hides the repeat nor
 * is taken for it. A notifier whose replay cannot get its memory is
 * refused with -ENOMEM and left off the chain, so it registers afresh.
 */
static void ndk_adapter_notifier_twice_test(struct kunit *test)
{
	struct ndk_notify_rec other = { .nb.notifier_call = ndk_test_notify };
	struct ndk_notify_rec rec = { .nb.notifier_call = ndk_test_notify };
	bool warned = test_taint(TAINT_WARN);
	int n = ndk_enum_adapters(NULL, 0);
	bool fired;

	KUNIT_ASSERT_EQ(test, ndk_register_adapter_notifier(&other.nb), 0);
	KUNIT_EXPECT_EQ(test, ndk_register_adapter_notifier(&rec.nb), 0);
	KUNIT_EXPECT_EQ(test, rec.added, n);
	KUNIT_EXPECT_EQ(test, ndk_register_adapter_notifier(&rec.nb), -EEXIST);
	KUNIT_EXPECT_EQ(test, ndk_register_adapter_notifier(&other.nb),
			-EEXIST);
	KUNIT_EXPECT_EQ(test, rec.added, n);
	KUNIT_EXPECT_EQ(test, other.added, n);
	if (!warned)
		KUNIT_EXPECT_FALSE(test, test_taint(TAINT_WARN));
	ndk_unregister_adapter_notifier(&rec.nb);
	ndk_unregister_adapter_notifier(&other.nb);

	rec.added = 0;
	ndk_fault_arm(1);
	KUNIT_EXPECT_EQ(test, ndk_register_adapter_notifier(&rec.nb), -ENOMEM);
	ndk_fault_disarm(&fired);
	KUNIT_EXPECT_TRUE(test, fired);
	KUNIT_EXPECT_EQ(test, rec.added, 0);
	/* No assertion: @rec must leave the chain whatever happened. */
	KUNIT_EXPECT_EQ(test, ndk_register_adapter_notifier(&rec.nb), 0);
	KUNIT_EXPECT_EQ(test, rec.added, n);
	ndk_unregister_adapter_notifier(&rec.nb);
}

/* An open adapter pins its RDMA device and the provider module. */
static void ndk_adapter_references_test(struct kunit *test)
{
	struct module *ndk_mod = ndk_module();
	int mod_refs = module_refcount(ndk_mod);
	struct ib_device *ibdev;
	unsigned int dev_refs;
	NDK_ADAPTER *a;

	a = ndk_test_open(test);
	ibdev = priv(a)->ibdev;
	KUNIT_EXPECT_EQ(test, module_refcount(ndk_mod), mod_refs + 1);
	dev_refs = refcount_read(&ibdev->refcount);
	ndk_close_adapter(a);
	KUNIT_EXPECT_EQ(test, module_refcount(ndk_mod), mod_refs);
	KUNIT_EXPECT_EQ(test, refcount_read(&ibdev->refcount), dev_refs - 1);
}

/* What the notifier heard of the second device's adapter. */
struct ndk_second_rec {
	struct notifier_block nb;
	struct completion added, removed;
	struct ndk_adapter_desc desc;
	NTSTATUS open_removed;	/* an open tried on the removal's news */
};

static int ndk_second_notify(struct notifier_block *nb, unsigned long event,
			     void *data)
{
	struct ndk_second_rec *rec = container_of(nb, struct ndk_second_rec,
						  nb);
	const struct ndk_adapter_desc *desc = data;

	/* Its interface is made with it: known by the device's name. */
	if (strcmp(desc->ibdev_name, NDK_TEST_DEV2))
		return NOTIFY_DONE;
	if (event == NDK_ADAPTER_ADDED) {
		rec->desc = *desc;
		complete(&rec->added);
	} else if (event == NDK_ADAPTER_REMOVED) {
		rec->open_removed = ndk_open_close(desc->ifindex);
		complete(&rec->removed);
	}
	return NOTIFY_OK;
}

/*
 * A second RDMA device comes and goes beside the test's own, and no
 * adapter is ever opened on it: consumers hear it added and removed, the
 * enumeration lists it in between, after the first and under its own
 * interface and device, and none of it is left once it is gone. ndk
 * looks for each device's interfaces among all of them, the other
 * device's included. A consumer that opens it on the news of its
 * removal, while the device is still registered, is told it is not
 * ready; its debugfs file, held open across the removal, reads as an I/O
 * error, not as the freed device's.
 */
static void ndk_adapter_second_device_test(struct kunit *test)
{
	struct ndk_second_rec rec = { .nb.notifier_call = ndk_second_notify };
	int first = ndk_test_ifindex(test), before, n, i;
	struct ndk_adapter_desc *descs;
	struct ndk_test_dev2 *d;
	struct file *f = NULL;
	loff_t pos = 0;
	char buf[16];

	descs = kunit_kcalloc(test, 8, sizeof(*descs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, descs);
	init_completion(&rec.added);
	init_completion(&rec.removed);
	before = ndk_enum_adapters(NULL, 0);
	KUNIT_ASSERT_EQ(test, ndk_register_adapter_notifier(&rec.nb), 0);
	d = ndk_test_dev2_add(test);
	if (!d) {
		ndk_unregister_adapter_notifier(&rec.nb);
		return;
	}
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rec.added,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, rec.desc.ifindex, d->ifindex);
	KUNIT_EXPECT_EQ(test, rec.desc.port, 1U);
	KUNIT_EXPECT_EQ(test, rec.desc.rdma_technology, NdkRoCEv2);
	n = ndk_enum_adapters(descs, 8);
	KUNIT_EXPECT_EQ(test, n, before + 1);
	KUNIT_EXPECT_EQ(test, descs[0].ifindex, first);
	for (i = 1; i < min(n, 8); i++)
		if (descs[i].ifindex == d->ifindex)
			break;
	KUNIT_EXPECT_LT(test, i, min(n, 8));
	if (i < min(n, 8))
		KUNIT_EXPECT_STREQ(test, descs[i].ibdev_name, NDK_TEST_DEV2);
	scoped_with_init_fs() {
		f = filp_open("/sys/kernel/debug/ndk/" NDK_TEST_DEV2 "/stats",
			      O_RDONLY, 0);
	}
	KUNIT_EXPECT_FALSE(test, IS_ERR(f));

	ndk_test_dev2_del(test, d);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&rec.removed,
							  NDK_TEST_TIMEOUT),
			0UL);
	KUNIT_EXPECT_EQ(test, rec.open_removed, STATUS_NDIS_ADAPTER_NOT_READY);
	if (!IS_ERR(f)) {
		KUNIT_EXPECT_EQ(test, kernel_read(f, buf, sizeof(buf), &pos),
				(ssize_t)-EIO);
		filp_close(f, NULL);
	}
	KUNIT_EXPECT_EQ(test, ndk_enum_adapters(NULL, 0), before);
	ndk_unregister_adapter_notifier(&rec.nb);
}

static struct kunit_case ndk_adapter_cases[] = {
	KUNIT_CASE(ndk_adapter_enum_test),
	KUNIT_CASE(ndk_adapter_open_close_test),
	KUNIT_CASE(ndk_adapter_two_opens_test),
	KUNIT_CASE_PARAM(ndk_adapter_version_test, ndk_version_gen_params),
	KUNIT_CASE(ndk_adapter_bad_ifindex_test),
	KUNIT_CASE(ndk_adapter_info_test),
	KUNIT_CASE(ndk_adapter_inline_probe_test),
	KUNIT_CASE(ndk_adapter_info_small_buffer_test),
	KUNIT_CASE(ndk_adapter_query_extension_test),
	KUNIT_CASE(ndk_adapter_leftovers_test),
	KUNIT_CASE(ndk_adapter_leftovers_order_test),
	KUNIT_CASE(ndk_adapter_close_timeout_test),
	KUNIT_CASE(ndk_adapter_notifier_test),
	KUNIT_CASE(ndk_adapter_notifier_twice_test),
	KUNIT_CASE(ndk_adapter_references_test),
	KUNIT_CASE(ndk_adapter_second_device_test),
	KUNIT_CASE(ndk_adapter_probe_fault_test),
	{}
};

NDK_SUITE(adapter, NULL, NULL);
