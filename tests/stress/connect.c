// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_stress: connection churn.
 *
 * A cycle connects its two QPs to each other over the adapter's own
 * address, IPv4 or IPv6, through a listener on the next port of its
 * thread's range, and ends the connection as the cycle's fate says:
 * a disconnect from a random side, or early, by a reject, by a close
 * inside the connect event or the connect completion, or by a close
 * while connecting or accepting. The connect and disconnect events
 * close objects from inside the callback too.
 */

#include <linux/string.h>

#include "stress.h"

/* Each thread listens on ST_PORTS ports of its own, one per cycle in turn. */
#define ST_PORTS	64

/* Private data of the connect request and of the accept. */
#define ST_HELLO	"ndk_stress connect"
#define ST_REPLY	"ndk_stress accept"

static NDK_CONNECTOR *st_conn(struct st_obj *o)
{
	return container_of(o->hdr, NDK_CONNECTOR, Header);
}

static void st_disc_event(PVOID ctx)
{
	struct st_side *s = ctx;
	struct st_cycle *c = s->c;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(s->conn->closed))
		st_problem(c, "disconnect event after the connector's close");
	if (READ_ONCE(s->event))
		st_problem(c, "second disconnect event");
	st_set(s->event);
	if (s->close_in_event)
		st_close(s->conn, true);
	wake_up(&c->wq);
	st_cb_exit(c);
}

static void st_disc_event_ex(PVOID ctx, ULONG reason)
{
	st_disc_event(ctx);
}

void st_connect_event(PVOID ctx, NDK_CONNECTOR *conn)
{
	struct st_cycle *c = ctx;
	struct st_obj *o = NULL;
	unsigned long flags;
	int n;

	st_cb_enter(c);
	atomic64_inc(&st.events);
	if (READ_ONCE(c->lis.closed))
		st_problem(c, "connect event after the listener's close");
	spin_lock_irqsave(&c->lock, flags);
	if (c->want_incoming && !c->incoming) {
		c->incoming = true;
		o = &c->srv;
		WRITE_ONCE(o->hdr, &conn->Header);
	}
	spin_unlock_irqrestore(&c->lock, flags);
	if (!o) {
		/* Nobody waits for it: a retry, or a cancelled connect. */
		n = atomic_inc_return(&c->nstray) - 1;
		if (n >= ST_STRAYS) {
			st_problem(c, "too many connection requests");
			goto out;
		}
		o = &c->stray[n];
		WRITE_ONCE(o->hdr, &conn->Header);
	}
	st_set(o->created);
	if (o != &c->srv || c->fate == ST_CLOSE_IN_EVENT)
		st_close(o, true);
	if (c->close_lis_in_event)
		st_close(&c->lis, true);
	wake_up(&c->wq);
out:
	st_cb_exit(c);
}

/* Listen on this thread's next port; false if the cycle cannot go on. */
bool st_listen(struct st_cycle *c)
{
	NDK_LISTENER *l = container_of(c->lis.hdr, NDK_LISTENER, Header);
	struct st_req *r;
	NTSTATUS status;

	r = st_req(c, ST_R_LISTEN, &c->lis, "NdkListen", 0, NULL);
	status = l->Dispatch->NdkListen(l, st_dst(c), c->alen, st_req_done, r);
	st_issued(c, r, status);
	return st_wait(c, st_done(r->done), "NdkListen") && !r->status;
}

/* IPv4 or IPv6; the listener takes this thread's next port. */
void st_addresses(struct st_cycle *c)
{
	u16 p = st_port + c->w->id * ST_PORTS + c->w->cycle % ST_PORTS;

	if (st_have6 && st_chance(c, 2)) {
		memcpy(&c->src, &st_addr6, sizeof(st_addr6));
		memcpy(&c->dst, &st_addr6, sizeof(st_addr6));
		((struct sockaddr_in6 *)&c->dst)->sin6_port = htons(p);
		c->alen = sizeof(st_addr6);
	} else {
		memcpy(&c->src, &st_addr4, sizeof(st_addr4));
		memcpy(&c->dst, &st_addr4, sizeof(st_addr4));
		((struct sockaddr_in *)&c->dst)->sin_port = htons(p);
		c->alen = sizeof(st_addr4);
	}
}

static void st_accept(struct st_cycle *c, u32 allow)
{
	struct st_side *pas = &c->side[1];
	NDK_CONNECTOR *conn = st_conn(&c->srv);
	struct st_req *r;
	NTSTATUS status;

	r = st_req(c, ST_R_ACCEPT, &c->srv, "NdkAccept", allow, NULL);
	if (st_chance(c, 2))
		status = conn->Dispatch->NdkAccept(conn, st_qp(pas), 1, 1,
						   ST_REPLY, sizeof(ST_REPLY),
						   st_disc_event, pas,
						   st_req_done, r);
	else
		status = conn->Dispatch->NdkAcceptEx(conn, st_qp(pas), 1, 1,
						     ST_REPLY,
						     sizeof(ST_REPLY),
						     st_disc_event_ex, pas,
						     st_req_done, r);
	st_issued(c, r, status);
}

/* The NDK handshake, or one of the ways it ends early. */
bool st_connect(struct st_cycle *c)
{
	struct st_side *act = &c->side[0];
	NDK_CONNECTOR *cli = st_conn(&c->cli);
	u32 allow = c->fate == ST_FULL ? 0 : ST_ALLOW_ANY;
	NDK_SHARED_ENDPOINT *sep = NULL;
	struct st_req *r, *cc;
	char data[256];
	ULONG len = sizeof(data);
	NTSTATUS status;

	if (c->sep.hdr)
		sep = container_of(c->sep.hdr, NDK_SHARED_ENDPOINT, Header);
	c->want_incoming = c->fate != ST_CANCEL;
	c->close_lis_in_event = st_chance(c, 4);
	r = st_req(c, ST_R_CONNECT, &c->cli, "NdkConnect", allow,
		   c->fate == ST_CLOSE_IN_CONNECT ? &c->cli : NULL);
	if (sep)
		status = cli->Dispatch->NdkConnectWithSharedEndpoint(cli,
								     st_qp(act),
								     sep,
								     st_dst(c),
								     c->alen,
								     1, 1,
								     ST_HELLO,
								     sizeof(ST_HELLO),
								     st_req_done,
								     r);
	else
		status = cli->Dispatch->NdkConnect(cli, st_qp(act), st_src(c),
						   c->alen, st_dst(c), c->alen,
						   1, 1, ST_HELLO,
						   sizeof(ST_HELLO),
						   st_req_done, r);
	if (!st_issued(c, r, status))
		return false;
	c->sep_used = sep;
	if (c->fate == ST_CANCEL)
		st_close(&c->cli, false);
	if (c->fate == ST_CANCEL || c->fate == ST_CLOSE_IN_EVENT) {
		st_wait(c, st_done(r->done), "NdkConnect that fails");
		return false;
	}
	if (!st_wait(c, READ_ONCE(c->incoming) && st_done(c->srv.created),
		     "connect event"))
		return false;
	if (c->fate == ST_REJECT) {
		NDK_CONNECTOR *srv = st_conn(&c->srv);

		/* Rejecting completes inline. */
		st_start(c);
		st_account(c, srv->Dispatch->NdkReject(srv, ST_HELLO, 4), 0,
			   "NdkReject");
		st_wait(c, st_done(r->done), "rejected NdkConnect");
		return false;
	}
	st_accept(c, allow);
	if (c->fate == ST_CANCEL_ACCEPT) {
		st_close(&c->srv, false);
		st_wait(c, st_done(r->done) &&
			st_done(c->req[ST_R_ACCEPT].done),
			"cancelled NdkAccept");
		return false;
	}
	if (!st_wait(c, st_done(r->done), "NdkConnect"))
		return false;
	if (c->fate == ST_CLOSE_IN_CONNECT) {
		st_wait(c, st_done(c->req[ST_R_ACCEPT].done),
			"NdkAccept of a closed peer");
		return false;
	}
	if (r->status)
		return false;
	if (cli->Dispatch->NdkGetConnectionData(cli, NULL, NULL, data, &len) ||
	    len < sizeof(ST_REPLY) ||
	    memcmp(data, ST_REPLY, sizeof(ST_REPLY)))
		st_problem(c, "NdkGetConnectionData: %u bytes", len);
	cc = st_req(c, ST_R_COMPLETE, &c->cli, "NdkCompleteConnect", 0, NULL);
	if (st_chance(c, 2))
		status = cli->Dispatch->NdkCompleteConnect(cli, st_disc_event,
							   act, st_req_done,
							   cc);
	else
		status = cli->Dispatch->NdkCompleteConnectEx(cli,
							     st_disc_event_ex,
							     act, st_req_done,
							     cc);
	st_issued(c, cc, status);
	return st_wait(c, st_done(cc->done) &&
		       st_done(c->req[ST_R_ACCEPT].done), "connection") &&
	       !cc->status && !c->req[ST_R_ACCEPT].status;
}

/* End an established connection from a random side, in a random way. */
void st_disconnect(struct st_cycle *c)
{
	unsigned int from = st_rand(c, 2), how = st_rand(c, 3);
	struct st_side *s = &c->side[from], *peer = &c->side[!from];
	NDK_CONNECTOR *conn = st_conn(s->conn);
	struct st_req *r;
	NTSTATUS status;

	peer->close_in_event = st_chance(c, 2);
	if (how == 2) {
		/* Closing the connector disconnects too. */
		st_close(s->conn, false);
	} else {
		r = st_req(c, ST_R_DISC, s->conn, "NdkDisconnect", 0,
			   how ? s->conn : NULL);
		status = conn->Dispatch->NdkDisconnect(conn, st_req_done, r);
		if (st_issued(c, r, status))
			st_wait(c, st_done(r->done), "NdkDisconnect");
	}
	st_wait(c, st_done(peer->event), "disconnect event");
}
