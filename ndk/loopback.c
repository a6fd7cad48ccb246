// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Loopback connections of ndk's own: an RC QP whose sends reach this same
 * adapter, for the registration path of a PD (REG_MR needs a QP in RTS)
 * and for the tests.
 *
 * On IB and RoCE a QP is connected to itself by hand. iWARP QPs are moved
 * only by the connection manager, so there two QPs are joined through a
 * real rdma_cm connection to the adapter's own IPv4 address.
 */
#include <linux/inetdevice.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_cm.h>
#include "ndk_priv.h"

/* A loopback TCP connection takes milliseconds; this bounds a stuck one. */
#define NDK_LOOP_TIMEOUT	(30 * HZ)

/*
 * IB and RoCE: walk a QP in RESET through INIT -> RTR -> RTS by hand, with
 * the port's first RoCE v2 GID (else GID 0, and the port's LID on IB) as
 * the destination and its own number as the peer.
 */
static int ndk_loop_self(struct ib_qp *qp, u32 port)
{
	struct ib_device *ibdev = qp->device;
	const struct ib_gid_attr *gattr = NULL;
	struct ib_port_attr pattr;
	struct ib_qp_attr attr = {};
	struct net_device *ndev;
	union ib_gid gid;
	int i, ret;

	/* On RoCE prefer a v2 GID, which routes through the netdev. */
	for (i = 0; i < 16 && !gattr; i++) {
		gattr = rdma_get_gid_attr(ibdev, port, i);
		if (IS_ERR(gattr)) {
			gattr = NULL;
		} else if (rdma_protocol_roce(ibdev, port) &&
			   gattr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
			rdma_put_gid_attr(gattr);
			gattr = NULL;
		}
	}
	if (!gattr)
		gattr = rdma_get_gid_attr(ibdev, port, 0);
	if (IS_ERR(gattr))
		return -EOPNOTSUPP;
	ret = ib_query_port(ibdev, port, &pattr);
	if (ret)
		goto out;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	ret = NDK_FI_ERR(ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS));
	if (ret)
		goto out;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 1;
	attr.ah_attr.type = rdma_ah_find_type(ibdev, port);
	rdma_ah_set_port_num(&attr.ah_attr, port);
	gid = gattr->gid;
	rdma_ah_set_grh(&attr.ah_attr, &gid, 0, gattr->index, 1, 0);
	if (attr.ah_attr.type == RDMA_AH_ATTR_TYPE_IB)
		rdma_ah_set_dlid(&attr.ah_attr, pattr.lid);
	if (attr.ah_attr.type == RDMA_AH_ATTR_TYPE_ROCE) {
		rcu_read_lock();
		ndev = rdma_read_gid_attr_ndev_rcu(gattr);
		if (!IS_ERR(ndev))
			memcpy(attr.ah_attr.roce.dmac, ndev->dev_addr,
			       ETH_ALEN);
		rcu_read_unlock();
		if (IS_ERR(ndev)) {
			ret = PTR_ERR(ndev);
			goto out;
		}
	}
	ret = NDK_FI_ERR(ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER));
	if (ret)
		goto out;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	ret = NDK_FI_ERR(ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			   IB_QP_MAX_QP_RD_ATOMIC));
out:
	rdma_put_gid_attr(gattr);
	return ret;
}

static void ndk_loop_report(struct ndk_loop_side *side, int status)
{
	side->status = status;
	complete(&side->done);
}

static int ndk_loop_active_handler(struct rdma_cm_id *id,
				   struct rdma_cm_event *ev)
{
	struct ndk_loop_side *side = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ESTABLISHED:
		ndk_loop_report(side, 0);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
		ndk_loop_report(side, ev->status ? ev->status : -ECONNREFUSED);
		break;
	default:
		break;
	}
	return 0;
}

static bool ndk_loop_expected(const struct ndk_loop_side *side,
			      const struct rdma_cm_id *id)
{
	const struct sockaddr_in *from = (const void *)&id->route.addr.dst_addr;

	return from->sin_family == AF_INET &&
	       from->sin_addr.s_addr == side->expect.sin_addr.s_addr &&
	       from->sin_port == side->expect.sin_port &&
	       side->expect.sin_port;
}

/*
 * The listener and then the accepted id share this handler. Anybody may
 * connect to the port while it is open: only the request from our own
 * active id's address is accepted; others are refused by returning
 * non-zero, which makes rdma_cm destroy their ids.
 */
static int ndk_loop_passive_handler(struct rdma_cm_id *id,
				    struct rdma_cm_event *ev)
{
	struct ndk_loop_side *side = id->context;
	struct rdma_conn_param param = {};

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (side->passive || !ndk_loop_expected(side, id))
			return -EBUSY;
		param.qp_num = side->peer->qp_num;
		if (rdma_accept(id, &param))
			return -ECONNREFUSED;
		side->passive = id;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ndk_loop_report(side, 0);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ndk_loop_report(side, ev->status ? ev->status : -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

static int ndk_loop_wait(struct ndk_loop_side *side)
{
	if (!wait_for_completion_timeout(&side->done, NDK_LOOP_TIMEOUT))
		return -ETIMEDOUT;
	reinit_completion(&side->done);
	return side->status;
}

/* The first IPv4 address of the adapter's interface, port 0. */
static int ndk_loop_addr(struct ndk_adapter *adapter, struct sockaddr_in *sin)
{
	const struct in_ifaddr *ifa;
	struct net_device *ndev;
	struct in_device *idev;
	int err = -EADDRNOTAVAIL;

	ndev = dev_get_by_index(&init_net, adapter->ifindex);
	if (!ndev)
		return -ENODEV;
	rcu_read_lock();
	idev = __in_dev_get_rcu(ndev);
	ifa = idev ? rcu_dereference(idev->ifa_list) : NULL;
	if (ifa) {
		memset(sin, 0, sizeof(*sin));
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = ifa->ifa_local;
		err = 0;
	}
	rcu_read_unlock();
	dev_put(ndev);
	return err;
}

static int ndk_loop_iwarp(struct ndk_adapter *adapter, struct ndk_loop *loop)
{
	struct ndk_loop_side *act = &loop->act, *pas = &loop->pas;
	struct rdma_conn_param param = {};
	struct sockaddr_in sin, *bound;
	struct rdma_cm_id *listener;
	int err;

	err = ndk_loop_addr(adapter, &sin);
	if (err)
		return err;
	memset(act, 0, sizeof(*act));
	memset(pas, 0, sizeof(*pas));
	init_completion(&act->done);
	init_completion(&pas->done);
	pas->peer = loop->peer;

	listener = NDK_FI_PTR(rdma_create_id(&init_net,
					     ndk_loop_passive_handler, pas,
					     RDMA_PS_TCP, IB_QPT_RC));
	if (IS_ERR(listener))
		return PTR_ERR(listener);
	err = NDK_FI_ERR(rdma_bind_addr(listener, (struct sockaddr *)&sin));
	if (!err && listener->device != adapter->ibdev)
		err = -ENODEV;
	if (!err)
		err = NDK_FI_ERR(rdma_listen(listener, 1));
	if (err)
		goto out;
	bound = (struct sockaddr_in *)&listener->route.addr.src_addr;
	sin.sin_port = bound->sin_port;

	loop->id = NDK_FI_PTR(rdma_create_id(&init_net,
					     ndk_loop_active_handler, act,
					     RDMA_PS_TCP, IB_QPT_RC));
	if (IS_ERR(loop->id)) {
		err = PTR_ERR(loop->id);
		loop->id = NULL;
		goto out;
	}
	err = NDK_FI_ERR(rdma_resolve_addr(loop->id, NULL,
					   (struct sockaddr *)&sin,
					   jiffies_to_msecs(NDK_LOOP_TIMEOUT)));
	if (!err)
		err = ndk_loop_wait(act);
	if (!err)
		err = NDK_FI_ERR(rdma_resolve_route(loop->id,
						    jiffies_to_msecs(NDK_LOOP_TIMEOUT)));
	if (!err)
		err = ndk_loop_wait(act);
	if (!err) {
		/* Read by the passive handler only after the request came. */
		memcpy(&pas->expect, &loop->id->route.addr.src_addr,
		       sizeof(pas->expect));
		param.qp_num = loop->qp->qp_num;
		err = NDK_FI_ERR(rdma_connect(loop->id, &param));
	}
	if (!err)
		err = ndk_loop_wait(act);
	if (!err)
		err = ndk_loop_wait(pas);
out:
	/* Waits for the handler, so pas->passive is settled afterwards. */
	rdma_destroy_id(listener);
	loop->peer_id = pas->passive;
	if (err)
		ndk_loop_disconnect(loop);
	return err;
}

/**
 * ndk_loop_connect() - connect a QP so that its sends reach this adapter
 * @adapter: the adapter whose port the QPs use
 * @loop: @loop->qp, an RC QP in RESET, to connect; on iWARP also
 *	@loop->peer, a second RC QP in RESET, which becomes its other end
 *	(on IB and RoCE @loop->peer is ignored: @loop->qp is its own peer)
 *
 * Process context; sleeps. On iWARP the QPs then belong to the two
 * rdma_cm ids in @loop until ndk_loop_disconnect(), and @loop must stay
 * in place until then: their event handlers report into it.
 *
 * Return: 0 or a negative errno.
 */
int ndk_loop_connect(struct ndk_adapter *adapter, struct ndk_loop *loop)
{
	loop->id = NULL;
	loop->peer_id = NULL;
	if (!rdma_protocol_iwarp(adapter->ibdev, adapter->port))
		return ndk_loop_self(loop->qp, adapter->port);
	if (!loop->peer)
		return -EINVAL;
	return ndk_loop_iwarp(adapter, loop);
}
EXPORT_SYMBOL_NDK_TEST(ndk_loop_connect);

/**
 * ndk_loop_disconnect() - end a loopback connection before its QPs go
 * @loop: a loop ndk_loop_connect() connected, or tried to
 *
 * On iWARP destroys both rdma_cm ids, which moves the QPs to the error
 * state; the caller destroys the QPs afterwards. Process context; sleeps.
 */
void ndk_loop_disconnect(struct ndk_loop *loop)
{
	if (loop->id)
		rdma_destroy_id(loop->id);
	if (loop->peer_id)
		rdma_destroy_id(loop->peer_id);
	loop->id = NULL;
	loop->peer_id = NULL;
}
EXPORT_SYMBOL_NDK_TEST(ndk_loop_disconnect);
