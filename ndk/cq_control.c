// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NDK_CQ's control calls, NdkResizeCq and
 * NdkControlCqInterruptModeration, and the completion vector a CQ is
 * created on. The poll and notification paths are in cq.c.
 */
#include "ndk_priv.h"
#include "trace.h"

/**
 * ndk_cq_pick_vector() - completion vector for a GROUP_AFFINITY
 * @ibdev: device
 * @aff: consumer's preference, or NULL
 *
 * Prefers a vector whose interrupt is affine to the first processor in
 * @aff; otherwise spreads processors over the vectors.
 *
 * Return: a completion vector number.
 */
int ndk_cq_pick_vector(struct ib_device *ibdev, const GROUP_AFFINITY *aff)
{
	const struct cpumask *mask;
	unsigned int cpu;
	int v;

	if (!aff || !aff->Mask || ibdev->num_comp_vectors <= 1)
		return 0;
	cpu = aff->Group * BITS_PER_LONG + __ffs(aff->Mask);
	for (v = 0; v < ibdev->num_comp_vectors; v++) {
		mask = ib_get_vector_affinity(ibdev, v);
		if (mask && cpu < nr_cpu_ids && cpumask_test_cpu(cpu, mask))
			return v;
	}
	return cpu % ibdev->num_comp_vectors;
}
EXPORT_SYMBOL_NDK_TEST(ndk_cq_pick_vector);

struct ndk_cq_resize {
	struct work_struct work;
	struct ndk_cq *cq;
	ULONG depth;
	NDK_FN_REQUEST_COMPLETION cb;
	void *ctx;
};

static void ndk_cq_resize_work(struct work_struct *work)
{
	struct ndk_cq_resize *req = container_of(work, struct ndk_cq_resize,
						 work);
	struct ndk_cq *cq = req->cq;
	NDK_FN_REQUEST_COMPLETION cb = req->cb;
	void *ctx = req->ctx;
	NTSTATUS status;
	int err;

	err = ib_resize_cq(cq->ibcq, req->depth);
	status = ndk_status_from_errno(err);
	if (!err)
		cq->depth = req->depth;
	kfree(req);
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeCq, cq->obj.id, status);
	cb(ctx, status);
	ndk_obj_put(&cq->obj);
}

/**
 * ndk_resize_cq() - NdkResizeCq
 * @pNdkCq: the CQ
 * @CqDepth: the new depth, 1 to MaxCqDepth
 * @RequestCompletion: called with the outcome, from ndk_wq
 * @RequestContext: passed back to @RequestCompletion
 *
 * Resizing may sleep in the driver, so it pends; the CQ stays referenced
 * until the completion callback has returned.
 *
 * Return: STATUS_PENDING; STATUS_NOT_SUPPORTED where the device cannot
 * resize, STATUS_INVALID_PARAMETER, STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_resize_cq(NDK_CQ *pNdkCq, ULONG CqDepth,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	struct ndk_cq_resize *req;

	if (!RequestCompletion)
		return STATUS_INVALID_PARAMETER;
	if (!(cq->obj.adapter->info.AdapterFlags &
	      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
		return STATUS_NOT_SUPPORTED;
	if (!CqDepth || CqDepth > cq->obj.adapter->info.MaxCqDepth)
		return STATUS_INVALID_PARAMETER;
	req = NDK_FI_NULL(kzalloc(sizeof(*req), GFP_ATOMIC));
	if (!req)
		return STATUS_INSUFFICIENT_RESOURCES;
	req->cq = cq;
	req->depth = CqDepth;
	req->cb = RequestCompletion;
	req->ctx = RequestContext;
	INIT_WORK(&req->work, ndk_cq_resize_work);
	ndk_obj_get(&cq->obj);
	queue_work(ndk_wq, &req->work);
	return STATUS_PENDING;
}

/**
 * ndk_cq_moderation() - verbs CQ moderation for NdkControlCqInterruptModeration
 * @interval: ModerationInterval, microseconds
 * @count: ModerationCount, completions
 * @depth: the CQ's depth
 * @cq_count: resulting verbs completion count (0: no moderation)
 * @cq_period: resulting verbs period in microseconds (0: no moderation)
 *
 * An interval of 0 or a count of 0 or 1 turns moderation off; an interval
 * of MAXULONG leaves it to the count and a count of MAXULONG or beyond
 * the depth leaves it to the interval. Values are clamped to the 16 bits
 * verbs carry; the device may round further down.
 *
 * Return: STATUS_SUCCESS, or STATUS_INVALID_PARAMETER_MIX when both
 * parameters defer to each other.
 */
NTSTATUS ndk_cq_moderation(ULONG interval, ULONG count, ULONG depth,
			   u16 *cq_count, u16 *cq_period)
{
	bool by_count = interval == U32_MAX;
	bool by_interval = count == U32_MAX || count > depth;

	if (by_count && by_interval)
		return STATUS_INVALID_PARAMETER_MIX;
	if (!interval || count <= 1) {
		*cq_count = 0;
		*cq_period = 0;
		return STATUS_SUCCESS;
	}
	*cq_count = by_interval ? U16_MAX : min_t(ULONG, count, U16_MAX);
	*cq_period = by_count ? U16_MAX : min_t(ULONG, interval, U16_MAX);
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_NDK_TEST(ndk_cq_moderation);

/**
 * ndk_cq_moderation_work() - apply a CQ's newest moderation setting
 * @work: the CQ's moderation_work
 *
 * The device call may sleep.
 */
void ndk_cq_moderation_work(struct work_struct *work)
{
	struct ndk_cq *cq = container_of(work, struct ndk_cq, moderation_work);
	u32 setting = atomic_read(&cq->moderation);
	int err;

	err = rdma_set_cq_moderation(cq->ibcq, setting >> 16, setting & 0xffff);
	if (err)
		dev_warn_ratelimited(&cq->ibcq->device->dev,
				     "ndk: CQ moderation failed: %d\n", err);
	ndk_obj_put(&cq->obj);
}

/**
 * ndk_control_cq_interrupt_moderation() - NdkControlCqInterruptModeration
 * @pNdkCq: the CQ
 * @ModerationInterval: microseconds
 * @ModerationCount: completions
 *
 * The call must not pend, yet the device call may sleep: it records the
 * newest setting and lets a work item apply it. A call made while an
 * older one is still queued simply replaces it.
 *
 * Return: STATUS_SUCCESS, STATUS_NOT_SUPPORTED, or what
 * ndk_cq_moderation() refuses.
 */
NTSTATUS
ndk_control_cq_interrupt_moderation(NDK_CQ *pNdkCq, ULONG ModerationInterval,
				    ULONG ModerationCount)
{
	struct ndk_cq *cq = to_ndk_cq(pNdkCq);
	u16 count, period;
	NTSTATUS status;

	if (!(cq->obj.adapter->info.AdapterFlags &
	      NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED))
		return STATUS_NOT_SUPPORTED;
	status = ndk_cq_moderation(ModerationInterval, ModerationCount,
				   cq->depth, &count, &period);
	if (status)
		return status;
	atomic_set(&cq->moderation, (u32)count << 16 | period);
	ndk_obj_get(&cq->obj);
	if (!queue_work(ndk_wq, &cq->moderation_work))
		ndk_obj_put(&cq->obj);
	return STATUS_SUCCESS;
}
