// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NDK handshake of an NDK_CONNECTOR on rdma_cm: the state machine
 * its requests run through, their bounds, and its rdma_cm events.
 * connector.c, which holds the object and its dispatch table, starts
 * requests here; nothing here calls back into it.
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
#include <linux/moduleparam.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <rdma/ib_cm.h>
#include "ndk_priv.h"
#include "connector.h"
#include "trace.h"

/* rdma_cm address and route resolution timeout. */
#define NDK_CM_TIMEOUT_MS	2000

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
 * Replace *@buf by a copy of @len bytes of private data; none needs no
 * buffer. Return: 0 or -ENOMEM, when *@buf is left alone.
 */
int ndk_pdata_set(u8 **buf, const void *data, u32 len, gfp_t gfp)
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

/**
 * ndk_pdata_used() - the length of private data up to its last non-zero byte
 * @data: the private data
 * @len: its length
 *
 * IB and RoCE deliver a request's 56 bytes and a reply's 196 whatever the
 * peer sent, mostly zeros; scanned a byte at a time, they cost about
 * 2 700 instructions per connection, eight times what this scan costs.
 *
 * Return: the length without the trailing zeros, 0 if all are zeros.
 */
u32 ndk_pdata_used(const u8 *data, u32 len)
{
	u64 word;

	/* A fixed-size memcpy() is one unaligned load. */
	for (; len >= sizeof(word); len -= sizeof(word)) {
		memcpy(&word, data + len - sizeof(word), sizeof(word));
		if (word)
			break;
	}
	while (len && !data[len - 1])
		len--;
	return len;
}
EXPORT_SYMBOL_NDK_TEST(ndk_pdata_used);

/*
 * Keep @len bytes of private data from the peer as @conn's. IB and RoCE
 * deliver their CM messages' whole private data field (through rdma_cm
 * 56 bytes of a request, 196 of a reply), padded with zeros after what
 * the peer sent: only the bytes up to the last non-zero one are copied,
 * and none from a peer that sent none (NdkGetConnectionData returns the
 * zeros from none). Return: as ndk_pdata_set().
 */
int ndk_peer_pdata_set(struct ndk_connector *conn, const void *data,
		       u32 len, gfp_t gfp)
{
	u32 keep = data ? ndk_pdata_used(data, len) : 0;
	int err;

	err = ndk_pdata_set(&conn->peer_pdata, data, keep, gfp);
	if (!err) {
		conn->rds = len;
		conn->peer_len = keep;
	}
	return err;
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
NTSTATUS ndk_conn_begin(struct ndk_connector *conn,
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
void ndk_conn_finish(struct ndk_connector *conn,
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
void ndk_conn_timer(struct timer_list *t)
{
	struct ndk_connector *conn = timer_container_of(conn, t, timer);
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
void ndk_conn_flush_qp(struct ndk_connector *conn)
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
void ndk_conn_note_addrs(struct ndk_connector *conn,
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

/**
 * ndk_cm_status() - NTSTATUS of an rdma_cm event that ends a connect
 * @ev: the event
 *
 * Return: STATUS_CONNECTION_REFUSED for the peer's reject,
 * STATUS_IO_TIMEOUT when the peer's CM never answered,
 * STATUS_NETWORK_UNREACHABLE when no neighbour or route was found,
 * STATUS_HOST_UNREACHABLE for the other failures to reach the peer, and
 * STATUS_CONNECTION_ABORTED for any other event.
 */
NTSTATUS ndk_cm_status(const struct rdma_cm_event *ev)
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
EXPORT_SYMBOL_NDK_TEST(ndk_cm_status);

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
		/*
		 * siw binds its TCP socket to the id's port, which a TCP
		 * socket of the host may hold (in TIME_WAIT, say): the local
		 * address is in use.
		 */
		if (err)
			ndk_conn_finish(conn, NDK_CONN_DONE,
					err == -EADDRINUSE ?
					STATUS_SHARING_VIOLATION :
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
		ndk_qp_set_connected(conn->qp, !err);
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

/*
 * The connector's rdma_cm events (see ndk_cm_handler()). The local port is
 * known once the peer answers: note it before the consumer hears.
 */
int ndk_conn_cm_event(struct ndk_obj *obj, struct rdma_cm_id *id,
		      struct rdma_cm_event *ev)
{
	struct ndk_connector *conn = container_of(obj, struct ndk_connector,
						  obj);

	if (ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	    ev->event == RDMA_CM_EVENT_ESTABLISHED)
		ndk_conn_note_addrs(conn, id);
	/* Even after the bound ended the accept: see ndk_conn_drop_id(). */
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		conn->accept_open = false;
	ndk_conn_event(conn, id, ev);
	return 0;
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
		ndk_qp_set_connected(conn->qp, !err);
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
		if (!err) {
			if (!locked)
				rdma_lock_handler(conn->id);
			ndk_conn_param(conn, &param);
			err = NDK_FI_ERR(rdma_accept(conn->id, &param));
			conn->accept_open = conn->iwarp && !err;
			if (!locked)
				rdma_unlock_handler(conn->id);
		}
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
		 * state to reply: rdma_init_qp_attr() for the QP's moves, or
		 * rdma_accept(), says -EINVAL.
		 */
		if (err == -ECONNRESET || err == -EPIPE || err == -EINVAL)
			return ndk_conn_end(conn, NDK_CONN_DONE,
					    STATUS_CONNECTION_ABORTED,
					    in_caller);
		return ndk_conn_end(conn, NDK_CONN_DONE,
				    ndk_status_from_errno(err), in_caller);
	case NDK_CONN_DISCONNECTING:
		/*
		 * No send starts once the consumer asked to disconnect: on IB
		 * and RoCE the QP stays usable until the DISCONNECTED event.
		 */
		if (conn->qp) {
			WRITE_ONCE(conn->qp->cancelling, true);
			WRITE_ONCE(conn->qp->connected, false);
		}
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

void ndk_conn_work(struct work_struct *work)
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
NTSTATUS ndk_conn_run(struct ndk_connector *conn)
{
	struct rdma_cm_id *in = ndk_cm_handler_id();

	if (!ndk_caller_may_sleep() || (in && in != conn->id)) {
		queue_work(ndk_wq, &conn->work);
		return STATUS_PENDING;
	}
	return ndk_conn_step(conn, true, !!in);
}
