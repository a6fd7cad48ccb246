// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_CONNECTOR on rdma_cm.
 *
 * The NDK handshake has one step more than rdma_cm's usual one: the active
 * side's NdkConnect completes when the peer accepted, and the consumer
 * then confirms with NdkCompleteConnect. rdma_cm offers exactly that when
 * the id has no QP of its own: it reports RDMA_CM_EVENT_CONNECT_RESPONSE
 * and sends the RTU only when rdma_accept() is called on the active side.
 * ndk therefore moves the QP through its states itself, with
 * rdma_init_qp_attr(). iWARP has no RTU: there the connection is
 * established when NdkConnect completes and NdkCompleteConnect only
 * confirms it.
 *
 * Each request runs its sleeping part in the consumer's call where that
 * may sleep, else on ndk_wq, and finishes there or from the rdma_cm event
 * handler; the connector holds a reference on itself while a request is
 * pending. A request that finishes in the consumer's call returns its
 * status instead of calling back. Consumer callbacks run without
 * any ndk lock held. rdma_destroy_id() runs only from the close work.
 * Whatever may sleep and can run in the event handler runs there, such as
 * the answer to the peer's disconnect, instead of costing one more trip
 * through ndk_wq.
 *
 * rdma_cm's own retries of an unanswered request or reply take minutes
 * and a kernel consumer cannot shorten them, so ndk bounds the two waits
 * for the peer with a timer of its own: NdkConnect from the request to
 * the reply, NdkAccept from the reply to the connection's establishment.
 * Whichever of the timer and the deciding rdma_cm event comes first
 * settles the request under the connector's lock; the other then does
 * nothing.
 */
#include <linux/inet.h>
#include <linux/moduleparam.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <rdma/ib_cm.h>
#include "ndk_priv.h"
#include "trace.h"

/*
 * Each bound allows about three transmissions of the connection
 * manager's message (some 6 s apart on RoCE) and a peer consumer that
 * takes seconds to answer, yet frees a connector whose peer vanished in
 * seconds rather than in rdma_cm's 100 s or 17 minutes.
 */
static unsigned int ndk_connect_timeout_ms = 20000;
module_param_named(connect_timeout_ms, ndk_connect_timeout_ms, uint, 0644);
MODULE_PARM_DESC(connect_timeout_ms,
		 "ms NdkConnect waits for the peer's reply after sending the request, then fails with STATUS_IO_TIMEOUT; 0: rdma_cm's own timeout (default 20000)");

static unsigned int ndk_accept_timeout_ms = 20000;
module_param_named(accept_timeout_ms, ndk_accept_timeout_ms, uint, 0644);
MODULE_PARM_DESC(accept_timeout_ms,
		 "ms NdkAccept waits for the peer's NdkCompleteConnect after sending the reply, then fails with STATUS_IO_TIMEOUT; 0: rdma_cm's own timeout (default 20000)");

/*
 * Tasks inside ndk_cm_handler(), with the id whose handler lock rdma_cm
 * holds there (for a connect request, the new id's; the listener's is
 * held too). A consumer called from there may have a request of that
 * id's connector run inline without the lock, as a ULP calls
 * rdma_accept() in its handler; any other id's lock would nest two locks
 * of one class, and its request pends instead.
 */
struct ndk_cm_caller {
	struct list_head node;
	struct task_struct *task;
	struct rdma_cm_id *id;
};

static LIST_HEAD(ndk_cm_callers);
static DEFINE_SPINLOCK(ndk_cm_callers_lock);

/* The id whose handler the current task runs; NULL outside one. */
static struct rdma_cm_id *ndk_cm_handler_id(void)
{
	struct rdma_cm_id *id = NULL;
	struct ndk_cm_caller *c;

	spin_lock(&ndk_cm_callers_lock);
	list_for_each_entry(c, &ndk_cm_callers, node) {
		if (c->task == current) {
			id = c->id;
			break;
		}
	}
	spin_unlock(&ndk_cm_callers_lock);
	return id;
}

static struct ndk_connector *to_conn(NDK_CONNECTOR *c)
{
	return container_of(c, struct ndk_connector, ndk);
}

/*
 * Replace *@buf by a copy of @len bytes of private data; none needs no
 * buffer. Return: 0 or -ENOMEM, when *@buf is left alone.
 */
static int ndk_pdata_set(u8 **buf, const void *data, u32 len, gfp_t gfp)
{
	u8 *copy = NULL;

	if (len) {
		copy = NDK_FI_NULL(kmemdup(data, len, gfp));
		if (!copy)
			return -ENOMEM;
	}
	kfree(*buf);
	*buf = copy;
	return 0;
}

/*
 * Keep @len bytes of private data from the peer as @conn's. IB and RoCE
 * deliver their CM messages' whole private data field, padded with
 * zeros: from a peer that sent none come only zeros, which need no copy
 * (NdkGetConnectionData returns them from none). Return: as
 * ndk_pdata_set().
 */
static int ndk_peer_pdata_set(struct ndk_connector *conn, const void *data,
			      u32 len, gfp_t gfp)
{
	int err;

	err = ndk_pdata_set(&conn->peer_pdata, data,
			    data && memchr_inv(data, 0, len) ? len : 0, gfp);
	if (!err)
		conn->rds = len;
	return err;
}

/**
 * ndk_addr_len() - size of a socket address, if it is a usable one
 * @addr: the address
 * @len: the size the consumer gave
 *
 * Return: sizeof the address for AF_INET and AF_INET6 when @len covers
 * it, else 0.
 */
ULONG ndk_addr_len(const struct sockaddr *addr, ULONG len)
{
	ULONG need;

	if (!addr || len < sizeof(addr->sa_family))
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		need = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		need = sizeof(struct sockaddr_in6);
		break;
	default:
		return 0;
	}
	return len >= need ? need : 0;
}

/**
 * ndk_copy_addr() - the NdkGetLocalAddress/NdkGetPeerAddress protocol
 * @addr: address to report
 * @pAddress: consumer's buffer
 * @pAddressLength: its size in, the address size out
 *
 * Return: STATUS_SUCCESS, STATUS_BUFFER_TOO_SMALL (size stored), or
 * STATUS_INVALID_PARAMETER.
 */
NTSTATUS ndk_copy_addr(const struct sockaddr *addr, PSOCKADDR pAddress,
		       ULONG *pAddressLength)
{
	ULONG need = ndk_addr_len(addr, sizeof(struct sockaddr_storage));

	if (!pAddressLength)
		return STATUS_INVALID_PARAMETER;
	if (!need)
		return STATUS_INVALID_DEVICE_STATE;
	if (!pAddress || *pAddressLength < need) {
		*pAddressLength = need;
		return STATUS_BUFFER_TOO_SMALL;
	}
	memcpy(pAddress, addr, need);
	*pAddressLength = need;
	return STATUS_SUCCESS;
}

/**
 * ndk_bind_status() - NTSTATUS of a failure to take a local address
 * @addr: the local address asked for
 * @err: errno from rdma_bind_addr() or rdma_listen()
 *
 * rdma_bind_addr() says EADDRNOTAVAIL both for an address this host does
 * not own and for an exhausted ephemeral port range; only the second can
 * happen to a local or wildcard address with port 0. Callers report an
 * address on another RDMA device as ENODEV.
 *
 * Return: STATUS_SHARING_VIOLATION for an address in use,
 * STATUS_TOO_MANY_ADDRESSES when no ephemeral port was free,
 * STATUS_INVALID_ADDRESS for an address this adapter does not own, else
 * the general translation.
 */
NTSTATUS ndk_bind_status(const struct sockaddr *addr, int err)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)addr;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)addr;
	bool local;

	switch (err) {
	case -EADDRINUSE:
		return STATUS_SHARING_VIOLATION;
	case -EADDRNOTAVAIL:
		/* sin_port and sin6_port share their offset */
		if (a4->sin_port)
			return STATUS_INVALID_ADDRESS;
		/* A wildcard address is always ours. */
		if (addr->sa_family == AF_INET)
			local = !a4->sin_addr.s_addr ||
				inet_addr_type(&init_net, a4->sin_addr.s_addr) ==
				RTN_LOCAL;
		else
			local = ipv6_addr_any(&a6->sin6_addr) ||
				ipv6_chk_addr(&init_net, &a6->sin6_addr, NULL,
					      0);
		return local ? STATUS_TOO_MANY_ADDRESSES :
			       STATUS_INVALID_ADDRESS;
	case -ENODEV:
		return STATUS_INVALID_ADDRESS;
	default:
		return ndk_status_from_errno(err);
	}
}

/*
 * rdma_cm retries a destination without a route until its timeout; ask
 * the routing table first so that the consumer hears the real reason.
 */
static int ndk_route_check(const struct sockaddr *dst)
{
	const struct sockaddr_in6 *d6 = (const struct sockaddr_in6 *)dst;
	const struct sockaddr_in *d4 = (const struct sockaddr_in *)dst;
	struct flowi6 fl6 = {};
	struct flowi4 fl4 = {};
	struct dst_entry *de;
	struct rtable *rt;
	int err;

	if (dst->sa_family == AF_INET) {
		fl4.daddr = d4->sin_addr.s_addr;
		rt = ip_route_output_key(&init_net, &fl4);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		ip_rt_put(rt);
		return 0;
	}
	fl6.daddr = d6->sin6_addr;
	de = ip6_route_output(&init_net, NULL, &fl6);
	err = de->error;
	dst_release(de);
	return err;
}

/* Start a request: record its completion and keep the connector alive. */
static NTSTATUS ndk_conn_begin(struct ndk_connector *conn,
			       enum ndk_conn_state from,
			       enum ndk_conn_state to,
			       NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state != from || conn->req_cb) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return conn->state == NDK_CONN_DONE ? STATUS_CONNECTION_ABORTED :
						      STATUS_CONNECTION_INVALID;
	}
	conn->state = to;
	conn->req_cb = cb;
	conn->req_ctx = ctx;
	spin_unlock_irqrestore(&conn->lock, flags);
	ndk_obj_get(&conn->obj);
	return STATUS_PENDING;
}

/**
 * ndk_connector_called() - a consumer callback about @conn has returned
 * @conn: the connector, whose count of running callbacks the caller
 *	raised under its lock
 *
 * While the count is not 0, closing @conn may not wait for its event
 * handler and work items: they may be running that consumer code, which
 * may wait for the closing caller.
 */
void ndk_connector_called(struct ndk_connector *conn)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	conn->callbacks--;
	spin_unlock_irqrestore(&conn->lock, flags);
}

/*
 * Settle the pending request with @status, moving to @state; @calls: its
 * completion is about to be called (see ndk_conn_called()). Return: the
 * completion, with @ctx, or NULL if nothing was pending.
 */
static NDK_FN_REQUEST_COMPLETION ndk_conn_settle(struct ndk_connector *conn,
						 enum ndk_conn_state state,
						 NTSTATUS status, void **ctx,
						 bool calls)
{
	NDK_FN_REQUEST_COMPLETION cb;
	enum ndk_conn_state was;
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	cb = conn->req_cb;
	*ctx = conn->req_ctx;
	was = conn->state;
	conn->req_cb = NULL;
	/* A failure with nothing pending still ends the connection. */
	if (cb || state == NDK_CONN_DONE)
		conn->state = state;
	/* A bound armed for this request has nothing left to end. */
	if (cb && conn->bound == NDK_BOUND_ARMED) {
		conn->bound = NDK_BOUND_NONE;
		timer_delete(&conn->timer);
	}
	if (cb && calls)
		conn->callbacks++;
	spin_unlock_irqrestore(&conn->lock, flags);
	/* A consumer that closed the connector did not see a failure. */
	if (cb && status && status != STATUS_CANCELLED &&
	    (was == NDK_CONN_CONNECTING || was == NDK_CONN_COMPLETING ||
	     was == NDK_CONN_ACCEPTING))
		ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECT_FAILURES);
	return cb;
}

/*
 * Finish the pending request with @status, moving to @state. The
 * consumer may close the connector inside its callback; the request's
 * reference keeps it intact until the callback has returned.
 */
static void ndk_conn_finish(struct ndk_connector *conn,
			    enum ndk_conn_state state, NTSTATUS status)
{
	NDK_FN_REQUEST_COMPLETION cb;
	void *ctx;

	cb = ndk_conn_settle(conn, state, status, &ctx, true);
	if (!cb)
		return;
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeConnector, conn->obj.id,
			   status);
	cb(ctx, status);
	ndk_connector_called(conn);
	ndk_obj_put(&conn->obj);
}

/*
 * Finish the pending request as ndk_conn_finish() does, the callback
 * replaced by the return value when the request ran in its caller
 * (@in_caller). Return: what the consumer's call returns: @status, or
 * STATUS_PENDING if the request goes on, or if an event or the bound
 * settled it first and reported to the callback.
 */
static NTSTATUS ndk_conn_end(struct ndk_connector *conn,
			     enum ndk_conn_state state, NTSTATUS status,
			     bool in_caller)
{
	void *ctx;

	if (!in_caller) {
		ndk_conn_finish(conn, state, status);
		return STATUS_PENDING;
	}
	if (!ndk_conn_settle(conn, state, status, &ctx, false))
		return STATUS_PENDING;
	/* The caller holds a reference of its own. */
	ndk_obj_put(&conn->obj);
	return status;
}

/*
 * Bound the wait for the peer that starts now: if nothing settles the
 * pending request within @ms, it fails with STATUS_IO_TIMEOUT. 0 leaves
 * the wait to rdma_cm. Called where no event of the id can run, so that
 * the event ending the wait finds the bound armed.
 */
static void ndk_conn_arm(struct ndk_connector *conn, unsigned int ms)
{
	unsigned long flags;

	if (!ms)
		return;
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->req_cb) {
		conn->bound = NDK_BOUND_ARMED;
		mod_timer(&conn->timer, jiffies + msecs_to_jiffies(ms));
	}
	spin_unlock_irqrestore(&conn->lock, flags);
}

/*
 * An event that settles the pending request takes it over from the
 * bound. Return: false if the bound has expired and ended the request
 * already; the event then must change nothing.
 */
static bool ndk_conn_disarm(struct ndk_connector *conn)
{
	unsigned long flags;
	bool expired;

	spin_lock_irqsave(&conn->lock, flags);
	expired = conn->bound == NDK_BOUND_EXPIRED;
	if (conn->bound == NDK_BOUND_ARMED) {
		conn->bound = NDK_BOUND_NONE;
		timer_delete(&conn->timer);
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	return !expired;
}

/*
 * The bound expired (softirq): take the request over unless an event
 * settled it first. Completing it and tearing the connection down may
 * sleep, so that happens on ndk_wq, which inherits the request's
 * reference on the connector.
 */
static void ndk_conn_timer(struct timer_list *t)
{
	struct ndk_connector *conn = from_timer(conn, t, timer);
	unsigned long flags;
	bool expired = false;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->bound == NDK_BOUND_ARMED) {
		conn->bound = NDK_BOUND_EXPIRED;
		conn->tmo_cb = conn->req_cb;
		conn->tmo_ctx = conn->req_ctx;
		conn->req_cb = NULL;
		conn->state = NDK_CONN_DONE;
		expired = true;
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	if (expired)
		queue_work(ndk_wq, &conn->timeout_work);
}

/* Move the QP to @state with what rdma_cm negotiated. */
static int ndk_conn_modify_qp(struct ndk_connector *conn,
			      enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask, err;

	err = rdma_init_qp_attr(conn->id, &attr, &mask);
	if (err)
		return err;
	/*
	 * An iWARP active side moves to INIT before its iw_cm id exists,
	 * when rdma_cm grants no remote access at all, and nothing moves it
	 * again: grant what the IB CM would, remote write, and remote read
	 * if reads may come in.
	 */
	if (state == IB_QPS_INIT && conn->iwarp)
		attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				       (conn->ird ? IB_ACCESS_REMOTE_READ : 0);
	if (state == IB_QPS_RTR)
		attr.max_dest_rd_atomic = conn->ird;
	if (state == IB_QPS_RTS)
		attr.max_rd_atomic = conn->ord;
	return NDK_FI_ERR(ib_modify_qp(conn->qp->ibqp, &attr, mask));
}

/* The connection's QP, if it has one yet, stops and flushes. */
static void ndk_conn_flush_qp(struct ndk_connector *conn)
{
	if (!conn->qp)
		return;
	ndk_qp_set_error(conn->qp);
	conn->flushed = true;
}

/*
 * Record the connection's addresses as rdma_cm resolved them, with the
 * local port, for debugfs and traces. Called from @id's event handler,
 * or for an incoming request before the consumer sees the connector.
 */
static void ndk_conn_note_addrs(struct ndk_connector *conn,
				struct rdma_cm_id *id)
{
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	memcpy(&conn->src, &id->route.addr.src_addr, sizeof(conn->src));
	memcpy(&conn->dst, &id->route.addr.dst_addr, sizeof(conn->dst));
	spin_unlock_irqrestore(&conn->lock, flags);
}

/* Keep what the peer sent: private data and its read limits. */
static int ndk_conn_save_peer(struct ndk_connector *conn,
			      const struct rdma_conn_param *p)
{
	u32 len = p->private_data ? min_t(u32, p->private_data_len,
					  NDK_PDATA_MAX) : 0;

	/* The handler runs in process context. */
	if (ndk_peer_pdata_set(conn, p->private_data, len, GFP_KERNEL))
		return -ENOMEM;
	/*
	 * rdma_cm reports the peer's limits from our side already: how many
	 * reads we may issue (the peer's IRD) as initiator_depth, how many
	 * the peer will issue (its ORD) as responder_resources.
	 */
	conn->ird = min(conn->ird, p->responder_resources);
	conn->ord = min(conn->ord, p->initiator_depth);
	return 0;
}

/*
 * What this side sends with its connect or accept, built when it is sent
 * rather than kept: the connector's limits, private data and QP.
 */
static void ndk_conn_param(const struct ndk_connector *conn,
			   struct rdma_conn_param *p)
{
	*p = (struct rdma_conn_param){
		.private_data = conn->pdata,
		.private_data_len = conn->pdata_len,
		.responder_resources = conn->ird,
		.initiator_depth = conn->ord,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.qp_num = conn->qp->ibqp->qp_num,
	};
}

static NTSTATUS ndk_cm_status(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return STATUS_CONNECTION_REFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return ev->status == -ETIMEDOUT ? STATUS_IO_TIMEOUT :
						  STATUS_HOST_UNREACHABLE;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		/* No neighbour answered: the host, not the CM, is silent. */
		if (ev->status == -ENETUNREACH || ev->status == -ENODEV)
			return STATUS_NETWORK_UNREACHABLE;
		return STATUS_HOST_UNREACHABLE;
	default:
		return STATUS_CONNECTION_ABORTED;
	}
}

/* The peer went away, or we finished disconnecting. */
static void ndk_conn_disconnected(struct ndk_connector *conn)
{
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex = NULL;
	NDK_FN_DISCONNECT_EVENT_CALLBACK cb = NULL;
	enum ndk_conn_state was;
	unsigned long flags;
	void *ctx;

	ndk_conn_flush_qp(conn);
	spin_lock_irqsave(&conn->lock, flags);
	was = conn->state;
	if (was == NDK_CONN_ESTABLISHED) {
		cb = conn->disc_cb;
		cb_ex = conn->disc_cb_ex;
		conn->state = NDK_CONN_DONE;
		if (cb || cb_ex)
			conn->callbacks++;
	}
	ctx = conn->disc_ctx;
	spin_unlock_irqrestore(&conn->lock, flags);

	if (was == NDK_CONN_DISCONNECTING) {
		ndk_conn_finish(conn, NDK_CONN_DONE, STATUS_SUCCESS);
		return;
	}
	if (was != NDK_CONN_ESTABLISHED) {
		ndk_conn_finish(conn, NDK_CONN_DONE, STATUS_CONNECTION_ABORTED);
		return;
	}
	/*
	 * Answer the peer's disconnect (the DREP on IB) at once: this is the
	 * id's own event handler, in process context, so the id is alive and
	 * rdma_disconnect() may sleep, as iSER and nvmet do here too.
	 */
	rdma_disconnect(conn->id);
	ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECTION_ERRORS);
	if (cb_ex || cb)
		trace_ndk_callback(NDK_CB_DISCONNECT_EVENT,
				   NdkObjectTypeConnector, conn->obj.id, 0);
	if (cb_ex)
		cb_ex(ctx, 0);
	else if (cb)
		cb(ctx);
	if (cb_ex || cb)
		ndk_connector_called(conn);
}

/* Events ndk_conn_event() acts on; any other leaves a bound armed. */
static bool ndk_conn_event_handled(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return true;
	default:
		return false;
	}
}

static void ndk_conn_event(struct ndk_connector *conn, struct rdma_cm_id *id,
			   struct rdma_cm_event *ev)
{
	enum ndk_conn_state state = READ_ONCE(conn->state);
	struct rdma_conn_param param;
	unsigned long flags;
	const void *rej;
	u8 rej_len = 0;
	int err;

	/*
	 * Once the bound has ended the request, a reply, a confirmation or
	 * a failure arriving late changes nothing: the connection is torn
	 * down by the timeout work.
	 */
	if (!ndk_conn_event_handled(ev->event) || !ndk_conn_disarm(conn))
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (id->device != conn->obj.adapter->ibdev) {
			ndk_conn_finish(conn, NDK_CONN_DONE,
					STATUS_INVALID_ADDRESS);
			break;
		}
		err = NDK_FI_ERR(rdma_resolve_route(id, NDK_CM_TIMEOUT_MS));
		if (err)
			ndk_conn_finish(conn, NDK_CONN_DONE,
					ndk_status_from_errno(err));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = ndk_conn_modify_qp(conn, IB_QPS_INIT);
		/*
		 * Armed first: on iWARP rdma_connect_locked() itself may wait
		 * for the TCP handshake. The reply's event cannot come before
		 * this handler returns.
		 */
		if (!err) {
			ndk_conn_arm(conn, READ_ONCE(ndk_connect_timeout_ms));
			ndk_conn_param(conn, &param);
			err = NDK_FI_ERR(rdma_connect_locked(id, &param));
		}
		if (err)
			ndk_conn_finish(conn, NDK_CONN_DONE,
					ndk_status_from_errno(err));
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		err = ndk_conn_save_peer(conn, &ev->param.conn);
		ndk_conn_finish(conn, err ? NDK_CONN_DONE : NDK_CONN_CONNECTED,
				ndk_status_from_errno(err));
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (state == NDK_CONN_CONNECTING) {
			/* iWARP: no reply step, the connection is up. */
			err = ndk_conn_save_peer(conn, &ev->param.conn);
			ndk_conn_finish(conn, err ? NDK_CONN_DONE :
					NDK_CONN_CONNECTED,
					ndk_status_from_errno(err));
			break;
		}
		err = conn->iwarp ? 0 : ndk_conn_modify_qp(conn, IB_QPS_RTS);
		WRITE_ONCE(conn->qp->connected, !err);
		ndk_conn_finish(conn, err ? NDK_CONN_DONE : NDK_CONN_ESTABLISHED,
				ndk_status_from_errno(err));
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (state == NDK_CONN_REQUESTED) {
			/* The peer gave up before the consumer answered. */
			spin_lock_irqsave(&conn->lock, flags);
			if (conn->state == NDK_CONN_REQUESTED)
				conn->state = NDK_CONN_DONE;
			spin_unlock_irqrestore(&conn->lock, flags);
			break;
		}
		rej = rdma_consumer_reject_data(id, ev, &rej_len);
		/*
		 * siw reports an MPA reject as a reset, which rdma_cm does
		 * not count as the consumer's; its private data is there.
		 */
		if (!rej && conn->iwarp && ev->param.conn.private_data) {
			rej = ev->param.conn.private_data;
			/* A u8: it fits peer_pdata. */
			rej_len = ev->param.conn.private_data_len;
		}
		/* Without memory the consumer only misses the data. */
		if (rej)
			ndk_peer_pdata_set(conn, rej, rej_len, GFP_KERNEL);
		ndk_conn_finish(conn, NDK_CONN_DONE,
				state == NDK_CONN_CONNECTING ?
				STATUS_CONNECTION_REFUSED :
				STATUS_CONNECTION_ABORTED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ndk_conn_flush_qp(conn);
		ndk_conn_finish(conn, NDK_CONN_DONE, ndk_cm_status(ev));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		ndk_conn_disconnected(conn);
		break;
	default:
		break;
	}
}

/**
 * ndk_cm_handler() - the rdma_cm event handler of every ndk id
 * @id: the id
 * @ev: the event
 *
 * The id's context is a listener, a connector or a shared endpoint, told
 * apart by the object header they all start with. A connect request
 * arrives on a new id whose context is still the listener's; a shared
 * endpoint's id only holds a port and has nothing to react to.
 *
 * Return: non-zero only to refuse a connect request, which makes rdma_cm
 * destroy the new id.
 */
int ndk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct ndk_cm_caller me = { .task = current, .id = id };
	NDK_OBJECT_HEADER *hdr = id->context;
	int ret = 0;

	trace_ndk_cm_event(ndk_obj_of(hdr), ev);
	spin_lock(&ndk_cm_callers_lock);
	list_add(&me.node, &ndk_cm_callers);
	spin_unlock(&ndk_cm_callers_lock);
	if (hdr->ObjectType == NdkObjectTypeListener) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			ret = ndk_listener_request(id->context, id, ev);
	} else if (hdr->ObjectType == NdkObjectTypeConnector) {
		/* The local port is known now; note it before the consumer hears. */
		if (ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
		    ev->event == RDMA_CM_EVENT_ESTABLISHED)
			ndk_conn_note_addrs(id->context, id);
		ndk_conn_event(id->context, id, ev);
	}
	spin_lock(&ndk_cm_callers_lock);
	list_del(&me.node);
	spin_unlock(&ndk_cm_callers_lock);
	return ret;
}

/*
 * The sleeping part of whatever request is pending, in the consumer's
 * call (@in_caller) or on ndk_wq; @locked: the caller runs in the id's
 * event handler, which holds the id's handler lock. Return: what the
 * consumer's call returns, see ndk_conn_end().
 */
static NTSTATUS ndk_conn_step(struct ndk_connector *conn, bool in_caller,
			      bool locked)
{
	struct rdma_conn_param param;
	int err = 0;

	switch (READ_ONCE(conn->state)) {
	case NDK_CONN_CONNECTING:
		err = NDK_FI_ERR(rdma_bind_addr(conn->id, (struct sockaddr *)&conn->src));
		if (!err && conn->id->device != conn->obj.adapter->ibdev)
			err = -ENODEV;
		if (!err)
			err = ndk_route_check((struct sockaddr *)&conn->dst);
		if (!err)
			err = NDK_FI_ERR(rdma_resolve_addr(conn->id,
							   (struct sockaddr *)&conn->src,
							   (struct sockaddr *)&conn->dst,
							   NDK_CM_TIMEOUT_MS));
		if (!err)
			return STATUS_PENDING;
		return ndk_conn_end(conn, NDK_CONN_DONE,
				    ndk_bind_status((struct sockaddr *)&conn->src,
						    err), in_caller);
	case NDK_CONN_COMPLETING:
		if (!conn->iwarp) {
			/*
			 * INIT again, as rdma_cm does for its own QPs: the
			 * move to INIT before the request was sent got no
			 * remote access rights, since no CM id existed yet.
			 * Without this the peer cannot read or write here.
			 */
			err = ndk_conn_modify_qp(conn, IB_QPS_INIT);
			if (!err)
				err = ndk_conn_modify_qp(conn, IB_QPS_RTR);
			if (!err)
				err = ndk_conn_modify_qp(conn, IB_QPS_RTS);
			if (!err) {
				if (!locked)
					rdma_lock_handler(conn->id);
				err = NDK_FI_ERR(rdma_accept(conn->id, NULL));
				if (!locked)
					rdma_unlock_handler(conn->id);
			}
		}
		WRITE_ONCE(conn->qp->connected, !err);
		/*
		 * The reply was checked when it came: the CM id refusing the
		 * transitions or the RTU (-EINVAL) means the peer gave up
		 * meanwhile, before its reject's event reached us.
		 */
		return ndk_conn_end(conn, err ? NDK_CONN_DONE :
				    NDK_CONN_ESTABLISHED,
				    err == -EINVAL || err == -ECONNRESET ?
				    STATUS_CONNECTION_ABORTED :
				    ndk_status_from_errno(err), in_caller);
	case NDK_CONN_ACCEPTING:
		err = ndk_conn_modify_qp(conn, IB_QPS_INIT);
		if (!err && !conn->iwarp)
			err = ndk_conn_modify_qp(conn, IB_QPS_RTR);
		if (err)
			return ndk_conn_end(conn, NDK_CONN_DONE,
					    ndk_status_from_errno(err),
					    in_caller);
		if (!locked)
			rdma_lock_handler(conn->id);
		ndk_conn_param(conn, &param);
		err = NDK_FI_ERR(rdma_accept(conn->id, &param));
		if (!locked)
			rdma_unlock_handler(conn->id);
		/*
		 * Armed once this thread's own handler lock is dropped: an
		 * expiry destroys the id, whose lock must not be in use by
		 * then (one held by rdma_cm for its handler, it waits for).
		 * An event that settled the request first leaves nothing to
		 * arm (see ndk_conn_arm()), one settling it now disarms.
		 */
		if (!err) {
			ndk_conn_arm(conn, READ_ONCE(ndk_accept_timeout_ms));
			return STATUS_PENDING;
		}
		/*
		 * The request was checked when it came and the accept's
		 * arguments by NdkAccept: a failure here means the peer
		 * abandoned its request. On iWARP it has closed the TCP
		 * connection the MPA reply must go out on; on IB and RoCE
		 * its reject (a connect that timed out) left the CM id in no
		 * state to reply, and rdma_accept() says -EINVAL.
		 */
		if (err == -ECONNRESET || err == -EPIPE || err == -EINVAL)
			return ndk_conn_end(conn, NDK_CONN_DONE,
					    STATUS_CONNECTION_ABORTED,
					    in_caller);
		return ndk_conn_end(conn, NDK_CONN_DONE,
				    ndk_status_from_errno(err), in_caller);
	case NDK_CONN_DISCONNECTING:
		if (!rdma_disconnect(conn->id))
			return STATUS_PENDING;
		/* Nothing left to disconnect: the disconnect is over. */
		ndk_conn_flush_qp(conn);
		return ndk_conn_end(conn, NDK_CONN_DONE, STATUS_SUCCESS,
				    in_caller);
	default:
		return STATUS_PENDING;
	}
}

/*
 * NdkReject's reply, which may sleep. The call has returned already and
 * reports nothing back, so the reject is no step of ndk_conn_step().
 */
static void ndk_conn_reject(struct ndk_connector *conn)
{
	rdma_reject(conn->id, conn->pdata, conn->pdata_len,
		    IB_CM_REJ_CONSUMER_DEFINED);
	WRITE_ONCE(conn->state, NDK_CONN_DONE);
	ndk_obj_put(&conn->obj);
}

static void ndk_conn_work(struct work_struct *work)
{
	struct ndk_connector *conn = container_of(work, struct ndk_connector,
						  work);

	if (READ_ONCE(conn->state) == NDK_CONN_REJECTING)
		ndk_conn_reject(conn);
	else
		ndk_conn_step(conn, false, false);
}

/*
 * Run a request that ndk_conn_begin() started: in the consumer's call
 * where it may sleep and holds no rdma_cm handler lock but its own id's,
 * which spares a trip through ndk_wq and, when it ends there, the
 * callback; else on ndk_wq. The caller holds a reference on the
 * connector. Return: what the consumer's call returns.
 */
static NTSTATUS ndk_conn_run(struct ndk_connector *conn)
{
	struct rdma_cm_id *in = ndk_cm_handler_id();

	if (!ndk_caller_may_sleep() || (in && in != conn->id)) {
		queue_work(ndk_wq, &conn->work);
		return STATUS_PENDING;
	}
	return ndk_conn_step(conn, true, !!in);
}

/* Common checks of Connect and Accept: QP, limits, private data. */
static NTSTATUS ndk_conn_prepare(struct ndk_connector *conn, NDK_QP *pNdkQp,
				 ULONG ird, ULONG ord, const void *pdata,
				 ULONG pdata_len, ULONG pdata_max)
{
	const NDK_ADAPTER_INFO *info = &conn->obj.adapter->info;
	struct ndk_qp *qp;

	if (!pNdkQp || pNdkQp->Header.ObjectType != NdkObjectTypeQp)
		return STATUS_INVALID_PARAMETER;
	qp = container_of(pNdkQp, struct ndk_qp, ndk);
	/*
	 * Any open instance of the same device and port will do: consumers
	 * such as Microsoft's RdmaSample open the adapter once per socket and
	 * accept a listener's connector with the socket's own QP.
	 */
	if (qp->obj.adapter->dev != conn->obj.adapter->dev ||
	    qp->obj.adapter->port != conn->obj.adapter->port || conn->qp ||
	    READ_ONCE(qp->obj.state) != NDK_OBJ_LIVE || READ_ONCE(qp->conn))
		return STATUS_INVALID_PARAMETER;
	if (pdata_len > pdata_max || (pdata_len && !pdata))
		return STATUS_INVALID_BUFFER_SIZE;
	if (ndk_pdata_set(&conn->pdata, pdata, pdata_len, GFP_ATOMIC))
		return STATUS_INSUFFICIENT_RESOURCES;

	conn->ird = min_t(ULONG, ird, min_t(ULONG, info->MaxInboundReadLimit,
					    U8_MAX));
	conn->ord = min_t(ULONG, ord, min_t(ULONG, info->MaxOutboundReadLimit,
					    U8_MAX));
	conn->pdata_len = pdata_len;
	return STATUS_SUCCESS;
}

/*
 * Associate the QP with the connection for as long as the connector
 * lives; a QP serves one connection at a time.
 */
static void ndk_conn_take_qp(struct ndk_connector *conn, NDK_QP *pNdkQp)
{
	conn->qp = container_of(pNdkQp, struct ndk_qp, ndk);
	WRITE_ONCE(conn->qp->conn, conn);
	ndk_obj_get(&conn->qp->obj);
}

/* Start the active side: bind @src, then resolve, route and connect. */
static NTSTATUS ndk_connect_start(struct ndk_connector *conn, NDK_QP *pNdkQp,
				  const struct sockaddr *src, ULONG slen,
				  const PSOCKADDR pDestAddress,
				  ULONG DestAddressLength, ULONG ird, ULONG ord,
				  const void *pdata, ULONG pdata_len,
				  struct ndk_sep *sep,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	ULONG dlen = ndk_addr_len(pDestAddress, DestAddressLength);
	NTSTATUS status;

	if (!RequestCompletion || !slen || !dlen ||
	    src->sa_family != pDestAddress->sa_family)
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) != NDK_CONN_IDLE)
		return STATUS_CONNECTION_INVALID;
	status = ndk_conn_prepare(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  conn->obj.adapter->info.MaxCallerData);
	if (status)
		return status;
	/* Ids of a shared endpoint's connectors share its port. */
	if (sep && rdma_set_reuseaddr(conn->id, 1))
		return STATUS_INVALID_DEVICE_STATE;
	memcpy(&conn->src, src, slen);
	memcpy(&conn->dst, pDestAddress, dlen);
	if (sep) {
		status = ndk_sep_add_conn(sep, conn);
		if (status)
			return status;
	}
	status = ndk_conn_begin(conn, NDK_CONN_IDLE, NDK_CONN_CONNECTING,
				RequestCompletion, RequestContext);
	if (status != STATUS_PENDING) {
		ndk_sep_del_conn(conn);
		conn->sep = NULL;
		return status;
	}
	if (sep)
		ndk_obj_add_antecedent(&conn->obj, &sep->obj);
	ndk_conn_take_qp(conn, pNdkQp);
	ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECTS);
	return ndk_conn_run(conn);
}

static NTSTATUS ndk_connect_common(struct ndk_connector *conn, NDK_QP *pNdkQp,
				   const struct sockaddr *src, ULONG slen,
				   const PSOCKADDR pDestAddress,
				   ULONG DestAddressLength, ULONG ird, ULONG ord,
				   const void *pdata, ULONG pdata_len,
				   struct ndk_sep *sep,
				   NDK_FN_REQUEST_COMPLETION RequestCompletion,
				   PVOID RequestContext)
{
	NTSTATUS status;

	if (ndk_adapter_dead(conn->obj.adapter))
		return STATUS_DEVICE_REMOVED;
	ndk_obj_get(&conn->obj);
	status = ndk_connect_start(conn, pNdkQp, src, slen, pDestAddress,
				   DestAddressLength, ird, ord, pdata,
				   pdata_len, sep, RequestCompletion,
				   RequestContext);
	trace_ndk_connect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			    const PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
			    const PSOCKADDR pDestAddress,
			    ULONG DestAddressLength, ULONG InboundReadLimit,
			    ULONG OutboundReadLimit, const PVOID pPrivateData,
			    ULONG PrivateDataLength,
			    NDK_FN_REQUEST_COMPLETION RequestCompletion,
			    PVOID RequestContext)
{
	return ndk_connect_common(to_conn(pNdkConnector), pNdkQp, pSrcAddress,
				  ndk_addr_len(pSrcAddress, SrcAddressLength),
				  pDestAddress, DestAddressLength,
				  InboundReadLimit, OutboundReadLimit,
				  pPrivateData, PrivateDataLength, NULL,
				  RequestCompletion, RequestContext);
}

static NTSTATUS ndk_connect_with_shared_endpoint(NDK_CONNECTOR *pNdkConnector,
						 NDK_QP *pNdkQp,
						 NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
						 const PSOCKADDR pDestAddress,
						 ULONG DestAddressLength,
						 ULONG InboundReadLimit,
						 ULONG OutboundReadLimit,
						 const PVOID pPrivateData,
						 ULONG PrivateDataLength,
						 NDK_FN_REQUEST_COMPLETION RequestCompletion,
						 PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	struct ndk_sep *sep = ndk_sep_of(pNdkSharedEndpoint,
					 conn->obj.adapter);
	struct sockaddr *src;

	if (!sep)
		return STATUS_INVALID_PARAMETER;
	src = (struct sockaddr *)&sep->addr;
	return ndk_connect_common(conn, pNdkQp, src,
				  ndk_addr_len(src, sizeof(sep->addr)),
				  pDestAddress, DestAddressLength,
				  InboundReadLimit, OutboundReadLimit,
				  pPrivateData, PrivateDataLength, sep,
				  RequestCompletion, RequestContext);
}

static NTSTATUS ndk_complete_connect_common(struct ndk_connector *conn,
					    NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
					    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
					    PVOID ctx,
					    NDK_FN_REQUEST_COMPLETION RequestCompletion,
					    PVOID RequestContext)
{
	NTSTATUS status = STATUS_INVALID_PARAMETER;

	ndk_obj_get(&conn->obj);
	if (RequestCompletion)
		status = ndk_conn_begin(conn, NDK_CONN_CONNECTED,
					NDK_CONN_COMPLETING, RequestCompletion,
					RequestContext);
	if (status == STATUS_PENDING) {
		conn->disc_cb = cb;
		conn->disc_cb_ex = cb_ex;
		conn->disc_ctx = ctx;
		status = ndk_conn_run(conn);
	}
	trace_ndk_complete_connect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_complete_connect(NDK_CONNECTOR *pNdkConnector,
				     NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
				     PVOID DisconnectEventContext,
				     NDK_FN_REQUEST_COMPLETION RequestCompletion,
				     PVOID RequestContext)
{
	return ndk_complete_connect_common(to_conn(pNdkConnector), DisconnectEvent, NULL,
					   DisconnectEventContext,
					   RequestCompletion, RequestContext);
}

static NTSTATUS ndk_complete_connect_ex(NDK_CONNECTOR *pNdkConnector,
					NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
					PVOID DisconnectEventContext,
					NDK_FN_REQUEST_COMPLETION RequestCompletion,
					PVOID RequestContext)
{
	return ndk_complete_connect_common(to_conn(pNdkConnector), NULL, DisconnectEvent,
					   DisconnectEventContext,
					   RequestCompletion, RequestContext);
}

static NTSTATUS ndk_accept_start(struct ndk_connector *conn, NDK_QP *pNdkQp,
				 ULONG ird, ULONG ord, const void *pdata,
				 ULONG pdata_len,
				 NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
				 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
				 PVOID ctx,
				 NDK_FN_REQUEST_COMPLETION RequestCompletion,
				 PVOID RequestContext)
{
	u8 need_ird = conn->ird, allow_ord = conn->ord;
	NTSTATUS status;

	if (!RequestCompletion)
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) == NDK_CONN_DONE)
		return STATUS_CONNECTION_ABORTED;
	if (READ_ONCE(conn->state) != NDK_CONN_REQUESTED)
		return STATUS_CONNECTION_INVALID;
	status = ndk_conn_prepare(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  conn->obj.adapter->info.MaxCalleeData);
	if (status)
		return status;
	/* The request carried the peer's limits: cap ours by them. */
	conn->ird = min(conn->ird, need_ird);
	conn->ord = min(conn->ord, allow_ord);
	status = ndk_conn_begin(conn, NDK_CONN_REQUESTED, NDK_CONN_ACCEPTING,
				RequestCompletion, RequestContext);
	if (status != STATUS_PENDING)
		return status;
	conn->disc_cb = cb;
	conn->disc_cb_ex = cb_ex;
	conn->disc_ctx = ctx;
	ndk_conn_take_qp(conn, pNdkQp);
	ndk_stat_inc(conn->obj.adapter, NDK_STAT_ACCEPTS);
	return ndk_conn_run(conn);
}

static NTSTATUS ndk_accept_common(struct ndk_connector *conn, NDK_QP *pNdkQp,
				  ULONG ird, ULONG ord, const void *pdata,
				  ULONG pdata_len,
				  NDK_FN_DISCONNECT_EVENT_CALLBACK cb,
				  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX cb_ex,
				  PVOID ctx,
				  NDK_FN_REQUEST_COMPLETION RequestCompletion,
				  PVOID RequestContext)
{
	NTSTATUS status;

	if (ndk_adapter_dead(conn->obj.adapter))
		return STATUS_DEVICE_REMOVED;
	ndk_obj_get(&conn->obj);
	status = ndk_accept_start(conn, pNdkQp, ird, ord, pdata, pdata_len,
				  cb, cb_ex, ctx, RequestCompletion,
				  RequestContext);
	trace_ndk_accept(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			   ULONG InboundReadLimit, ULONG OutboundReadLimit,
			   const PVOID pPrivateData, ULONG PrivateDataLength,
			   NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
			   PVOID DisconnectEventContext,
			   NDK_FN_REQUEST_COMPLETION RequestCompletion,
			   PVOID RequestContext)
{
	return ndk_accept_common(to_conn(pNdkConnector), pNdkQp,
				 InboundReadLimit, OutboundReadLimit,
				 pPrivateData, PrivateDataLength, DisconnectEvent, NULL,
				 DisconnectEventContext, RequestCompletion,
				 RequestContext);
}

static NTSTATUS ndk_accept_ex(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
			      ULONG InboundReadLimit, ULONG OutboundReadLimit,
			      const PVOID pPrivateData, ULONG PrivateDataLength,
			      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
			      PVOID DisconnectEventContext,
			      NDK_FN_REQUEST_COMPLETION RequestCompletion,
			      PVOID RequestContext)
{
	return ndk_accept_common(to_conn(pNdkConnector), pNdkQp,
				 InboundReadLimit, OutboundReadLimit,
				 pPrivateData, PrivateDataLength, NULL, DisconnectEvent,
				 DisconnectEventContext, RequestCompletion,
				 RequestContext);
}

/* Refuse a request; the reject itself is sent from ndk_wq. */
static NTSTATUS ndk_reject(NDK_CONNECTOR *pNdkConnector,
			   const PVOID pPrivateData, ULONG PrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	unsigned long flags;
	u8 *pdata = NULL;

	if (PrivateDataLength > conn->obj.adapter->info.MaxCalleeData ||
	    (PrivateDataLength && !pPrivateData))
		return STATUS_INVALID_BUFFER_SIZE;
	if (ndk_pdata_set(&pdata, pPrivateData, PrivateDataLength, GFP_ATOMIC))
		return STATUS_INSUFFICIENT_RESOURCES;
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state != NDK_CONN_REQUESTED) {
		spin_unlock_irqrestore(&conn->lock, flags);
		kfree(pdata);
		return conn->state == NDK_CONN_DONE ? STATUS_CONNECTION_ABORTED :
						      STATUS_CONNECTION_INVALID;
	}
	swap(conn->pdata, pdata);
	conn->pdata_len = PrivateDataLength;
	conn->state = NDK_CONN_REJECTING;
	spin_unlock_irqrestore(&conn->lock, flags);
	kfree(pdata);
	ndk_obj_get(&conn->obj);
	queue_work(ndk_wq, &conn->work);
	return STATUS_SUCCESS;
}

/* The RDS protocol of the NdkGetConnectionData page. */
static NTSTATUS ndk_get_connection_data(NDK_CONNECTOR *pNdkConnector,
					ULONG *pInboundReadLimit,
					ULONG *pOutboundReadLimit,
					PVOID pPrivateData,
					ULONG *pPrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	ULONG have;

	if (!pPrivateDataLength || (!pPrivateData && *pPrivateDataLength))
		return STATUS_INVALID_PARAMETER;
	if (READ_ONCE(conn->state) == NDK_CONN_IDLE ||
	    READ_ONCE(conn->state) == NDK_CONN_CONNECTING)
		return STATUS_CONNECTION_INVALID;
	if (pInboundReadLimit)
		*pInboundReadLimit = conn->ird;
	if (pOutboundReadLimit)
		*pOutboundReadLimit = conn->ord;
	have = *pPrivateDataLength;
	*pPrivateDataLength = conn->rds;
	/* A NULL buffer of length zero asks for the RDS only. */
	if (!pPrivateData)
		return STATUS_SUCCESS;
	if (conn->peer_pdata)
		memcpy(pPrivateData, conn->peer_pdata, min(have, conn->rds));
	else
		memset(pPrivateData, 0, min(have, conn->rds));
	return have >= conn->rds ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

/*
 * One of the connection's addresses as rdma_cm has it; once a timeout
 * has destroyed the id, the copy taken just before. The lock keeps the
 * id from going away during the copy.
 */
static NTSTATUS ndk_conn_addr(struct ndk_connector *conn, bool local,
			      PSOCKADDR pAddress, ULONG *pAddressLength)
{
	union ndk_sockaddr addr;
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->id)
		memcpy(&addr, local ? &conn->id->route.addr.src_addr :
				      &conn->id->route.addr.dst_addr,
		       sizeof(addr));
	else
		addr = local ? conn->src : conn->dst;
	spin_unlock_irqrestore(&conn->lock, flags);
	return ndk_copy_addr(&addr.sa, pAddress, pAddressLength);
}

static NTSTATUS ndk_conn_get_local_address(NDK_CONNECTOR *pNdkConnector,
					   PSOCKADDR pAddress,
					   ULONG *pAddressLength)
{
	return ndk_conn_addr(to_conn(pNdkConnector), true, pAddress,
			     pAddressLength);
}

static NTSTATUS ndk_conn_get_peer_address(NDK_CONNECTOR *pNdkConnector,
					  PSOCKADDR pAddress,
					  ULONG *pAddressLength)
{
	return ndk_conn_addr(to_conn(pNdkConnector), false, pAddress,
			     pAddressLength);
}

/* Graceful disconnect; completes when rdma_cm reports the disconnection. */
static NTSTATUS ndk_disconnect(NDK_CONNECTOR *pNdkConnector,
			       NDK_FN_REQUEST_COMPLETION RequestCompletion,
			       PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	if (!RequestCompletion)
		return STATUS_INVALID_PARAMETER;
	/* Already disconnected by the peer: nothing left to do. */
	if (READ_ONCE(conn->state) == NDK_CONN_DONE)
		return STATUS_SUCCESS;
	status = ndk_conn_begin(conn, NDK_CONN_ESTABLISHED,
				NDK_CONN_DISCONNECTING, RequestCompletion,
				RequestContext);
	if (status == STATUS_PENDING)
		status = ndk_conn_run(conn);
	return status;
}

/* The dispatch entries of NdkReject and NdkDisconnect, traced. */
static NTSTATUS ndk_reject_traced(NDK_CONNECTOR *pNdkConnector,
				  const PVOID pPrivateData,
				  ULONG PrivateDataLength)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	ndk_obj_get(&conn->obj);
	status = ndk_reject(pNdkConnector, pPrivateData, PrivateDataLength);
	if (status == STATUS_SUCCESS)
		ndk_stat_inc(conn->obj.adapter, NDK_STAT_REJECTS);
	trace_ndk_reject(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static NTSTATUS ndk_disconnect_traced(NDK_CONNECTOR *pNdkConnector,
				      NDK_FN_REQUEST_COMPLETION RequestCompletion,
				      PVOID RequestContext)
{
	struct ndk_connector *conn = to_conn(pNdkConnector);
	NTSTATUS status;

	ndk_obj_get(&conn->obj);
	status = ndk_disconnect(pNdkConnector, RequestCompletion,
				RequestContext);
	trace_ndk_disconnect(conn, status);
	ndk_obj_put(&conn->obj);
	return status;
}

static const NDK_CONNECTOR_DISPATCH ndk_connector_dispatch = {
	.NdkCloseConnector = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkConnect = ndk_connect,
	.NdkConnectWithSharedEndpoint = ndk_connect_with_shared_endpoint,
	.NdkCompleteConnect = ndk_complete_connect,
	.NdkAccept = ndk_accept,
	.NdkReject = ndk_reject_traced,
	.NdkGetConnectionData = ndk_get_connection_data,
	.NdkGetLocalAddress = ndk_conn_get_local_address,
	.NdkGetPeerAddress = ndk_conn_get_peer_address,
	.NdkDisconnect = ndk_disconnect_traced,
	.NdkCompleteConnectEx = ndk_complete_connect_ex,
	.NdkAcceptEx = ndk_accept_ex,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_connector);

/**
 * ndk_cm_create_id() - an RC rdma_cm id in init_net for an ndk object
 * @ctx: the object, whose public header starts it (see ndk_cm_handler())
 * @idp: receives the id
 *
 * May sleep.
 *
 * Return: STATUS_SUCCESS or the failure's NTSTATUS.
 */
NTSTATUS ndk_cm_create_id(void *ctx, struct rdma_cm_id **idp)
{
	struct rdma_cm_id *id;

	id = NDK_FI_PTR(rdma_create_id(&init_net, ndk_cm_handler, ctx,
				       RDMA_PS_TCP, IB_QPT_RC));
	if (IS_ERR(id))
		return ndk_status_from_errno(PTR_ERR(id));
	*idp = id;
	return STATUS_SUCCESS;
}

static NTSTATUS ndk_conn_create(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	return ndk_cm_create_id(conn, &conn->id);
}

/*
 * The bound of a connect or accept expired (see ndk_conn_timer()):
 * complete the request, then end the connection attempt. The completion
 * comes first because destroying an iWARP id whose connect is still in
 * flight waits until the transport itself gives up. The destruction
 * makes the connection manager tell the peer (a reject on IB and RoCE),
 * and afterwards no event of the id can come. The addresses stay
 * readable from the copies NdkGetLocalAddress and NdkGetPeerAddress fall
 * back to.
 */
static void ndk_conn_timed_out(struct ndk_connector *conn)
{
	struct rdma_cm_id *id;
	unsigned long flags;

	ndk_stat_inc(conn->obj.adapter, NDK_STAT_CONNECT_FAILURES);
	trace_ndk_callback(NDK_CB_REQUEST, NdkObjectTypeConnector, conn->obj.id,
			   STATUS_IO_TIMEOUT);
	conn->tmo_cb(conn->tmo_ctx, STATUS_IO_TIMEOUT);

	spin_lock_irqsave(&conn->lock, flags);
	id = conn->id;
	memcpy(&conn->src, &id->route.addr.src_addr, sizeof(conn->src));
	memcpy(&conn->dst, &id->route.addr.dst_addr, sizeof(conn->dst));
	conn->id = NULL;
	spin_unlock_irqrestore(&conn->lock, flags);
	rdma_destroy_id(id);
	ndk_conn_flush_qp(conn);
}

static void ndk_conn_timeout_work(struct work_struct *work)
{
	struct ndk_connector *conn = container_of(work, struct ndk_connector,
						  timeout_work);

	ndk_conn_timed_out(conn);
	/* The expired request's reference, usually not the last one. */
	ndk_obj_put_may_sleep(&conn->obj);
}

/*
 * Close cancels whatever is pending. Destroying the id waits for a
 * running event handler and ends the connection on the wire (a request
 * never answered is rejected, one in flight abandoned); the pending
 * request then completes as cancelled and the QP is flushed. The close
 * completes once that request's reference is gone too.
 */
static void ndk_conn_cancel(struct ndk_connector *conn)
{
	bool rejecting = READ_ONCE(conn->state) == NDK_CONN_REJECTING;

	/*
	 * No bound expires from now on. One that has expired is finished
	 * here if its work had not started yet, else waited for: it owns
	 * the id until then.
	 */
	timer_shutdown_sync(&conn->timer);
	if (cancel_work_sync(&conn->timeout_work)) {
		ndk_conn_timed_out(conn);
		ndk_obj_put(&conn->obj);
	}
	/*
	 * Only the consumer queues @work, so once it is idle nothing but the
	 * event handler, which rdma_destroy_id() waits for, uses the id.
	 */
	if (cancel_work_sync(&conn->work) && rejecting)
		ndk_obj_put(&conn->obj);
	if (conn->id) {
		rdma_destroy_id(conn->id);
		conn->id = NULL;
	}
	/*
	 * A QP already in the error state (after a disconnect or a failure
	 * event, whose handlers are over now) flushes whatever is posted to
	 * it from then on: moving it there again would change nothing.
	 */
	if (!conn->flushed)
		ndk_conn_flush_qp(conn);
	ndk_conn_finish(conn, NDK_CONN_DONE, STATUS_CANCELLED);
}

static void ndk_conn_cancel_work(struct work_struct *work)
{
	struct ndk_connector *conn = container_of(work, struct ndk_connector,
						  cancel_work);

	ndk_conn_cancel(conn);
	/* Usually the last reference: finish the close here, not in one more work item. */
	ndk_obj_put_may_sleep(&conn->obj);
}

/*
 * True if the close may wait for the connector's event handler and work
 * items in the caller: it may sleep, is no rdma_cm handler (whose lock
 * the id's destruction takes), and no consumer code about the connector
 * runs or can start any more. A connection that is over, or never began,
 * calls nothing back: no request is pending, no bound has expired, and
 * the disconnect event has been delivered.
 */
static bool ndk_conn_quiet(struct ndk_connector *conn)
{
	unsigned long flags;
	bool quiet;

	if (!ndk_caller_may_sleep() || ndk_cm_handler_id())
		return false;
	spin_lock_irqsave(&conn->lock, flags);
	quiet = (conn->state == NDK_CONN_DONE ||
		 conn->state == NDK_CONN_IDLE) && !conn->req_cb &&
		!conn->callbacks && conn->bound != NDK_BOUND_EXPIRED;
	spin_unlock_irqrestore(&conn->lock, flags);
	return quiet;
}

/*
 * Cancel in the caller where that cannot wait for consumer code (see
 * ndk_obj_close(), which then finishes the close inline), else in the
 * cancel work, which holds a reference.
 */
static void ndk_conn_close(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	if (ndk_conn_quiet(conn)) {
		ndk_conn_cancel(conn);
		return;
	}
	ndk_obj_get(obj);
	queue_work(ndk_wq, &conn->cancel_work);
}

/*
 * The close's cancel work has already destroyed the id and flushed the
 * QP; a connector whose creation failed never had either.
 */
static void ndk_conn_destroy(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	ndk_sep_del_conn(conn);
	if (conn->qp) {
		WRITE_ONCE(conn->qp->conn, NULL);
		ndk_obj_put(&conn->qp->obj);
	}
}

static void ndk_conn_free(struct ndk_obj *obj)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	kfree(conn->pdata);
	kfree(conn->peer_pdata);
	kmem_cache_free(ndk_conn_cache, conn);
}

static const struct ndk_obj_ops ndk_conn_ops = {
	.close = ndk_conn_close,
	.create = ndk_conn_create,
	.destroy = ndk_conn_destroy,
	.free = ndk_conn_free,
	.close_inline = true,
};

/**
 * ndk_connector_alloc() - a connector not yet tied to an rdma_cm id
 * @adapter: its adapter
 * @req: an incoming request whose private data the connector keeps, or
 *	NULL
 * @gfp: allocation context
 *
 * Return: the connector, or NULL.
 */
struct ndk_connector *ndk_connector_alloc(struct ndk_adapter *adapter,
					  const struct rdma_conn_param *req,
					  gfp_t gfp)
{
	struct ndk_connector *conn;

	conn = NDK_FI_NULL(kmem_cache_zalloc(ndk_conn_cache, gfp));
	if (!conn)
		return NULL;
	if (req && req->private_data &&
	    ndk_peer_pdata_set(conn, req->private_data,
			       min_t(u32, req->private_data_len,
				     NDK_PDATA_MAX), gfp)) {
		kmem_cache_free(ndk_conn_cache, conn);
		return NULL;
	}
	conn->ndk.Dispatch = &ndk_connector_dispatch;
	conn->iwarp = rdma_protocol_iwarp(adapter->ibdev, adapter->port);
	conn->state = NDK_CONN_IDLE;
	spin_lock_init(&conn->lock);
	INIT_WORK(&conn->work, ndk_conn_work);
	INIT_WORK(&conn->cancel_work, ndk_conn_cancel_work);
	INIT_WORK(&conn->timeout_work, ndk_conn_timeout_work);
	timer_setup(&conn->timer, ndk_conn_timer, 0);
	ndk_obj_init(&conn->obj, &conn->ndk.Header, NdkObjectTypeConnector,
		     &ndk_conn_ops, &adapter->obj);
	return conn;
}

/**
 * ndk_create_connector() - NdkCreateConnector
 * @pNdkAdapter: the adapter
 * @CreateCompletion: called with the new connector, from ndk_wq
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkConnector: receives the connector when the creation completes
 *	inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, and @ppNdkConnector is given, the connector is created
 * inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER or STATUS_INSUFFICIENT_RESOURCES.
 */
NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector)
{
	struct ndk_connector *conn;
	NTSTATUS status;

	if (!pNdkAdapter || !CreateCompletion)
		return STATUS_INVALID_PARAMETER;
	conn = ndk_connector_alloc(container_of(pNdkAdapter,
						struct ndk_adapter, ndk),
				   NULL, GFP_ATOMIC);
	if (!conn)
		return STATUS_INSUFFICIENT_RESOURCES;
	status = ndk_obj_create(&conn->obj, CreateCompletion, RequestContext,
				!!ppNdkConnector);
	if (status == STATUS_SUCCESS)
		*ppNdkConnector = &conn->ndk;
	return status;
}

/**
 * ndk_connector_adopt() - give an incoming request's id to a connector
 * @conn: a connector from ndk_connector_alloc() with the request's
 *	private data
 * @id: the new id of the request
 * @ev: the connect request event
 *
 * Called from the rdma_cm handler of @id. From now on @id's events go to
 * @conn, which the consumer may accept or reject.
 */
void ndk_connector_adopt(struct ndk_connector *conn, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev)
{
	const NDK_ADAPTER_INFO *info = &conn->obj.adapter->info;

	conn->id = id;
	id->context = conn;
	ndk_conn_note_addrs(conn, id);
	/*
	 * From our side: the reads the peer will issue and the reads it
	 * allows us; NdkAccept caps the consumer's limits by them.
	 */
	conn->ird = min_t(u32, ev->param.conn.responder_resources,
			  info->MaxInboundReadLimit);
	conn->ord = min_t(u32, ev->param.conn.initiator_depth,
			  info->MaxOutboundReadLimit);
	conn->state = NDK_CONN_REQUESTED;
	/* The listener's connect event, see ndk_listener_request(). */
	conn->callbacks = 1;
	conn->obj.state = NDK_OBJ_LIVE;
}
