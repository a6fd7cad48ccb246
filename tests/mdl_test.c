// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ndk_mdl, the tests of ndk/mdl.c: logical address mappings
 * (NdkBuildLAM/NdkReleaseLAM) of page-array memory, read and written
 * through the privileged token over a loopback connection, and chains
 * they refuse.
 */
#include "ndk_tests.h"

/*
 * A LAM of page-array memory from an odd offset: the size protocol, the
 * first byte offset, page-aligned addresses, and a send from the mapped
 * pages through the privileged token, built from atomic context.
 */
static void ndk_lam_roundtrip_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	NDK_LOGICAL_ADDRESS_MAPPING *lam;
	NDK_SGE ssge[3], rsge;
	unsigned long irq;
	struct ndk_menv *me = ndk_kzalloc_test(test, sizeof(*me));
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	UINT32 priv;
	ULONG size = 0, fbo, i, left;
	NTSTATUS st;

	ndk_menv_init(test, e, me);
	ndk_mem_init(test, t, NDK_MDL_PAGES, false, false, 3000,
		     2 * PAGE_SIZE + 100);
	KUNIT_ASSERT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, NULL,
							  &size, &fbo),
			STATUS_BUFFER_TOO_SMALL);
	/* As a Windows consumer computes it: sizeof() holds the first page. */
	KUNIT_EXPECT_EQ(test, size,
			(ULONG)(sizeof(*lam) + 2 * sizeof(NDK_LOGICAL_ADDRESS)));
	lam = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lam);
	size--;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, lam,
							  &size, &fbo),
			STATUS_BUFFER_TOO_SMALL);
	spin_lock_irqsave(&ndk_test_lock, irq);
	st = e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len, NULL, NULL, lam,
					 &size, &fbo);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_ASSERT_EQ(test, st, STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, fbo, 3000U);
	KUNIT_ASSERT_EQ(test, lam->AdapterPageCount, 3U);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, lam->AdapterPageArray[i] & ~PAGE_MASK,
				0ULL);

	/* Send the region from its logical addresses to the local buffer. */
	e->pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e->pd, &priv);
	ndk_mem_fill(t, 0, t->len, 77);
	left = t->len;
	for (i = 0; i < 3; i++) {
		ssge[i].LogicalAddress = lam->AdapterPageArray[i] +
					 (i ? 0 : fbo);
		ssge[i].Length = min_t(ULONG, left,
				       PAGE_SIZE - (i ? 0 : fbo));
		ssge[i].MemoryRegionToken = priv;
		left -= ssge[i].Length;
	}
	rsge.VirtualAddress = me->lmem.base;
	rsge.Length = t->len;
	rsge.MemoryRegionToken =
		me->lmr->Dispatch->NdkGetLocalTokenFromMr(me->lmr);
	KUNIT_ASSERT_EQ(test, me->p.aqp->Dispatch->NdkReceive(me->p.aqp,
							      (void *)0x41,
							    &rsge, 1),
			STATUS_SUCCESS);
	KUNIT_ASSERT_EQ(test, me->p.pqp->Dispatch->NdkSend(me->p.pqp,
							   (void *)0x42, ssge,
							 3, 0),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x42,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_EQ(test, ndk_test_result(test, me, e->cq, (void *)0x41,
					      NULL),
			STATUS_SUCCESS);
	KUNIT_EXPECT_TRUE(test, ndk_mem_check(&me->lmem, 0, t->len, 77));
	spin_lock_irqsave(&ndk_test_lock, irq);
	e->a->Dispatch->NdkReleaseLAM(e->a, lam);
	spin_unlock_irqrestore(&ndk_test_lock, irq);
	KUNIT_EXPECT_EQ(test, lam->AdapterPageCount, 0U);
	ndk_mem_free(t);
	ndk_menv_free(test, me);
}

/* Memory that is not virtually contiguous maps nothing. */
static void ndk_lam_invalid_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		NDK_LOGICAL_ADDRESS pages[8];
	} buf = {};
	ULONG size = sizeof(buf), fbo;
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));

	ndk_mem_init(test, t, NDK_MDL_KVA, true, true, 100, 3 * PAGE_SIZE);
	t->mdl[0].length -= 8;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl,
							  t->len - 8, NULL,
							  NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, buf.lam.AdapterPageCount, 0U);
	t->mdl[0].length += 8;
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl,
							  t->len + 1, NULL,
							  NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	/* No bytes, nowhere to say the size or the offset, no memory. */
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, 0,
							  NULL, NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, &buf.lam,
							  NULL, &fbo),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, t->mdl, t->len,
							  NULL, NULL, &buf.lam,
							  &size, NULL),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, e->a->Dispatch->NdkBuildLAM(e->a, NULL, t->len,
							  NULL, NULL, &buf.lam,
							  &size, &fbo),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, buf.lam.AdapterPageCount, 0U);
	/* Releasing nothing, or a mapping never built, does nothing. */
	e->a->Dispatch->NdkReleaseLAM(e->a, NULL);
	e->a->Dispatch->NdkReleaseLAM(e->a, &buf.lam);
	ndk_mem_free(t);
}

/* What NdkBuildLAM gives for the chain at @mdl over @len bytes. */
static NTSTATUS ndk_lam_try(struct kunit *test, struct ndk_cenv *e,
			    struct ndk_mdl *mdl, ULONG len)
{
	struct {
		NDK_LOGICAL_ADDRESS_MAPPING lam;
		NDK_LOGICAL_ADDRESS pages[NDK_MEM_PAGES + 1];
	} buf = {};
	ULONG size = sizeof(buf), fbo = 0;
	NTSTATUS st;

	st = e->a->Dispatch->NdkBuildLAM(e->a, mdl, len, NULL, NULL, &buf.lam,
					 &size, &fbo);
	if (st == STATUS_SUCCESS)
		e->a->Dispatch->NdkReleaseLAM(e->a, &buf.lam);
	else
		KUNIT_EXPECT_EQ(test, buf.lam.AdapterPageCount, 0U);
	return st;
}

/* Memory of ndk_kunit.ko itself: neither vmalloc'd nor in the linear map. */
static u8 ndk_lam_static[64];

/*
 * MDLs whose pages cannot be walked map nothing: a kind ndk does not
 * know, a page array, bio_vec array or scatterlist holding fewer bytes
 * than the length says, a second bio_vec or scatterlist entry (or a
 * second MDL of a chain) starting inside its page, and a kernel address
 * that has no struct page ndk can find. The same MDLs, repaired, map.
 */
static void ndk_lam_refused_test(struct kunit *test)
{
	struct ndk_cenv *e = test->priv;
	struct ndk_mem *t = ndk_kzalloc_test(test, sizeof(*t));
	struct ndk_mdl mdl;

	/* A kind that is none of enum ndk_mdl_kind. */
	ndk_mem_init(test, t, NDK_MDL_KVA, false, false, 100, PAGE_SIZE);
	mdl = t->mdl[0];
	mdl.kind = NDK_MDL_SG + 1;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, &mdl, t->len),
			STATUS_INVALID_PARAMETER);
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_SUCCESS);
	ndk_mem_free(t);

	/* A chain whose second MDL starts 8 bytes into its page. */
	ndk_mem_init(test, t, NDK_MDL_KVA, true, true, 100, 3 * PAGE_SIZE);
	mdl = t->mdl[1];
	ndk_mdl_init_kva(&t->mdl[1], t->base + 2 * PAGE_SIZE + 8,
			 mdl.length);
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->mdl[1] = mdl;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_SUCCESS);
	ndk_mem_free(t);

	/* Three pages from 3000 bytes into the first, of two. */
	ndk_mem_init(test, t, NDK_MDL_PAGES, false, false, 3000,
		     2 * PAGE_SIZE);
	t->mdl[0].nents = 2;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->mdl[0].nents = 3;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_SUCCESS);
	ndk_mem_free(t);

	/* bio_vecs: two entries hold less; the second starts at byte 8. */
	ndk_mem_init(test, t, NDK_MDL_BVEC, false, false, 100, 2 * PAGE_SIZE);
	t->mdl[0].nents = 2;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->mdl[0].nents = NDK_MEM_PAGES;
	t->bv[1].bv_offset = 8;
	t->bv[1].bv_len = PAGE_SIZE - 8;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->bv[1].bv_offset = 0;
	t->bv[1].bv_len = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_SUCCESS);
	ndk_mem_free(t);

	/* The same with a scatterlist. */
	ndk_mem_init(test, t, NDK_MDL_SG, false, false, 100, 2 * PAGE_SIZE);
	t->mdl[0].nents = 2;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->mdl[0].nents = NDK_MEM_PAGES;
	t->sg[1].offset = 8;
	t->sg[1].length = PAGE_SIZE - 8;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_INVALID_PARAMETER);
	t->sg[1].offset = 0;
	t->sg[1].length = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, t->mdl, t->len),
			STATUS_SUCCESS);
	ndk_mem_free(t);

	/* No struct page behind the address. */
	ndk_mdl_init_kva(&mdl, ndk_lam_static, sizeof(ndk_lam_static));
	KUNIT_EXPECT_EQ(test, ndk_lam_try(test, e, &mdl, mdl.length),
			STATUS_INVALID_PARAMETER);
}

static struct kunit_case ndk_mdl_cases[] = {
	KUNIT_CASE(ndk_lam_roundtrip_test),
	KUNIT_CASE(ndk_lam_invalid_test),
	KUNIT_CASE(ndk_lam_refused_test),
	{}
};

NDK_SUITE(mdl, ndk_conn_init_test, ndk_conn_exit_test);
