/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Linux memory descriptor list (MDL) of ndk.
 *
 * NDKPI describes memory to register or map with a Windows MDL: a
 * virtually contiguous buffer, possibly a chain of pieces. ndk's MDL
 * describes kernel memory in the forms a Linux kernel consumer already
 * holds, so that building one costs a few stores and no allocation:
 *
 *  - a kernel virtual range (kmalloc'd, vmalloc'd, or any linear-map
 *    address),
 *  - an array of struct page with the offset into the first page,
 *  - a bio_vec array,
 *  - a scatterlist (CPU side, not DMA-mapped).
 *
 * Pieces chain through @next as MDLs chain. Together they stand for one
 * virtually contiguous region: every boundary between two pieces, and
 * between two pages inside a piece, must fall on a page boundary; only
 * the region's start and end may be inside a page. ndk refuses anything
 * else with STATUS_INVALID_PARAMETER.
 *
 * Ownership: the consumer owns the MDLs and the memory they describe.
 * Both must stay valid and unchanged from the call that takes the MDL
 * (NdkRegisterMr, NdkBuildLAM) until that request completed; the memory
 * (not the MDL) must stay until the region is deregistered or the mapping
 * released. User memory is out of scope: pin and map it yourself and pass
 * its pages.
 */
#ifndef _NDK_MDL_H
#define _NDK_MDL_H

#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/types.h>

/**
 * enum ndk_mdl_kind - the form of memory one MDL describes
 * @NDK_MDL_KVA: a kernel virtual range at @addr
 * @NDK_MDL_PAGES: @nents pages at @pages, starting @offset bytes into
 *	the first
 * @NDK_MDL_BVEC: @nents bio_vecs at @bvec
 * @NDK_MDL_SG: a scatterlist of @nents entries at @sgl
 */
enum ndk_mdl_kind {
	NDK_MDL_KVA,
	NDK_MDL_PAGES,
	NDK_MDL_BVEC,
	NDK_MDL_SG,
};

/**
 * struct ndk_mdl - one piece of a memory descriptor list
 * @next: the next piece of the chain, or NULL
 * @Next: the same pointer under the WDK's name, for ported Windows code
 *	that chains MDLs by hand (<ndk/wdk/wdm.h>)
 * @kind: which member of the union describes the memory
 * @length: bytes this piece describes (MmGetMdlByteCount)
 * @offset: for NDK_MDL_PAGES, where the memory starts in the first page
 * @nents: entries at @pages, @bvec or @sgl
 * @va: the virtual address of the first byte (MmGetMdlVirtualAddress).
 *	The remote address a peer uses is this plus an offset; it is an
 *	index into the region, never dereferenced.
 * @addr: NDK_MDL_KVA memory
 * @pages: NDK_MDL_PAGES memory
 * @bvec: NDK_MDL_BVEC memory
 * @sgl: NDK_MDL_SG memory
 *
 * Fill it with the ndk_mdl_init_*() helpers, which set @va to the kernel
 * address of the first byte.
 */
struct ndk_mdl {
	union {
		struct ndk_mdl *next;
		struct ndk_mdl *Next;
	};
	enum ndk_mdl_kind kind;
	u32 length;
	u32 offset;
	u32 nents;
	u64 va;
	union {
		void *addr;
		struct page **pages;
		const struct bio_vec *bvec;
		struct scatterlist *sgl;
	};
};

/**
 * ndk_mdl_init_kva() - describe a kernel virtual range
 * @mdl: the MDL
 * @addr: kmalloc'd, vmalloc'd or other linear-map memory
 * @length: bytes
 */
static inline void ndk_mdl_init_kva(struct ndk_mdl *mdl, void *addr,
				    u32 length)
{
	*mdl = (struct ndk_mdl){ .kind = NDK_MDL_KVA, .length = length,
				 .va = (uintptr_t)addr, .addr = addr };
}

/**
 * ndk_mdl_init_pages() - describe an array of pages
 * @mdl: the MDL
 * @pages: the pages
 * @nents: how many
 * @offset: where the memory starts in @pages[0]
 * @length: bytes from there
 */
static inline void ndk_mdl_init_pages(struct ndk_mdl *mdl,
				      struct page **pages, u32 nents,
				      u32 offset, u32 length)
{
	*mdl = (struct ndk_mdl){ .kind = NDK_MDL_PAGES, .length = length,
				 .offset = offset, .nents = nents,
				 .va = (uintptr_t)page_address(pages[0]) +
				       offset,
				 .pages = pages };
}

/**
 * ndk_mdl_init_bvec() - describe a bio_vec array
 * @mdl: the MDL
 * @bvec: the vectors
 * @nents: how many
 * @length: bytes they hold together
 */
static inline void ndk_mdl_init_bvec(struct ndk_mdl *mdl,
				     const struct bio_vec *bvec, u32 nents,
				     u32 length)
{
	*mdl = (struct ndk_mdl){ .kind = NDK_MDL_BVEC, .length = length,
				 .nents = nents,
				 .va = (uintptr_t)page_address(bvec->bv_page) +
				       bvec->bv_offset,
				 .bvec = bvec };
}

/**
 * ndk_mdl_init_sg() - describe a scatterlist
 * @mdl: the MDL
 * @sgl: the list, not DMA-mapped
 * @nents: entries
 * @length: bytes they hold together
 */
static inline void ndk_mdl_init_sg(struct ndk_mdl *mdl,
				   struct scatterlist *sgl, u32 nents,
				   u32 length)
{
	*mdl = (struct ndk_mdl){ .kind = NDK_MDL_SG, .length = length,
				 .nents = nents, .va = (uintptr_t)sg_virt(sgl),
				 .sgl = sgl };
}

/* The WDK accessors NDK consumers use, on ndk's MDL. */
#define MmGetMdlVirtualAddress(mdl)	((PVOID)(uintptr_t)(mdl)->va)
#define MmGetMdlByteCount(mdl)		((mdl)->length)
#define MmGetMdlByteOffset(mdl)		((ULONG)((mdl)->va & ~PAGE_MASK))

#endif /* _NDK_MDL_H */
