// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Module core: the ib_client that tracks RDMA devices, adapter discovery
 * and notification; module init and exit, which start and stop the
 * workqueue every asynchronous request runs on (object.c).
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include "ndk_priv.h"

MODULE_AUTHOR("ndk developers");
MODULE_DESCRIPTION("Network Direct Kernel Provider Interface over Linux RDMA");
MODULE_LICENSE("Dual BSD/GPL");

/* The module state of every driver built into the kernel. */
const enum module_state ndk_builtin_state = MODULE_STATE_LIVE;

/* Protects the ndk_devices list and each entry's inline-size probe. */
DEFINE_MUTEX(ndk_devices_lock);
LIST_HEAD(ndk_devices);

/* Serializes notifier delivery so ADDED/REMOVED arrive in order. */
static DEFINE_MUTEX(ndk_notify_lock);
static struct ib_client ndk_ib_client;
static BLOCKING_NOTIFIER_HEAD(ndk_adapter_chain);

/**
 * ndk_rdma_technology() - the NDK name of a port's transport
 * @ibdev: device
 * @port: port number
 *
 * Return: the NDK_RDMA_TECHNOLOGY value for NDK_ADAPTER_INFO.
 */
NDK_RDMA_TECHNOLOGY ndk_rdma_technology(struct ib_device *ibdev, u32 port)
{
	if (rdma_protocol_iwarp(ibdev, port))
		return NdkiWarp;
	if (rdma_protocol_roce_udp_encap(ibdev, port))
		return NdkRoCEv2;
	if (rdma_protocol_roce(ibdev, port))
		return NdkRoCE;
	if (rdma_protocol_ib(ibdev, port))
		return NdkInfiniBand;
	return NdkUndefined;
}

/**
 * ndk_device_port_of() - which port of @ibdev a network interface serves
 * @ibdev: device
 * @ndev: network interface associated with @ibdev
 * @port: the port number, on success
 *
 * Single-port devices need no lookup. On RoCE the GID table names the
 * interface of every port. Multi-port iWARP devices carry no such table;
 * ports past the first are not offered there.
 *
 * Return: 0, or -ENODEV when no port matches.
 */
int ndk_device_port_of(struct ib_device *ibdev, struct net_device *ndev,
		       u32 *port)
{
	const struct ib_gid_attr *attr;
	struct net_device *gid_ndev;
	u32 p;

	if (rdma_end_port(ibdev) == rdma_start_port(ibdev)) {
		*port = rdma_start_port(ibdev);
		return 0;
	}
	rdma_for_each_port(ibdev, p) {
		if (!rdma_protocol_roce(ibdev, p))
			continue;
		attr = rdma_get_gid_attr(ibdev, p, 0);
		if (IS_ERR(attr))
			continue;
		rcu_read_lock();
		gid_ndev = rdma_read_gid_attr_ndev_rcu(attr);
		rcu_read_unlock();
		rdma_put_gid_attr(attr);
		if (!IS_ERR(gid_ndev) && gid_ndev == ndev) {
			*port = p;
			return 0;
		}
	}
	if (rdma_protocol_iwarp(ibdev, rdma_start_port(ibdev))) {
		*port = rdma_start_port(ibdev);
		return 0;
	}
	return -ENODEV;
}

/* Find the adapters of @dev: one per port that has a network interface. */
static void ndk_device_find_adapters(struct ndk_device *dev)
{
	struct ndk_adapter_desc *descs = dev->descs;
	int max = ARRAY_SIZE(dev->descs);
	struct net_device *ndev;
	struct ib_device *owner;
	int n = 0;
	u32 port;

	rcu_read_lock();
	for_each_netdev_rcu(&init_net, ndev) {
		owner = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
		if (!owner)
			continue;
		if (owner == dev->ibdev &&
		    !ndk_device_port_of(owner, ndev, &port)) {
			if (n < max) {
				descs[n].ifindex = ndev->ifindex;
				descs[n].port = port;
				descs[n].rdma_technology =
					ndk_rdma_technology(owner, port);
				strscpy(descs[n].ibdev_name,
					dev_name(&owner->dev),
					sizeof(descs[n].ibdev_name));
			}
			n++;
		}
		ib_device_put(owner);
	}
	rcu_read_unlock();
	dev->ndescs = min(n, max);
}

/**
 * ndk_enum_adapters() - list the NDK adapters present now
 * @descs: array to fill
 * @max: its length (may be 0 to ask for the count)
 *
 * Process context.
 *
 * Return: the number of adapters, which may exceed @max.
 */
int ndk_enum_adapters(struct ndk_adapter_desc *descs, int max)
{
	struct ndk_device *dev;
	int i, n = 0;

	mutex_lock(&ndk_devices_lock);
	list_for_each_entry(dev, &ndk_devices, list) {
		for (i = 0; i < dev->ndescs; i++, n++)
			if (n < max)
				descs[n] = dev->descs[i];
	}
	mutex_unlock(&ndk_devices_lock);
	return n;
}
EXPORT_SYMBOL_GPL(ndk_enum_adapters);

static void ndk_notify_device(struct ndk_device *dev, unsigned long event)
{
	int i;

	for (i = 0; i < dev->ndescs; i++)
		blocking_notifier_call_chain(&ndk_adapter_chain, event,
					     &dev->descs[i]);
}

/*
 * Whether @nb is on the chain already. The notifier core would warn of a
 * second registration, a consumer's mistake that must not taint the
 * kernel. Every change of the chain holds ndk_notify_lock, as the caller.
 */
static bool ndk_notifier_registered(struct notifier_block *nb)
{
	struct notifier_block *n;

	for (n = rcu_dereference_protected(ndk_adapter_chain.head,
					   lockdep_is_held(&ndk_notify_lock));
	     n; n = rcu_dereference_protected(n->next,
					      lockdep_is_held(&ndk_notify_lock)))
		if (n == nb)
			return true;
	return false;
}

/**
 * ndk_register_adapter_notifier() - be told when adapters come and go
 * @nb: notifier; called in process context with an enum ndk_adapter_event
 *	and a const struct ndk_adapter_desc *
 *
 * @nb first receives NDK_ADAPTER_ADDED for every adapter already present.
 * The callback may open and close adapters and enumerate them; it must
 * not register or unregister notifiers. On NDK_ADAPTER_REMOVED it must
 * arrange for the adapters it opened there to be closed.
 *
 * Return: 0; -EEXIST if @nb is registered already, -ENOMEM.
 */
int ndk_register_adapter_notifier(struct notifier_block *nb)
{
	struct ndk_adapter_desc *descs;
	int i, n, ret;

	mutex_lock(&ndk_notify_lock);
	if (ndk_notifier_registered(nb)) {
		ret = -EEXIST;
		goto out;
	}
	ret = blocking_notifier_chain_register(&ndk_adapter_chain, nb);
	if (ret)
		goto out;
	/* Replay from a copy: the callback may take ndk_devices_lock. */
	n = ndk_enum_adapters(NULL, 0);
	descs = NDK_FI_NULL(kcalloc(max(n, 1), sizeof(*descs), GFP_KERNEL));
	if (!descs) {
		blocking_notifier_chain_unregister(&ndk_adapter_chain, nb);
		ret = -ENOMEM;
		goto out;
	}
	n = min(n, ndk_enum_adapters(descs, n));
	for (i = 0; i < n; i++)
		nb->notifier_call(nb, NDK_ADAPTER_ADDED, &descs[i]);
	kfree(descs);
out:
	mutex_unlock(&ndk_notify_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(ndk_register_adapter_notifier);

/**
 * ndk_unregister_adapter_notifier() - stop adapter notifications
 * @nb: a notifier passed to ndk_register_adapter_notifier()
 */
void ndk_unregister_adapter_notifier(struct notifier_block *nb)
{
	mutex_lock(&ndk_notify_lock);
	blocking_notifier_chain_unregister(&ndk_adapter_chain, nb);
	mutex_unlock(&ndk_notify_lock);
}
EXPORT_SYMBOL_GPL(ndk_unregister_adapter_notifier);

static int ndk_ib_add(struct ib_device *ibdev)
{
	struct ndk_device *dev;

	/* Kernel verbs and rdma_cm are what NDK maps onto. */
	if (!ibdev->ops.alloc_pd || !ibdev->ops.create_qp)
		return -EOPNOTSUPP;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->stats = alloc_percpu(struct ndk_stats);
	if (!dev->stats) {
		kfree(dev);
		return -ENOMEM;
	}
	dev->ibdev = ibdev;
	kref_init(&dev->ref);
	mutex_init(&dev->probe_lock);
	spin_lock_init(&dev->objs_lock);
	INIT_LIST_HEAD(&dev->objs);
	/* Marked from the CQ polls, which may run in hard interrupts. */
	xa_init_flags(&dev->regions, XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&dev->held_lock);
	INIT_LIST_HEAD(&dev->held_cqs);
	ndk_device_find_adapters(dev);
	ndk_device_debugfs_add(dev);

	mutex_lock(&ndk_notify_lock);
	mutex_lock(&ndk_devices_lock);
	list_add_tail(&dev->list, &ndk_devices);
	mutex_unlock(&ndk_devices_lock);
	ib_set_client_data(ibdev, &ndk_ib_client, dev);
	ndk_notify_device(dev, NDK_ADAPTER_ADDED);
	mutex_unlock(&ndk_notify_lock);
	return 0;
}

/*
 * The live object of @dev with a kill operation (a QP) with the lowest
 * object id above *@after, which moves to its id; ids only grow, so a
 * walk by id sees each once and needs no cursor on the list. *@got says
 * whether it was referenced: one whose last reference is gone is being
 * destroyed already.
 */
static struct ndk_obj *ndk_device_next_kill(struct ndk_device *dev,
					    u32 *after, bool *got)
{
	struct ndk_obj *obj, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&dev->objs_lock, flags);
	list_for_each_entry(obj, &dev->objs, dev_node) {
		if (obj->ops->kill &&
		    obj->id > *after && (!found || obj->id < found->id))
			found = obj;
	}
	if (found) {
		*after = found->id;
		*got = refcount_inc_not_zero(&found->refs);
	}
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	return found;
}

/*
 * Removal has begun: no object goes live on @dev any more, and every QP
 * moves to the error state (its type's kill operation), so that what is
 * posted completes with the flush status. Connections end when rdma_cm,
 * whose client is removed after ours, reports the removal on each of
 * their ids.
 */
static void ndk_device_kill(struct ndk_device *dev)
{
	struct ndk_obj *obj;
	unsigned long flags;
	u32 after = 0;
	bool got;

	spin_lock_irqsave(&dev->objs_lock, flags);
	dev->dead = true;
	spin_unlock_irqrestore(&dev->objs_lock, flags);
	while ((obj = ndk_device_next_kill(dev, &after, &got))) {
		if (!got)
			continue;
		obj->ops->kill(obj);
		ndk_obj_put(obj);
	}
}

static void ndk_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct ndk_device *dev = client_data;

	/* Off the list first, so that no open starts after the news. */
	mutex_lock(&ndk_notify_lock);
	mutex_lock(&ndk_devices_lock);
	list_del(&dev->list);
	mutex_unlock(&ndk_devices_lock);
	ndk_device_kill(dev);
	ndk_notify_device(dev, NDK_ADAPTER_REMOVED);
	mutex_unlock(&ndk_notify_lock);
	/*
	 * Open adapters hold device references: unregistration waits for
	 * their consumers to close them. They hold @dev too.
	 */
	ndk_device_debugfs_remove(dev);
	kref_put(&dev->ref, ndk_device_release);
}

/**
 * ndk_device_release() - the last reference on a device entry is gone
 * @ref: its reference count
 *
 * The ib_client removed the device and every adapter on it is closed.
 */
void ndk_device_release(struct kref *ref)
{
	struct ndk_device *dev = container_of(ref, struct ndk_device, ref);

	/* Queued by a poll (the first open set it up); no region is left. */
	if (dev->probed)
		cancel_work_sync(&dev->restore_work);
	mutex_destroy(&dev->probe_lock);
	xa_destroy(&dev->regions);
	free_percpu(dev->stats);
	kfree(dev);
}

static struct ib_client ndk_ib_client = {
	.name = "ndk",
	.add = ndk_ib_add,
	.remove = ndk_ib_remove,
};

#if IS_ENABLED(CONFIG_KUNIT)
/**
 * ndk_module() - ndk's own module, for the tests
 *
 * Return: THIS_MODULE, so the tests can check the module references that
 * open adapters hold.
 */
struct module *ndk_module(void)
{
	return THIS_MODULE;
}
EXPORT_SYMBOL_NDK_TEST(ndk_module);
#endif

static int __init ndk_init(void)
{
	int ret;

	ret = ndk_slab_init();
	if (ret)
		return ret;
	ndk_wq = alloc_workqueue("ndk", WQ_MEM_RECLAIM | WQ_PERCPU, 0);
	if (!ndk_wq) {
		ndk_slab_exit();
		return -ENOMEM;
	}
	ndk_debugfs_init();
	ret = ib_register_client(&ndk_ib_client);
	if (ret) {
		ndk_debugfs_exit();
		destroy_workqueue(ndk_wq);
		ndk_slab_exit();
	}
	return ret;
}

static void __exit ndk_exit(void)
{
	ib_unregister_client(&ndk_ib_client);
	ndk_debugfs_exit();
	/*
	 * The last objects are freed on ndk_wq, SRQs only once a grace
	 * period has queued their work there; a QP's release on ndk_wq
	 * frees it after a grace period.
	 */
	rcu_barrier();
	destroy_workqueue(ndk_wq);
	rcu_barrier();
	ndk_slab_exit();
}

module_init(ndk_init);
module_exit(ndk_exit);
