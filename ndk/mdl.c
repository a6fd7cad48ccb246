// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MDL page walk, which registration (mr.c) and the logical address
 * mappings share, and NdkBuildLAM and NdkReleaseLAM (the adapter's
 * dispatch table). A LAM is the device address of each page of an MDL,
 * mapped page by page so that NdkReleaseLAM needs nothing but the LAM
 * itself.
 */
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include "ndk_priv.h"

/* A piece of memory inside one page; only the region's ends may be partial. */
static int ndk_pgwalk_add(struct ndk_pgwalk *w, struct page *page, u32 off,
			  u32 len)
{
	int err;

	if (!page)
		return -EINVAL;
	if (!w->n)
		w->fbo = off;
	else if (off || w->end != PAGE_SIZE)
		return -EINVAL;
	if (w->fn) {
		err = w->fn(w, page, w->n);
		if (err)
			return err;
	}
	w->n++;
	w->end = off + len;
	return 0;
}

/* @len bytes of physically contiguous memory from @off into @page. */
static int ndk_pgwalk_seg(struct ndk_pgwalk *w, struct page *page, u64 off,
			  u32 len)
{
	u32 n;
	int err;

	page = nth_page(page, off >> PAGE_SHIFT);
	off &= ~PAGE_MASK;
	while (len) {
		n = min_t(u32, len, PAGE_SIZE - off);
		err = ndk_pgwalk_add(w, page, off, n);
		if (err)
			return err;
		page = nth_page(page, 1);
		off = 0;
		len -= n;
	}
	return 0;
}

static int ndk_pgwalk_kva(struct ndk_pgwalk *w, u8 *addr, u32 len)
{
	struct page *page;
	u32 off, n;
	int err;

	while (len) {
		off = offset_in_page(addr);
		n = min_t(u32, len, PAGE_SIZE - off);
		page = is_vmalloc_addr(addr) ? vmalloc_to_page(addr) :
		       virt_addr_valid(addr) ? virt_to_page(addr) : NULL;
		err = ndk_pgwalk_add(w, page, off, n);
		if (err)
			return err;
		addr += n;
		len -= n;
	}
	return 0;
}

/* The first @len bytes of one MDL. */
static int ndk_pgwalk_piece(struct ndk_pgwalk *w, const struct ndk_mdl *mdl,
			    u32 len)
{
	struct scatterlist *sg;
	u64 pos = mdl->offset;
	u32 i, n;
	int err = 0;

	switch (mdl->kind) {
	case NDK_MDL_KVA:
		return ndk_pgwalk_kva(w, mdl->addr, len);
	case NDK_MDL_PAGES:
		while (len && !err) {
			if ((pos >> PAGE_SHIFT) >= mdl->nents)
				return -EINVAL;
			n = min_t(u32, len, PAGE_SIZE - (pos & ~PAGE_MASK));
			err = ndk_pgwalk_add(w, mdl->pages[pos >> PAGE_SHIFT],
					     pos & ~PAGE_MASK, n);
			pos += n;
			len -= n;
		}
		return err;
	case NDK_MDL_BVEC:
		for (i = 0; i < mdl->nents && len && !err; i++) {
			n = min(len, mdl->bvec[i].bv_len);
			err = ndk_pgwalk_seg(w, mdl->bvec[i].bv_page,
					     mdl->bvec[i].bv_offset, n);
			len -= n;
		}
		break;
	case NDK_MDL_SG:
		for_each_sg(mdl->sgl, sg, mdl->nents, i) {
			if (!len || err)
				break;
			n = min(len, sg->length);
			err = ndk_pgwalk_seg(w, sg_page(sg), sg->offset, n);
			len -= n;
		}
		break;
	default:
		return -EINVAL;
	}
	return err ? err : len ? -EINVAL : 0;
}

/*
 * Walk the pages of the first @length bytes of the chain at @mdl, which
 * must be virtually contiguous. Atomic-safe.
 */
int ndk_pgwalk(struct ndk_pgwalk *w, const struct ndk_mdl *mdl, u64 length)
{
	u32 take;
	int err;

	if (!mdl || !length)
		return -EINVAL;
	for (; mdl && length; mdl = mdl->next) {
		take = min_t(u64, mdl->length, length);
		err = ndk_pgwalk_piece(w, mdl, take);
		if (err)
			return err;
		length -= take;
	}
	return length ? -EINVAL : 0;
}

NTSTATUS ndk_pgwalk_status(int err)
{
	return err == -EINVAL ? STATUS_INVALID_PARAMETER :
				ndk_status_from_errno(err);
}

static int ndk_lam_map(struct ndk_pgwalk *w, struct page *page, u32 i)
{
	NDK_LOGICAL_ADDRESS_MAPPING *lam = w->arg;
	struct ib_device *dev = lam->AdapterContext;
	u64 addr;

	addr = ib_dma_map_page(dev, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, addr))
		return -ENOMEM;
	lam->AdapterPageArray[i] = addr;
	lam->AdapterPageCount = i + 1;
	return 0;
}

/**
 * ndk_release_lam() - NdkReleaseLAM
 * @pNdkAdapter: the adapter
 * @pNdkLAM: a mapping NdkBuildLAM built
 *
 * Unmaps every page. Callable from atomic context.
 */
void ndk_release_lam(NDK_ADAPTER *pNdkAdapter,
		     NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
	struct ib_device *dev;
	ULONG i;

	if (!pNdkLAM || !pNdkLAM->AdapterContext)
		return;
	dev = pNdkLAM->AdapterContext;
	for (i = 0; i < pNdkLAM->AdapterPageCount; i++)
		ib_dma_unmap_page(dev, pNdkLAM->AdapterPageArray[i],
				  PAGE_SIZE, DMA_BIDIRECTIONAL);
	pNdkLAM->AdapterPageCount = 0;
	pNdkLAM->AdapterContext = NULL;
}

/**
 * ndk_build_lam() - NdkBuildLAM
 * @pNdkAdapter: the adapter
 * @Mdl: the memory, virtually contiguous over @Length bytes
 * @Length: bytes to map
 * @RequestCompletion: not called: the mapping completes inline
 * @RequestContext: unused
 * @pNdkLAM: receives the device address of each page
 * @pLAMSize: size of @pNdkLAM in; bytes used, or needed, out
 * @pFBO: receives the offset of the first byte in the first page
 *
 * Maps page by page with ib_dma_map_page(), which never sleeps, so the
 * request never pends. Callable from atomic context.
 *
 * Return: STATUS_SUCCESS; STATUS_BUFFER_TOO_SMALL with the size needed;
 * STATUS_INVALID_PARAMETER for memory that is not virtually contiguous;
 * STATUS_INSUFFICIENT_RESOURCES when a page cannot be mapped (nothing
 * stays mapped then).
 */
NTSTATUS ndk_build_lam(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length,
		       NDK_FN_REQUEST_COMPLETION RequestCompletion,
		       PVOID RequestContext,
		       NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize,
		       ULONG *pFBO)
{
	struct ndk_adapter *adapter =
		container_of(pNdkAdapter, struct ndk_adapter, ndk);
	struct ndk_pgwalk w = {};
	size_t need;
	int err;

	if (!pNdkAdapter || !Mdl || !pLAMSize || !pFBO || !Mdl->va)
		return STATUS_INVALID_PARAMETER;
	err = ndk_pgwalk(&w, Mdl, Length);
	if (err)
		return ndk_pgwalk_status(err);
	/* What Windows consumers allocate: the header, then w.n entries. */
	need = size_add(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray),
			array_size(w.n, sizeof(NDK_LOGICAL_ADDRESS)));
	if (!pNdkLAM || *pLAMSize < need) {
		*pLAMSize = need;
		return STATUS_BUFFER_TOO_SMALL;
	}
	pNdkLAM->AdapterContext = adapter->ibdev;
	pNdkLAM->AdapterPageCount = 0;
	w = (struct ndk_pgwalk){ .fn = ndk_lam_map, .arg = pNdkLAM };
	err = ndk_pgwalk(&w, Mdl, Length);
	if (err) {
		ndk_release_lam(pNdkAdapter, pNdkLAM);
		return ndk_pgwalk_status(err);
	}
	*pLAMSize = need;
	*pFBO = w.fbo;
	return STATUS_SUCCESS;
}
