/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel API differences only the tests meet, on top of ndk's
 * (ndk/compat.h, whose rules apply: the newest API in the code, chosen
 * by feature, each entry naming the kernel that changed it).
 */
#ifndef _NDK_TESTS_COMPAT_H
#define _NDK_TESTS_COMPAT_H

#include <linux/fs_struct.h>
#include <linux/net.h>
#include <linux/timer.h>
#include "../ndk/compat.h"

/*
 * Between 6.12 and 7.3 a KUnit parameter generator came to take the
 * test as its first argument: NDK_PARAM_GEN(name) declares one the
 * kernel's way, with @prev and @desc.
 */
#ifdef HAVE_KUNIT_GEN_PARAMS_TEST
#define NDK_PARAM_GEN(name)						\
	const void *(name)(struct kunit *test, const void *prev, char *desc)
#else
#define NDK_PARAM_GEN(name) const void *(name)(const void *prev, char *desc)
#endif

/*
 * Between 6.12 and 7.3 the get_vector_affinity op went away (see
 * ndk/compat.h): a device double gets it where it exists.
 *
 * Return: whether @dev now has @fn as its op.
 */
#ifdef HAVE_IB_GET_VECTOR_AFFINITY
static inline bool
ndk_test_set_vector_affinity(struct ib_device *dev,
			     const struct cpumask *(*fn)(struct ib_device *,
							 int))
{
	dev->ops.get_vector_affinity = fn;
	return true;
}
#else
static inline bool
ndk_test_set_vector_affinity(struct ib_device *dev,
			     const struct cpumask *(*fn)(struct ib_device *,
							 int))
{
	return false;
}
#endif

/*
 * 6.2 ("timers: Rename del_timer_sync() to timer_delete_sync()"), and
 * 6.1.y stable has it too (Debian's 6.1.192 does): hence a probe.
 */
#ifndef HAVE_TIMER_DELETE_SYNC
static inline int timer_delete_sync(struct timer_list *timer)
{
	return del_timer_sync(timer);
}
#endif

/*
 * 6.16 ("timers: Rename destroy_timer_on_stack() as
 * timer_destroy_on_stack()"); 7.3 has only the new name.
 */
#ifndef HAVE_TIMER_DESTROY_ON_STACK
static inline void timer_destroy_on_stack(struct timer_list *timer)
{
	destroy_timer_on_stack(timer);
}
#endif

/*
 * Between 6.12 and 7.3 kernel_bind() and kernel_connect() came to take a
 * struct sockaddr_unsized, whose size is the length argument alone.
 */
#ifdef HAVE_KERNEL_BIND_SOCKADDR_UNSIZED
#define NDK_KERNEL_SOCKADDR(addr)	((struct sockaddr_unsized *)(addr))
#else
#define NDK_KERNEL_SOCKADDR(addr)	((struct sockaddr *)(addr))
#endif

/*
 * Between 6.12 and 7.3 kernel threads, KUnit's test threads among them,
 * came to resolve paths in an empty nullfs root; scoped_with_init_fs()
 * resolves them in init's. Before, kernel threads shared init's root.
 */
#ifndef scoped_with_init_fs
#define scoped_with_init_fs()
#endif

#endif /* _NDK_TESTS_COMPAT_H */
