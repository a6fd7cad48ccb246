// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The registration path of a PD. Kernel verbs make a region valid only
 * through an IB_WR_REG_MR work request on a QP of its PD, so each PD that
 * registers memory owns an RC QP connected to itself (loopback.c), made
 * at the first registration; NdkRegisterMr and NdkDeregisterMr (mr.c)
 * post their requests here and wait for them. pd.c sets the path up and
 * destroys it with the PD.
 */
#include "ndk_priv.h"

/*
 * The module of @ibdev's driver is being unloaded. siw stops its transmit
 * threads before it unregisters its devices, so a send it accepts on a
 * connected QP from then on takes a QP reference nothing drops, and
 * destroying that QP never returns (see deviations.rst): ndk hands such
 * a QP no initiator request from then on.
 */
static bool ndk_driver_going(const struct ib_device *ibdev)
{
	struct module *owner = ibdev->ops.owner;

	return owner && !module_is_live(owner);
}

void ndk_reg_init(struct ndk_reg *reg)
{
	mutex_init(&reg->lock);
	init_completion(&reg->done);
}

/* The registration CQ's completion handler wakes ndk_reg_post(). */
static void ndk_reg_comp(struct ib_cq *cq, void *ctx)
{
	struct ndk_reg *reg = ctx;

	complete(&reg->done);
}

/* Disconnect the loop and free what ndk_reg_setup() made. */
static void ndk_reg_teardown(struct ndk_reg *reg)
{
	ndk_loop_disconnect(&reg->loop);
	if (reg->loop.qp)
		ib_destroy_qp(reg->loop.qp);
	if (reg->loop.peer)
		ib_destroy_qp(reg->loop.peer);
	if (reg->cq)
		ib_destroy_cq(reg->cq);
	reg->loop.qp = NULL;
	reg->loop.peer = NULL;
	reg->cq = NULL;
}

void ndk_reg_destroy(struct ndk_reg *reg)
{
	ndk_reg_teardown(reg);
	mutex_destroy(&reg->lock);
}

/* On iWARP the loop needs a second QP as its far end. */
static int ndk_reg_setup(struct ndk_pd *pd)
{
	struct ndk_adapter *adapter = pd->obj.adapter;
	struct ndk_reg *reg = &pd->reg;
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 2, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_cq_init_attr cq_attr = { .cqe = 4 };
	struct ib_qp *qp;
	int err;

	/*
	 * Polled by the request itself, which sleeps until the completion
	 * handler wakes it when polling finds nothing: see ndk_reg_post().
	 */
	reg->cq = NDK_FI_PTR(ib_create_cq(pd->ibpd->device, ndk_reg_comp, NULL,
					  reg, &cq_attr));
	if (IS_ERR(reg->cq)) {
		err = PTR_ERR(reg->cq);
		reg->cq = NULL;
		return err;
	}
	init.send_cq = reg->cq;
	init.recv_cq = reg->cq;
	qp = NDK_FI_PTR(ib_create_qp(pd->ibpd, &init));
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		goto fail;
	}
	reg->loop.qp = qp;
	if (rdma_protocol_iwarp(adapter->ibdev, adapter->port)) {
		qp = NDK_FI_PTR(ib_create_qp(pd->ibpd, &init));
		if (IS_ERR(qp)) {
			err = PTR_ERR(qp);
			goto fail;
		}
		reg->loop.peer = qp;
	}
	err = ndk_loop_connect(adapter, &reg->loop);
	if (err)
		goto fail;
	return 0;
fail:
	ndk_reg_teardown(reg);
	return err;
}

/*
 * How long ndk_reg_post() polls the registration CQ before it sleeps
 * until the CQ's completion handler wakes it. Hardware completes a local
 * request within microseconds, siw inside ib_post_send(), 6.1's rxe in
 * tasklets that the poll loop runs, 6.12's rxe in a work item, which
 * cond_resched() in the loop lets run if it was queued on this CPU. The
 * request mostly runs in the consumer's own thread, which waits for it
 * anyway: polling finds the completion without a sleep and a wakeup.
 * Under TCG on 6.12, 16 polls slept in 98 % of the requests, 1 ms of
 * polling in 0.3 % (5 % on a loaded host), which halved a registration;
 * 0.2 ms and 5 ms did as well as 1 ms on a quiet host, 0.1 ms still
 * slept in 28 % of them on a loaded one (see
 * Documentation/ndk/performance.rst). A device slower than this is
 * waited for asleep.
 */
#define NDK_REG_SPIN_NS	(1000 * NSEC_PER_USEC)
/* A wakeup that never came is noticed by polling again this often. */
#define NDK_REG_WAIT	HZ

/*
 * Post @wr (IB_WR_REG_MR or IB_WR_LOCAL_INV) on the PD's registration QP
 * and wait for its completion: poll for up to NDK_REG_SPIN_NS, then
 * sleep until the CQ's completion handler reports it. Sleeps.
 */
NTSTATUS ndk_reg_post(struct ndk_pd *pd, struct ib_send_wr *wr)
{
	struct ndk_reg *reg = &pd->reg;
	struct ib_wc wc = { .status = IB_WC_SUCCESS };
	u64 spin_end = 0;
	int err = 0, n = 0, ret;

	wr->send_flags = IB_SEND_SIGNALED;
	mutex_lock(&reg->lock);
	/* The registration QP is connected: see ndk_driver_going(). */
	if (ndk_driver_going(pd->ibpd->device))
		err = -ENODEV;
	else if (!reg->loop.qp)
		err = ndk_reg_setup(pd);
	if (!err) {
		err = NDK_FI_ERR(ib_post_send(reg->loop.qp, wr, NULL));
		spin_end = ktime_get_ns() + NDK_REG_SPIN_NS;
	}
	/* The device completes the request, if only by flushing it. */
	while (!err && !n) {
		n = ib_poll_cq(reg->cq, 1, &wc);
		if (n < 0) {
			err = n;
		} else if (!n && ktime_get_ns() < spin_end) {
			/*
			 * 6.1's rxe completes the request in tasklets that
			 * ib_post_send() raised on this CPU: run them now
			 * rather than wait for ksoftirqd or a tick.
			 */
			local_bh_disable();
			local_bh_enable();
			cond_resched();
		} else if (!n) {
			/*
			 * Arm, then poll again if the request completed
			 * meanwhile; else the handler's complete() ends
			 * the wait. A wakeup left over from an earlier arm
			 * only costs another poll.
			 */
			reinit_completion(&reg->done);
			ret = ib_req_notify_cq(reg->cq, IB_CQ_NEXT_COMP |
					       IB_CQ_REPORT_MISSED_EVENTS);
			if (ret < 0) {
				n = ret;
				err = ret;
			} else if (!ret) {
				wait_for_completion_timeout(&reg->done,
							    NDK_REG_WAIT);
			}
		}
	}
	/* A failed request leaves the QP in error: start afresh. */
	if (n < 0 || wc.status != IB_WC_SUCCESS)
		ndk_reg_teardown(reg);
	mutex_unlock(&reg->lock);
	if (err)
		return ndk_status_from_errno(err);
	return ndk_status_from_wc(wc.status);
}

/**
 * ndk_reg_may_run() - whether this caller may take the registration path
 *
 * Context: only where the caller may sleep.
 * Return: false inside ndk's rdma_cm handler, where nothing takes the
 * PD's registration or window mutex. On iWARP the path is an rdma_cm
 * connection made and torn down under the registration mutex: doing
 * that in a handler would nest two ids' handler locks and wait for
 * iw_cm's workqueue from the handler that workqueue runs. On any
 * transport, since lockdep counts every id's handler lock as one, taking
 * either mutex in a handler closes a cycle with the iWARP path's
 * (handler lock, window mutex, registration mutex, handler lock).
 */
bool ndk_reg_may_run(void)
{
	return !ndk_cm_handler_id();
}

/* Invalidate @key on the PD's registration QP. Sleeps. */
NTSTATUS ndk_reg_invalidate(struct ndk_pd *pd, u32 key)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = key,
	};

	return ndk_reg_post(pd, &wr);
}
