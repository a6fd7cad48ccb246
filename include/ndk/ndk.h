/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Linux entry points of the ndk provider: what NDIS does on Windows.
 *
 * A consumer module finds adapters (one per RDMA device port that has a
 * network interface), opens one by the interface index, and from then on
 * uses only the NDKPI dispatch tables in <ndk/ndkpi.h>.
 */
#ifndef _NDK_NDK_H
#define _NDK_NDK_H

#include <linux/notifier.h>
#include <ndk/ndkpi.h>

/* Highest NDKPI version this provider implements. */
#define NDK_PROVIDER_VERSION_MAJOR	1
#define NDK_PROVIDER_VERSION_MINOR	2

#define NDK_ADAPTER_NAME_MAX		64

/**
 * struct ndk_adapter_desc - an NDK-capable RDMA port
 * @ifindex: index of the port's network interface in init_net
 * @port: port number on the RDMA device
 * @rdma_technology: transport, as NDK_ADAPTER_INFO reports it
 * @ibdev_name: name of the RDMA device (e.g. "rxe0")
 */
struct ndk_adapter_desc {
	int ifindex;
	u32 port;
	NDK_RDMA_TECHNOLOGY rdma_technology;
	char ibdev_name[NDK_ADAPTER_NAME_MAX];
};

/**
 * enum ndk_adapter_event - adapter notifier events
 * @NDK_ADAPTER_ADDED: an adapter appeared; data is a struct ndk_adapter_desc
 * @NDK_ADAPTER_REMOVED: an adapter is going away; consumers must close
 *	every NDK_ADAPTER they opened on it (data as above)
 */
enum ndk_adapter_event {
	NDK_ADAPTER_ADDED = 1,
	NDK_ADAPTER_REMOVED,
};

NTSTATUS ndk_open_adapter(int ifindex, NDK_VERSION version,
			  NDK_ADAPTER **adapter);
void ndk_close_adapter(NDK_ADAPTER *adapter);
int ndk_enum_adapters(struct ndk_adapter_desc *descs, int max);
int ndk_register_adapter_notifier(struct notifier_block *nb);
void ndk_unregister_adapter_notifier(struct notifier_block *nb);

#endif /* _NDK_NDK_H */
