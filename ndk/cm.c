// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rdma_cm plumbing of every CM object (connector, listener, shared
 * endpoint): id creation, the event handler, and the address and bind
 * status helpers. The handler reaches an id's owner through its type's
 * cm_event operation (struct ndk_obj_ops), so this file calls none of
 * the CM objects: they call it.
 */
#include <linux/inet.h>
#include <net/addrconf.h>
#include <net/route.h>
#include "ndk_priv.h"
#include "trace.h"

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

/**
 * ndk_cm_handler_id() - the id whose handler the current task runs
 *
 * Return: that id, or NULL outside ndk_cm_handler().
 */
struct rdma_cm_id *ndk_cm_handler_id(void)
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
EXPORT_SYMBOL_NDK_TEST(ndk_bind_status);

/**
 * ndk_cm_handler() - the rdma_cm event handler of every ndk id
 * @id: the id
 * @ev: the event
 *
 * The id's context is a listener, a connector or a shared endpoint. Each
 * starts with its object header, which leads to its struct ndk_obj and
 * its type's cm_event operation: cm.c serves the CM objects and names
 * none of them. A connect request arrives on a new id whose context is
 * still the listener's; a shared endpoint's id only holds a port, and its
 * type has no such operation.
 *
 * Return: non-zero only to refuse a connect request, which makes rdma_cm
 * destroy the new id.
 */
static int ndk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct ndk_cm_caller me = { .task = current, .id = id };
	struct ndk_obj *obj;
	int ret = 0;

	/* An id its owner disowned, being destroyed (see connector.c). */
	if (!id->context)
		return 0;
	obj = ndk_obj_of(id->context);
	trace_ndk_cm_event(obj, ev);
	spin_lock(&ndk_cm_callers_lock);
	list_add(&me.node, &ndk_cm_callers);
	spin_unlock(&ndk_cm_callers_lock);
	if (obj->ops->cm_event)
		ret = obj->ops->cm_event(obj, id, ev);
	spin_lock(&ndk_cm_callers_lock);
	list_del(&me.node);
	spin_unlock(&ndk_cm_callers_lock);
	return ret;
}

/*
 * The local ACK timeout of ndk's RC connections, as the IBTA exponent
 * (4096 ns << n): how long a QP waits for its peer's acknowledgment
 * before it sends again. 0 keeps rdma_cm's own, about 0.5 s on RoCE.
 * NDKPI has no call for it, so it is the administrator's, as a Windows
 * provider's own settings are. iWARP leaves retransmission to TCP.
 */
static unsigned int ndk_ack_timeout;

static int ndk_ack_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 31);
}

static const struct kernel_param_ops ndk_ack_timeout_ops = {
	.set = ndk_ack_timeout_set,
	.get = param_get_uint,
};
module_param_cb(ack_timeout, &ndk_ack_timeout_ops, &ndk_ack_timeout, 0644);
MODULE_PARM_DESC(ack_timeout, "local ACK timeout of RC connections as 4096 ns << n, 1 to 31; 0 for rdma_cm's own (default 0)");

/**
 * ndk_cm_set_ack_timeout() - give @id the ack_timeout parameter's value
 * @id: an RC id, before its route is resolved or its request accepted
 *
 * May sleep.
 */
void ndk_cm_set_ack_timeout(struct rdma_cm_id *id)
{
	unsigned int t = READ_ONCE(ndk_ack_timeout);

	/* It refuses only an id that is not RC. */
	if (t)
		rdma_set_ack_timeout(id, t);
}

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
	ndk_cm_set_ack_timeout(id);
	*idp = id;
	return STATUS_SUCCESS;
}
