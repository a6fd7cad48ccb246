/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The WDK subset an NDK consumer uses, on Linux kernel primitives.
 *
 * A Windows kernel driver written against NDKPI is compiled unchanged
 * with -I include/ndk/wdk (and -I include): its #include <wdm.h>,
 * <ntddk.h>, <ndis.h>, <wsk.h> ... land here. Each name keeps its
 * Windows meaning where Linux has one; a call that has none expands to a
 * build error naming it (NDK_WDK_NOT_OFFERED), never to a silent stub.
 * Documentation/ndk/porting.rst lists every symbol and how it maps.
 *
 * IRQL is the Linux context: PASSIVE_LEVEL is a context that may sleep,
 * DISPATCH_LEVEL any atomic one (softirq, spinlock, interrupts off).
 * Functions that are not inline live in ndk_wdk.ko (wdk/ndk_wdk.c).
 */
#ifndef _NDK_WDK_WDM_H
#define _NDK_WDK_WDM_H

#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/build_bug.h>
#include <linux/delay.h>
#include <linux/hardirq.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/swab.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

/*
 * LARGE_INTEGER comes before ndk's headers: the WDK's PHYSICAL_ADDRESS is
 * one, and so is NDK_LOGICAL_ADDRESS on Windows, whose consumers read
 * and write its QuadPart. ndk.ko sees the same 8 bytes as a u64; here
 * NDKPI is declared with the Windows type (the widths are ndk_types.h's
 * ULONG, LONG and LONGLONG).
 */
typedef union _LARGE_INTEGER {
	struct {
		u32 LowPart;
		s32 HighPart;
	};
	s64 QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;
static_assert(sizeof(PHYSICAL_ADDRESS) == sizeof(u64));
static_assert(__alignof__(PHYSICAL_ADDRESS) == __alignof__(u64));
#define NDK_LOGICAL_ADDRESS_TYPE	PHYSICAL_ADDRESS

#include <ndk/ndk.h>

static_assert(__builtin_types_compatible_p(NDK_LOGICAL_ADDRESS,
					   PHYSICAL_ADDRESS),
	      "include <wdm.h> (or <ntddk.h>) before ndk's own headers");

/* ------------------------------------------------------------------ */
/* Scalar types (LLP64 widths, as ndk_types.h)                         */
/* ------------------------------------------------------------------ */

#define VOID		void
#define CONST		const
#define NTAPI
#define NTKERNELAPI
#define NTSYSAPI
/*
 * MSVC's __forceinline: a header's FORCEINLINE function is defined in
 * every file that includes it, as on Windows. Static, so that each file
 * has its own copy (the kernel's inline is GNU inline, which would emit
 * one external definition per file); "static FORCEINLINE" is therefore
 * a duplicate storage class, which a port drops.
 */
#define FORCEINLINE	static __always_inline
#define IN
#define OUT
#define OPTIONAL
#define ANYSIZE_ARRAY	1
#define C_ASSERT(e)	static_assert(e)
#define DECLSPEC_ALIGN(x)	__aligned(x)

typedef char CHAR;
typedef s16 SHORT;
typedef s16 CSHORT;
typedef int INT;
typedef unsigned int UINT;
typedef s8 INT8;
typedef u8 UINT8;
typedef s16 INT16;
typedef u16 UINT16;
typedef s32 INT32;
typedef s64 INT64;
typedef s64 LONG64;
typedef s64 LONGLONG;
typedef u64 ULONGLONG;
typedef long LONG_PTR;
typedef u32 DWORD;
typedef u8 BYTE;
typedef u16 WORD;
typedef CHAR CCHAR;
typedef UCHAR KIRQL;
typedef u8 KPROCESSOR_MODE;
/* The kernel builds with -fshort-wchar: L"..." literals are UTF-16. */
typedef __WCHAR_TYPE__ WCHAR;

typedef CHAR *PCHAR;
typedef CHAR *PSTR;
typedef const CHAR *PCSTR;
typedef UCHAR *PUCHAR;
typedef USHORT *PUSHORT;
typedef SHORT *PSHORT;
typedef LONG *PLONG;
typedef ULONG *PULONG;
typedef LONG64 *PLONG64;
typedef ULONG64 *PULONG64;
typedef BOOLEAN *PBOOLEAN;
typedef SIZE_T *PSIZE_T;
typedef ULONG_PTR *PULONG_PTR;
typedef WCHAR *PWCHAR;
typedef WCHAR *PWCH;
typedef WCHAR *PWSTR;
typedef const WCHAR *PCWCH;
typedef const WCHAR *PCWSTR;
typedef KIRQL *PKIRQL;
typedef NTSTATUS *PNTSTATUS;
typedef ULONG_PTR PFN_NUMBER;
typedef PFN_NUMBER *PPFN_NUMBER;
typedef ULONG LOGICAL;

typedef union _ULARGE_INTEGER {
	struct {
		ULONG LowPart;
		ULONG HighPart;
	};
	ULONGLONG QuadPart;
} ULARGE_INTEGER, *PULARGE_INTEGER;

typedef struct _UNICODE_STRING {
	USHORT Length;		/* bytes, without a terminator */
	USHORT MaximumLength;
	PWSTR Buffer;
} UNICODE_STRING, *PUNICODE_STRING;
typedef const UNICODE_STRING *PCUNICODE_STRING;

#define MAXUCHAR	0xff
#define MAXUSHORT	0xffff
#define MAXULONG	0xffffffffU
#define MAXLONG		0x7fffffff
#define MAXULONG_PTR	(~(ULONG_PTR)0)

#define UNREFERENCED_PARAMETER(P)	((void)(P))
#define ARGUMENT_PRESENT(P)		((P) != NULL)
/* MSVC's pragma operator (warning control): nothing for GCC. */
#define __pragma(x)
#define FIELD_OFFSET(type, field)	((LONG)offsetof(type, field))
#define CONTAINING_RECORD(address, type, field)	\
	container_of(address, type, field)
#define ARRAYSIZE(a)			ARRAY_SIZE(a)
#define RTL_NUMBER_OF(a)		ARRAY_SIZE(a)
#define RTL_FIELD_SIZE(type, field)	sizeof_field(type, field)

/*
 * Windows' min and max take any two arithmetic operands; the kernel's
 * refuse mixed types. Ported code expects the former.
 */
#undef min
#undef max
#define min(a, b)	(((a) < (b)) ? (a) : (b))
#define max(a, b)	(((a) > (b)) ? (a) : (b))
/*
 * The WDK has no three-operand forms: drivers define their own min3 or
 * max3 on top of min and max, which the kernel's would collide with.
 */
#undef min3
#undef max3

/*
 * MSVC pragmas GCC does not know: #pragma alloc_text and code_seg page
 * code out (Linux kernel text is always resident, so ignoring them is
 * their meaning here), #pragma warning tunes MSVC's diagnostics. GCC
 * ignores an unknown pragma anyway; say so once instead of warning for
 * every line of a driver's pragma list.
 */
#pragma GCC diagnostic ignored "-Wunknown-pragmas"

/*
 * A WDK call with no faithful Linux meaning: using it stops the build
 * with its name, so a port sees every such place at once.
 */
#define NDK_WDK_NOT_OFFERED(name)					\
	({								\
		_Static_assert(0, #name " has no Linux meaning under "	\
			       "ndk: see Documentation/ndk/porting.rst"); \
		STATUS_NOT_SUPPORTED;					\
	})

/* ------------------------------------------------------------------ */
/* SAL annotations: documentation only                                  */
/* ------------------------------------------------------------------ */

#define _In_
#define _In_opt_
#define _In_z_
#define _In_opt_z_
#define _In_reads_(n)
#define _In_reads_opt_(n)
#define _In_reads_bytes_(n)
#define _In_reads_bytes_opt_(n)
#define _In_range_(l, h)
#define _Out_
#define _Out_opt_
#define _Out_writes_(n)
#define _Out_writes_opt_(n)
#define _Out_writes_bytes_(n)
#define _Out_writes_bytes_opt_(n)
#define _Out_writes_to_(n, c)
#define _Out_writes_bytes_to_(n, c)
#define _Out_writes_to_opt_(n, c)
#define _Out_writes_bytes_to_opt_(n, c)
#define _Outptr_
#define _Outptr_opt_
#define _Outptr_result_maybenull_
#define _Outptr_result_buffer_(n)
#define _Outptr_result_bytebuffer_(n)
#define _Deref_out_
#define _Deref_out_opt_
#define _Inout_
#define _Inout_opt_
#define _Inout_updates_(n)
#define _Inout_updates_opt_(n)
#define _Inout_updates_bytes_(n)
#define _Field_size_(n)
#define _Field_size_opt_(n)
#define _Field_size_bytes_(n)
#define _Field_range_(l, h)
#define _Ret_maybenull_
#define _Ret_range_(l, h)
#define _Must_inspect_result_
#define _Check_return_
#define _Success_(e)
#define _Use_decl_annotations_
#define _Function_class_(name)
#define _When_(c, a)
#define _Frees_ptr_
#define _Frees_ptr_opt_
#define _Post_invalid_
#define _Post_writable_byte_size_(n)
#define _Pre_notnull_
#define _Notnull_
#define _Maybenull_
#define _Analysis_assume_(e)
#define _Interlocked_
#define _Interlocked_operand_
#define _Guarded_by_(l)
#define _Write_guarded_by_(l)
#define _Requires_lock_held_(l)
#define _Requires_lock_not_held_(l)
#define _Acquires_lock_(l)
#define _Releases_lock_(l)
#define _Acquires_exclusive_lock_(l)
#define _Releases_exclusive_lock_(l)
#define _Requires_exclusive_lock_held_(l)
#define _Requires_shared_lock_held_(l)
#define _No_competing_thread_begin_
#define _No_competing_thread_end_
#define _Benign_race_begin_
#define _Benign_race_end_
#define _Dispatch_type_(t)
#define _IRQL_requires_(l)
#define _IRQL_requires_max_(l)
#define _IRQL_requires_min_(l)
#define _IRQL_requires_same_
#define _IRQL_raises_(l)
#define _IRQL_saves_
#define _IRQL_restores_
#define _IRQL_saves_global_(k, p)
#define _IRQL_restores_global_(k, p)
#define _IRQL_always_function_min_(l)
#define _IRQL_always_function_max_(l)
#define _Kernel_requires_resource_held_(r)
#define _Kernel_clear_do_init_(y)
#define _Printf_format_string_
#define __drv_aliasesMem
#define __drv_allocatesMem(k)
#define __drv_freesMem(k)
#define __drv_dispatchType(t)
#define __drv_maxIRQL(l)
#define __drv_requiresIRQL(l)
#define __drv_when(c, a)
#define __drv_strictTypeMatch(m)
#define _Strict_type_match_

/* ------------------------------------------------------------------ */
/* IRQL                                                                */
/* ------------------------------------------------------------------ */

#define PASSIVE_LEVEL	0
#define LOW_LEVEL	0
#define APC_LEVEL	1
#define DISPATCH_LEVEL	2
#define HIGH_LEVEL	15

/*
 * KeGetCurrentIrql(): the IRQL that stands for the current Linux context.
 * DISPATCH_LEVEL in hard or soft interrupt, with interrupts or bottom
 * halves off, inside an RCU read-side section, or inside a spinlock or
 * preempt-disabled section (seen where the kernel counts preemption, as
 * Debian's and ndk's test kernels do); PASSIVE_LEVEL where the caller may
 * sleep. APC_LEVEL is never reported.
 */
static inline KIRQL KeGetCurrentIrql(void)
{
	if (!in_task() || preempt_count() || irqs_disabled() ||
	    rcu_preempt_depth())
		return DISPATCH_LEVEL;
	return PASSIVE_LEVEL;
}

/* Raising to DISPATCH_LEVEL turns bottom halves off, as a DPC would run. */
static inline void ndk_wdk_raise_irql(KIRQL NewIrql, PKIRQL OldIrql)
{
	*OldIrql = KeGetCurrentIrql();
	if (NewIrql >= DISPATCH_LEVEL && *OldIrql < DISPATCH_LEVEL)
		local_bh_disable();
}

static inline void ndk_wdk_lower_irql(KIRQL NewIrql)
{
	if (NewIrql < DISPATCH_LEVEL)
		local_bh_enable();
}

/* Above DISPATCH_LEVEL is interrupt priority: no Linux equivalent. */
#define KeRaiseIrql(NewIrql, OldIrql)					\
	do {								\
		BUILD_BUG_ON_MSG((NewIrql) > DISPATCH_LEVEL,		\
				 "KeRaiseIrql above DISPATCH_LEVEL");	\
		ndk_wdk_raise_irql(NewIrql, OldIrql);			\
	} while (0)
#define KeLowerIrql(NewIrql)		ndk_wdk_lower_irql(NewIrql)

static inline KIRQL KeRaiseIrqlToDpcLevel(void)
{
	KIRQL old;

	ndk_wdk_raise_irql(DISPATCH_LEVEL, &old);
	return old;
}

/* PAGED_CODE: the caller must be allowed to sleep. */
#define PAGED_CODE()		might_sleep()
#define PAGED_CODE_LOCKED()	do { } while (0)

/* ------------------------------------------------------------------ */
/* Assertions and debug output                                         */
/* ------------------------------------------------------------------ */

/*
 * Checked in every build, as a WARN: a failed assertion is a kernel splat
 * that ndk's tests count as a failure.
 */
#define NT_ASSERT(e)		WARN(!(e), "NT_ASSERT(%s) failed\n", #e)
#define NT_ASSERTMSG(m, e)	WARN(!(e), "NT_ASSERT(%s) failed: %s\n", #e, m)
/* A statement expression: its value may be used or dropped. */
#define NT_VERIFY(e)		({ !WARN(!(e), "NT_VERIFY(%s) failed\n", #e); })
#define ASSERT(e)		NT_ASSERT(e)
#define NT_FRE_ASSERT(e)	NT_ASSERT(e)

#define DPFLTR_IHVDRIVER_ID	77
#define DPFLTR_IHVNETWORK_ID	78
#define DPFLTR_ERROR_LEVEL	0
#define DPFLTR_WARNING_LEVEL	1
#define DPFLTR_TRACE_LEVEL	2
#define DPFLTR_INFO_LEVEL	3

ULONG ndk_wdk_dbg_print(ULONG Level, PCSTR Format, ...);

/*
 * The format is the Windows one (%ld is 32 bits, %I64x, %ws, %wZ);
 * ndk_wdk.ko translates it for printk.
 */
#define DbgPrint(...)		ndk_wdk_dbg_print(DPFLTR_INFO_LEVEL, __VA_ARGS__)
#define DbgPrintEx(ComponentId, Level, ...)				\
	ndk_wdk_dbg_print(Level, __VA_ARGS__)
#define KdPrint(args)		((void)DbgPrint args)
#define KdPrintEx(args)		((void)DbgPrintEx args)
#define DbgBreakPoint()		WARN(1, "DbgBreakPoint\n")

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

typedef enum _POOL_TYPE {
	NonPagedPool = 0,
	NonPagedPoolExecute = 0,
	PagedPool = 1,
	NonPagedPoolNx = 512,
} POOL_TYPE;

typedef ULONG64 POOL_FLAGS;
#define POOL_FLAG_UNINITIALIZED		0x0000000000000002ULL
#define POOL_FLAG_CACHE_ALIGNED		0x0000000000000008ULL
#define POOL_FLAG_NON_PAGED		0x0000000000000040ULL
#define POOL_FLAG_NON_PAGED_EXECUTE	0x0000000000000080ULL
#define POOL_FLAG_PAGED			0x0000000000000100ULL

/* Non-paged memory comes from kmalloc; from atomic context, GFP_ATOMIC. */
static inline gfp_t ndk_wdk_gfp(bool paged)
{
	if (paged) {
		might_sleep();
		return GFP_KERNEL;
	}
	return KeGetCurrentIrql() == PASSIVE_LEVEL ? GFP_KERNEL : GFP_ATOMIC;
}

static inline PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType,
					  SIZE_T NumberOfBytes, ULONG Tag)
{
	return kmalloc(NumberOfBytes, ndk_wdk_gfp(PoolType == PagedPool));
}

static inline PVOID ExAllocatePoolZero(POOL_TYPE PoolType,
				       SIZE_T NumberOfBytes, ULONG Tag)
{
	return kzalloc(NumberOfBytes, ndk_wdk_gfp(PoolType == PagedPool));
}

/* Zeroed unless POOL_FLAG_UNINITIALIZED, as on Windows. */
static inline PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes,
				    ULONG Tag)
{
	gfp_t gfp = ndk_wdk_gfp(Flags & POOL_FLAG_PAGED);

	if (!(Flags & POOL_FLAG_UNINITIALIZED))
		gfp |= __GFP_ZERO;
	return kmalloc(NumberOfBytes, gfp);
}

typedef enum _EX_POOL_PRIORITY {
	LowPoolPriority = 0,
	NormalPoolPriority = 16,
	HighPoolPriority = 32,
} EX_POOL_PRIORITY;

/* The priority only matters when memory is short; kmalloc has none. */
#define ExAllocatePoolWithTagPriority(PoolType, NumberOfBytes, Tag, Priority) \
	ExAllocatePoolWithTag(PoolType, NumberOfBytes, Tag)

#define ExAllocatePool(PoolType, NumberOfBytes)				\
	ExAllocatePoolWithTag(PoolType, NumberOfBytes, 0)

static inline void ExFreePoolWithTag(PVOID P, ULONG Tag)
{
	kfree(P);
}

static inline void ExFreePool(PVOID P)
{
	kfree(P);
}

#define ExAllocatePoolWithQuotaTag(...)					\
	NDK_WDK_NOT_OFFERED(ExAllocatePoolWithQuotaTag)

#define RtlZeroMemory(d, n)		memset(d, 0, n)
#define RtlFillMemory(d, n, f)		memset(d, f, n)
#define RtlCopyMemory(d, s, n)		memcpy(d, s, n)
#define RtlMoveMemory(d, s, n)		memmove(d, s, n)
#define RtlEqualMemory(a, b, n)		(!memcmp(a, b, n))

/* Number of leading bytes that match. */
static inline SIZE_T RtlCompareMemory(const void *Source1,
				      const void *Source2, SIZE_T Length)
{
	const u8 *a = Source1, *b = Source2;
	SIZE_T i;

	for (i = 0; i < Length && a[i] == b[i]; i++)
		;
	return i;
}

#define RtlUshortByteSwap(x)		swab16(x)
#define RtlUlongByteSwap(x)		swab32(x)
#define RtlUlonglongByteSwap(x)		swab64(x)

/*
 * Lookaside lists: fixed-size allocations. The slab allocator already
 * keeps per-CPU free lists, so each allocation is one kmalloc of Size.
 */
typedef PVOID ALLOCATE_FUNCTION(POOL_TYPE PoolType, SIZE_T NumberOfBytes,
				ULONG Tag);
typedef ALLOCATE_FUNCTION *PALLOCATE_FUNCTION;
typedef VOID FREE_FUNCTION(PVOID Buffer);
typedef FREE_FUNCTION *PFREE_FUNCTION;

typedef struct _NPAGED_LOOKASIDE_LIST {
	PALLOCATE_FUNCTION Allocate;
	PFREE_FUNCTION Free;
	POOL_TYPE Type;
	SIZE_T Size;
	ULONG Tag;
} NPAGED_LOOKASIDE_LIST, *PNPAGED_LOOKASIDE_LIST;
typedef NPAGED_LOOKASIDE_LIST PAGED_LOOKASIDE_LIST, *PPAGED_LOOKASIDE_LIST;

static inline void ndk_wdk_lookaside_init(PNPAGED_LOOKASIDE_LIST L,
					  PALLOCATE_FUNCTION Allocate,
					  PFREE_FUNCTION Free, POOL_TYPE Type,
					  SIZE_T Size, ULONG Tag)
{
	L->Allocate = Allocate;
	L->Free = Free;
	L->Type = Type;
	L->Size = Size;
	L->Tag = Tag;
}

#define ExInitializeNPagedLookasideList(L, A, F, Flags, Size, Tag, Depth) \
	ndk_wdk_lookaside_init(L, A, F, NonPagedPoolNx, Size, Tag)
#define ExInitializePagedLookasideList(L, A, F, Flags, Size, Tag, Depth) \
	ndk_wdk_lookaside_init(L, A, F, PagedPool, Size, Tag)
#define ExDeleteNPagedLookasideList(L)	((void)(L))
#define ExDeletePagedLookasideList(L)	((void)(L))

static inline PVOID ExAllocateFromNPagedLookasideList(PNPAGED_LOOKASIDE_LIST L)
{
	if (L->Allocate)
		return L->Allocate(L->Type, L->Size, L->Tag);
	return ExAllocatePoolWithTag(L->Type, L->Size, L->Tag);
}

static inline void ExFreeToNPagedLookasideList(PNPAGED_LOOKASIDE_LIST L,
					       PVOID Entry)
{
	if (L->Free)
		L->Free(Entry);
	else
		kfree(Entry);
}

#define ExAllocateFromPagedLookasideList(L) ExAllocateFromNPagedLookasideList(L)
#define ExFreeToPagedLookasideList(L, E)   ExFreeToNPagedLookasideList(L, E)

/*
 * MDLs are ndk's (<ndk/ndk_mdl.h>). IoAllocateMdl() keeps the page frame
 * array right behind the MDL, as Windows does, for MmGetMdlPfnArray();
 * the memory itself is never copied.
 */
typedef struct _IRP IRP, *PIRP;

struct ndk_wdk_mdl {
	struct ndk_mdl mdl;
	ULONG Pages;
	PFN_NUMBER Pfn[];
};

#define BYTE_OFFSET(Va)		((ULONG)((ULONG_PTR)(Va) & ~PAGE_MASK))
/* Windows' PAGE_ALIGN rounds down; the kernel's rounds up. */
#undef PAGE_ALIGN
#define PAGE_ALIGN(Va)		((PVOID)((ULONG_PTR)(Va) & PAGE_MASK))
#define ROUND_TO_PAGES(Size)	(((ULONG_PTR)(Size) + PAGE_SIZE - 1) & PAGE_MASK)
#define ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size)			\
	((ULONG)DIV_ROUND_UP(BYTE_OFFSET(Va) + (ULONG_PTR)(Size), PAGE_SIZE))

/* Bytes a caller-allocated MDL for @Length bytes at @Base needs. */
#define MmSizeOfMdl(Base, Length)					\
	((SIZE_T)struct_size((struct ndk_wdk_mdl *)NULL, Pfn,		\
			     ADDRESS_AND_SIZE_TO_SPAN_PAGES(Base, Length)))

static inline void MmInitializeMdl(PMDL MemoryDescriptorList, PVOID BaseVa,
				   SIZE_T Length)
{
	struct ndk_wdk_mdl *w = container_of(MemoryDescriptorList,
					     struct ndk_wdk_mdl, mdl);

	ndk_mdl_init_kva(&w->mdl, BaseVa, Length);
	w->Pages = ADDRESS_AND_SIZE_TO_SPAN_PAGES(BaseVa, Length);
}

PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length,
		   BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, PIRP Irp);
void IoFreeMdl(PMDL Mdl);
void MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList);

#define MmGetMdlPfnArray(Mdl)						\
	(container_of(Mdl, struct ndk_wdk_mdl, mdl)->Pfn)
#define MmGetMdlBaseVa(Mdl)		PAGE_ALIGN(MmGetMdlVirtualAddress(Mdl))
#define MmGetSystemAddressForMdlSafe(Mdl, Priority)	\
	MmGetMdlVirtualAddress(Mdl)
#define MmGetSystemAddressForMdl(Mdl)	MmGetMdlVirtualAddress(Mdl)
#define NormalPagePriority	16
#define HighPagePriority	32
#define LowPagePriority		0
#define MdlMappingNoExecute	0x40000000

/* Pageable (user) memory and cache-attribute mappings: out of scope. */
#define MmProbeAndLockPages(...)	NDK_WDK_NOT_OFFERED(MmProbeAndLockPages)
#define MmUnlockPages(...)		NDK_WDK_NOT_OFFERED(MmUnlockPages)
#define MmMapLockedPagesSpecifyCache(...)				\
	NDK_WDK_NOT_OFFERED(MmMapLockedPagesSpecifyCache)
#define MmMapLockedPages(...)		NDK_WDK_NOT_OFFERED(MmMapLockedPages)
#define MmUnmapLockedPages(...)		NDK_WDK_NOT_OFFERED(MmUnmapLockedPages)
#define MmAllocatePagesForMdl(...)	NDK_WDK_NOT_OFFERED(MmAllocatePagesForMdl)
#define MmAllocateContiguousMemory(...)					\
	NDK_WDK_NOT_OFFERED(MmAllocateContiguousMemory)

/* ------------------------------------------------------------------ */
/* Doubly and singly linked lists                                       */
/* ------------------------------------------------------------------ */

typedef struct _LIST_ENTRY {
	struct _LIST_ENTRY *Flink;
	struct _LIST_ENTRY *Blink;
} LIST_ENTRY, *PLIST_ENTRY;

static inline void InitializeListHead(PLIST_ENTRY ListHead)
{
	ListHead->Flink = ListHead;
	ListHead->Blink = ListHead;
}

static inline BOOLEAN IsListEmpty(const LIST_ENTRY *ListHead)
{
	return ListHead->Flink == ListHead;
}

/* Return: TRUE when the list the entry was on is now empty. */
static inline BOOLEAN RemoveEntryList(PLIST_ENTRY Entry)
{
	PLIST_ENTRY next = Entry->Flink, prev = Entry->Blink;

	prev->Flink = next;
	next->Blink = prev;
	return next == prev;
}

static inline PLIST_ENTRY RemoveHeadList(PLIST_ENTRY ListHead)
{
	PLIST_ENTRY entry = ListHead->Flink;

	RemoveEntryList(entry);
	return entry;
}

static inline PLIST_ENTRY RemoveTailList(PLIST_ENTRY ListHead)
{
	PLIST_ENTRY entry = ListHead->Blink;

	RemoveEntryList(entry);
	return entry;
}

static inline void InsertTailList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry)
{
	PLIST_ENTRY prev = ListHead->Blink;

	Entry->Flink = ListHead;
	Entry->Blink = prev;
	prev->Flink = Entry;
	ListHead->Blink = Entry;
}

static inline void InsertHeadList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry)
{
	PLIST_ENTRY next = ListHead->Flink;

	Entry->Flink = next;
	Entry->Blink = ListHead;
	next->Blink = Entry;
	ListHead->Flink = Entry;
}

/* Splice the list that starts at ListToAppend (no head) onto ListHead. */
static inline void AppendTailList(PLIST_ENTRY ListHead,
				  PLIST_ENTRY ListToAppend)
{
	PLIST_ENTRY end = ListHead->Blink;

	ListHead->Blink->Flink = ListToAppend;
	ListHead->Blink = ListToAppend->Blink;
	ListToAppend->Blink->Flink = ListHead;
	ListToAppend->Blink = end;
}

typedef struct _SINGLE_LIST_ENTRY {
	struct _SINGLE_LIST_ENTRY *Next;
} SINGLE_LIST_ENTRY, *PSINGLE_LIST_ENTRY;

static inline void PushEntryList(PSINGLE_LIST_ENTRY ListHead,
				 PSINGLE_LIST_ENTRY Entry)
{
	Entry->Next = ListHead->Next;
	ListHead->Next = Entry;
}

static inline PSINGLE_LIST_ENTRY PopEntryList(PSINGLE_LIST_ENTRY ListHead)
{
	PSINGLE_LIST_ENTRY first = ListHead->Next;

	if (first)
		ListHead->Next = first->Next;
	return first;
}

/* ------------------------------------------------------------------ */
/* Interlocked operations: the kernel's fully ordered atomics          */
/* ------------------------------------------------------------------ */

#define NDK_WDK_A32(p)	((atomic_t *)(p))
#define NDK_WDK_A64(p)	((atomic64_t *)(p))

#define InterlockedIncrement(p)		((LONG)atomic_inc_return(NDK_WDK_A32(p)))
#define InterlockedDecrement(p)		((LONG)atomic_dec_return(NDK_WDK_A32(p)))
#define InterlockedExchange(p, v)	((LONG)atomic_xchg(NDK_WDK_A32(p), v))
#define InterlockedExchangeAdd(p, v)	((LONG)atomic_fetch_add(v, NDK_WDK_A32(p)))
#define InterlockedAdd(p, v)		((LONG)atomic_add_return(v, NDK_WDK_A32(p)))
#define InterlockedCompareExchange(p, e, c)				\
	((LONG)atomic_cmpxchg(NDK_WDK_A32(p), c, e))
#define InterlockedAnd(p, v)		((LONG)atomic_fetch_and(v, NDK_WDK_A32(p)))
#define InterlockedOr(p, v)		((LONG)atomic_fetch_or(v, NDK_WDK_A32(p)))
#define InterlockedXor(p, v)		((LONG)atomic_fetch_xor(v, NDK_WDK_A32(p)))
#define InterlockedIncrement64(p)	((LONG64)atomic64_inc_return(NDK_WDK_A64(p)))
#define InterlockedDecrement64(p)	((LONG64)atomic64_dec_return(NDK_WDK_A64(p)))
#define InterlockedExchange64(p, v)	((LONG64)atomic64_xchg(NDK_WDK_A64(p), v))
#define InterlockedExchangeAdd64(p, v)					\
	((LONG64)atomic64_fetch_add(v, NDK_WDK_A64(p)))
#define InterlockedAdd64(p, v)		((LONG64)atomic64_add_return(v, NDK_WDK_A64(p)))
#define InterlockedCompareExchange64(p, e, c)				\
	((LONG64)atomic64_cmpxchg(NDK_WDK_A64(p), c, e))
#define InterlockedExchangePointer(p, v)				\
	((PVOID)xchg((PVOID *)(p), (PVOID)(v)))
#define InterlockedCompareExchangePointer(p, e, c)			\
	((PVOID)cmpxchg((PVOID *)(p), (PVOID)(c), (PVOID)(e)))
#define ReadNoFence(p)			READ_ONCE(*(p))
#define WriteNoFence(p, v)		WRITE_ONCE(*(p), v)
/* Acquire: later accesses stay after the read. */
#define ReadAcquire(p)			smp_load_acquire(p)
/* Release: earlier accesses stay before the write. */
#define WriteRelease(p, v)		smp_store_release(p, v)
/* A full barrier, as on Windows. */
#define KeMemoryBarrier()		smp_mb()

/* ------------------------------------------------------------------ */
/* Spin locks                                                          */
/* ------------------------------------------------------------------ */

/*
 * Interrupts are off while one is held, so a lock is safe whatever
 * context ndk calls the consumer back from; the saved flags live in the
 * lock, which only its holder touches.
 */
typedef struct _KSPIN_LOCK {
	spinlock_t Lock;	/* the lock itself */
	unsigned long Flags;
} KSPIN_LOCK, *PKSPIN_LOCK;

/* A macro, so that lockdep gives each initialisation site its class. */
#define KeInitializeSpinLock(SpinLock)	spin_lock_init(&(SpinLock)->Lock)

static inline void KeAcquireSpinLock(PKSPIN_LOCK SpinLock, PKIRQL OldIrql)
	__acquires(SpinLock)
{
	unsigned long flags;

	*OldIrql = KeGetCurrentIrql();
	spin_lock_irqsave(&SpinLock->Lock, flags);
	SpinLock->Flags = flags;
}

static inline void KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql)
	__releases(SpinLock)
{
	unsigned long flags = SpinLock->Flags;

	spin_unlock_irqrestore(&SpinLock->Lock, flags);
}

static inline KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock)
	__acquires(SpinLock)
{
	KIRQL old;

	KeAcquireSpinLock(SpinLock, &old);
	return old;
}

static inline void KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock)
	__acquires(SpinLock)
{
	KIRQL old;

	KeAcquireSpinLock(SpinLock, &old);
}

static inline void KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock)
	__releases(SpinLock)
{
	KeReleaseSpinLock(SpinLock, DISPATCH_LEVEL);
}

typedef struct _KLOCK_QUEUE_HANDLE {
	PKSPIN_LOCK Lock;
	unsigned long Flags;
	KIRQL OldIrql;
} KLOCK_QUEUE_HANDLE, *PKLOCK_QUEUE_HANDLE;

static inline void KeAcquireInStackQueuedSpinLock(PKSPIN_LOCK SpinLock,
						  PKLOCK_QUEUE_HANDLE LockHandle)
	__acquires(SpinLock)
{
	LockHandle->Lock = SpinLock;
	LockHandle->OldIrql = KeGetCurrentIrql();
	spin_lock_irqsave(&SpinLock->Lock, LockHandle->Flags);
}

static inline void
KeReleaseInStackQueuedSpinLock(PKLOCK_QUEUE_HANDLE LockHandle)
	__releases(LockHandle->Lock)
{
	spin_unlock_irqrestore(&LockHandle->Lock->Lock, LockHandle->Flags);
}

#define KeAcquireInStackQueuedSpinLockAtDpcLevel(l, h)			\
	KeAcquireInStackQueuedSpinLock(l, h)
#define KeReleaseInStackQueuedSpinLockFromDpcLevel(h)			\
	KeReleaseInStackQueuedSpinLock(h)

/* ------------------------------------------------------------------ */
/* Events and waits                                                    */
/* ------------------------------------------------------------------ */

typedef enum _EVENT_TYPE {
	NotificationEvent,
	SynchronizationEvent,
} EVENT_TYPE;

typedef enum _KWAIT_REASON {
	Executive = 0,
	UserRequest = 6,
	WrQueue = 15,
} KWAIT_REASON;

typedef enum _MODE {
	KernelMode,
	UserMode,
} MODE;

typedef LONG KPRIORITY;
#define IO_NO_INCREMENT		0
#define EVENT_INCREMENT		1
#define IO_NETWORK_INCREMENT	2

/*
 * A notification event stays signalled until cleared and releases every
 * waiter; a synchronization event releases one waiter and resets.
 * KeSetEvent() takes the wait queue's irq-safe lock only: callable from
 * any context, an NDK completion callback included. It signals and wakes
 * under that lock, and a waiter takes the lock once before it returns, so
 * that an event on the waiter's stack, as Windows code keeps them, is
 * never touched by its KeSetEvent() after the waiter has gone on.
 */
typedef struct _KEVENT {
	wait_queue_head_t Wait;
	atomic_t Signaled;
	EVENT_TYPE Type;
} KEVENT, *PKEVENT, *PRKEVENT;

#define KeInitializeEvent(Event, EventType, State)			\
	do {								\
		KEVENT *__e = (Event);					\
									\
		init_waitqueue_head(&__e->Wait);			\
		__e->Type = (EventType);				\
		atomic_set(&__e->Signaled, !!(State));			\
	} while (0)

static inline LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment,
			      BOOLEAN Wait)
{
	unsigned long flags;
	LONG prev;

	spin_lock_irqsave(&Event->Wait.lock, flags);
	prev = atomic_xchg(&Event->Signaled, 1);
	wake_up_locked(&Event->Wait);
	spin_unlock_irqrestore(&Event->Wait.lock, flags);
	return prev;
}

static inline void KeClearEvent(PRKEVENT Event)
{
	atomic_set(&Event->Signaled, 0);
}

static inline LONG KeResetEvent(PRKEVENT Event)
{
	return atomic_xchg(&Event->Signaled, 0);
}

static inline LONG KeReadStateEvent(PRKEVENT Event)
{
	return atomic_read(&Event->Signaled);
}

NTSTATUS ndk_wdk_wait_event(PRKEVENT Event, PLARGE_INTEGER Timeout);

/*
 * Only events are dispatcher objects here; waiting on anything else is a
 * build error. A wait is never alertable: Linux has no APCs. A NULL
 * Timeout waits for ever; a zero one polls (fine at DISPATCH_LEVEL);
 * others sleep and need PASSIVE_LEVEL.
 */
#define KeWaitForSingleObject(Object, WaitReason, WaitMode, Alertable,	\
			      Timeout)					\
	ndk_wdk_wait_event(_Generic((Object),				\
				    KEVENT * : (Object),		\
				    PVOID : (Object)),			\
			   Timeout)

#define KeWaitForMultipleObjects(...)					\
	NDK_WDK_NOT_OFFERED(KeWaitForMultipleObjects)

NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable,
				PLARGE_INTEGER Interval);

static inline void KeStallExecutionProcessor(ULONG MicroSeconds)
{
	udelay(MicroSeconds);
}

/* 100 ns units since 1601, as Windows keeps system time. */
static inline void KeQuerySystemTime(PLARGE_INTEGER CurrentTime)
{
	CurrentTime->QuadPart = div_u64(ktime_get_real_ns(), 100) +
				116444736000000000LL;
}

#define KeQuerySystemTimePrecise(t)	KeQuerySystemTime(t)

static inline ULONGLONG KeQueryInterruptTime(void)
{
	return div_u64(ktime_get_ns(), 100);
}

static inline ULONG KeGetCurrentProcessorNumber(void)
{
	return raw_smp_processor_id();
}

#define KeGetCurrentProcessorNumberEx(p)	KeGetCurrentProcessorNumber()
#define KeQueryActiveProcessorCount(a)		((ULONG)num_online_cpus())

/* ------------------------------------------------------------------ */
/* Rundown protection                                                  */
/* ------------------------------------------------------------------ */

/*
 * Count holds twice the number of references; bit 0 says a rundown has
 * begun, after which acquisitions fail.
 */
typedef struct _EX_RUNDOWN_REF {
	atomic_long_t Count;
} EX_RUNDOWN_REF, *PEX_RUNDOWN_REF;

static inline void ExInitializeRundownProtection(PEX_RUNDOWN_REF RunRef)
{
	atomic_long_set(&RunRef->Count, 0);
}

#define ExReInitializeRundownProtection(r)	ExInitializeRundownProtection(r)

static inline BOOLEAN ExAcquireRundownProtectionEx(PEX_RUNDOWN_REF RunRef,
						   ULONG Count)
{
	long v = atomic_long_read(&RunRef->Count);

	do {
		if (v & 1)
			return FALSE;
	} while (!atomic_long_try_cmpxchg(&RunRef->Count, &v,
					  v + 2L * Count));
	return TRUE;
}

static inline void ExReleaseRundownProtectionEx(PEX_RUNDOWN_REF RunRef,
						ULONG Count)
{
	if (atomic_long_sub_return(2L * Count, &RunRef->Count) == 1)
		wake_up_var(RunRef);
}

#define ExAcquireRundownProtection(r)	ExAcquireRundownProtectionEx(r, 1)
#define ExReleaseRundownProtection(r)	ExReleaseRundownProtectionEx(r, 1)

/* Refuse new references and sleep until the last one is released. */
static inline void ExWaitForRundownProtectionRelease(PEX_RUNDOWN_REF RunRef)
{
	might_sleep();
	atomic_long_or(1, &RunRef->Count);
	wait_var_event(RunRef, atomic_long_read(&RunRef->Count) == 1);
}

static inline void ExRundownCompleted(PEX_RUNDOWN_REF RunRef)
{
}

/* ------------------------------------------------------------------ */
/* Driver and device objects, IRPs                                     */
/* ------------------------------------------------------------------ */

#define IO_TYPE_DEVICE	3
#define IO_TYPE_DRIVER	4

#define IRP_MJ_CREATE			0x00
#define IRP_MJ_CLOSE			0x02
#define IRP_MJ_READ			0x03
#define IRP_MJ_WRITE			0x04
#define IRP_MJ_DEVICE_CONTROL		0x0e
#define IRP_MJ_INTERNAL_DEVICE_CONTROL	0x0f
#define IRP_MJ_SHUTDOWN			0x10
#define IRP_MJ_CLEANUP			0x12
#define IRP_MJ_PNP			0x1b
#define IRP_MJ_MAXIMUM_FUNCTION		0x1b

struct _DRIVER_OBJECT;

typedef struct _DEVICE_OBJECT {
	CSHORT Type;
	USHORT Size;
	struct _DRIVER_OBJECT *DriverObject;
	PVOID DeviceExtension;
} DEVICE_OBJECT, *PDEVICE_OBJECT;

typedef struct _IO_STATUS_BLOCK {
	NTSTATUS Status;
	ULONG_PTR Information;
} IO_STATUS_BLOCK, *PIO_STATUS_BLOCK;

/*
 * No I/O manager sends IRPs on Linux: a driver's dispatch routines are
 * kept but never called, and creating IRPs is not offered.
 */
struct _IRP {
	IO_STATUS_BLOCK IoStatus;
};

typedef NTSTATUS DRIVER_DISPATCH(PDEVICE_OBJECT DeviceObject, PIRP Irp);
typedef DRIVER_DISPATCH *PDRIVER_DISPATCH;
typedef VOID DRIVER_UNLOAD(struct _DRIVER_OBJECT *DriverObject);
typedef DRIVER_UNLOAD *PDRIVER_UNLOAD;

/*
 * The stub that loads the driver owns it: the DriverUnload it set is
 * called at module exit, then the work items the driver queued drain.
 */
typedef struct _DRIVER_OBJECT {
	CSHORT Type;
	CSHORT Size;
	PDEVICE_OBJECT DeviceObject;
	ULONG Flags;
	UNICODE_STRING DriverName;
	PDRIVER_UNLOAD DriverUnload;
	PDRIVER_DISPATCH MajorFunction[IRP_MJ_MAXIMUM_FUNCTION + 1];
	/* ndk_wdk's own: the work queue of this driver's IO_WORKITEMs. */
	struct workqueue_struct *NdkWdkQueue;
	DEVICE_OBJECT NdkWdkDevice;
} DRIVER_OBJECT, *PDRIVER_OBJECT;

typedef NTSTATUS DRIVER_INITIALIZE(PDRIVER_OBJECT DriverObject,
				   PUNICODE_STRING RegistryPath);
typedef DRIVER_INITIALIZE *PDRIVER_INITIALIZE;

static inline void IoCompleteRequest(PIRP Irp, CCHAR PriorityBoost)
{
	WARN(1, "%s: no IRP exists under ndk_wdk\n", __func__);
}

#define IoCallDriver(...)		NDK_WDK_NOT_OFFERED(IoCallDriver)
#define IoAllocateIrp(...)		NDK_WDK_NOT_OFFERED(IoAllocateIrp)
#define IoBuildDeviceIoControlRequest(...)				\
	NDK_WDK_NOT_OFFERED(IoBuildDeviceIoControlRequest)
#define IoCreateDevice(...)		NDK_WDK_NOT_OFFERED(IoCreateDevice)
#define IoCreateSymbolicLink(...)	NDK_WDK_NOT_OFFERED(IoCreateSymbolicLink)
#define IoDeleteDevice(...)		NDK_WDK_NOT_OFFERED(IoDeleteDevice)
#define ZwOpenKey(...)			NDK_WDK_NOT_OFFERED(ZwOpenKey)
#define ZwQueryValueKey(...)		NDK_WDK_NOT_OFFERED(ZwQueryValueKey)
#define ZwCreateFile(...)		NDK_WDK_NOT_OFFERED(ZwCreateFile)
#define KeInitializeDpc(...)		NDK_WDK_NOT_OFFERED(KeInitializeDpc)
#define KeInsertQueueDpc(...)		NDK_WDK_NOT_OFFERED(KeInsertQueueDpc)
#define KeStackAttachProcess(...)	NDK_WDK_NOT_OFFERED(KeStackAttachProcess)
#define KeSetSystemAffinityThreadEx(...)				\
	NDK_WDK_NOT_OFFERED(KeSetSystemAffinityThreadEx)
#define PsCreateSystemThread(...)	NDK_WDK_NOT_OFFERED(PsCreateSystemThread)

/* ------------------------------------------------------------------ */
/* Work items                                                          */
/* ------------------------------------------------------------------ */

typedef enum _WORK_QUEUE_TYPE {
	CriticalWorkQueue,
	DelayedWorkQueue,
	HyperCriticalWorkQueue,
	NormalWorkQueue,
} WORK_QUEUE_TYPE;

typedef struct _IO_WORKITEM IO_WORKITEM, *PIO_WORKITEM;
typedef VOID IO_WORKITEM_ROUTINE(PDEVICE_OBJECT DeviceObject, PVOID Context);
typedef IO_WORKITEM_ROUTINE *PIO_WORKITEM_ROUTINE;
typedef VOID IO_WORKITEM_ROUTINE_EX(PVOID IoObject, PVOID Context,
				    PIO_WORKITEM IoWorkItem);
typedef IO_WORKITEM_ROUTINE_EX *PIO_WORKITEM_ROUTINE_EX;

/*
 * Runs on the driver's own workqueue, in process context. The I/O object
 * is the device or the driver object (told apart by their Type), which
 * Windows drivers also pass to IoAllocateWorkItem() cast to a device.
 */
struct _IO_WORKITEM {
	struct work_struct Work;
	PDRIVER_OBJECT Driver;
	PVOID IoObject;
	PIO_WORKITEM_ROUTINE Routine;
	PIO_WORKITEM_ROUTINE_EX RoutineEx;
	PVOID Context;
};

PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject);
void IoFreeWorkItem(PIO_WORKITEM IoWorkItem);
void IoInitializeWorkItem(PVOID IoObject, PIO_WORKITEM IoWorkItem);
void IoQueueWorkItem(PIO_WORKITEM IoWorkItem,
		     PIO_WORKITEM_ROUTINE WorkerRoutine,
		     WORK_QUEUE_TYPE QueueType, PVOID Context);
void IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem,
		       PIO_WORKITEM_ROUTINE_EX WorkerRoutine,
		       WORK_QUEUE_TYPE QueueType, PVOID Context);

#define IoSizeofWorkItem()		((ULONG)sizeof(IO_WORKITEM))
#define IoUninitializeWorkItem(IoWorkItem)	((void)(IoWorkItem))

/* ------------------------------------------------------------------ */
/* Strings and IP addresses (ntstrsafe.h, ip2string.h)                  */
/* ------------------------------------------------------------------ */

typedef struct in_addr IN_ADDR, *PIN_ADDR;
typedef struct in6_addr IN6_ADDR, *PIN6_ADDR;
typedef unsigned short ADDRESS_FAMILY;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE;

typedef union _SOCKADDR_INET {
	SOCKADDR_IN Ipv4;
	SOCKADDR_IN6 Ipv6;
	ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;

/*
 * Each returns STATUS_SUCCESS or STATUS_INVALID_PARAMETER; ports come
 * back in network byte order, as on Windows.
 */
NTSTATUS RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict,
				 PCWSTR *Terminator, IN_ADDR *Addr);
NTSTATUS RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict,
				   IN_ADDR *Address, PUSHORT Port);
NTSTATUS RtlIpv6StringToAddressW(PCWSTR S, PCWSTR *Terminator,
				 IN6_ADDR *Addr);
NTSTATUS RtlIpv6StringToAddressExW(PCWSTR AddressString, IN6_ADDR *Address,
				   PULONG ScopeId, PUSHORT Port);
NTSTATUS RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR *Terminator,
				 IN_ADDR *Addr);
NTSTATUS RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict,
				   IN_ADDR *Address, PUSHORT Port);
NTSTATUS RtlIpv6StringToAddressA(PCSTR S, PCSTR *Terminator, IN6_ADDR *Addr);
NTSTATUS RtlIpv6StringToAddressExA(PCSTR AddressString, IN6_ADDR *Address,
				   PULONG ScopeId, PUSHORT Port);
PWSTR RtlIpv4AddressToStringW(const IN_ADDR *Addr, PWSTR S);

/*
 * Ported code passes &sockaddr_in.sin_port, a __be16 here: the port
 * comes back in network byte order, so the cast only tells sparse so.
 */
#define RtlIpv4StringToAddressExW(S, Strict, Address, Port)		\
	RtlIpv4StringToAddressExW(S, Strict, Address, (__force PUSHORT)(Port))
#define RtlIpv4StringToAddressExA(S, Strict, Address, Port)		\
	RtlIpv4StringToAddressExA(S, Strict, Address, (__force PUSHORT)(Port))
#define RtlIpv6StringToAddressExW(S, Address, ScopeId, Port)		\
	RtlIpv6StringToAddressExW(S, Address, ScopeId, (__force PUSHORT)(Port))
#define RtlIpv6StringToAddressExA(S, Address, ScopeId, Port)		\
	RtlIpv6StringToAddressExA(S, Address, ScopeId, (__force PUSHORT)(Port))

#define RtlIpv4StringToAddress		RtlIpv4StringToAddressW
#define RtlIpv4StringToAddressEx	RtlIpv4StringToAddressExW
#define RtlIpv6StringToAddress		RtlIpv6StringToAddressW
#define RtlIpv6StringToAddressEx	RtlIpv6StringToAddressExW

void RtlInitUnicodeString(PUNICODE_STRING DestinationString,
			  PCWSTR SourceString);

/* ------------------------------------------------------------------ */
/* DriverEntry and DriverUnload as module init and exit                */
/* ------------------------------------------------------------------ */

DRIVER_INITIALIZE DriverEntry;

int ndk_wdk_driver_load(PDRIVER_OBJECT DriverObject,
			PDRIVER_INITIALIZE Entry, const char *Name);
void ndk_wdk_driver_unload(PDRIVER_OBJECT DriverObject);

/*
 * Build the file that defines DriverEntry with -DNDK_WDK_DRIVER_ENTRY
 * (CFLAGS_<file>.o in Kbuild): that file then gets the module's init and
 * exit, which call DriverEntry and the DriverUnload it set.
 */
#ifdef NDK_WDK_DRIVER_ENTRY
#ifndef NDK_WDK_LICENSE
#define NDK_WDK_LICENSE "GPL"
#endif
static DRIVER_OBJECT ndk_wdk_driver_object;

static int __init ndk_wdk_module_init(void)
{
	return ndk_wdk_driver_load(&ndk_wdk_driver_object, DriverEntry,
				   KBUILD_MODNAME);
}

static void __exit ndk_wdk_module_exit(void)
{
	ndk_wdk_driver_unload(&ndk_wdk_driver_object);
}

module_init(ndk_wdk_module_init);
module_exit(ndk_wdk_module_exit);
MODULE_LICENSE(NDK_WDK_LICENSE);
MODULE_DESCRIPTION("Windows driver " KBUILD_MODNAME " on ndk_wdk");
#endif /* NDK_WDK_DRIVER_ENTRY */

#endif /* _NDK_WDK_WDM_H */
