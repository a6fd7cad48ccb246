/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CM objects: NDK_CONNECTOR (connector.c, handshake.c), NDK_LISTENER
 * (listener.c), NDK_SHARED_ENDPOINT (endpoint.c), and the rdma_cm
 * plumbing they share (cm.c).
 */
#ifndef _NDK_PRIV_CM_H
#define _NDK_PRIV_CM_H

#include "qp.h"

/* Largest private data any transport carries (iWARP MPA); IB's is less. */
#define NDK_PDATA_MAX		RDMA_MAX_PRIVATE_DATA

enum ndk_conn_state {
	NDK_CONN_IDLE,		/* created, not used yet */
	NDK_CONN_CONNECTING,	/* NdkConnect pending */
	NDK_CONN_CONNECTED,	/* peer accepted; NdkCompleteConnect next */
	NDK_CONN_COMPLETING,	/* NdkCompleteConnect pending */
	NDK_CONN_REQUESTED,	/* incoming request given to the consumer */
	NDK_CONN_ACCEPTING,	/* NdkAccept pending */
	NDK_CONN_REJECTING,	/* NdkReject sending */
	NDK_CONN_ESTABLISHED,
	NDK_CONN_DISCONNECTING,	/* NdkDisconnect pending */
	NDK_CONN_DONE,		/* disconnected, rejected or failed */
};

/* The timer bounding a connect's or an accept's wait for the peer. */
enum ndk_conn_bound {
	NDK_BOUND_NONE,		/* not running */
	NDK_BOUND_ARMED,	/* running for the pending request */
	NDK_BOUND_EXPIRED,	/* fired first and took the request over */
};

/* A connection's address: only AF_INET and AF_INET6 are used. */
union ndk_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/**
 * struct ndk_connector - an NDK_CONNECTOR
 * @ndk: the public object
 * @obj: lifetime state; successor of the adapter (and of its listener
 *	when it came from one)
 * @id: the rdma_cm id; destroyed only by the cancel work or after a
 *	timeout, never from its handler, and set to NULL under @lock then
 * @iwarp: the transport has no RTU step
 * @accept_open: on iWARP, rdma_accept() went out and ESTABLISHED has not
 *	come: iw_cm would hold the id's destruction until it does; under
 *	the id's handler lock
 * @flushed: the QP was moved to the error state; written only in the
 *	id's event handler and in work items that the close waits for
 * @lock: protects @state, the pending request, @bound and @id's
 *	disappearance
 * @state: enum ndk_conn_state
 * @bound: enum ndk_conn_bound of @timer
 * @peer_len: bytes in @peer_pdata; the rest of @rds bytes are zeros
 *	(rdma_cm gives private data lengths as u8)
 * @timer: bounds the wait of a pending connect or accept for the peer
 * @tmo_cb: completion of the request @timer took over
 * @tmo_ctx: its context
 * @timeout_work: completes that request and tears the id down
 * @qp: QP of the connection, referenced while associated
 * @req_cb: completion of the pending request
 * @req_ctx: its context
 * @disc_cb: disconnect event callback
 * @disc_cb_ex: the Ex form
 * @disc_ctx: their context
 * @work: performs the pending request's steps that may sleep
 * @cancel_work: ends everything pending when the consumer closes
 * @pdata: private data this side sends, allocated to its size; NULL
 *	while there is none
 * @pdata_len: its size
 * @ird: effective inbound read limit
 * @ord: effective outbound read limit
 * @callbacks: consumer callbacks about the connector that are running,
 *	under @lock (see ndk_connector_called())
 * @queued: a listener handed the connector out and the consumer has not
 *	accepted, rejected or closed it yet: it takes one place of the
 *	listener's backlog (struct ndk_listener.unanswered), the listener
 *	being its first further antecedent; under @lock
 * @peer_pdata: private data the peer sent with request, reply or reject,
 *	up to its last non-zero byte, allocated to that size; NULL if it
 *	was all zeros
 * @rds: size of the private data the transport delivered
 * @src: source address of NdkConnect, then as rdma_cm resolved it
 * @dst: destination address of NdkConnect, then as rdma_cm resolved it
 * @sep: shared endpoint it connects from, if any
 * @sep_node: entry in the table of connections from shared endpoints
 * @orphan: on iWARP, what a close or expiry needs to hand the id over to
 *	ndk_wq where destroying it would wait for the peer; NULL once used
 *
 * Private data is allocated only when there is some, since a connector
 * usually carries none: two NDK_PDATA_MAX arrays would more than double
 * its size. For the same reason @state and @bound are bytes and what the
 * connect or accept sends is built when it is sent: the structure fits
 * about 512 bytes without debugging options, one connection having two.
 */
struct ndk_connector {
	NDK_CONNECTOR ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	bool iwarp;
	bool accept_open;
	bool flushed;
	u8 ird;
	u8 ord;
	u8 callbacks;
	u8 pdata_len;
	u16 rds;
	spinlock_t lock; /* see above */
	u8 state;
	u8 bound;
	bool queued;
	u8 peer_len;
	struct timer_list timer;
	NDK_FN_REQUEST_COMPLETION tmo_cb;
	void *tmo_ctx;
	struct work_struct timeout_work;
	struct ndk_qp *qp;
	NDK_FN_REQUEST_COMPLETION req_cb;
	void *req_ctx;
	NDK_FN_DISCONNECT_EVENT_CALLBACK disc_cb;
	NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_cb_ex;
	void *disc_ctx;
	struct work_struct work;
	struct work_struct cancel_work;
	u8 *pdata;
	u8 *peer_pdata;
	union ndk_sockaddr src;
	union ndk_sockaddr dst;
	struct ndk_sep *sep;
	struct hlist_node sep_node;
	struct ndk_conn_orphan *orphan;
};

/**
 * struct ndk_listener - an NDK_LISTENER
 * @ndk: the public object
 * @obj: lifetime state; connectors it hands out are its successors
 * @id: the listening rdma_cm id; a listen that failed past the bind
 *	replaces it (ndk_listen_now())
 * @id_lock: orders that replacement against NdkGetLocalAddress
 * @stale: @id is bound and could not be replaced yet; the next listen
 *	replaces it first
 * @event_cb: the consumer's connect event callback
 * @event_ctx: its context
 * @paused: NdkControlConnectEvents paused delivery: refuse requests
 * @closing: close has started: refuse requests
 * @backlog: how many requests the consumer may hold unanswered before
 *	further ones are refused, and rdma_listen()'s backlog; set by the
 *	listen, before any request can come
 * @unanswered: requests handed to the consumer that it has not accepted,
 *	rejected or closed yet (see struct ndk_connector.queued)
 * @listen_cb: completion of a pending NdkListen
 * @listen_ctx: its context
 * @addr: address NdkListen binds
 * @work: binds and listens, which may sleep
 */
struct ndk_listener {
	NDK_LISTENER ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	spinlock_t id_lock; /* see above */
	bool stale;
	NDK_FN_CONNECT_EVENT_CALLBACK event_cb;
	void *event_ctx;
	bool paused;
	bool closing;
	int backlog;
	atomic_t unanswered;
	NDK_FN_REQUEST_COMPLETION listen_cb;
	void *listen_ctx;
	struct sockaddr_storage addr;
	struct work_struct work;
};

/**
 * struct ndk_sep - an NDK_SHARED_ENDPOINT
 * @ndk: the public object
 * @obj: lifetime state; connectors over it are its successors
 * @id: rdma_cm id bound with address reuse, holding the port
 * @addr: the bound address (with the port actually taken)
 * @list: entry in the list of shared endpoints
 */
struct ndk_sep {
	NDK_SHARED_ENDPOINT ndk;
	struct ndk_obj obj;
	struct rdma_cm_id *id;
	struct sockaddr_storage addr;
	struct list_head list;
};

NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    const PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
struct ndk_sep *ndk_sep_of(NDK_SHARED_ENDPOINT *s, struct ndk_adapter *adapter);
NTSTATUS ndk_sep_add_conn(struct ndk_sep *sep, struct ndk_connector *conn);
void ndk_sep_del_conn(struct ndk_connector *conn);
NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector);
NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_LISTENER **ppNdkListener);
struct ndk_connector *ndk_connector_alloc(struct ndk_adapter *adapter,
					  const struct rdma_conn_param *req,
					  gfp_t gfp);
void ndk_connector_adopt(struct ndk_connector *conn,
			 struct ndk_listener *listener, struct rdma_cm_id *id,
			 struct rdma_cm_event *ev);
void ndk_connector_called(struct ndk_connector *conn);

struct rdma_cm_id *ndk_cm_handler_id(void);
NTSTATUS ndk_cm_create_id(void *ctx, struct rdma_cm_id **idp);
void ndk_cm_set_ack_timeout(struct rdma_cm_id *id);
NTSTATUS ndk_bind_status(const struct sockaddr *addr, int err);
NTSTATUS ndk_cm_status(const struct rdma_cm_event *ev);
NTSTATUS ndk_copy_addr(const struct sockaddr *addr, PSOCKADDR pAddress,
		       ULONG *pAddressLength);
ULONG ndk_addr_len(const struct sockaddr *addr, ULONG len);

#endif /* _NDK_PRIV_CM_H */
