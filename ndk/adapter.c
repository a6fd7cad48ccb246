// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_ADAPTER: opening and closing an adapter instance on an RDMA port,
 * and NdkQueryAdapterInfo computed honestly from the device's attributes.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_user_cm.h>
#include "ndk_priv.h"

/*
 * Private data that rdma_cm leaves to the consumer. On IB and RoCE the CM
 * REQ carries 92 bytes of which rdma_cm uses 36 for its address header;
 * the callee data limit is the smaller of REP and REJ. On iWARP the MPA
 * frame carries up to RDMA_MAX_PRIVATE_DATA bytes, 4 of which MPA v2
 * spends on IRD/ORD; siw counts the frame's total in a u8, so one byte
 * less is all that arrives intact.
 */
#define NDK_IB_CALLER_DATA	(IB_CM_REQ_PRIVATE_DATA_SIZE - 36)
#define NDK_IB_CALLEE_DATA	min_t(u32, IB_CM_REP_PRIVATE_DATA_SIZE, \
				      IB_CM_REJ_PRIVATE_DATA_SIZE)
#define NDK_IW_PRIVATE_DATA	(RDMA_MAX_PRIVATE_DATA - 4 - 1)

/* Size hint above which RDMA read/write beats send/receive. */
#define NDK_LARGE_REQUEST_THRESHOLD	(8 * 1024)

/* Create a throwaway RC QP; the inline size it got, or 0 if refused. */
static u32 ndk_probe_qp(struct ib_pd *pd, struct ib_cq *cq, u32 send_sge,
			u32 max_inline)
{
	struct ib_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = send_sge,
			.max_recv_sge = 1,
			.max_inline_data = max_inline,
		},
	};
	struct ib_qp *qp;

	qp = ib_create_qp(pd, &attr);
	if (IS_ERR(qp))
		return 0;
	ib_destroy_qp(qp);
	/* A QP keeps its inline size in 16 bits. */
	return min_t(u32, max(attr.cap.max_inline_data, max_inline), U16_MAX);
}

/*
 * The largest inline size an RC QP accepts is not among the device
 * attributes; ask the device once by creating throwaway QPs. A QP with
 * the device's whole send SGE list and no inline request reports what
 * its send entries hold, which some devices accept as inline size (rxe:
 * 512 bytes): that size goes first, so no create fails there, as rxe
 * logs every failed create as an error. Devices that report nothing, or
 * refuse that size, are asked from 1024 bytes down. Return: 0 with
 * @max_inline set, or the error of the probe's PD or CQ.
 */
static int ndk_probe_max_inline(struct ib_device *ibdev, u32 *max_inline)
{
	static const u32 sizes[] = { 1024, 512, 256, 128, 64, 32 };
	u32 hint, found = 0;
	struct ib_pd *pd;
	struct ib_cq *cq;
	size_t i;

	pd = NDK_FI_PTR(ib_alloc_pd(ibdev, 0));
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	cq = NDK_FI_PTR(ib_alloc_cq(ibdev, NULL, 1, 0, IB_POLL_DIRECT));
	if (IS_ERR(cq)) {
		ib_dealloc_pd(pd);
		return PTR_ERR(cq);
	}
	hint = ndk_probe_qp(pd, cq, max(ibdev->attrs.max_send_sge, 1), 0);
	if (hint)
		found = ndk_probe_qp(pd, cq, 1, hint);
	for (i = 0; i < ARRAY_SIZE(sizes) && !found; i++)
		if (!hint || sizes[i] < hint)
			found = ndk_probe_qp(pd, cq, 1, sizes[i]);
	ib_free_cq(cq);
	ib_dealloc_pd(pd);
	*max_inline = found;
	return 0;
}

static void ndk_fill_info(struct ndk_adapter *adapter, u32 max_inline)
{
	struct ib_device *ibdev = adapter->ibdev;
	const struct ib_device_attr *a = &ibdev->attrs;
	NDK_ADAPTER_INFO *info = &adapter->info;
	struct ib_port_attr pattr = {};
	bool iwarp = rdma_protocol_iwarp(ibdev, adapter->port);
	u32 max_msg = U32_MAX;

	if (!ib_query_port(ibdev, adapter->port, &pattr) && pattr.max_msg_sz)
		max_msg = pattr.max_msg_sz;

	info->Version = adapter->ndk.Header.Version;
	info->VendorId = a->vendor_id;
	info->DeviceId = a->vendor_part_id;
	/*
	 * NdkRegisterMr goes through a fast-register MR: a region may take
	 * one page more than its length because it need not start on a
	 * page boundary.
	 */
	info->MaxRegistrationSize =
		min_t(u64, a->max_mr_size,
		      (u64)max(a->max_fast_reg_page_list_len, 1U) * PAGE_SIZE -
		      PAGE_SIZE);
	/*
	 * A window is a fast-register MR as large as any registration, so
	 * that every registered region can be bound whole (mw.c).
	 */
	info->MaxWindowSize = info->MaxRegistrationSize;
	info->FRMRPageCount = a->max_fast_reg_page_list_len;
	/* A QP keeps its SGE counts in 16 bits; no device comes near. */
	info->MaxInitiatorRequestSge = min_t(u32, a->max_send_sge, U16_MAX);
	info->MaxReceiveRequestSge = min_t(u32, a->max_recv_sge, U16_MAX);
	info->MaxReadRequestSge = a->max_sge_rd ? a->max_sge_rd : 1;
	info->MaxTransferLength = max_msg;
	info->MaxInlineDataSize = max_inline;
	info->MaxInboundReadLimit = a->max_qp_rd_atom;
	info->MaxOutboundReadLimit = a->max_qp_init_rd_atom;
	info->MaxReceiveQueueDepth = a->max_qp_wr;
	info->MaxInitiatorQueueDepth = a->max_qp_wr;
	info->MaxSrqDepth = a->max_srq_wr;
	info->MaxCqDepth = a->max_cqe;
	info->LargeRequestThreshold = NDK_LARGE_REQUEST_THRESHOLD;
	info->MaxCallerData = iwarp ? NDK_IW_PRIVATE_DATA : NDK_IB_CALLER_DATA;
	info->MaxCalleeData = iwarp ? NDK_IW_PRIVATE_DATA : NDK_IB_CALLEE_DATA;
	info->RdmaTechnology = ndk_rdma_technology(ibdev, adapter->port);

	info->AdapterFlags = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
	/* Software devices copy each message front to back. */
	if (ibdev->ops.driver_id == RDMA_DRIVER_RXE ||
	    ibdev->ops.driver_id == RDMA_DRIVER_SIW)
		info->AdapterFlags |= NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED;
	/* IB and RoCE need only local write on a read sink; iWARP needs
	 * remote write.
	 */
	if (!iwarp)
		info->AdapterFlags |=
			NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED;
	/* Only iWARP verbs have a read that invalidates its sink. */
	else
		info->AdapterFlags |=
			NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED;
	if (ibdev->ops.modify_cq)
		info->AdapterFlags |=
			NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
	if (ibdev->num_comp_vectors > 1)
		info->AdapterFlags |= NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED;
	if (ndk_ib_can_resize_cq(ibdev))
		info->AdapterFlags |= NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
}

static NTSTATUS ndk_query_adapter_info(NDK_ADAPTER *pNdkAdapter,
				       NDK_ADAPTER_INFO *pInfo,
				       ULONG *pBufferSize)
{
	struct ndk_adapter *adapter =
		container_of(pNdkAdapter, struct ndk_adapter, ndk);

	if (!pBufferSize)
		return STATUS_INVALID_PARAMETER;
	if (!pInfo || *pBufferSize < sizeof(adapter->info)) {
		*pBufferSize = sizeof(adapter->info);
		return STATUS_BUFFER_TOO_SMALL;
	}
	memcpy(pInfo, &adapter->info, sizeof(adapter->info));
	*pBufferSize = sizeof(adapter->info);
	return STATUS_SUCCESS;
}

static const NDK_ADAPTER_DISPATCH ndk_adapter_dispatch = {
	.NdkQueryExtension = ndk_query_extension,
	.NdkQueryAdapterInfo = ndk_query_adapter_info,
	.NdkCreateCq = ndk_create_cq,
	.NdkCreatePd = ndk_create_pd,
	.NdkCreateSharedEndpoint = ndk_create_shared_endpoint,
	.NdkCreateConnector = ndk_create_connector,
	.NdkCreateListener = ndk_create_listener,
	.NdkBuildLAM = ndk_build_lam,
	.NdkReleaseLAM = ndk_release_lam,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_adapter);

/*
 * The last reference on an adapter is gone (ndk_obj_put()): every
 * successor has closed and every callback has returned; wake the thread
 * blocked in ndk_close_adapter().
 */
static void ndk_adapter_released(struct ndk_obj *obj)
{
	complete(&obj->adapter->released);
}

/* An adapter is no successor: it is neither created nor destroyed on ndk_wq. */
static const struct ndk_obj_ops ndk_adapter_ops = {
	.released = ndk_adapter_released,
};

/* The RDMA device and port behind a network interface index. */
static NTSTATUS ndk_lookup_port(int ifindex, struct ib_device **ibdevp,
				u32 *port)
{
	struct net_device *ndev;
	struct ib_device *ibdev;

	ndev = dev_get_by_index(&init_net, ifindex);
	if (!ndev)
		return STATUS_NOT_FOUND;
	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev) {
		dev_put(ndev);
		return STATUS_NOT_FOUND;
	}
	if (ndk_device_port_of(ibdev, ndev, port)) {
		dev_put(ndev);
		ib_device_put(ibdev);
		return STATUS_NOT_FOUND;
	}
	dev_put(ndev);
	*ibdevp = ibdev;
	return STATUS_SUCCESS;
}

/* The ib_client's entry for @ibdev, or NULL if it is not (or no longer)
 * an NDK device. Caller holds ndk_devices_lock.
 */
static struct ndk_device *ndk_device_find(struct ib_device *ibdev)
{
	struct ndk_device *dev;

	list_for_each_entry(dev, &ndk_devices, list)
		if (dev->ibdev == ibdev)
			return dev;
	return NULL;
}

/**
 * ndk_open_adapter() - open an NDK adapter instance on an RDMA port
 * @ifindex: index, in init_net, of the port's network interface
 * @version: NDKPI version the consumer asks for; major 1, minor up to
 *	NDK_PROVIDER_VERSION_MINOR. The adapter reports the highest minor
 *	version the provider implements.
 * @adapter: receives the adapter on success
 *
 * Process context; may sleep. The adapter holds references on the RDMA
 * device and on this module until ndk_close_adapter().
 *
 * Return: STATUS_SUCCESS; STATUS_NDIS_BAD_VERSION for a version this
 * provider does not implement; STATUS_NOT_FOUND if @ifindex is no RDMA
 * port; STATUS_NDIS_ADAPTER_NOT_READY if the device is going away;
 * STATUS_INSUFFICIENT_RESOURCES; STATUS_INVALID_PARAMETER for NULL
 * @adapter.
 */
NTSTATUS ndk_open_adapter(int ifindex, NDK_VERSION version,
			  NDK_ADAPTER **adapter)
{
	struct ndk_adapter *a;
	struct ndk_device *dev;
	struct ib_device *ibdev;
	NTSTATUS status;
	u32 port, max_inline;
	int err;

	might_sleep();
	if (!adapter)
		return STATUS_INVALID_PARAMETER;
	*adapter = NULL;
	if (version.Major != NDK_PROVIDER_VERSION_MAJOR ||
	    version.Minor > NDK_PROVIDER_VERSION_MINOR)
		return STATUS_NDIS_BAD_VERSION;

	status = ndk_lookup_port(ifindex, &ibdev, &port);
	if (status)
		return status;

	mutex_lock(&ndk_devices_lock);
	dev = ndk_device_find(ibdev);
	if (!dev) {
		mutex_unlock(&ndk_devices_lock);
		status = STATUS_NDIS_ADAPTER_NOT_READY;
		goto err_dev;
	}
	mutex_lock(&dev->probe_lock);
	/* A probe short of memory fails this open; the next probes again. */
	err = 0;
	if (!dev->probed) {
		err = ndk_probe_max_inline(ibdev, &dev->max_inline);
		if (!err)
			INIT_WORK(&dev->restore_work, ndk_mr_restore_work);
		dev->probed = !err;
	}
	max_inline = dev->max_inline;
	mutex_unlock(&dev->probe_lock);
	if (err) {
		mutex_unlock(&ndk_devices_lock);
		status = ndk_status_from_errno(err);
		goto err_dev;
	}
	/* Its counters and debugfs view outlive a removal while open. */
	kref_get(&dev->ref);
	mutex_unlock(&ndk_devices_lock);

	a = NDK_FI_NULL(kzalloc(sizeof(*a), GFP_KERNEL));
	if (!a) {
		status = STATUS_INSUFFICIENT_RESOURCES;
		goto err_ref;
	}
	if (!try_module_get(THIS_MODULE)) {
		kfree(a);
		status = STATUS_NDIS_ADAPTER_NOT_READY;
		goto err_ref;
	}
	a->ndk.Dispatch = &ndk_adapter_dispatch;
	a->ndk.Header.Version.Major = NDK_PROVIDER_VERSION_MAJOR;
	a->ndk.Header.Version.Minor = NDK_PROVIDER_VERSION_MINOR;
	ndk_obj_init(&a->obj, &a->ndk.Header, NdkObjectTypeAdapter,
		     &ndk_adapter_ops, NULL);
	a->obj.adapter = a;
	a->obj.state = NDK_OBJ_LIVE;
	a->dev = dev;
	a->ibdev = ibdev;
	a->port = port;
	a->ifindex = ifindex;
	init_completion(&a->released);
	spin_lock_init(&a->linger_lock);
	INIT_LIST_HEAD(&a->lingering);
	ndk_fill_info(a, max_inline);
	ndk_obj_track(&a->obj);
	*adapter = &a->ndk;
	return STATUS_SUCCESS;

err_ref:
	kref_put(&dev->ref, ndk_device_release);
err_dev:
	ib_device_put(ibdev);
	return status;
}
EXPORT_SYMBOL_GPL(ndk_open_adapter);

static void ndk_adapter_free(struct ndk_adapter *a)
{
	ndk_obj_untrack(&a->obj);
	kref_put(&a->dev->ref, ndk_device_release);
	ib_device_put(a->ibdev);
	kfree(a);
	module_put(THIS_MODULE);
}

/**
 * ndk_close_adapter() - close an adapter instance
 * @adapter: an adapter from ndk_open_adapter()
 *
 * Blocks until every object created under @adapter has been closed and
 * every callback of those objects has returned: after this returns the
 * consumer module may unload. Process context; must not be called from
 * an NDK callback.
 */
void ndk_close_adapter(NDK_ADAPTER *adapter)
{
	struct ndk_adapter *a;

	might_sleep();
	if (!adapter)
		return;
	a = container_of(adapter, struct ndk_adapter, ndk);
	ndk_obj_put(&a->obj);
	wait_for_completion(&a->released);
	ndk_adapter_free(a);
}
EXPORT_SYMBOL_GPL(ndk_close_adapter);

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * ndk_close_adapter_timeout() - ndk_close_adapter() bounded in time
 * @adapter: an adapter from ndk_open_adapter()
 * @timeout: how long to wait, in jiffies
 *
 * For the test suites' exit hooks: a case that failed halfway leaves
 * objects open, and the remaining suites must still run. On timeout the
 * adapter is abandoned, never freed.
 *
 * Return: true if the adapter closed and was freed.
 */
bool ndk_close_adapter_timeout(NDK_ADAPTER *adapter, unsigned long timeout)
{
	struct ndk_adapter *a = container_of(adapter, struct ndk_adapter, ndk);

	ndk_obj_put(&a->obj);
	if (!wait_for_completion_timeout(&a->released, timeout))
		return false;
	ndk_adapter_free(a);
	return true;
}
EXPORT_SYMBOL_NDK_TEST(ndk_close_adapter_timeout);

/*
 * The live object of @a with the lowest id above @after, referenced, or
 * NULL.
 */
static struct ndk_obj *ndk_next_leftover(struct ndk_adapter *a, u32 after)
{
	struct ndk_device *dev = a->dev;
	struct ndk_obj *obj, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&dev->objs_lock, flags);
	list_for_each_entry(obj, &dev->objs, dev_node) {
		if (obj->adapter == a && obj->id > after &&
		    READ_ONCE(obj->state) == NDK_OBJ_LIVE &&
		    (!found || obj->id < found->id))
			found = obj;
	}
	if (found && !refcount_inc_not_zero(&found->refs))
		found = NULL;
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	return found;
}

/**
 * ndk_close_leftovers() - close every object still open under an adapter
 * @adapter: an adapter from ndk_open_adapter()
 *
 * For the test suites' exit hooks, after a case that failed halfway: the
 * objects it left open would otherwise hold the adapter, their ports and
 * the device for every later case. Each live object gets a close with no
 * completion; a parent's close pends until its successors have gone.
 *
 * Return: how many objects were closed.
 */
unsigned int ndk_close_leftovers(NDK_ADAPTER *adapter)
{
	struct ndk_adapter *a = container_of(adapter, struct ndk_adapter, ndk);
	unsigned int n = 0;
	struct ndk_obj *obj;
	u32 after = 0;

	while ((obj = ndk_next_leftover(a, after))) {
		after = obj->id;
		if (ndk_close_object(obj->hdr, NULL, NULL) !=
		    STATUS_INVALID_PARAMETER)
			n++;
		ndk_obj_put(obj);
	}
	return n;
}
EXPORT_SYMBOL_NDK_TEST(ndk_close_leftovers);
#endif
