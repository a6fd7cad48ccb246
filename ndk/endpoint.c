// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDK_SHARED_ENDPOINT: a local address and port that several connectors
 * connect from. An rdma_cm id bound with address reuse holds the port;
 * each connector binds its own id to the same address with reuse. The
 * connectors are successors of the endpoint, so the port stays taken
 * until the endpoint and every connector over it are closed.
 *
 * rdma_cm lets any number of reusing ids share a port, so ndk keeps its
 * own tables: a list of the endpoints, to refuse a second shared endpoint
 * on a taken address, and the connections from endpoints hashed by
 * endpoint and destination, to refuse a second connection from one
 * endpoint to the same destination in constant time, however many
 * connections a consumer opens from one endpoint.
 */
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <net/ipv6.h>
#include "ndk_priv.h"

static DEFINE_SPINLOCK(ndk_sep_lock);
static LIST_HEAD(ndk_seps);
static DEFINE_HASHTABLE(ndk_sep_conns, 10);

static struct ndk_sep *to_sep(NDK_SHARED_ENDPOINT *s)
{
	return container_of(s, struct ndk_sep, ndk);
}

/**
 * ndk_sep_same_addr() - equal IP address and port
 * @a: an AF_INET or AF_INET6 address
 * @b: another
 *
 * Return: true if family, address and port match.
 */
static bool ndk_sep_same_addr(const struct sockaddr *a,
			      const struct sockaddr *b)
{
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a6->sin6_port == b6->sin6_port &&
	       ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
}

/* The bucket key of a connection from @sep to @dst. */
static u32 ndk_sep_conn_key(const struct ndk_sep *sep,
			    const struct sockaddr *dst)
{
	const struct sockaddr_in6 *d6 = (const void *)dst;
	const struct sockaddr_in *d4 = (const void *)dst;
	u32 seed = hash_ptr(sep, 32);

	if (dst->sa_family == AF_INET)
		return jhash_2words((__force u32)d4->sin_addr.s_addr,
				    (__force u32)d4->sin_port, seed);
	return jhash_2words(ipv6_addr_hash(&d6->sin6_addr),
			    (__force u32)d6->sin6_port, seed);
}

/**
 * ndk_sep_add_conn() - a connector starts connecting from @sep
 * @sep: the shared endpoint
 * @conn: the connector, its destination already set
 *
 * Two connections from one endpoint to one destination would have the
 * same four-tuple. Atomic context is fine.
 *
 * Return: STATUS_SUCCESS or STATUS_ADDRESS_ALREADY_EXISTS.
 */
NTSTATUS ndk_sep_add_conn(struct ndk_sep *sep, struct ndk_connector *conn)
{
	const struct sockaddr *dst = (struct sockaddr *)&conn->dst;
	u32 key = ndk_sep_conn_key(sep, dst);
	struct ndk_connector *other;
	unsigned long flags;

	spin_lock_irqsave(&ndk_sep_lock, flags);
	hash_for_each_possible(ndk_sep_conns, other, sep_node, key) {
		if (other->sep == sep &&
		    ndk_sep_same_addr((struct sockaddr *)&other->dst, dst)) {
			spin_unlock_irqrestore(&ndk_sep_lock, flags);
			return STATUS_ADDRESS_ALREADY_EXISTS;
		}
	}
	conn->sep = sep;
	hash_add(ndk_sep_conns, &conn->sep_node, key);
	spin_unlock_irqrestore(&ndk_sep_lock, flags);
	return STATUS_SUCCESS;
}
EXPORT_SYMBOL_NDK_TEST(ndk_sep_add_conn);

/**
 * ndk_sep_del_conn() - the connector is going away
 * @conn: a connector, over a shared endpoint or not
 */
void ndk_sep_del_conn(struct ndk_connector *conn)
{
	unsigned long flags;

	if (!conn->sep)
		return;
	spin_lock_irqsave(&ndk_sep_lock, flags);
	hash_del(&conn->sep_node);
	spin_unlock_irqrestore(&ndk_sep_lock, flags);
}
EXPORT_SYMBOL_NDK_TEST(ndk_sep_del_conn);

static NTSTATUS ndk_sep_create(struct ndk_obj *obj)
{
	struct ndk_sep *sep = container_of(obj, struct ndk_sep, obj);
	struct sockaddr *bound;
	struct ndk_sep *other;
	struct rdma_cm_id *id;
	NTSTATUS status;
	int err;

	status = ndk_cm_create_id(sep, &sep->id);
	if (status)
		return status;
	id = sep->id;
	err = rdma_set_reuseaddr(id, 1);
	if (!err)
		err = NDK_FI_ERR(rdma_bind_addr(id, (struct sockaddr *)&sep->addr));
	if (!err && id->device != obj->adapter->ibdev)
		err = -ENODEV;
	if (err)
		return ndk_bind_status((struct sockaddr *)&sep->addr, err);

	bound = (struct sockaddr *)&id->route.addr.src_addr;
	spin_lock_irq(&ndk_sep_lock);
	list_for_each_entry(other, &ndk_seps, list) {
		if (ndk_sep_same_addr((struct sockaddr *)&other->addr, bound)) {
			spin_unlock_irq(&ndk_sep_lock);
			return STATUS_SHARING_VIOLATION;
		}
	}
	memcpy(&sep->addr, bound, sizeof(sep->addr));
	list_add(&sep->list, &ndk_seps);
	spin_unlock_irq(&ndk_sep_lock);
	return STATUS_SUCCESS;
}

static void ndk_sep_destroy(struct ndk_obj *obj)
{
	struct ndk_sep *sep = container_of(obj, struct ndk_sep, obj);

	spin_lock_irq(&ndk_sep_lock);
	if (!list_empty(&sep->list))
		list_del(&sep->list);
	spin_unlock_irq(&ndk_sep_lock);
	if (sep->id)
		rdma_destroy_id(sep->id);
}

static void ndk_sep_free(struct ndk_obj *obj)
{
	kfree(container_of(obj, struct ndk_sep, obj));
}

/*
 * Not inside ndk's rdma_cm handler, whose id's lock rdma_destroy_id()
 * would take as a second of its class (also after a failed bind).
 */
static bool ndk_sep_inline_ok(struct ndk_obj *obj)
{
	return !ndk_cm_handler_id();
}

static const struct ndk_obj_ops ndk_sep_ops = {
	.create = ndk_sep_create,
	.destroy = ndk_sep_destroy,
	.free = ndk_sep_free,
	.inline_ok = ndk_sep_inline_ok,
};

static NTSTATUS ndk_sep_get_local_address(NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
					  PSOCKADDR pAddress,
					  ULONG *pAddressLength)
{
	return ndk_copy_addr((struct sockaddr *)&to_sep(pNdkSharedEndpoint)->addr,
			     pAddress, pAddressLength);
}

static const NDK_SHARED_ENDPOINT_DISPATCH ndk_sep_dispatch = {
	.NdkCloseSharedEndpoint = ndk_close_object,
	.NdkQueryExtension = ndk_query_extension,
	.NdkGetLocalAddress = ndk_sep_get_local_address,
};

NDK_OBJ_CHECK_LAYOUT(struct ndk_sep);

/**
 * ndk_sep_of() - the live shared endpoint behind a consumer's pointer
 * @s: the consumer's pointer
 * @adapter: the adapter it must belong to
 *
 * Return: the endpoint, or NULL if @s is none of @adapter's.
 */
struct ndk_sep *ndk_sep_of(NDK_SHARED_ENDPOINT *s, struct ndk_adapter *adapter)
{
	if (!s || s->Header.ObjectType != NdkObjectTypeSharedEndpoint)
		return NULL;
	if (to_sep(s)->obj.adapter != adapter ||
	    READ_ONCE(to_sep(s)->obj.state) != NDK_OBJ_LIVE)
		return NULL;
	return to_sep(s);
}

/**
 * ndk_create_shared_endpoint() - NdkCreateSharedEndpoint
 * @pNdkAdapter: the adapter
 * @pAddress: local address; port 0 takes an ephemeral port
 * @AddressLength: its size
 * @CreateCompletion: called with the new endpoint, from ndk_wq, when the
 *	creation pends
 * @RequestContext: passed back to @CreateCompletion
 * @ppNdkSharedEndpoint: receives the endpoint when the creation completes
 *	inline
 *
 * Callable from atomic context. Where the kernel can tell that the caller
 * may sleep, outside ndk's rdma_cm handler, and with @ppNdkSharedEndpoint
 * given, the endpoint is created inline.
 *
 * Return: STATUS_SUCCESS (created inline), STATUS_PENDING,
 * STATUS_INVALID_PARAMETER or STATUS_INSUFFICIENT_RESOURCES; the
 * creation, inline or pending, fails with STATUS_SHARING_VIOLATION for
 * an address in use and STATUS_INVALID_ADDRESS for one that is not the
 * adapter's.
 */
NTSTATUS ndk_create_shared_endpoint(NDK_ADAPTER *pNdkAdapter,
				    const PSOCKADDR pAddress,
				    ULONG AddressLength,
				    NDK_FN_CREATE_COMPLETION CreateCompletion,
				    PVOID RequestContext,
				    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{
	ULONG len = ndk_addr_len(pAddress, AddressLength);
	struct ndk_adapter *adapter;
	struct ndk_sep *sep;
	NTSTATUS status;

	if (!pNdkAdapter || !CreateCompletion || !len)
		return STATUS_INVALID_PARAMETER;
	adapter = container_of(pNdkAdapter, struct ndk_adapter, ndk);
	sep = NDK_FI_NULL(kzalloc(sizeof(*sep), GFP_ATOMIC));
	if (!sep)
		return STATUS_INSUFFICIENT_RESOURCES;
	sep->ndk.Dispatch = &ndk_sep_dispatch;
	INIT_LIST_HEAD(&sep->list);
	memcpy(&sep->addr, pAddress, len);
	ndk_obj_init(&sep->obj, &sep->ndk.Header, NdkObjectTypeSharedEndpoint,
		     &ndk_sep_ops, &adapter->obj);
	status = ndk_obj_create(&sep->obj, CreateCompletion, RequestContext,
				!!ppNdkSharedEndpoint);
	if (status == STATUS_SUCCESS)
		*ppNdkSharedEndpoint = &sep->ndk;
	return status;
}
