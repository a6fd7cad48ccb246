/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NDK_PD (pd.c).
 */
#ifndef _NDK_PRIV_PD_H
#define _NDK_PRIV_PD_H

#include "reg.h"

/**
 * struct ndk_pd - an NDK_PD
 * @ndk: the public object
 * @obj: lifetime state
 * @ibpd: the verbs protection domain
 * @reg: the registration path, for NdkRegisterMr
 * @mw_lock: protects @mws; held while windows of a region are revoked
 * @mws: the PD's memory windows (struct ndk_mw)
 */
struct ndk_pd {
	NDK_PD ndk;
	struct ndk_obj obj;
	struct ib_pd *ibpd;
	struct ndk_reg reg;
	struct mutex mw_lock; /* see above */
	struct list_head mws;
};

NTSTATUS ndk_create_pd(NDK_ADAPTER *pNdkAdapter,
		       NDK_FN_CREATE_COMPLETION CreateCompletion,
		       PVOID RequestContext, NDK_PD **ppNdkPd);

#endif /* _NDK_PRIV_PD_H */
